/**
 * The session-affinity stage of a `router:` model's candidate pipeline (seed 000 "会话亲和"):
 * a valid pin of (caller, model) to an admitted endpoint is used and its TTL slides; a pin to an
 * endpoint that is no longer admitted (no weight, cooling, breaker shut, or the offload route) is
 * dropped and the planner draws afresh; a pin whose endpoint's prefill backlog exceeds
 * `prefillAffinityCeilingTokens` is bypassed for this request (the planner draws among the
 * others, and the new choice is pinned). Only planners that ask for affinity get this stage.
 */
import type { ResolvedModel, ResolvedRoute } from '../../model/resolved-model.ts';
import type { DispatchClaim } from '../../health/health-registry.ts';
import type { AffinityPin, AffinityTable } from '../../affinity/affinity-table.ts';
import type { PrefillLoad } from '../../prefill/prefill-load.ts';
import type { RoutingSettings } from '../../config/routing-settings.ts';
import type { Admission } from '../../admission/admission.ts';

/** The stage's answer. */
export type AffinityOutcome =
  /** No usable pin: the planner chooses. */
  | { readonly kind: 'none' }
  /**
   * The pin holds: send to `route` under `claim` (the pin's TTL has slid). One object reused by
   * every call (the hit is the common case of a returning caller and allocates nothing): read
   * it before the next call.
   */
  | { readonly kind: 'hit'; readonly route: ResolvedRoute; readonly claim: DispatchClaim }
  /** The pinned `route` is backlogged: draw among the others; use it only if nothing else is admitted. */
  | { readonly kind: 'bypass'; readonly route: ResolvedRoute; readonly pin: AffinityPin };

const NONE: AffinityOutcome = Object.freeze({ kind: 'none' });
const HIT: { kind: 'hit'; route: ResolvedRoute | null; claim: DispatchClaim | null } = { kind: 'hit', route: null, claim: null };

/** What the stage reads and updates. */
export interface AffinityDeps {
  readonly affinity: AffinityTable;
  readonly prefill: PrefillLoad;
  readonly settings: Readonly<RoutingSettings>;
}

/**
 * The prefill backlog of `endpointId` that the affinity ceiling compares, tokens: the whole
 * backlog (seed 000), less the caller's own requests still in prefill there when
 * `prefillAffinityExcludeOwn` is set (their leases are tracked only then).
 */
export function affinityBacklogTokens(deps: AffinityDeps, endpointId: string, callerId: string | null): number {
  const all = deps.prefill.backlogTokens(endpointId);
  return deps.settings.prefillAffinityExcludeOwn ? all - deps.prefill.callerBacklogTokens(endpointId, callerId) : all;
}

/** The route of `model` with `endpointId` if it is among `routes` (a subset of `model.routes`), else null. */
function routeAmong(model: ResolvedModel, routes: readonly ResolvedRoute[], endpointId: string): ResolvedRoute | null {
  const byId = model.routeById;
  if (byId === undefined) {
    for (const r of routes) if (r.endpointId === endpointId) return r;
    return null;
  }
  const r = byId.get(endpointId);
  return r !== undefined && (routes === model.routes || routes.includes(r)) ? r : null;
}

/** The route of `endpointId` among `routes` if it has weight and every gate and its breaker admit it now, else null. */
export function admittedRoute(model: ResolvedModel, routes: readonly ResolvedRoute[], endpointId: string, admission: Admission, nowMs: number): ResolvedRoute | null {
  const r = routeAmong(model, routes, endpointId);
  if (r === null || r.effectiveWeight <= 0) return null;
  if (admission.admitsEvery(nowMs)) return r; // nothing cooling, every breaker closed
  if (!admission.admits(r, nowMs)) return null;
  return admission.gates.breaker.admits(r, nowMs) ? r : null;
}

/**
 * Runs the stage for caller `key` (the affinity key) on `model` over `routes` (those that passed
 * the earlier stages) at `nowMs`; `offloadId` is the offload route's endpoint (never pinned to),
 * or null. Drops a pin that no longer holds; on a hit takes the breaker claim and slides the pin.
 */
export function affinityStage(deps: AffinityDeps, key: string, callerId: string | null, model: ResolvedModel, routes: readonly ResolvedRoute[], offloadId: string | null, admission: Admission, nowMs: number): AffinityOutcome {
  const pin = deps.affinity.lookup(key, model.id, nowMs);
  if (pin === null) return NONE;
  const route = pin.endpointId === offloadId ? null : admittedRoute(model, routes, pin.endpointId, admission, nowMs);
  if (route === null) {
    deps.affinity.dropIfPinnedTo(key, model.id, pin.endpointId); // no longer admissible
    return NONE;
  }
  // No backlog at all (the usual case for a returning caller) needs no look at its own share.
  const backlog = deps.prefill.backlogTokens(route.endpointId);
  if (backlog > 0 && affinityBacklogTokens(deps, route.endpointId, callerId) > deps.settings.prefillAffinityCeilingTokens) {
    return { kind: 'bypass', route, pin }; // backlogged: draw among the others, re-pin the choice
  }
  const claim = admission.gates.breaker.claim(route.endpointId, nowMs);
  if (claim) {
    deps.affinity.slide(pin, nowMs);
    HIT.route = route;
    HIT.claim = claim;
    return HIT as AffinityOutcome;
  }
  deps.affinity.dropIfPinnedTo(key, model.id, pin.endpointId);
  return NONE;
}
