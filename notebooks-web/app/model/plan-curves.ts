/**
 * What the plans page draws from a capacity plan (`GET …/plans`): SLO attainment against rate —
 * for each configuration (question · config · run label), at each probed `rate_scale`, the share
 * of its seeds whose run held the SLO — and the answers placed by cost, for the Pareto front.
 * Pure functions; no DOM.
 */
import type { PlanAnswer, PlanPoint } from '../../shared/api-types.ts';

/** One configuration's attainment curve: `[rateScale, share of seeds holding]`, rate ascending. */
export interface AttainmentCurve {
  id: string;
  label: string;
  points: [number, number][];
  /** Seeds behind each point, in the same order. */
  seeds: number[];
}

/** Name of a configuration as the page shows it. */
export function configName(p: Pick<PlanPoint, 'question' | 'config' | 'label'>): string {
  return `${p.question} · ${p.config} · ${p.label}`;
}

/**
 * Attainment curves of every configuration whose probes varied the rate (max_rate probes; a
 * question that holds the rate fixed gives a one-point curve), in first-seen order.
 */
export function attainmentCurves(points: readonly PlanPoint[]): AttainmentCurve[] {
  const byConfig = new Map<string, Map<number, { held: number; n: number }>>();
  for (const p of points) {
    const name = configName(p);
    let rates = byConfig.get(name);
    if (!rates) byConfig.set(name, (rates = new Map()));
    const cell = rates.get(p.rateScale) ?? { held: 0, n: 0 };
    cell.n++;
    if (p.holds) cell.held++;
    rates.set(p.rateScale, cell);
  }
  return [...byConfig].map(([name, rates]) => {
    const sorted = [...rates].sort((a, b) => a[0] - b[0]);
    return { id: name, label: name, points: sorted.map(([r, c]) => [r, c.held / c.n] as [number, number]), seeds: sorted.map(([, c]) => c.n) };
  });
}

/** An answer placed for the cost front: cost per hour (x) against cost per 1,000 requests (y), USD. */
export interface CostPoint {
  id: string;
  label: string;
  costPerHourUsd: number;
  costPer1kRequestsUsd: number;
}

/**
 * The answers that found a configuration with both costs known. A configuration's cost per
 * 1,000 requests is its hourly cost over the requests it serves in an hour, so at equal hourly
 * cost the one carrying more traffic sits lower: the front (nothing cheaper on both) is where
 * capacity is bought at the least cost.
 */
export function costPoints(answers: readonly PlanAnswer[]): CostPoint[] {
  return answers
    .filter((a) => a.status === 'found' && a.costPerHourUsd !== null && a.costPer1kRequestsUsd !== null)
    .map((a) => ({ id: configName(a), label: `${configName(a)}: ${a.answer ?? '-'} ${a.unit}`, costPerHourUsd: a.costPerHourUsd!, costPer1kRequestsUsd: a.costPer1kRequestsUsd! }));
}
