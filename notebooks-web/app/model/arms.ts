/**
 * Arms of a comparison: the runs that differ only in seed (same label, same pair key) form one
 * arm, and its figures are the means over those seeds — the quantities `switchyard compare`
 * puts intervals on. With one seed per label an arm is simply a run. Pure.
 */
import type { Percentiles, RunInfo, RunMetrics } from '../../shared/api-types.ts';

/** Mean figures of an arm (null where no run of it has a value). */
export interface ArmMetrics {
  goodput: number | null;
  failureRate: number | null;
  fallbackRate: number | null;
  offloadRate: number | null;
  costPer1kRequestsUsd: number | null;
  ttft: Percentiles;
  tpot: Percentiles;
  e2e: Percentiles;
}

/** One arm. */
export interface Arm {
  /** Unique key: the label, plus ` [pairKey]` when arms of several pair groups are shown. */
  key: string;
  label: string;
  pairKey: string;
  runIds: string[];
  metrics: ArmMetrics;
}

/** Distinct pair keys of the runs, in run order. */
export function pairKeysOf(runs: readonly RunInfo[]): string[] {
  return [...new Set(runs.map((r) => r.pairKey))];
}

function mean(values: readonly (number | null)[]): number | null {
  const v = values.filter((x): x is number => x !== null && Number.isFinite(x));
  return v.length === 0 ? null : v.reduce((a, b) => a + b, 0) / v.length;
}

function meanPct(ms: readonly RunMetrics[], pick: (m: RunMetrics) => Percentiles): Percentiles {
  return { p50: mean(ms.map((m) => pick(m).p50)), p90: mean(ms.map((m) => pick(m).p90)), p99: mean(ms.map((m) => pick(m).p99)) };
}

/**
 * Groups `runs` (restricted to `pairKey` unless it is null) into arms by (label, pair key), in
 * order of first appearance, averaging each arm's metrics over its runs. Runs without metrics
 * still belong to their arm (and add nothing to its means).
 */
export function groupArms(runs: readonly RunInfo[], metrics: readonly RunMetrics[], pairKey: string | null): Arm[] {
  const shown = pairKey === null ? runs : runs.filter((r) => r.pairKey === pairKey);
  const multiPair = new Set(shown.map((r) => r.pairKey)).size > 1;
  const byRun = new Map(metrics.map((m) => [m.runId, m]));
  const arms = new Map<string, { label: string; pairKey: string; runIds: string[] }>();
  for (const r of shown) {
    const key = multiPair && r.pairKey !== '' ? `${r.label} [${r.pairKey}]` : r.label;
    const arm = arms.get(key) ?? { label: r.label, pairKey: r.pairKey, runIds: [] };
    arm.runIds.push(r.runId);
    arms.set(key, arm);
  }
  return [...arms.entries()].map(([key, a]) => {
    const ms = a.runIds.map((id) => byRun.get(id)).filter((m): m is RunMetrics => m !== undefined);
    return {
      key,
      ...a,
      metrics: {
        goodput: mean(ms.map((m) => m.goodput)),
        failureRate: mean(ms.map((m) => m.failureRate)),
        fallbackRate: mean(ms.map((m) => m.fallbackRate)),
        offloadRate: mean(ms.map((m) => m.offloadRate)),
        costPer1kRequestsUsd: mean(ms.map((m) => m.costPer1kRequestsUsd)),
        ttft: meanPct(ms, (m) => m.ttft),
        tpot: meanPct(ms, (m) => m.tpot),
        e2e: meanPct(ms, (m) => m.e2e),
      },
    };
  });
}
