/**
 * The life of one request under a per-model (`router:`) router: the pipeline and fallback plan of
 * seed 000 ("how FixedRouter picks an endpoint", "fallback") as a state machine, composed of the
 * parts every model kind shares (`request/request-life.ts` picks it).
 *
 * Candidate stages (`request/candidates/`): published and non-empty routes (else 404) →
 * endpoint family (else 400) → modality → context-window floor → explicit pin (no fallback, no affinity) → session affinity
 * when the planner asks for it (`affinity.ts`) → weight and admission (`admitted.ts`) → the
 * planner's pick (prefill-aware for `fixed`). Every fresh primary choice is pinned; a failure on
 * the pinned endpoint drops the pin (cancellation and client disconnects are not its failures).
 * Fallback: the remaining routes in declaration order, skipping weight 0, routes refused by a
 * gate or whose breaker gives no claim; if all fail the client gets the primary's error.
 * Request-scoped errors (the family's failure rule, `policy/failure-rule.ts`, over
 * `lifecycle/outcome-table.ts`) go straight back; a committed stream never falls back.
 *
 * Admission (`admission/`): every attempt asks the check gates (Retry-After), claims the breaker
 * (one half-open probe), and queues for an outbound slot (non-local routes, adaptive per provider
 * key) or an engine-hold place (local engines of a model with an `engine_queue_limit`), then is
 * *sent* (`dispatch`). Attempt policy (`request/policy/`): commit at the first content token
 * (`commit.ts`); deadlines from the router family's waits (`attempt-deadlines.ts`,
 * `kind-policy.ts`): overall, queue give-up, headers, non-stream total, stream idle, engine wait;
 * offload (`offload.ts`): the offload route is never primary while another route is admissible,
 * a queue give-up or engine-wait expiry moves to it (at most once), then the remaining routes,
 * then the interrupted route once more; hedging (`hedge.ts`): the planner's backup races a slow
 * primary, the first token commits and cancels the other (`hedge_lost`).
 *
 * The life (its attempt ledger, `router-attempts.ts`) owns every dispatch claim, prefill lease,
 * outbound slot and hold place it takes and ends each exactly once on every path: a lease at the
 * attempt's first token or its end; a hold place at the first output or the end; a slot and a
 * claim at the attempt's end.
 */
import type { ResolvedRoute } from '../model/resolved-model.ts';
import type { Outcome } from '../lifecycle/outcome.ts';
import { acceptsModalities, routesAccepting } from './candidates/modality.ts';
import { noRouteServesMessage, routesServing, servesFamily } from './candidates/endpoint-family.ts';
import { affinityStage, type AffinityOutcome } from './candidates/affinity.ts';
import { admittedCandidates, coolestRetryAfterMs, noAdmittedRoute } from './candidates/admitted.ts';
import { contextNeedTokens, fitsWindow, noWindowFitsMessage, refusalFloorTokens, routesFitting } from './candidates/context-floor.ts';
import type { LifecycleAction, LifecycleEvent, RequestLife } from '../lifecycle/seam.ts';
import { ANONYMOUS_AFFINITY_KEY } from '../affinity/affinity-key.ts';
import { HedgePlan } from './policy/hedge.ts';
import type { OffloadReason } from './policy/offload.ts';
import { commitsAt } from './policy/commit.ts';
import { failureClassOf, failureStep } from './policy/failure-rule.ts';
import { deadlineAttempt, deadlineKind } from './deadline-book.ts';
import { idleDeadlineFired, recordStreamChunk } from './policy/stream-idle.ts';
import { NEUTRAL, OK, RouterAttempts, TIMEOUT, type LiveAttempt } from './router-attempts.ts';

export type { LifecycleDeps } from './router-deps.ts';
export type { OffloadReason } from './policy/offload.ts';

/** Implementation of `RequestLife` for per-model routers. Created by `RoutingCore.start`. */
export class RequestLifecycle extends RouterAttempts implements RequestLife {
  begin(nowMs: number): LifecycleAction[] {
    const model = this.model;
    if (!model || !model.published || model.routes.length === 0) {
      return this.fail('model_not_found', `model '${this.request.model}' does not exist or has no published routes`, nowMs);
    }
    // Endpoint-family stage, then modality: usually every route passes both, and `modal` is
    // the route list itself.
    const family = this.request.endpoint;
    const serving = routesServing(model.routes, family);
    if (serving.length === 0) return this.fail('endpoint_not_served', noRouteServesMessage(model.id, family!, 'route'), nowMs);
    let modal = routesAccepting(serving, this.request.modalities);
    if (modal.length === 0) {
      return this.fail(
        'all_circuits_open',
        `no route of model '${model.id}' accepts input modalities: ${this.request.modalities.join(', ')}`,
        nowMs,
      );
    }
    // Context-window stage (`context-floor.ts`). Usually every route fits: nothing allocated.
    const need = contextNeedTokens(this.request);
    const fit = routesFitting(modal, need);
    if (fit.length === 0) return this.fail('context_length_exceeded', noWindowFitsMessage(model.id, need, modal.map((r) => r.contextLength)), nowMs);
    modal = fit;
    this.eligibleRoutes = modal;
    // The overall deadline's `wait_until` goes last, after the first attempt's actions.
    const out: LifecycleAction[] = [];
    this.overallAtMs = nowMs + this.deps.settings.overallDeadlineSec * 1000;
    if (this.request.pin !== null) {
      const pin = this.request.pin;
      const route = modal.find((r) => r.endpointId === pin || r.provider === pin);
      if (!route) {
        return this.fail(
          'route_pin_not_found',
          `X-Route-Pin '${pin}' matches no route of model '${model.id}'; routes: ${modal.map((r) => r.endpointId).join(', ')}`,
          nowMs,
        );
      }
      this.pinned = true;
      this.reason = 'pin';
      this.startAttempt(route, null, 'pinned', nowMs, out);
      return this.withOverall(out);
    }
    this.offload.consider(modal, this.request.inputTokens);
    // Session affinity first: a hit needs only its own endpoint's admission, not the full
    // candidate list (the common case for a returning caller).
    let bypass: Extract<AffinityOutcome, { kind: 'bypass' }> | null = null;
    if (model.planner.sessionAffinity === true) {
      const key = this.request.callerId ?? ANONYMOUS_AFFINITY_KEY;
      this.affinityKey = key;
      const hit = affinityStage(this.deps, key, this.request.callerId, model.id, modal, this.offloadId, this.admission, nowMs);
      if (hit.kind === 'hit') {
        this.reason = 'affinity';
        this.startAttempt(hit.route, hit.claim, 'normal', nowMs, out);
        return this.withOverall(out);
      }
      if (hit.kind === 'bypass') bypass = hit;
    }
    const bypassed = bypass?.route.endpointId ?? null;
    let eligible = admittedCandidates(model, modal, bypassed, this.offloadId, this.admission, nowMs);
    if (bypass !== null && eligible.length === 0) {
      // Nowhere else to go: a backlogged pin still beats a rejection (never blocks or rejects).
      const route = bypass.route;
      const claim = this.admission.gates.breaker.claim(route.endpointId, nowMs);
      if (claim) {
        this.deps.affinity.slide(bypass.pin, nowMs);
        this.reason = 'affinity';
        this.startAttempt(route, claim, 'normal', nowMs, out);
        return this.withOverall(out);
      }
    }
    // A planner pick whose claim is refused is dropped and the planner asked again. In a
    // single-threaded core allowRequest and beginDispatch agree, so this loop runs once.
    while (eligible.length > 0) {
      const pick = model.planner.pick(eligible, this.request, nowMs, this.rng);
      const chosen = eligible[pick.candidate]!;
      const route = model.routes[chosen.routeIndex]!;
      const claim = this.admission.gates.breaker.claim(route.endpointId, nowMs);
      if (claim) {
        this.reason = bypassed !== null ? 'affinity_ceiling' : pick.reason;
        if (this.affinityKey !== null) this.deps.affinity.pin(this.affinityKey, model.id, route.endpointId, nowMs);
        if (pick.hedge) {
          this.hedge = new HedgePlan();
          this.hedge.plan(pick.hedge, this.ledger.nextId); // the attempt started next; armed at its dispatch
        }
        this.startAttempt(route, claim, 'normal', nowMs, out);
        return this.withOverall(out);
      }
      eligible = eligible.filter((_, i) => i !== pick.candidate); // a copy: `all` is shared
    }
    // No other route is admissible: the offload route is the primary (seed: "兜底").
    const last = this.startOffload('last_resort', nowMs);
    if (last !== null) {
      this.reason = 'offload';
      out.push(...last);
      return this.withOverall(out);
    }
    // Nothing admitted: cooling after Retry-After (429/503 with the hint) or every breaker shut.
    const coolestMs = coolestRetryAfterMs(modal, bypassed, this.offloadId, this.admission, nowMs);
    const e = noAdmittedRoute(model, modal, coolestMs, this.admission, nowMs);
    return this.fail(e.code, e.message, nowMs, e.status, e.retryAfterSec);
  }

  step(event: LifecycleEvent, nowMs: number): LifecycleAction[] {
    if (this.done) return [];
    switch (event.kind) {
      case 'attempt_sent':
        return [];
      case 'slot_acquired': {
        const a = this.liveAttempt(event.attemptId);
        if (!a || a.phase !== 'queued' || a.ticket?.state !== 'held') return [];
        return this.sent(a, nowMs);
      }
      case 'first_output': {
        const a = this.liveAttempt(event.attemptId);
        if (a && a.phase === 'sent') this.gotOutput(a);
        return [];
      }
      case 'first_token': {
        const a = this.liveAttempt(event.attemptId);
        if (!a || a.phase !== 'sent') return [];
        this.gotOutput(a);
        this.releaseLease(a); // prefill is over; decode is not prefill pressure
        if (this.hedge.answered(a.attemptId)) this.disarm(a, 'hedge'); // the primary's first token came in time: no hedge
        if (this.firstTokenAtMs === null) this.firstTokenAtMs = nowMs;
        if (this.committedAttempt === null && commitsAt(this.deps.kindPolicy.commitPoint, 'first_token', this.request.stream)) {
          this.committedAttempt = a.attemptId;
          const out: LifecycleAction[] = [{ kind: 'commit', attemptId: a.attemptId }];
          return this.cancelOthers(nowMs, a.attemptId, out, 'hedge_lost');
        }
        return [];
      }
      case 'chunk': {
        const a = this.liveAttempt(event.attemptId);
        if (!a || a.phase !== 'sent') return [];
        const atMs = recordStreamChunk(a, nowMs, this.deps.settings.streamIdleTimeoutSec);
        return atMs === null ? [] : [this.arm('idle', a.attemptId, atMs)];
      }
      case 'finished': {
        const a = this.liveAttempt(event.attemptId);
        if (!a || a.phase !== 'sent') return [];
        const out: LifecycleAction[] = [];
        if (this.committedAttempt === null) {
          this.committedAttempt = a.attemptId;
          out.push({ kind: 'commit', attemptId: a.attemptId });
        }
        this.endAttempt(a, OK, nowMs, OK, event.usage);
        this.deps.prefill.recordCompletedPrompt(a.route.endpointId, this.request.callerId, this.request.inputTokens, nowMs);
        this.servedBy = a.route;
        this.cancelOthers(nowMs, -1, out, 'hedge_lost'); // only a hedge race has another live attempt here
        out.push(this.doneAction('ok', nowMs, event.usage));
        return out;
      }
      case 'failed': {
        const a = this.liveAttempt(event.attemptId);
        if (!a || a.phase !== 'sent') return [];
        return this.attemptFailed(a, event.outcome, event.outcome, nowMs);
      }
      case 'deadline':
        return this.onDeadline(event.deadlineId, nowMs);
      case 'client_gone': {
        const out = this.cancelOthers(nowMs);
        out.push(this.doneAction('client_gone', nowMs, null));
        return out;
      }
    }
  }


  /** Starts the offload attempt (at most once per request), or null when it is not available. */
  private startOffload(reason: OffloadReason, nowMs: number): LifecycleAction[] | null {
    const r = this.offload.available(this.contextFloor, this.admission, nowMs);
    if (r === null) return null;
    const claim = this.admission.gates.breaker.claim(r.endpointId, nowMs);
    if (!claim) return null;
    this.offload.taken(reason);
    return this.started(r, claim, 'offload', nowMs);
  }

  /** Cuts `a` short for the offload route (queue give-up or engine-wait expiry). */
  private interrupt(a: LiveAttempt, reason: 'queue_wait' | 'engine_wait', nowMs: number): LifecycleAction[] {
    const out: LifecycleAction[] = [];
    if (a.phase === 'sent') out.push({ kind: 'cancel', attemptId: a.attemptId });
    const recorded: Outcome = reason === 'queue_wait' ? { kind: 'queue_wait_timeout' } : { kind: 'first_token_timeout' };
    this.endAttempt(a, recorded, nowMs, NEUTRAL); // neither the breaker nor the hints hear of it
    this.offload.interrupted = a.route;
    const next = this.startOffload(reason, nowMs);
    if (next !== null) out.push(...next);
    else out.push(...this.continueAfter(recorded, nowMs));
    return out;
  }

  private onDeadline(deadlineId: number, nowMs: number): LifecycleAction[] {
    const packed = this.deadlines.take(deadlineId);
    if (packed === 0) return [];
    const kind = deadlineKind(packed);
    if (kind === 'overall') return this.overallExpired(nowMs);
    const a = this.liveAttempt(deadlineAttempt(packed));
    if (!a) return [];
    switch (kind) {
      case 'queue': {
        if (a.ticket !== null && a.ticket.state === 'held') return this.sent(a, nowMs); // granted, wakeup not yet delivered
        if (this.interruptible(a) && this.canOffload(nowMs)) return this.interrupt(a, 'queue_wait', nowMs);
        if (a.ticketGate?.releasedAtFirstOutput === true && a.ticket !== null) {
          // Holding never fails a request: past the acquire timeout it goes in over the limit.
          a.ticket.pool.force(a.ticket);
          return this.sent(a, nowMs);
        }
        this.endAttempt(a, { kind: 'queue_wait_timeout' }, nowMs); // not the endpoint's fault
        return this.continueAfter({ kind: 'queue_wait_timeout' }, nowMs);
      }
      case 'engine_wait':
        if (a.gotOutput || !this.interruptible(a) || !this.canOffload(nowMs)) return []; // lifted: wait as long as it takes
        return this.interrupt(a, 'engine_wait', nowMs);
      case 'hedge':
        return this.sendHedge(a, nowMs);
      case 'headers':
      case 'total':
        return this.stalled(a, nowMs);
      case 'idle': {
        const rearmAtMs = idleDeadlineFired(a, nowMs, this.deps.settings.streamIdleTimeoutSec);
        if (rearmAtMs !== null) return [this.arm('idle', a.attemptId, rearmAtMs)]; // chunks came since
        return this.stalled(a, nowMs);
      }
      case 'backoff': // never armed by this life
        return [];
    }
  }

  /**
   * The hedge checkpoint of `primary` passed without its first output: send the backup as a second
   * attempt racing it, if the backup is still usable, untried and admitted. Otherwise nothing
   * happens (the primary keeps going alone). Both attempts then run; the first token (stream) or
   * the first finished answer (non-stream) commits and the other is cancelled.
   */
  private sendHedge(primary: LiveAttempt, nowMs: number): LifecycleAction[] {
    const order = this.hedge.take();
    if (order === null || primary.gotOutput || this.committedAttempt !== null || primary.phase !== 'sent') return [];
    const route = this.model!.routes.find((r) => r.endpointId === order.endpointId);
    if (route === undefined || route.endpointId === this.offloadId || this.tried(route.endpointId) || !this.usable(route, nowMs)) return [];
    const claim = this.admission.gates.breaker.claim(route.endpointId, nowMs);
    if (claim === null) return [];
    this.hedge.sentTo = route.endpointId;
    return this.started(route, claim, 'hedge', nowMs);
  }

  /** A silent upstream: before commit the attempt fails over; after it the client gets an in-band error. */
  private stalled(a: LiveAttempt, nowMs: number): LifecycleAction[] {
    const out: LifecycleAction[] = [{ kind: 'cancel', attemptId: a.attemptId }];
    if (this.committedAttempt === a.attemptId) {
      this.endAttempt(a, TIMEOUT, nowMs);
      out.push(...this.cancelOthers(nowMs));
      out.push(...this.fail('upstream_timeout', `upstream ${a.route.endpointId} stalled mid-stream`, nowMs));
      return out;
    }
    out.push(...this.attemptFailed(a, TIMEOUT, TIMEOUT, nowMs));
    return out;
  }

  private overallExpired(nowMs: number): LifecycleAction[] {
    const out = this.cancelOthers(nowMs);
    out.push(...this.fail('upstream_timeout', `request exceeded its overall deadline of ${this.deps.settings.overallDeadlineSec} s`, nowMs));
    return out;
  }

  /**
   * An attempt failed with `outcome` (`healthOutcome` is what the breaker hears). What follows
   * is the family's failure rule (`policy/failure-rule.ts`): request-scoped errors go straight
   * back to the caller; a context-length refusal moves on only to a route with a larger window
   * (and goes back when there is none); everything else fails over.
   */
  private attemptFailed(a: LiveAttempt, outcome: Outcome, healthOutcome: Outcome, nowMs: number): LifecycleAction[] {
    this.endAttempt(a, outcome, nowMs, healthOutcome);
    if (outcome.kind === 'http_status') this.admission.gates.retryAfter.note(a.route.endpointId, outcome, nowMs);
    const cls = failureClassOf(this.deps.kindPolicy, outcome);
    let requestScoped = cls === 'final';
    if (failureStep(this.deps.kindPolicy, cls) === 'larger_window') {
      this.contextFloor = Math.max(this.contextFloor ?? 0, refusalFloorTokens(a.route.contextLength, contextNeedTokens(this.request)));
      requestScoped = !this.largerWindowLeft(nowMs);
    }
    const terminal = cls === 'terminal' || requestScoped;
    if (this.pinned || this.committedAttempt !== null || terminal) {
      if (this.live.length > 0) return [];
      if (requestScoped || this.committedAttempt !== null) return this.failWithOutcome(outcome, nowMs, a.attemptId);
      return this.failWithOutcome(this.primaryFailure ?? outcome, nowMs, this.primaryFailureAttemptId ?? a.attemptId);
    }
    if (this.live.length > 0) return []; // a hedge race: the other attempt may still answer
    return this.continueAfter(outcome, nowMs);
  }

  /** Whether a route not yet tried has a window above the context floor (or an unknown one). */
  private largerWindowLeft(nowMs: number): boolean {
    for (const r of this.eligibleRoutes) if (!this.tried(r.endpointId) && this.usable(r, nowMs)) return true;
    return false;
  }

  /**
   * The next attempt after one ended without serving: the remaining routes in declaration order,
   * then the offload route as last resort, then the interrupted route once more; else the error.
   */
  private continueAfter(outcome: Outcome, nowMs: number): LifecycleAction[] {
    if (this.pinned) return this.live.length > 0 ? [] : this.failWithOutcome(this.primaryFailure ?? outcome, nowMs, this.primaryFailureAttemptId);
    for (const r of this.eligibleRoutes) {
      if (r.endpointId === this.offloadId || this.tried(r.endpointId) || !this.usable(r, nowMs)) continue;
      const claim = this.admission.gates.breaker.claim(r.endpointId, nowMs);
      if (claim) return this.started(r, claim, 'normal', nowMs);
    }
    const last = this.startOffload('last_resort', nowMs);
    if (last !== null) return last;
    const back = this.offload.takeInterruptedRetry();
    if (back !== null) {
      const claim = this.admission.gates.breaker.claim(back.endpointId, nowMs);
      if (claim) return this.started(back, claim, 'retry', nowMs);
    }
    if (this.live.length > 0) return [];
    return this.failWithOutcome(this.primaryFailure ?? outcome, nowMs, this.primaryFailureAttemptId);
  }

  /** Weight, endpoint-family, modality, Retry-After and context-window checks of a fallback route. */
  private usable(r: ResolvedRoute, nowMs: number): boolean {
    if (r.effectiveWeight <= 0 || !servesFamily(r, this.request.endpoint) || !acceptsModalities(r, this.request.modalities)) return false;
    if (!fitsWindow(r.contextLength, 0, this.contextFloor)) return false;
    return this.admission.admits(r, nowMs);
  }

}
