// Latency profiles (issue #13 item 4: rolling window, T̄ with the failure penalty, censoring-aware
// CDF) and latest-safe hedging (item 5: the 27-point grid, the probability formula on a known
// CDF, the latest-safe rule, the "primary already safe" refinement).
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { LatencyProfile } from '../../../core/strategies/routewise/latency-profile.ts';
import { HedgeGrid, hedgeCheckpointsMs, hedgeSuccessProbability, planHedge, primaryOnlyProbability } from '../../../core/strategies/routewise/hedge.ts';
import { deriveRng } from '../../../core/index.ts';

const profile = (gridMs: number[], windowMs = 900_000, errorPenaltyMs = 60_000) => new LatencyProfile({ windowMs, errorPenaltyMs, gridMs });

describe('latency profile', () => {
  it('T̄ = (Σ TTFT + n_err·60 s)/(n_ok + n_err); null when empty', () => {
    const p = profile([3000]);
    expect(p.meanMs(0)).toBeNull();
    p.recordSuccess(1000, 0);
    p.recordSuccess(2000, 1);
    p.recordFailure(2);
    expect(p.meanMs(3)).toBe((1000 + 2000 + 60_000) / 3);
    expect(p.counts(3)).toEqual({ successes: 2, failures: 1, censored: 0 });
    p.invariants();
  });

  it('causal rolling window: an observation leaves when nowMs − t ≥ window', () => {
    const p = profile([500], 1000);
    p.recordSuccess(100, 0);
    p.recordSuccess(300, 500);
    expect(p.meanMs(999)).toBe(200);
    expect(p.meanMs(1000)).toBe(300);
    expect(p.meanMs(1500)).toBeNull();
    expect(p.cdf(500, 1500)).toBe(0);
    p.invariants();
  });

  it('without censoring F is the exact empirical CDF at grid points', () => {
    const p = profile([100, 200, 300]);
    [50, 150, 150, 250, 350].forEach((v, i) => p.recordSuccess(v, i));
    expect([0, 1, 2].map((k) => p.cdfAt(k))).toEqual([1 / 5, 3 / 5, 4 / 5]);
    expect(p.cdf(200, 5)).toBe(3 / 5); // on a grid point
    expect(p.cdf(299, 5)).toBe(3 / 5); // between: F at the largest grid point ≤ x
    expect(p.cdf(99, 5)).toBe(0);
    // Values exactly on a grid point count as ≤ it.
    const q = profile([100]);
    q.recordSuccess(100, 0);
    expect(q.cdfAt(0)).toBe(1);
  });

  it('censoring: life-table F and the imputed mean on a hand-worked example', () => {
    const p = profile([100, 200, 300]);
    [50, 150, 250, 350].forEach((v, i) => p.recordSuccess(v, i));
    p.recordCensored(120, 10); // TTFT > 120
    // Cell (−∞,100]: d=1, no censoring yet ⇒ S = 4/5. Cell (100,200]: at risk 4, d=1, w=1 ⇒
    // S = 0.8·(1 − 1/3.5). Cell (200,300]: at risk 2, d=1 ⇒ S ·= 1/2.
    expect(p.cdfAt(0)).toBeCloseTo(0.2, 12);
    expect(p.cdfAt(1)).toBeCloseTo(1 - 0.8 * (2.5 / 3.5), 12);
    expect(p.cdfAt(2)).toBeCloseTo(1 - 0.4 * (2.5 / 3.5), 12);
    // Imputed TTFT: mean of the successes from its own cell on (150, 250, 350) = 250
    // ⇒ T̄ = (50 + 150 + 250 + 350 + 250)/5.
    expect(p.meanMs(11)).toBe(210);
    expect(p.counts(11)).toEqual({ successes: 4, failures: 0, censored: 1 });
    // Beyond every success: imputed at its elapsed time (a lower bound).
    const q = profile([100]);
    q.recordSuccess(50, 0);
    q.recordCensored(400, 1);
    expect(q.meanMs(2)).toBe(225);
    p.invariants();
    q.invariants();
  });

  it('censoring-aware estimates are closer to the truth than dropping cancelled attempts', () => {
    // True TTFT: log-normal-ish with a heavy tail. A hedge at 1,200 ms whose backup answers in
    // 300 ms cancels the primary at 1,500 ms whenever it is still silent then, half the time.
    const rng = deriveRng(11, 'test/censoring');
    const grid = [500, 1000, 1500, 2000, 3000];
    const aware = profile(grid);
    const dropped = profile(grid);
    const truth = profile(grid);
    for (let i = 0; i < 4000; i++) {
      const u = Math.max(1e-12, rng.float());
      const ttft = Math.exp(6.7 + 0.8 * Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * rng.float()));
      truth.recordSuccess(ttft, i);
      if (ttft > 1500 && rng.float() < 0.5) {
        aware.recordCensored(1500, i);
      } else {
        aware.recordSuccess(ttft, i);
        dropped.recordSuccess(ttft, i);
      }
    }
    const now = 4000;
    const err = (p: LatencyProfile) => grid.reduce((a, x, k) => a + Math.abs(p.cdf(x, now) - truth.cdfAt(k)), 0);
    expect(err(aware)).toBeLessThan(err(dropped) / 3);
    // Mean: dropping cancelled attempts biases T̄ low; imputing them keeps it near the truth.
    const t = truth.meanMs(now)!;
    expect(Math.abs(aware.meanMs(now)! - t)).toBeLessThan(Math.abs(dropped.meanMs(now)! - t) / 3);
    expect(dropped.meanMs(now)!).toBeLessThan(t);
  });

  it('invariants hold over random observation sequences (fast-check)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.constantFrom('ok', 'err', 'cens'), fc.double({ min: 0, max: 5000, noNaN: true }), fc.integer({ min: 0, max: 300 })), { maxLength: 200 }),
        (ops) => {
          const p = profile([100, 1000, 2000, 3000], 5_000);
          let now = 0;
          for (const [kind, v, dt] of ops) {
            now += dt;
            if (kind === 'ok') p.recordSuccess(v, now);
            else if (kind === 'err') p.recordFailure(now);
            else p.recordCensored(v, now);
            p.invariants();
            let prev = 0;
            for (let k = 0; k < 4; k++) {
              const f = p.cdfAt(k);
              expect(f).toBeGreaterThanOrEqual(prev - 1e-12);
              expect(f).toBeLessThanOrEqual(1 + 1e-12);
              prev = f;
            }
          }
        },
      ),
      { numRuns: 100 },
    );
  });
});

describe('hedge checkpoints and probability', () => {
  it('S = 3 s: 27 checkpoints, 750 … 2,700 ms every 75 ms', () => {
    const cp = hedgeCheckpointsMs(3000);
    expect(cp).toHaveLength(27);
    expect(cp[0]).toBe(750);
    expect(cp[26]).toBe(2700);
    expect(cp).toEqual(Array.from({ length: 27 }, (_, k) => 750 + 75 * k));
    expect(() => hedgeCheckpointsMs(0)).toThrow(RangeError);
  });

  it('P on a known CDF (primary uniform on [0, 4 s], backup exponential with mean 200 ms)', () => {
    const Fp = (x: number) => Math.min(1, Math.max(0, x / 4000));
    const Fb = (x: number) => (x <= 0 ? 0 : 1 - Math.exp(-x / 200));
    const S = 3000;
    const t = 2700;
    const delta = 5;
    // [0.75 − 0.675]/0.325 + [0.25/0.325]·(1 − e^{−295/200})
    const expected = 0.075 / 0.325 + (0.25 / 0.325) * (1 - Math.exp(-295 / 200));
    expect(hedgeSuccessProbability(Fp(S), Fp(t), Fb(S - t - delta))).toBeCloseTo(expected, 12);
    expect(primaryOnlyProbability(Fp(S), Fp(t))).toBeCloseTo(0.075 / 0.325, 12);
    // Through a grid: the same value at the last checkpoint.
    const grid = new HedgeGrid(S, delta, hedgeCheckpointsMs(S));
    const p = grid.sourceFrom(Fp);
    const b = grid.sourceFrom(Fb);
    const k = 26;
    expect(hedgeSuccessProbability(p.cdfAt(grid.sloIndex), p.cdfAt(grid.checkpointIndex[k]!), b.cdfAt(grid.remainingIndex[k]!))).toBeCloseTo(expected, 12);
    // F_p(t) = 1: the primary term is 0 and P = F_b(S − t − δ).
    expect(hedgeSuccessProbability(1, 1, 0.4)).toBe(0.4);
  });

  it('grid points: the checkpoints, S, and S − t − δ, sorted and unique', () => {
    const grid = new HedgeGrid(3000, 5, hedgeCheckpointsMs(3000));
    expect(grid.pointsMs).toHaveLength(27 + 1 + 27);
    expect(grid.pointsMs[grid.sloIndex]).toBe(3000);
    expect(grid.pointsMs[grid.checkpointIndex[0]!]).toBe(750);
    expect(grid.pointsMs[grid.remainingIndex[0]!]).toBe(2245);
    expect(grid.pointsMs[grid.remainingIndex[26]!]).toBe(295);
    expect([...grid.pointsMs].sort((a, b) => a - b)).toEqual(grid.pointsMs);
  });
});

describe('latest-safe rule', () => {
  const S = 3000;
  const grid = new HedgeGrid(S, 5, hedgeCheckpointsMs(S));
  const step = (at: number) => (x: number) => (x >= at ? 1 : 0);
  const slowPrimary = grid.sourceFrom(step(10_000)); // never answers within S
  const backup = (endpointId: string, costUsd: number, ttftMs: number) => ({ endpointId, costUsd, cdf: grid.sourceFrom(step(ttftMs)) });

  it('sends the cheapest feasible backup at the latest checkpoint that has one', () => {
    // b-fast (500 ms) fits while S − t − 5 ≥ 500 ⇔ t ≤ 2,495 ⇒ latest checkpoint 2,475 ms.
    // b-cheap (1,000 ms) only fits at t ≤ 1,995 ⇒ 1,950 ms: later wins over cheaper.
    const plan = planHedge(grid, slowPrimary, [backup('b-cheap', 0, 1000), backup('b-fast', 1e-4, 500), backup('b-fast-dear', 2e-4, 500)], 0.99);
    expect(plan).toMatchObject({ kind: 'hedge', atMs: 2475, checkpoint: 23, endpointId: 'b-fast', backup: 1, probability: 1, primaryProbability: 0 });
    // Without the fast one, the cheap one at its own latest checkpoint.
    expect(planHedge(grid, slowPrimary, [backup('b-cheap', 0, 1000)], 0.99)).toMatchObject({ kind: 'hedge', atMs: 1950 });
    // Same TTFT, cost ties ⇒ endpoint id.
    expect(planHedge(grid, slowPrimary, [backup('z', 1, 500), backup('a', 1, 500)], 0.99)).toMatchObject({ endpointId: 'a' });
  });

  it('ρ decides feasibility: P just below ρ is not enough', () => {
    // Backup answers by 2,245 ms with probability 0.98 ⇒ never reaches ρ = 0.99 ⇒ no feasible backup.
    const b = { endpointId: 'b', costUsd: 0, cdf: grid.sourceFrom((x) => (x >= 100 ? 0.98 : 0)) };
    expect(planHedge(grid, slowPrimary, [b], 0.99)).toEqual({ kind: 'none', reason: 'no_feasible_backup' });
    expect(planHedge(grid, slowPrimary, [b], 0.98)).toMatchObject({ kind: 'hedge', atMs: 2700 });
  });

  it('no backup, or a primary already safe at the checkpoint ⇒ no hedge', () => {
    expect(planHedge(grid, slowPrimary, [], 0.99)).toEqual({ kind: 'none', reason: 'no_backup' });
    const fast = grid.sourceFrom((x) => Math.min(1, x / 2800)); // always answers by 2.8 s < S
    expect(planHedge(grid, fast, [backup('b', 0, 10_000)], 0.99)).toEqual({ kind: 'none', reason: 'primary_safe' });
  });

  it('a mixed primary: the plan waits until its own chance drops and a backup still fits', () => {
    // Primary: 70 % answer at 300 ms, the rest never within S. Backup: 800 ms.
    const primary = grid.sourceFrom((x) => (x >= 300 ? 0.7 : 0));
    const plan = planHedge(grid, primary, [backup('b', 0, 800)], 0.99);
    // S − t − 5 ≥ 800 ⇔ t ≤ 2,195 ⇒ 2,175 ms.
    expect(plan).toMatchObject({ kind: 'hedge', atMs: 2175, probability: 1, primaryProbability: 0 });
  });
});
