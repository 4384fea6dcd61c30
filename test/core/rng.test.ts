import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { createRng, deriveRng } from '../../core/rng.ts';

const draws = (r: { float(): number }, n: number) => Array.from({ length: n }, () => r.float());

describe('seeded RNG streams', () => {
  it('same seed and purpose ⇒ same sequence', () => {
    fc.assert(fc.property(fc.integer(), fc.string(), (seed, purpose) => {
      expect(draws(deriveRng(seed, purpose), 8)).toEqual(draws(deriveRng(seed, purpose), 8));
    }));
  });
  it('different purposes or seeds ⇒ different sequences', () => {
    expect(draws(deriveRng(1, 'a'), 4)).not.toEqual(draws(deriveRng(1, 'b'), 4));
    expect(draws(deriveRng(1, 'a'), 4)).not.toEqual(draws(deriveRng(2, 'a'), 4));
  });
  it('draws are in [0,1) and int(n) in [0,n)', () => {
    const r = createRng(7);
    for (let i = 0; i < 10_000; i++) {
      const f = r.float();
      expect(f >= 0 && f < 1).toBe(true);
      const k = r.int(6);
      expect(Number.isInteger(k) && k >= 0 && k < 6).toBe(true);
    }
  });
  it('uniform enough: mean of 100k draws within 0.005 of 0.5', () => {
    const r = deriveRng(42, 'uniformity');
    let s = 0;
    for (let i = 0; i < 100_000; i++) s += r.float();
    expect(Math.abs(s / 100_000 - 0.5)).toBeLessThan(0.005);
  });
  it('rejects non-integer seeds', () => {
    expect(() => createRng(1.5)).toThrow(/integer/);
  });
});
