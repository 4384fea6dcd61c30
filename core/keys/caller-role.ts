/**
 * Caller roles (seed 000 "为某个层级预留上游 key"): every caller of the gateway has one of four
 * ordered tiers, `free` < `pro` < `internal` < `admin`. A provider key's `min_role` names the
 * lowest tier whose requests may use it; `free` means "not reserved". The gateway's own traffic
 * (health probes, warm-up, verifications) carries no role at all: it is *unrestricted* and sees
 * every key, because reservations are aimed at the lower tiers, not at the gateway's machinery.
 */

/** The tiers, lowest first. */
export const CALLER_ROLES = ['free', 'pro', 'internal', 'admin'] as const;

/** One tier of `CALLER_ROLES`. */
export type CallerRole = (typeof CALLER_ROLES)[number];

/** A request's role as a key pool reads it: a tier, or null for the gateway's own (unrestricted) traffic. */
export type RequestRole = CallerRole | null;

/** The tier's rank, 0 (`free`) to 3 (`admin`). */
export function roleRank(role: CallerRole): number {
  return CALLER_ROLES.indexOf(role);
}

/** Whether a request with `role` may use a key reserved for `minRole` and above (null role: always). */
export function roleMeets(role: RequestRole, minRole: CallerRole): boolean {
  return role === null || roleRank(role) >= roleRank(minRole);
}

/** The stricter (higher) of two reservations: duplicate declarations resolve to it, in any order. */
export function stricterRole(a: CallerRole, b: CallerRole): CallerRole {
  return roleRank(a) >= roleRank(b) ? a : b;
}
