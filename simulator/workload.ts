/**
 * Workload shaping that a trace does not carry: caller ids. Public traces have no caller, so an
 * experiment assigns one per session by a seeded Zipf draw over N callers (a few heavy callers,
 * a long tail — as API-key traffic usually looks). Never written back into the trace.
 */
import type { Rng } from '../core/rng.ts';

/**
 * A sampler of Zipf(s) ranks 0..n-1: P(k) ∝ 1/(k+1)^s. Precomputes the CDF (O(n)); each draw is
 * one uniform and a binary search.
 * @throws RangeError when n < 1 or s < 0.
 */
export function zipfSampler(n: number, s: number): (rng: Rng) => number {
  if (!Number.isInteger(n) || n < 1) throw new RangeError(`callers.count must be an integer ≥ 1, got ${n}`);
  if (!(s >= 0)) throw new RangeError(`callers.zipf_s must be ≥ 0, got ${s}`);
  const cdf = new Float64Array(n);
  let acc = 0;
  for (let k = 0; k < n; k++) cdf[k] = acc += 1 / Math.pow(k + 1, s);
  for (let k = 0; k < n; k++) cdf[k]! /= acc;
  return (rng) => {
    const u = rng.float();
    let lo = 0;
    let hi = n - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cdf[mid]! > u) hi = mid;
      else lo = mid + 1;
    }
    return lo;
  };
}

/**
 * Assigns a caller id (`caller-K`) to each request: all requests of a session share the
 * session's caller; a request without a session gets its own draw. Draws happen in request
 * order, so the same rng seed gives the same assignment.
 */
export function assignCallers(sessionIds: readonly (string | null)[], n: number, s: number, rng: Rng): string[] {
  const draw = zipfSampler(n, s);
  const bySession = new Map<string, string>();
  return sessionIds.map((sid) => {
    if (sid === null) return `caller-${draw(rng)}`;
    let c = bySession.get(sid);
    if (c === undefined) {
      c = `caller-${draw(rng)}`;
      bySession.set(sid, c);
    }
    return c;
  });
}
