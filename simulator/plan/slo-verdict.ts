/**
 * Whether a planner probe holds the SLO. One run (seed) is scored by its *slack*, the smallest
 * normalised margin over the SLO's terms:
 *
 *   slack = min( goodput − G,  1 − TTFT_p / TTFT_bound,  1 − TPOT_p / TPOT_bound )
 *
 * (terms without a bound are left out; a run without ok requests has no percentiles and scores
 * −1). The run holds the SLO iff slack ≥ 0. A probe (one configuration at one rate) holds it when
 * the mean slack over its seeds is ≥ 0; it is decided once the Student-t interval of that mean
 * (t-interval.ts) lies wholly on one side of 0 — `pass` when low ≥ 0, `fail` when high < 0 — and
 * is `undecided` while the interval straddles 0.
 */
import type { SummaryRow } from '../results/result-rows.ts';
import type { PlanSlo } from './plan-config.ts';
import { tInterval, type MeanInterval } from './t-interval.ts';

/** A probe's decision. */
export type Verdict = 'pass' | 'fail' | 'undecided';

/** The SLO terms of one run, as the planner stores them. */
export interface RunScore {
  readonly goodput: number;
  /** TTFT at the SLO's percentile, ms (null without ok requests or without a TTFT bound). */
  readonly ttftMs: number | null;
  /** TPOT at the SLO's percentile, ms (null without a TPOT bound, ok requests or decode tokens). */
  readonly tpotMs: number | null;
  /** See the module doc; ≥ 0 iff the run holds the SLO. */
  readonly slack: number;
}

function percentileOf(s: SummaryRow, metric: 'ttft' | 'tpot', p: 50 | 90 | 99): number | null {
  const key = `${metric}P${p}Ms` as const;
  return s[key];
}

/** Scores one run's summary against `slo` (module doc). */
export function scoreRun(s: SummaryRow, slo: PlanSlo): RunScore {
  let slack = s.goodput - slo.goodput;
  let ttftMs: number | null = null;
  let tpotMs: number | null = null;
  if (slo.ttft) {
    ttftMs = percentileOf(s, 'ttft', slo.ttft.percentile);
    slack = Math.min(slack, ttftMs === null ? -1 : 1 - ttftMs / slo.ttft.ms);
  }
  if (slo.tpot) {
    tpotMs = percentileOf(s, 'tpot', slo.tpot.percentile);
    // No TPOT at all (every response a single token) cannot break a TPOT bound; no ok request can.
    if (tpotMs !== null) slack = Math.min(slack, 1 - tpotMs / slo.tpot.ms);
    else if (s.okRequests === 0) slack = Math.min(slack, -1);
  }
  return { goodput: s.goodput, ttftMs, tpotMs, slack };
}

/** The mean slack over seeds, its interval and the decision. */
export interface ProbeDecision {
  readonly slack: MeanInterval;
  readonly verdict: Verdict;
}

/**
 * Decides a probe from its runs' slacks (module doc).
 * @throws RangeError for fewer than two slacks or confidence outside (0, 1).
 */
export function decide(slacks: readonly number[], confidence: number): ProbeDecision {
  const slack = tInterval(slacks, confidence);
  const verdict: Verdict = slack.low >= 0 ? 'pass' : slack.high < 0 ? 'fail' : 'undecided';
  return { slack, verdict };
}

/** One line for an SLO, e.g. `goodput ≥ 90% (TTFT ≤ 5000 ms, TPOT ≤ 100 ms per request), TTFT p99 ≤ 8000 ms`. */
export function describeSlo(slo: PlanSlo, perRequest: { ttftMs: number; tpotMs: number }): string {
  const parts = [`goodput ≥ ${(slo.goodput * 100).toFixed(1)}% (TTFT ≤ ${perRequest.ttftMs} ms and TPOT ≤ ${perRequest.tpotMs} ms per request)`];
  if (slo.ttft) parts.push(`TTFT p${slo.ttft.percentile} ≤ ${slo.ttft.ms} ms`);
  if (slo.tpot) parts.push(`TPOT p${slo.tpot.percentile} ≤ ${slo.tpot.ms} ms`);
  return parts.join(', ');
}
