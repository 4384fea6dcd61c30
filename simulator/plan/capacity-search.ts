/**
 * The two monotone searches of the planner, over any probe that answers pass / fail / undecided
 * (slo-verdict.ts). A probe that cannot be decided counts as "not shown to hold": the searches
 * only ever claim what was shown at the probe's confidence, and report where they could not.
 *
 * - {@link searchMaxRate}: the highest rate that holds, assuming that holding is monotone
 *   (non-increasing) in the rate. Bracket by doubling or halving from `start`, then bisect in
 *   log space (the geometric midpoint) until high / low − 1 ≤ tolerance — the binary search over
 *   load of Vidur-Search (Agrawal et al., "Vidur: A Large-Scale Simulation Framework for LLM
 *   Inference", MLSys 2024, §5), with a verdict per probe instead of one run.
 * - {@link searchMinCount}: the fewest units (replicas) that hold, assuming holding is monotone
 *   (non-decreasing) in the count: 1, 2, 4, … until one holds, then bisect the last gap.
 */
import type { Verdict } from './slo-verdict.ts';

/** One probe of a search, in the order run. */
export interface SearchProbe {
  readonly at: number;
  readonly verdict: Verdict;
}

/** The answer of {@link searchMaxRate}. */
export interface MaxRateAnswer {
  /**
   * `found`: low holds and high does not (within tolerance unless probes ran out); `none`: the
   * lowest rate tried does not hold; `unbounded`: the highest rate tried still holds.
   */
  readonly status: 'found' | 'none' | 'unbounded';
  /** Highest rate shown to hold (null with `none`). */
  readonly low: number | null;
  /** Lowest rate not shown to hold (null with `unbounded`). */
  readonly high: number | null;
  /** Verdict at `high`: `fail`, or `undecided` when the boundary is within the noise of the seeds there. */
  readonly highVerdict: Verdict | null;
  /** Whether high / low − 1 ≤ tolerance was reached (false: probes ran out). */
  readonly converged: boolean;
  readonly probes: readonly SearchProbe[];
}

/** Rounds to 4 significant digits: probe rates stay readable in run ids. */
export function roundRate(r: number): number {
  return Number(r.toPrecision(4));
}

/**
 * Highest rate at which `probe` holds (module doc).
 * @param start first rate (> 0).
 * @param floor, ceiling the lowest and highest rates the bracket tries.
 * @param tolerance relative width at which bisection stops, in (0, 1).
 * @param maxProbes most probes in all (≥ 2).
 * @throws the probe's errors.
 */
export async function searchMaxRate(probe: (rate: number) => Promise<Verdict>, opts: { start: number; floor: number; ceiling: number; tolerance: number; maxProbes: number }): Promise<MaxRateAnswer> {
  const probes: SearchProbe[] = [];
  const run = async (at: number) => {
    const verdict = await probe(at);
    probes.push({ at, verdict });
    return verdict === 'pass';
  };
  let low: number | null = null;
  let high: number | null = null;
  let r = roundRate(opts.start);
  if (await run(r)) {
    low = r;
    while (probes.length < opts.maxProbes && r < opts.ceiling) {
      r = roundRate(Math.min(r * 2, opts.ceiling));
      if (await run(r)) low = r;
      else {
        high = r;
        break;
      }
    }
  } else {
    high = r;
    while (probes.length < opts.maxProbes && r > opts.floor) {
      r = roundRate(Math.max(r / 2, opts.floor));
      if (await run(r)) {
        low = r;
        break;
      }
      high = r;
    }
  }
  if (low !== null && high !== null) {
    while (high / low - 1 > opts.tolerance && probes.length < opts.maxProbes) {
      const mid = roundRate(Math.sqrt(low * high));
      if (mid <= low || mid >= high) break;
      if (await run(mid)) low = mid;
      else high = mid;
    }
  }
  const verdictAt = (at: number | null) => (at === null ? null : probes.find((p) => p.at === at)!.verdict);
  const status = low === null ? 'none' : high === null ? 'unbounded' : 'found';
  const converged = low !== null && high !== null && high / low - 1 <= opts.tolerance;
  return { status, low, high, highVerdict: verdictAt(high), converged, probes };
}

/** The answer of {@link searchMinCount}. */
export interface MinCountAnswer {
  /** `found`: `count` holds and count − 1 does not; `none`: even `maxCount` does not hold. */
  readonly status: 'found' | 'none';
  readonly count: number | null;
  /** Verdict at count − 1 (null when count is 1 or nothing holds). */
  readonly belowVerdict: Verdict | null;
  readonly probes: readonly SearchProbe[];
}

/**
 * Fewest units in [1, maxCount] at which `probe` holds (module doc).
 * @throws the probe's errors.
 */
export async function searchMinCount(probe: (count: number) => Promise<Verdict>, maxCount: number): Promise<MinCountAnswer> {
  const probes: SearchProbe[] = [];
  const verdicts = new Map<number, Verdict>();
  const run = async (at: number) => {
    const verdict = await probe(at);
    probes.push({ at, verdict });
    verdicts.set(at, verdict);
    return verdict === 'pass';
  };
  let lowFail = 0;
  let highPass: number | null = null;
  for (let n = 1; ; n = Math.min(n * 2, maxCount)) {
    if (await run(n)) {
      highPass = n;
      break;
    }
    lowFail = n;
    if (n === maxCount) break;
  }
  if (highPass === null) return { status: 'none', count: null, belowVerdict: null, probes };
  while (highPass - lowFail > 1) {
    const mid = Math.floor((lowFail + highPass) / 2);
    if (await run(mid)) highPass = mid;
    else lowFail = mid;
  }
  return { status: 'found', count: highPass, belowVerdict: highPass > 1 ? verdicts.get(highPass - 1) ?? null : null, probes };
}
