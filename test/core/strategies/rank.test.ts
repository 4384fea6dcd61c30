// The scoring strategies' shared helpers: argMin's tie draw (one draw, and only on a tie) agrees
// with rankBy's first place for the same stream.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { deriveRng, type Rng } from '../../../core/rng.ts';
import { argMin, rankBy } from '../../../core/strategies/rank.ts';

/** An rng that counts its draws. */
function counted(seed: number): Rng & { draws: number } {
  const inner = deriveRng(seed, 'rank');
  const r = { draws: 0, float: () => (r.draws++, inner.float()), int: (n: number) => (r.draws++, inner.int(n)) };
  return r;
}

const id = (x: number) => x;

describe('argMin', () => {
  it('a unique minimum draws nothing; without rng ties go to the first', () => {
    const rng = counted(1);
    expect(argMin([3, 1, 2], id, rng)).toBe(1);
    expect(rng.draws).toBe(0);
    expect(argMin([2, 1, 1, 1], id)).toBe(1);
  });

  it('a tie of k draws once, rng.int(k), and takes the j-th tied index', () => {
    const rng = counted(5);
    const j = deriveRng(5, 'rank').int(3);
    expect(argMin([4, 0, 9, 0, 0, 7], id, rng)).toBe([1, 3, 4][j]);
    expect(rng.draws).toBe(1);
  });

  it('grows past its scratch size (more candidates than the buffer holds)', () => {
    const scores = Array.from({ length: 100 }, () => 0);
    const picks = new Set(Array.from({ length: 200 }, (_, s) => argMin(scores, id, deriveRng(s, 'grow'))));
    expect(Math.max(...picks)).toBeGreaterThan(31);
  });

  it('equals rankBy(...)[0] for the same stream, and consumes the same first draw', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 3 }), { minLength: 1, maxLength: 40 }), fc.integer(), (scores, seed) => {
        const a = deriveRng(seed, 'p');
        const b = deriveRng(seed, 'p');
        const pick = argMin(scores, id, a);
        const order = rankBy(scores, id, b);
        expect(order[0]).toBe(pick);
        expect(Math.min(...scores)).toBe(scores[pick]);
        expect([...order].sort((x, y) => x - y)).toEqual(scores.map((_, i) => i));
      }),
    );
  });
});
