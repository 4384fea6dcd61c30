// Selection shares of the prefill-aware `fixed` router against analytic values, in the style of
// Envoy's least_request_lb_simulation_test: many decisions, shares within 4σ of the expectation.
// Without backlog P2C keeps the weights; with one endpoint backlogged past the intervention
// threshold it wins only when both draws hit it (p²), and every other endpoint i gets p_i·(1+p_busy).
import { describe, expect, it } from 'vitest';
import { p2cSharesOneBusy } from '../../../core/index.ts';
import { finish, makeCore, req, seeded } from '../harness.ts';

const N = 40_000;

function shares(weights: number[], busy: number | null, seed: number): number[] {
  const core = makeCore(weights.map((w, i) => ({ name: `r${i}`, weight: w })), 'fixed', { affinity: false });
  if (busy !== null) core.prefill.acquire(`m:r${busy}`, null, 1_000_000, 0); // a standing backlog
  const rng = seeded(seed, 'p2c-shares');
  const counts = weights.map(() => 0);
  for (let i = 0; i < N; i++) {
    const { life, actions } = core.start(req({ inputTokens: 2_000 }), i, rng);
    const md = finish(life, actions, i); // each request leaves no load behind
    counts[Number(md.endpointId!.slice(3))]!++;
  }
  return counts.map((c) => c / N);
}

function expectWithin4Sigma(got: number[], want: number[]) {
  want.forEach((p, i) => expect(Math.abs(got[i]! - p)).toBeLessThanOrEqual(4 * Math.sqrt((p * (1 - p)) / N)));
}

describe('P2C shares (analytic, 4σ)', () => {
  it('weights 10:1, no backlog ⇒ ≈ 10:1 (P2C does not override the weights below the threshold)', () => {
    expectWithin4Sigma(shares([10, 1], null, 1), [10 / 11, 1 / 11]);
  });

  it('weights 10:1, the heavy endpoint backlogged ⇒ its share drops to (10/11)² ≈ 82.6 %', () => {
    const want = p2cSharesOneBusy([10, 1], 0);
    expect(want[0]).toBeCloseTo(100 / 121, 12);
    expect(want[1]).toBeCloseTo((1 / 11) * (21 / 11), 12);
    expectWithin4Sigma(shares([10, 1], 0, 2), want);
  });

  it('weights 10:1, the light endpoint backlogged ⇒ its share drops to (1/11)² ≈ 0.8 %', () => {
    expectWithin4Sigma(shares([10, 1], 1, 3), p2cSharesOneBusy([10, 1], 1));
  });

  it('three equal endpoints, one busy ⇒ 44.4 / 44.4 / 11.1 % (the STYLE.md example)', () => {
    const want = p2cSharesOneBusy([1, 1, 1], 2);
    expect(want.map((x) => Math.round(x * 1000) / 10)).toEqual([44.4, 44.4, 11.1]);
    expectWithin4Sigma(shares([1, 1, 1], 2, 4), want);
  });

  it('p2cSharesOneBusy rejects bad input', () => {
    expect(() => p2cSharesOneBusy([1, 0], 0)).toThrow(/weights must all be > 0/);
    expect(() => p2cSharesOneBusy([1, 1], 2)).toThrow(/busy must index weights/);
  });
});
