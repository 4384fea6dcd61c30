// RouteWise pricing, budget and the exact LP (issue #13 items 1–3): hand-checked numbers and
// fast-check properties (budget respected, optimal against every single route and random mixes,
// at most two routes, seeded draws reproducible).
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { concurrencyCostUsd, onDemandCostUsd, quotaShadowCostUsd, QUOTA_Z_CAP } from '../../../core/strategies/routewise/effective-cost.ts';
import { budgetUsd } from '../../../core/strategies/routewise/budget.ts';
import { drawFromMix, solveLatencyLp } from '../../../core/strategies/routewise/lp.ts';
import { deriveRng } from '../../../core/index.ts';

describe('effective cost', () => {
  it('on-demand: (p_in·(n_in − n_cached) + p_cached·n_cached + p_out·L̂)/1e6', () => {
    const p = { inputUsdPer1M: 0.3, cachedInputUsdPer1M: 0.06, outputUsdPer1M: 1.2 };
    // (0.3·(1000 − 400) + 0.06·400 + 1.2·500)/1e6 = (180 + 24 + 600)/1e6
    expect(onDemandCostUsd(p, 1000, 400, 500)).toBeCloseTo(804e-6, 15);
    expect(onDemandCostUsd(p, 1000, 0, 0)).toBeCloseTo(300e-6, 15);
    // cached clamped to [0, n_in]
    expect(onDemandCostUsd(p, 100, 5000, 0)).toBeCloseTo(6e-6, 15);
    expect(onDemandCostUsd(p, 100, -3, 0)).toBeCloseTo(30e-6, 15);
  });

  it('quota ψ(z) = L·(U/L)^z at z = 0, 0.5, 0.9999; capped just below 1; excluded at z ≥ 1', () => {
    const L = 1e-4;
    const U = 1e-2;
    expect(quotaShadowCostUsd(L, U, 0)).toBe(1e-4);
    expect(quotaShadowCostUsd(L, U, 0.5)).toBeCloseTo(1e-3, 15); // √(L·U)
    expect(quotaShadowCostUsd(L, U, 0.9999)).toBeCloseTo(1e-4 * Math.pow(100, 0.9999), 15);
    expect(quotaShadowCostUsd(L, U, 0.99999)).toBe(quotaShadowCostUsd(L, U, QUOTA_Z_CAP));
    expect(quotaShadowCostUsd(L, U, -1)).toBe(L);
    expect(quotaShadowCostUsd(L, U, 1)).toBeNull();
    expect(quotaShadowCostUsd(L, U, 1.5)).toBeNull();
    expect(() => quotaShadowCostUsd(0, U, 0.2)).toThrow(RangeError);
  });

  it('concurrency: free while a slot is free, excluded when full', () => {
    expect(concurrencyCostUsd(true)).toBe(0);
    expect(concurrencyCostUsd(false)).toBeNull();
  });
});

describe('budget', () => {
  it('B = c_min + α·(c_max − c_min) over finite costs; null when none', () => {
    const c = [3, Number.NaN, 1, 2];
    expect(budgetUsd(c, 4, 0)).toEqual({ budgetUsd: 1, minCostUsd: 1, maxCostUsd: 3 });
    expect(budgetUsd(c, 4, 0.75)!.budgetUsd).toBe(2.5);
    expect(budgetUsd(c, 4, 1)!.budgetUsd).toBe(3);
    expect(budgetUsd(c, 4, 7)!.budgetUsd).toBe(3);
    expect(budgetUsd([Number.NaN], 1, 0.5)).toBeNull();
    expect(budgetUsd([0.1, 0.3], 2, 1)!.budgetUsd).toBe(0.3); // exactly c_max, no rounding below it
  });
});

const lp = (t: number[], c: number[], B: number) => solveLatencyLp(t, c, t.length, B);

describe('exact LP, hand-checked', () => {
  it('two routes: single below, mix on the budget line, single above, infeasible ⇒ cheapest', () => {
    const T = [1000, 500];
    const C = [1, 3];
    expect(lp(T, C, 1)).toMatchObject({ first: 0, second: -1, firstWeight: 1, expectedLatencyMs: 1000, expectedCostUsd: 1, feasible: true });
    expect(lp(T, C, 2)).toMatchObject({ first: 0, second: 1, firstWeight: 0.5, secondWeight: 0.5, expectedLatencyMs: 750, expectedCostUsd: 2, feasible: true });
    expect(lp(T, C, 3)).toMatchObject({ first: 1, second: -1, expectedLatencyMs: 500, feasible: true });
    expect(lp(T, C, 0.5)).toMatchObject({ first: 0, second: -1, expectedLatencyMs: 1000, expectedCostUsd: 1, feasible: false });
  });

  it('three routes on the hull: the optimum mixes the two neighbours of B', () => {
    // (c, T) = (1, 2000), (2, 1000), (5, 400); B = 3 ⇒ routes 1 and 2 with π = (2/3, 1/3), T = 800.
    const s = lp([2000, 1000, 400], [1, 2, 5], 3);
    expect(s).toMatchObject({ first: 1, second: 2, feasible: true });
    expect(s.firstWeight).toBeCloseTo(2 / 3, 12);
    expect(s.secondWeight).toBeCloseTo(1 / 3, 12);
    expect(s.expectedLatencyMs).toBeCloseTo(800, 9);
    expect(s.expectedCostUsd).toBeCloseTo(3, 12);
  });

  it('three routes, middle one above the hull: it is skipped', () => {
    // (1, 2000), (2, 1800), (3, 600), B = 2: routes 0 and 2 half and half ⇒ 1300 < 1800.
    const s = lp([2000, 1800, 600], [1, 2, 3], 2);
    expect(s).toMatchObject({ first: 0, second: 2, firstWeight: 0.5, secondWeight: 0.5, expectedLatencyMs: 1300, expectedCostUsd: 2 });
  });

  it('ties: equal latencies go to the cheaper route; equal everything to the first', () => {
    expect(lp([1000, 1000], [2, 1], 2)).toMatchObject({ first: 1, second: -1, expectedCostUsd: 1 });
    expect(lp([1000, 1000], [1, 1], 5)).toMatchObject({ first: 0, second: -1 });
    // A mix with the same latency as a single costs B ≥ the single: the single wins.
    expect(lp([1000, 800, 600], [1, 2, 3], 2)).toMatchObject({ first: 1, second: -1, expectedLatencyMs: 800 });
  });

  it('all-equal costs: the fastest route alone, whatever α', () => {
    for (const B of [1, 1 + 1e-12]) expect(lp([900, 500, 700], [1, 1, 1], B)).toMatchObject({ first: 1, second: -1, expectedLatencyMs: 500 });
  });

  it('infeasible: the cheapest, ties to the faster', () => {
    expect(lp([900, 500, 700], [3, 2, 2], 1)).toMatchObject({ first: 1, feasible: false, expectedCostUsd: 2 });
  });

  it('entries with NaN latency or cost take no part; no entry ⇒ first = −1', () => {
    expect(lp([Number.NaN, 500, 700], [0, 2, 1], 1.5)).toMatchObject({ first: 2, second: 1 });
    expect(lp([Number.NaN], [1], 1).first).toBe(-1);
  });

  it('drawFromMix: u < π_first ⇒ first, else second', () => {
    const s = lp([1000, 500], [1, 3], 2);
    expect(drawFromMix(s, 0.49)).toBe(0);
    expect(drawFromMix(s, 0.5)).toBe(1);
    expect(drawFromMix(lp([1000, 500], [1, 3], 1), 0.99)).toBe(0);
  });
});

const routesArb = fc.array(fc.record({ t: fc.double({ min: 1, max: 20_000, noNaN: true }), c: fc.double({ min: 0, max: 0.01, noNaN: true }) }), { minLength: 1, maxLength: 8 });

describe('exact LP, properties', () => {
  it('expected cost ≤ B (+ε) and objective ≤ every single route within budget; ≤ 2 weights summing to 1', () => {
    fc.assert(
      fc.property(routesArb, fc.double({ min: 0, max: 1, noNaN: true }), (routes, alpha) => {
        const T = routes.map((r) => r.t);
        const C = routes.map((r) => r.c);
        const B = budgetUsd(C, C.length, alpha)!.budgetUsd;
        const s = lp(T, C, B);
        expect(s.feasible).toBe(true);
        expect(s.expectedCostUsd).toBeLessThanOrEqual(B + 1e-9 * B + 1e-15);
        for (let j = 0; j < T.length; j++) if (C[j]! <= B) expect(s.expectedLatencyMs).toBeLessThanOrEqual(T[j]! * (1 + 1e-9));
        expect(s.firstWeight + s.secondWeight).toBeCloseTo(1, 12);
        expect(s.firstWeight).toBeGreaterThan(0);
        if (s.second < 0) expect(s.secondWeight).toBe(0);
        else expect(s.second).not.toBe(s.first);
        const recomputed = s.firstWeight * T[s.first]! + (s.second >= 0 ? s.secondWeight * T[s.second]! : 0);
        expect(recomputed).toBeCloseTo(s.expectedLatencyMs, 6);
      }),
      { numRuns: 500 },
    );
  });

  it('no random feasible mix does better (LP optimality)', () => {
    fc.assert(
      fc.property(routesArb, fc.double({ min: 0, max: 1, noNaN: true }), fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { minLength: 8, maxLength: 8 }), (routes, alpha, raw) => {
        const T = routes.map((r) => r.t);
        const C = routes.map((r) => r.c);
        const B = budgetUsd(C, C.length, alpha)!.budgetUsd;
        const s = lp(T, C, B);
        const w = raw.slice(0, T.length);
        const sum = w.reduce((a, b) => a + b, 0);
        if (sum === 0) return;
        const pi = w.map((x) => x / sum);
        const cost = pi.reduce((a, p, j) => a + p * C[j]!, 0);
        if (cost > B) return; // not feasible
        const obj = pi.reduce((a, p, j) => a + p * T[j]!, 0);
        expect(s.expectedLatencyMs).toBeLessThanOrEqual(obj * (1 + 1e-9) + 1e-9);
      }),
      { numRuns: 500 },
    );
  });

  it('same seed ⇒ same draws', () => {
    fc.assert(
      fc.property(routesArb, fc.double({ min: 0, max: 1, noNaN: true }), fc.integer(), (routes, alpha, seed) => {
        const T = routes.map((r) => r.t);
        const C = routes.map((r) => r.c);
        const s = lp(T, C, budgetUsd(C, C.length, alpha)!.budgetUsd);
        const draws = (sd: number) => {
          const rng = deriveRng(sd, 'strategy/routewise');
          return Array.from({ length: 50 }, () => drawFromMix(s, rng.float()));
        };
        expect(draws(seed)).toEqual(draws(seed));
      }),
      { numRuns: 100 },
    );
  });

  it('draw shares match the mix weights (4σ)', () => {
    const s = lp([2000, 1000, 400], [1, 2, 5], 3);
    const rng = deriveRng(3, 'strategy/routewise');
    const n = 20_000;
    let second = 0;
    for (let i = 0; i < n; i++) if (drawFromMix(s, rng.float()) === s.second) second++;
    const p = s.secondWeight;
    expect(Math.abs(second / n - p)).toBeLessThanOrEqual(4 * Math.sqrt((p * (1 - p)) / n));
  });
});
