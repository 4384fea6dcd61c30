/**
 * Common random numbers (CRN) for paired comparisons: draws keyed by *what they are about*
 * instead of by the order they are asked for.
 *
 * A sequential stream (core/rng.ts) hands out its n-th draw to whoever asks n-th, so two
 * strategies that dispatch in different orders would see different provider latencies and fault
 * draws for the same request — the noise that paired comparisons are meant to cancel. A keyed
 * draw is a pure function of (stream base, keys): request 17's first try at provider `p` gets the
 * same TTFT draw under every strategy. This is the counter-based idea of Salmon et al., "Parallel
 * random numbers: as easy as 1, 2, 3" (SC 2011, Philox/Threefry), with a cheaper mixer: the
 * murmur3 32-bit finaliser applied once per key word. The base comes from the one seeded stream
 * per purpose (`deriveRng(seed, purpose)`), so the project rule "one stream per purpose" holds.
 */
import { deriveRng } from '../core/rng.ts';

/** murmur3 fmix32: a bijective avalanche of a 32-bit word. */
function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/**
 * The base of a keyed stream: one 32-bit word drawn from `deriveRng(seed, purpose)`.
 * Same (seed, purpose) ⇒ same base. @throws RangeError when `seed` is not an integer.
 */
export function keyedBase(seed: number, purpose: string): number {
  return deriveRng(seed, purpose).int(0x1_0000_0000) >>> 0;
}

/**
 * A uniform draw in [0, 1) with 53 bits, a pure function of `base` and three integer keys
 * (each taken modulo 2^32). Different keys give statistically independent draws.
 */
export function keyedUniform(base: number, k1: number, k2: number, k3: number): number {
  let h = fmix32(base ^ 0x9e3779b9);
  h = fmix32(h ^ (k1 >>> 0));
  h = fmix32((h + 0x7f4a7c15) ^ (k2 >>> 0));
  h = fmix32((h + 0x6a09e667) ^ (k3 >>> 0));
  const hi = fmix32(h ^ 0xbb67ae85) >>> 5; // 27 bits
  const lo = fmix32(h ^ 0x3c6ef372) >>> 6; // 26 bits
  return (hi * 67_108_864 + lo) / 9_007_199_254_740_992;
}
