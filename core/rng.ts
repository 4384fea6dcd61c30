/**
 * Seeded randomness for the routing core and the simulator.
 *
 * Nothing in Switchyard calls `Math.random`: the caller owns one root seed and derives one
 * independent stream per purpose (workload, faults, each strategy), so that adding a draw in one
 * place never shifts the draws of another (TigerBeetle VOPR, FoundationDB `IRandom`).
 * Generator: xoroshiro128+ from pure-rand; stream seeds are mixed with splitmix32 over an
 * FNV-1a hash of the purpose name.
 */
import { xoroshiro128plus } from 'pure-rand/generator/xoroshiro128plus';
import { uniformFloat64 } from 'pure-rand/distribution/uniformFloat64';

/** A mutable stream of uniform draws. Owned by exactly one consumer. */
export interface Rng {
  /** Next uniform draw in [0, 1), 53 bits of randomness. */
  float(): number;
  /** Next integer in [0, n) for an integer n ≥ 1. */
  int(n: number): number;
}

/** FNV-1a, 32 bit, over the UTF-16 code units of `s`. Stable across platforms. */
function fnv1a32(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** splitmix32 finaliser: spreads nearby seeds apart. */
function mix32(x: number): number {
  let z = (x + 0x9e3779b9) | 0;
  z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
  z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
  return (z ^ (z >>> 16)) >>> 0;
}

/**
 * A stream seeded directly by `seed` (an integer; only the low 32 bits are used).
 * @throws RangeError when `seed` is not a finite integer.
 */
export function createRng(seed: number): Rng {
  if (!Number.isInteger(seed)) throw new RangeError(`seed must be an integer, got ${seed}`);
  const g = xoroshiro128plus(seed | 0);
  return {
    float: () => uniformFloat64(g),
    int: (n: number) => Math.floor(uniformFloat64(g) * n),
  };
}

/**
 * The stream for one purpose under a root seed, e.g. `deriveRng(42, 'strategy/fixed')`.
 * Same (rootSeed, purpose) ⇒ same sequence; different purposes are statistically independent.
 * @throws RangeError when `rootSeed` is not a finite integer.
 */
export function deriveRng(rootSeed: number, purpose: string): Rng {
  if (!Number.isInteger(rootSeed)) throw new RangeError(`seed must be an integer, got ${rootSeed}`);
  return createRng(mix32((rootSeed | 0) ^ mix32(fnv1a32(purpose))) | 0);
}
