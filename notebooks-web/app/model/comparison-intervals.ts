/**
 * From stored paired comparisons to whiskers: which baseline to show, and where an arm's
 * interval lies on the value axis. Pure.
 */
import type { ComparisonRow } from '../../shared/api-types.ts';
import type { Arm } from './arms.ts';

/** The baseline label of the shown intervals: the one asked for, else the most frequent one. */
export function chooseBaseline(rows: readonly ComparisonRow[], wanted: string | undefined): string | null {
  if (wanted !== undefined && rows.some((r) => r.baseline === wanted)) return wanted;
  const counts = new Map<string, number>();
  for (const r of rows) counts.set(r.baseline, (counts.get(r.baseline) ?? 0) + 1);
  let best: string | null = null;
  for (const [id, n] of counts) if (best === null || n > counts.get(best)!) best = id;
  return best;
}

/**
 * The whisker of an arm on one summary metric (e.g. `ttft_p99_ms`): baseline mean + the stored
 * interval of (candidate − baseline), i.e. where the candidate's mean lies given the paired
 * resampling. Null for the baseline itself, or when no interval is stored.
 */
export function armInterval(rows: readonly ComparisonRow[], arm: Pick<Arm, 'label' | 'pairKey'>, baseline: string, metric: string, baselineValue: number | null): { lo: number; hi: number } | null {
  if (arm.label === baseline) return null;
  const row = rows.find((r) => r.baseline === baseline && r.candidate === arm.label && r.pairKey === arm.pairKey && r.metric === metric);
  const base = row?.baselineMean ?? baselineValue;
  if (!row || row.ciLow === null || row.ciHigh === null || base === null) return null;
  return { lo: base + row.ciLow, hi: base + row.ciHigh };
}
