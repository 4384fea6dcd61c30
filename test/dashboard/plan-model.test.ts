// The plans page's pure parts: attainment curves (share of seeds holding the SLO per probed
// rate, per configuration) and the answers placed by cost.
import { describe, expect, it } from 'vitest';
import type { PlanAnswer, PlanPoint } from '../../notebooks-web/shared/api-types.ts';
import { attainmentCurves, costPoints } from '../../notebooks-web/app/model/plan-curves.ts';

const pt = (label: string, rateScale: number, seed: number, holds: boolean): PlanPoint => ({
  question: 'max_rate', config: 'replicas=4', label, rateScale, replicas: 4, seed, runId: `${label}/${rateScale}/${seed}`,
  goodput: 0.9, ttftMs: 1, tpotMs: 1, holds, costPerHourUsd: 10, costPer1kRequestsUsd: 1, probeVerdict: 'holds',
});

const ans = (over: Partial<PlanAnswer>): PlanAnswer => ({
  question: 'min_replicas', config: 'h100', label: 'rr', status: 'found', answer: 4, low: 4, high: 4, unit: 'replicas',
  confidence: 0.9, costPerHourUsd: 40, costPer1kRequestsUsd: 0.5, rank: 1, ...over,
});

describe('plan curves', () => {
  it('share of seeds holding per rate, rates ascending, one curve per configuration in first-seen order', () => {
    const curves = attainmentCurves([pt('rr', 1, 1, false), pt('rr', 0.5, 1, true), pt('rr', 0.5, 2, true), pt('rr', 1, 2, true), pt('fixed', 0.5, 1, false)]);
    expect(curves.map((c) => c.label)).toEqual(['max_rate · replicas=4 · rr', 'max_rate · replicas=4 · fixed']);
    expect(curves[0]!.points).toEqual([[0.5, 1], [1, 0.5]]);
    expect(curves[0]!.seeds).toEqual([2, 2]);
    expect(curves[1]!.points).toEqual([[0.5, 0]]);
  });

  it('cost points keep found answers with both costs', () => {
    const pts = costPoints([ans({}), ans({ config: 'a100', status: 'none', answer: null }), ans({ config: 'l4', costPer1kRequestsUsd: null })]);
    expect(pts).toEqual([{ id: 'min_replicas · h100 · rr', label: 'min_replicas · h100 · rr: 4 replicas', costPerHourUsd: 40, costPer1kRequestsUsd: 0.5 }]);
  });
});
