/**
 * Workload shaping that a trace does not carry: caller ids. Public traces have no caller, so an
 * experiment assigns one per session by a seeded Zipf draw over N callers (a few heavy callers,
 * a long tail — as API-key traffic usually looks). Never written back into the trace.
 */
import type { Rng } from '../core/rng.ts';
import { CALLER_ROLES, fnv1a64Hex, type CallerRole } from '../core/index.ts';

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

/**
 * The tier of each caller id (experiment `callers.roles`, seed 000): a hash of the id, uniform
 * in [0, 1), against the cumulative shares in tier order, so a caller keeps its tier across runs
 * and seeds and popularity (the Zipf rank) says nothing about it. Returns the role-prefixed ids
 * (`<role>:<id>`) and the roles, request by request.
 */
export function assignCallerRoles(callers: readonly string[], shares: Partial<Record<CallerRole, number>>): { callers: string[]; roles: CallerRole[] } {
  const byId = new Map<string, CallerRole>();
  const roleOf = (id: string): CallerRole => {
    let r = byId.get(id);
    if (r !== undefined) return r;
    const u = parseInt(fnv1a64Hex(id).slice(3), 16) / 2 ** 52; // the low 52 bits: FNV mixes a last character into them, not into the top ones
    let acc = 0;
    r = 'free';
    for (const role of CALLER_ROLES) {
      const share = shares[role] ?? 0;
      if (share === 0) continue;
      r = role;
      acc += share;
      if (u < acc) break;
    }
    byId.set(id, r);
    return r;
  };
  const roles = callers.map(roleOf);
  return { callers: callers.map((c, i) => `${roles[i]}:${c}`), roles };
}
