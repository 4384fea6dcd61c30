/**
 * What the shared state hears when an upstream attempt ends, the same for every model kind: the
 * breaker (its claim ended, or — for an attempt that took no claim, such as a pinned one or any
 * alias attempt — the outcome recorded), the endpoint marked degraded when our own credential was
 * refused (seed 000 "endpoint health"), and the planner's observation. An attempt that never left
 * its queue reached no upstream: only its claim, if any, is ended — except a key-pool refusal,
 * which is recorded like an upstream failure (counted unless role-restricted, seed 000).
 */
import type { DispatchClaim, HealthRegistry } from '../health/health-registry.ts';
import type { Outcome } from '../lifecycle/outcome.ts';
import type { ResolvedModel } from '../model/resolved-model.ts';

/**
 * Reports attempt to `endpointId` of `model` (null: unknown) ended with `outcome` at `nowMs`.
 * `sent`: it was dispatched upstream; `claim`: its breaker claim, or null. Ends `claim`
 * (exactly once: the caller's duty).
 */
export function reportAttemptOutcome(health: HealthRegistry, model: ResolvedModel | null, endpointId: string, claim: DispatchClaim | null, sent: boolean, outcome: Outcome, nowMs: number): void {
  if (claim) health.endDispatch(claim, outcome, nowMs);
  else if (sent || outcome.kind === 'key_pool_exhausted') health.recordUnadmitted(endpointId, outcome, nowMs);
  if (outcome.kind === 'http_status' && outcome.errorClass === 'auth_rejected') health.markDegraded(endpointId, nowMs);
  if (sent && model !== null && model.traits.observes) model.planner.observe!(endpointId, outcome, nowMs);
}
