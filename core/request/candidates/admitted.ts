/**
 * The weight-and-admission stage of a `router:` model's candidate pipeline: the routes with
 * effective weight that every check gate admits and whose breaker admits (the seed's pure
 * `allow_request`), as the planner's candidate list; and, only when nothing is admitted, how
 * soon the first route refused by its Retry-After may be tried (the client's Retry-After).
 * Usually every route is admitted: then the model's own shared candidate array is returned and
 * nothing is allocated.
 */
import type { ResolvedModel, ResolvedRoute } from '../../model/resolved-model.ts';
import type { Candidate } from '../../strategies/planner.ts';
import type { Admission } from '../../admission/admission.ts';
import { ERROR_STATUS } from '../../lifecycle/errors.ts';

/**
 * The planner's candidates among `routes` (a subset of `model.routes` in their order) at `nowMs`,
 * leaving out `skipA` and `skipB` (a backlogged affinity pin, the offload route; null = none).
 * May be `model.candidates` itself: never mutate it.
 */
export function admittedCandidates(model: ResolvedModel, routes: readonly ResolvedRoute[], skipA: string | null, skipB: string | null, admission: Admission, nowMs: number): readonly Candidate[] {
  const all = model.candidates;
  const gates = admission.gates;
  let candidates: Candidate[] | null = null;
  let prefix = 0; // eligible routes while they match `all` one for one
  const open = admission.admitsEvery(nowMs); // usually: then no gate is asked per route
  for (const r of routes) {
    if (r.endpointId === skipA || r.endpointId === skipB || r.effectiveWeight <= 0) continue;
    if (!open && (admission.refusal(r, nowMs) !== null || !gates.breaker.admits(r, nowMs))) continue;
    if (candidates !== null) candidates.push(r.candidate);
    else if (all[prefix] === r.candidate) prefix++;
    else (candidates = all.slice(0, prefix)).push(r.candidate);
  }
  if (candidates === null && prefix < all.length) candidates = all.slice(0, prefix);
  return candidates ?? all;
}

/**
 * Ms until the soonest of the candidates `admittedCandidates` considered (same `routes`, skips
 * and `nowMs`) that its Retry-After alone left out may be tried; Infinity when none was.
 */
export function coolestRetryAfterMs(routes: readonly ResolvedRoute[], skipA: string | null, skipB: string | null, admission: Admission, nowMs: number): number {
  let coolestMs = Number.POSITIVE_INFINITY;
  for (const r of routes) {
    if (r.endpointId === skipA || r.endpointId === skipB || r.effectiveWeight <= 0) continue;
    const refused = admission.refusal(r, nowMs);
    if (refused === admission.gates.retryAfter) coolestMs = Math.min(coolestMs, refused.retryInMs(r, nowMs));
  }
  return coolestMs;
}

/** The error when no route of `model` among `routes` is admitted. */
export interface NoRouteError {
  readonly code: 'upstream_rate_limited' | 'all_circuits_open';
  readonly message: string;
  readonly status: number;
  readonly retryAfterSec: number | null;
}

/**
 * What the client is told when nothing is admitted: when routes are cooling after a Retry-After
 * (`coolestMs` finite), 429 — or 503 when the soonest one's hint came with a busy 503 — with a
 * Retry-After until then; otherwise every breaker is shut or an enforcing health check holds
 * the route out (named in the message): 503 with a Retry-After until the first breaker lets a
 * probe through.
 */
export function noAdmittedRoute(model: ResolvedModel, routes: readonly ResolvedRoute[], coolestMs: number, admission: Admission, nowMs: number): NoRouteError {
  if (coolestMs !== Number.POSITIVE_INFINITY) {
    const ra = admission.gates.retryAfter;
    let best = Number.POSITIVE_INFINITY;
    let status = 429;
    for (const r of routes) {
      const w = ra.retryInMs(r, nowMs);
      if (w > 0 && w < best) {
        best = w;
        status = ra.statusOf(r.endpointId);
      }
    }
    return {
      code: status === 429 ? 'upstream_rate_limited' : 'all_circuits_open',
      message: `every route of model '${model.id}' asked us to retry later`,
      status,
      retryAfterSec: Math.max(1, Math.ceil(coolestMs / 1000)),
    };
  }
  let reopenMs = Number.POSITIVE_INFINITY;
  for (const r of routes) if (r.effectiveWeight > 0) reopenMs = Math.min(reopenMs, admission.gates.breaker.retryInMs(r, nowMs));
  return {
    code: 'all_circuits_open',
    message: `no admitted route for model '${model.id}'; considered: ${routes.map((r) => (admission.gates.healthCheck.admits(r) ? r.endpointId : `${r.endpointId} (unhealthy: health_check_failed)`)).join(', ')}`,
    status: ERROR_STATUS.all_circuits_open,
    retryAfterSec: reopenMs > 0 && Number.isFinite(reopenMs) ? Math.max(1, Math.ceil(reopenMs / 1000)) : null,
  };
}
