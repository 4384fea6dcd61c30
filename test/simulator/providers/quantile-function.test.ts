// The fitted provider latency distributions reproduce the published quantiles: exactly at the
// knots, and within 5 % in samples drawn through the keyed streams the simulator uses.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { keyedBase, keyedUniform } from '../../../simulator/crn.ts';
import { fitQuantileFunction, normalQuantile } from '../../../simulator/providers/quantile-function.ts';
import { loadProfileFile } from '../../../simulator/providers/provider-profile.ts';

const M25 = ['minimax-m2.5-openrouter', 'minimax-m2.5-subscriptions'];

function fitOf(t: { n_samples: number; p50_ms: number; p90_ms: number; p99_ms: number; max_ms: number }) {
  return fitQuantileFunction({ quantiles: [{ p: 0.5, ms: t.p50_ms }, { p: 0.9, ms: t.p90_ms }, { p: 0.99, ms: t.p99_ms }], n: t.n_samples, maxMs: t.max_ms });
}

function sortedQuantile(sorted: Float64Array, p: number): number {
  const h = (sorted.length - 1) * p;
  const lo = Math.floor(h);
  return sorted[lo]! + (h - lo) * (sorted[Math.min(lo + 1, sorted.length - 1)]! - sorted[lo]!);
}

describe('normalQuantile', () => {
  it('matches tabulated values of the standard normal', () => {
    expect(normalQuantile(0.5)).toBeCloseTo(0, 12);
    expect(normalQuantile(0.975)).toBeCloseTo(1.959963985, 8);
    expect(normalQuantile(0.9)).toBeCloseTo(1.281551566, 8);
    expect(normalQuantile(0.99)).toBeCloseTo(2.326347874, 8);
    expect(normalQuantile(0.001)).toBeCloseTo(-3.090232306, 8);
    expect(() => normalQuantile(1)).toThrow(RangeError);
  });
});

describe('fitted MiniMax-M2.5 provider TTFTs', () => {
  const providers = M25.flatMap((file) => Object.entries(loadProfileFile(file).providers).map(([name, p]) => ({ name: `${file}/${name}`, ttft: p.ttft })));

  it('covers the 16 OpenRouter hosts and the 3 subscription plans', () => {
    expect(providers).toHaveLength(19);
  });

  it.each(providers)('$name: fitted p50/p90/p99 within 5 % of the published ones, exactly and in 200,000 draws', ({ name, ttft }) => {
    const fit = fitOf(ttft);
    const given = [
      [0.5, ttft.p50_ms],
      [0.9, ttft.p90_ms],
      [0.99, ttft.p99_ms],
    ] as const;
    for (const [p, ms] of given) expect(Math.abs(fit.quantile(p) / ms - 1)).toBeLessThan(1e-9);
    const base = keyedBase(1, `provider/${name}`);
    const n = 200_000;
    const draws = new Float64Array(n);
    for (let i = 0; i < n; i++) draws[i] = fit.quantile(keyedUniform(base, i, 0, 0));
    draws.sort();
    for (const [p, ms] of given) expect(Math.abs(sortedQuantile(draws, p) / ms - 1)).toBeLessThan(0.05);
    // The support ends at the observed maximum (a named truncation, not an extrapolation).
    expect(draws[n - 1]!).toBeLessThanOrEqual(ttft.max_ms);
  });

  it.each(providers)('$name: the mean, which the fit does not use, comes out within 10 % of the published mean', ({ ttft }) => {
    expect(Math.abs(fitOf(ttft).mean() / ttft.mean_ms - 1)).toBeLessThan(0.1);
  });
});

describe('fitQuantileFunction', () => {
  const knots = fc
    .uniqueArray(fc.double({ min: 0.01, max: 0.99, noNaN: true }), { minLength: 2, maxLength: 5, comparator: (a, b) => Math.abs(a - b) < 1e-3 })
    .chain((ps) => fc.array(fc.double({ min: 1, max: 1e5, noNaN: true }), { minLength: ps.length, maxLength: ps.length }).map((xs) => {
      const p = [...ps].sort((a, b) => a - b);
      const x = [...xs].sort((a, b) => a - b);
      return p.map((pp, i) => ({ p: pp, ms: x[i]! }));
    }));

  it('passes through every knot and is non-decreasing in u (property)', () => {
    fc.assert(
      fc.property(knots, fc.array(fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), { minLength: 2, maxLength: 30 }), (qs, us) => {
        const fit = fitQuantileFunction({ quantiles: qs });
        for (const k of qs) expect(Math.abs(fit.quantile(k.p) / k.ms - 1)).toBeLessThan(1e-9);
        const sorted = [...us].sort((a, b) => a - b);
        for (let i = 1; i < sorted.length; i++) expect(fit.quantile(sorted[i]!)).toBeGreaterThanOrEqual(fit.quantile(sorted[i - 1]!) * (1 - 1e-12));
      }),
    );
  });

  it('is a log-normal through two quantiles', () => {
    const fit = fitQuantileFunction({ quantiles: [{ p: 0.5, ms: 20 }, { p: 0.9, ms: 40 }] });
    const sigma = Math.log(2) / normalQuantile(0.9);
    expect(fit.quantile(0.1)).toBeCloseTo(20 * Math.exp(-sigma * normalQuantile(0.9)), 9);
    expect(fit.mean()).toBeCloseTo(20 * Math.exp((sigma * sigma) / 2), 1);
  });

  it('rejects bad summaries, naming them', () => {
    expect(() => fitQuantileFunction({ quantiles: [{ p: 0.5, ms: 10 }] }, 'x ttft')).toThrow(/x ttft: needs at least two/);
    expect(() => fitQuantileFunction({ quantiles: [{ p: 0.5, ms: 10 }, { p: 0.9, ms: 5 }] }, 'x ttft')).toThrow(/x ttft: p90 .* below p50/);
    expect(() => fitQuantileFunction({ quantiles: [{ p: 0.5, ms: 10 }, { p: 0.9, ms: 20 }], n: 100, maxMs: 15 }, 'x')).toThrow(/max/);
  });
});
