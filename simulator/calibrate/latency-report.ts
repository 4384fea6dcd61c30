/**
 * Predicted vs measured latency percentiles per endpoint: TTFT, TPOT ((E2E − TTFT) /
 * (output tokens − 1), requests with ≥ 2 output tokens and a TTFT) and E2E at p50 / p90 / p99
 * (nearest rank), with the relative error (predicted − measured) / measured.
 */
import { quantile } from '../engine/validation.ts';

/** Percentiles reported. */
export const PERCENTILES = [0.5, 0.9, 0.99] as const;

/** Latency metrics reported. */
export type LatencyMetric = 'ttft' | 'tpot' | 'e2e';

/** One metric of one endpoint: measured and predicted p50/p90/p99 (ms; null when none) and errors. */
export interface MetricComparison {
  readonly metric: LatencyMetric;
  readonly measuredMs: readonly (number | null)[];
  readonly predictedMs: readonly (number | null)[];
  /** (predicted − measured) / measured per percentile; null when either is missing. */
  readonly relError: readonly (number | null)[];
}

/** Per-request samples of one endpoint, ms (NaN = missing). */
export interface LatencySamples {
  readonly ttftMs: ArrayLike<number>;
  readonly tpotMs: ArrayLike<number>;
  readonly e2eMs: ArrayLike<number>;
}

const pcts = (xs: ArrayLike<number>) => {
  const finite = Array.from(xs).filter(Number.isFinite);
  return PERCENTILES.map((p) => (finite.length ? quantile(finite, p) : null));
};

/** TPOT per request from TTFT and E2E (NaN with fewer than 2 output tokens or no TTFT). */
export function tpotOf(ttftMs: ArrayLike<number>, e2eMs: ArrayLike<number>, outputTokens: ArrayLike<number>): Float64Array {
  const out = new Float64Array(outputTokens.length);
  for (let i = 0; i < out.length; i++) out[i] = outputTokens[i]! > 1 ? (e2eMs[i]! - ttftMs[i]!) / (outputTokens[i]! - 1) : NaN;
  return out;
}

/** Compares measured with predicted samples (either may carry only quantiles via `predictedQuantiles`). */
export function compareLatencies(measured: LatencySamples, predicted: LatencySamples | Partial<Record<LatencyMetric, readonly (number | null)[]>>): MetricComparison[] {
  return (['ttft', 'tpot', 'e2e'] as const).map((metric) => {
    const m = pcts(measured[`${metric}Ms`]);
    const given = (predicted as Partial<Record<LatencyMetric, readonly (number | null)[]>>)[metric];
    const samples = (predicted as Partial<LatencySamples>)[`${metric}Ms`];
    const p = given ?? (samples ? pcts(samples) : PERCENTILES.map(() => null));
    return { metric, measuredMs: m, predictedMs: p, relError: m.map((v, i) => (v === null || p[i] == null || v === 0 ? null : (p[i]! - v) / v)) };
  });
}

const ms = (v: number | null) => (v === null ? '-' : v >= 100 ? v.toFixed(0) : v.toFixed(1));
const pct = (v: number | null) => (v === null ? '-' : `${v >= 0 ? '+' : ''}${(v * 100).toFixed(1)}%`);

/** A text table: one line per endpoint and metric. */
export function formatLatencyComparisons(rows: readonly { endpointId: string; kind: string; requests: number; metrics: readonly MetricComparison[] }[]): string {
  const lines = [['endpoint', 'kind', 'n', 'metric', 'measured p50/p90/p99 ms', 'predicted p50/p90/p99 ms', 'error p50/p90/p99']];
  for (const r of rows) {
    for (const m of r.metrics) {
      lines.push([r.endpointId, r.kind, String(r.requests), m.metric.toUpperCase(), m.measuredMs.map(ms).join(' / '), m.predictedMs.map(ms).join(' / '), m.relError.map(pct).join(' / ')]);
    }
  }
  const widths = lines[0]!.map((_, c) => Math.max(...lines.map((l) => l[c]!.length)));
  return lines.map((l) => l.map((cell, c) => cell.padEnd(widths[c]!)).join('  ').trimEnd()).join('\n');
}
