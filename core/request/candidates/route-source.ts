/**
 * The candidate source of a `router:` model (seed 000 "how FixedRouter picks an endpoint"): the
 * model's own routes through the candidate stages — published and non-empty (else 404) →
 * endpoint family (else 400) → modality → context-window floor → explicit pin (no fallback, no
 * affinity) → the conversation's own route when admitted (`RouteRequest.preferEndpointId`) → session affinity when the planner asks for it (`affinity.ts`) → weight and
 * admission (`admitted.ts`) → the planner's pick (prefill-aware for `fixed`). Every fresh primary
 * choice is pinned for affinity. The offload route (`../offloading.ts`) is never the primary
 * while another route is admissible; nothing admitted → 429/503 (`admitted.ts`).
 *
 * It also keeps the request's per-route state the family's attempt policy (`../router-policy.ts`)
 * reads: the routes that passed the stages (fallback walks these in declaration order), the
 * context floor after a refusal, the affinity key, the offload and hedge plans, prefill leases.
 */
import type { ResolvedModel, ResolvedRoute } from '../../model/resolved-model.ts';
import type { LifecycleAction } from '../../lifecycle/seam.ts';
import { ANONYMOUS_AFFINITY_KEY } from '../../affinity/affinity-key.ts';
import { OffloadPlan } from '../policy/offload.ts';
import { HedgePlan } from '../policy/hedge.ts';
import type { FullDeps } from '../router-deps.ts';
import type { Life } from '../life.ts';
import type { CandidateSource } from '../family.ts';
import { startOffload } from '../offloading.ts';
import type { RouteRequest } from '../../lifecycle/seam.ts';
import { acceptsModalities, routesAccepting } from './modality.ts';
import { noRouteServesMessage, routesServing, servesFamily } from './endpoint-family.ts';
import { admittedRoute, affinityStage, type AffinityOutcome } from './affinity.ts';
import { admittedCandidates, coolestRetryAfterMs, noAdmittedRoute } from './admitted.ts';
import { contextNeedTokens, fitsWindow, noWindowFitsMessage, routesFitting } from './context-floor.ts';

/**
 * Shared plans for the usual request: no offload policy, no hedge order. Neither is ever
 * mutated (every mutating call needs a policy or an order first), so one instance serves all.
 */
const NO_OFFLOAD = new OffloadPlan(null);
const NO_HEDGE = new HedgePlan();
/** The eligible routes before selection ran: shared, never written. */
const NO_ROUTES: readonly ResolvedRoute[] = Object.freeze([]);

/** One `router:` request's candidates and per-route state. */
export class RouteSource implements CandidateSource<Life<RouteSource>> {
  /** Routes that passed the endpoint-family, modality and context-window stages. */
  eligibleRoutes: readonly ResolvedRoute[] = NO_ROUTES;
  /** After a context-length rejection: routes need a `context_length` above this. */
  contextFloor: number | null = null;
  /** The caller key when affinity applies to this request, else null. */
  affinityKey: string | null = null;
  /** Queue-wait offload of this request (`../policy/offload.ts`). */
  readonly offload: OffloadPlan;
  /** The offload route's endpoint id when the policy is active (it is never primary then). */
  readonly offloadId: string | null;
  /** Engine-hold queue limit of this request's attempts (streams of an offload model), or null. */
  readonly holdLimit: number | null;
  /** The planner's hedge order for the primary (`../policy/hedge.ts`); the shared empty plan until one is made. */
  hedge: HedgePlan = NO_HEDGE;
  leasesTaken = 0;
  leasesReleased = 0;

  constructor(
    readonly deps: FullDeps,
    model: ResolvedModel | null,
    stream: boolean,
  ) {
    const active = model?.offload?.active === true;
    this.offload = active ? new OffloadPlan(model) : NO_OFFLOAD;
    this.offloadId = this.offload.endpointId;
    this.holdLimit = active && stream ? model!.offload!.engineQueueLimit : null;
  }

  begin(life: Life<RouteSource>, nowMs: number): LifecycleAction[] {
    const model = life.model;
    const request = life.request;
    if (!model || !model.published || model.routes.length === 0) {
      return life.fail('model_not_found', `model '${request.model}' does not exist or has no published routes`, nowMs);
    }
    // Endpoint-family stage, then modality: usually every route passes both, and `modal` is
    // the route list itself.
    const family = request.endpoint;
    const serving = routesServing(model.routes, family);
    if (serving.length === 0) return life.fail('endpoint_not_served', noRouteServesMessage(model.id, family!, 'route'), nowMs);
    let modal = request.modalities.length === 0 && model.textRoutes === true ? serving : routesAccepting(serving, request.modalities);
    if (modal.length === 0) {
      return life.fail('modality_not_supported', `No route of model '${model.id}' accepts ${request.modalities.join(' or ')} input; send text only, or use a model whose routes list ${request.modalities.join(', ')} in input_modalities.`, nowMs);
    }
    // Context-window stage (`context-floor.ts`). Usually every route fits: nothing allocated.
    if (model.windowless !== true) {
      const need = contextNeedTokens(request);
      const fit = routesFitting(modal, need);
      if (fit.length === 0) return life.fail('context_length_exceeded', noWindowFitsMessage(model.id, need, modal.map((r) => r.contextLength)), nowMs);
      modal = fit;
    }
    this.eligibleRoutes = modal;
    // The overall deadline's `wait_until` goes last, after the first attempt's actions.
    const out: LifecycleAction[] = [];
    life.setOverall(nowMs);
    const admission = this.deps.admission;
    if (request.pin !== null) {
      const pin = request.pin;
      const route = modal.find((r) => r.endpointId === pin || r.provider === pin);
      if (!route) {
        return life.fail('route_pin_not_found', `X-Route-Pin '${pin}' matches no route of model '${model.id}'; routes: ${modal.map((r) => r.endpointId).join(', ')}`, nowMs);
      }
      life.pinned = true;
      life.reason = 'pin';
      return life.withOverall(life.startAttempt(route, null, null, 'pinned', nowMs, out));
    }
    this.offload.consider(modal, request.inputTokens);
    // The conversation's own route (a Responses follow-up), before affinity and the planner,
    // when it is admitted now; the usual fallback follows a failure there.
    const preferId = request.preferEndpointId;
    if (preferId !== undefined && preferId !== null && preferId !== this.offloadId) {
      const route = admittedRoute(model, modal, preferId, admission, nowMs);
      const claim = route === null ? null : admission.gates.breaker.claim(route.endpointId, nowMs);
      if (route !== null && claim) {
        life.reason = 'conversation';
        return life.withOverall(life.startAttempt(route, null, claim, 'normal', nowMs, out));
      }
    }
    // Session affinity first: a hit needs only its own endpoint's admission, not the full
    // candidate list (the common case for a returning caller).
    let bypass: Extract<AffinityOutcome, { kind: 'bypass' }> | null = null;
    if (model.traits.sessionAffinity) {
      const key = request.callerId ?? ANONYMOUS_AFFINITY_KEY;
      this.affinityKey = key;
      const hit = affinityStage(this.deps, key, request.callerId, model, modal, this.offloadId, admission, nowMs);
      if (hit.kind === 'hit') {
        const { route, claim } = hit; // the stage's reused answer: read it now
        life.reason = 'affinity';
        return life.withOverall(life.startAttempt(route, null, claim, 'normal', nowMs, out));
      }
      if (hit.kind === 'bypass') bypass = hit;
    }
    const bypassed = bypass?.route.endpointId ?? null;
    let eligible = admittedCandidates(model, modal, bypassed, this.offloadId, admission, nowMs);
    if (bypass !== null && eligible.length === 0) {
      // Nowhere else to go: a backlogged pin still beats a rejection (never blocks or rejects).
      const claim = admission.gates.breaker.claim(bypass.route.endpointId, nowMs);
      if (claim) {
        this.deps.affinity.slide(bypass.pin, nowMs);
        life.reason = 'affinity';
        return life.withOverall(life.startAttempt(bypass.route, null, claim, 'normal', nowMs, out));
      }
    }
    // A planner pick whose claim is refused is dropped and the planner asked again. In a
    // single-threaded core allowRequest and beginDispatch agree, so this loop runs once.
    while (eligible.length > 0) {
      const pick = model.planner.pick(eligible, request, nowMs, life.rng);
      const route = model.routes[eligible[pick.candidate]!.routeIndex]!;
      const claim = admission.gates.breaker.claim(route.endpointId, nowMs);
      if (claim) {
        life.reason = bypassed !== null ? 'affinity_ceiling' : pick.reason;
        if (this.affinityKey !== null) this.deps.affinity.pin(this.affinityKey, model.id, route.endpointId, nowMs);
        if (pick.hedge && request.singleRoute !== true) {
          this.hedge = new HedgePlan();
          this.hedge.plan(pick.hedge, life.nextAttemptId); // the attempt started next; armed at its dispatch
        }
        return life.withOverall(life.startAttempt(route, null, claim, 'normal', nowMs, out));
      }
      eligible = eligible.filter((_, i) => i !== pick.candidate); // a copy: `model.candidates` is shared
    }
    // No other route is admissible: the offload route is the primary (seed: "兜底").
    if (startOffload(life, 'last_resort', nowMs, out)) {
      life.reason = 'offload';
      return life.withOverall(out);
    }
    // Nothing admitted: cooling after Retry-After (429/503 with the hint) or every breaker shut.
    const coolestMs = coolestRetryAfterMs(modal, bypassed, this.offloadId, admission, nowMs);
    const e = noAdmittedRoute(model, modal, coolestMs, admission, nowMs);
    return life.fail(e.code, e.message, nowMs, e.status, e.retryAfterSec);
  }

  /** Weight, endpoint-family, modality, context-floor and check-gate admission of a fallback or hedge route. */
  usable(r: ResolvedRoute, request: RouteRequest, nowMs: number): boolean {
    if (r.effectiveWeight <= 0 || !servesFamily(r, request.endpoint) || !acceptsModalities(r, request.modalities)) return false;
    if (!fitsWindow(r.contextLength, 0, this.contextFloor)) return false;
    return this.deps.admission.admits(r, nowMs);
  }
}
