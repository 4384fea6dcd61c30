/**
 * The life of one request under a per-model router: the `fixed` pipeline and fallback plan of
 * seed 000 ("how FixedRouter picks an endpoint", "fallback"), executed as a state machine.
 *
 * Selection: published and non-empty routes (else 404) → modality filter → explicit pin (no
 * fallback, no affinity) → weight and breaker admission → session affinity (when the planner
 * asks for it) → the planner's pick (prefill-aware for `fixed`).
 * Fallback: after a failure, the remaining routes in declaration order, skipping weight 0,
 * modality mismatches and routes whose breaker gives no claim; the first success wins; if all
 * fail the client gets the primary's error. A committed stream never falls back.
 *
 * Session affinity (seed 000, "会话亲和"): a valid pin of (caller, model) to an admitted
 * endpoint is used and its TTL slides; a pin to an endpoint that is no longer admitted is dropped
 * and the planner draws afresh; a pin whose endpoint's prefill backlog exceeds
 * `prefillAffinityCeilingTokens` is bypassed for this request (the planner draws among the
 * others) and moved to the new choice. Every fresh primary choice is pinned. A failure on the
 * pinned endpoint drops the pin (cancellation and client disconnects are not its failures).
 *
 * The life owns every dispatch claim and prefill lease it takes and ends each exactly once on
 * every path: a lease at the attempt's first token or its end, whichever comes first; a claim
 * at the attempt's end.
 */
import type { Rng } from '../rng.ts';
import type { ResolvedModel, ResolvedRoute } from '../routing-core.ts';
import type { DispatchClaim, HealthRegistry } from '../health/health-registry.ts';
import type { Outcome } from './outcome.ts';
import { ERROR_STATUS, errorForOutcome, type ErrorCode } from './errors.ts';
import type {
  AttemptRecord,
  LifecycleAction,
  LifecycleEvent,
  RequestLife,
  RouteRequest,
  RoutingMetadata,
  Usage,
} from './seam.ts';
import type { Candidate } from '../strategies/planner.ts';
import type { RoutingSettings } from '../config/routing-settings.ts';
import type { PrefillLease, PrefillLoad } from '../prefill/prefill-load.ts';
import type { AffinityPin, AffinityTable } from '../affinity/affinity-table.ts';
import { ANONYMOUS_AFFINITY_KEY } from '../affinity/affinity-key.ts';

/** The process-wide state a life works with, owned by `RoutingCore`. */
export interface LifecycleDeps {
  readonly health: HealthRegistry;
  readonly prefill: PrefillLoad;
  readonly affinity: AffinityTable;
  readonly settings: Readonly<RoutingSettings>;
}

interface LiveAttempt {
  readonly attemptId: number;
  readonly route: ResolvedRoute;
  /** Null when the attempt bypassed admission (explicit pin). */
  readonly claim: DispatchClaim | null;
  /** Held from dispatch until the first token or the attempt's end; then null. */
  lease: PrefillLease | null;
  readonly startMs: number;
}

/** Implementation of `RequestLife` for per-model routers. Created by `RoutingCore.start`. */
export class RequestLifecycle implements RequestLife {
  readonly requestId: string;
  private done = false;
  private committedAttempt: number | null = null;
  private nextAttemptId = 1;
  private readonly live = new Map<number, LiveAttempt>();
  private readonly attempts: AttemptRecord[] = [];
  private primaryFailure: Outcome | null = null;
  private pinned = false;
  private reason = 'none';
  private firstTokenAtMs: number | null = null;
  private servedBy: ResolvedRoute | null = null;
  /** The caller key when affinity applies to this request, else null. */
  private affinityKey: string | null = null;
  private leasesTaken = 0;
  private leasesReleased = 0;
  private readonly health: HealthRegistry;

  constructor(
    private readonly model: ResolvedModel | null,
    private readonly request: RouteRequest,
    private readonly deps: LifecycleDeps,
    private readonly rng: Rng,
  ) {
    this.requestId = request.requestId;
    this.health = deps.health;
  }

  get isDone(): boolean {
    return this.done;
  }

  /** Runs the selection pipeline at `nowMs`. Called once, by `RoutingCore.start`. */
  begin(nowMs: number): LifecycleAction[] {
    const model = this.model;
    if (!model || !model.published || model.routes.length === 0) {
      return this.fail('model_not_found', `model '${this.request.model}' does not exist or has no published routes`, nowMs);
    }
    // Hot path: most requests are text-only and every route accepts text, so `modal` is usually
    // the route list itself and nothing is allocated.
    let modal: readonly ResolvedRoute[] = model.routes;
    for (let i = 0; i < modal.length; i++) {
      if (!this.acceptsModalities(modal[i]!)) {
        modal = model.routes.filter((r) => this.acceptsModalities(r));
        break;
      }
    }
    if (modal.length === 0) {
      return this.fail(
        'all_circuits_open',
        `no route of model '${model.id}' accepts input modalities: ${this.request.modalities.join(', ')}`,
        nowMs,
      );
    }
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
      return [this.dispatch(route, null, nowMs)];
    }
    // Session affinity first: a hit needs only its own endpoint's admission, not the full
    // candidate list (the common case for a returning caller).
    let bypassed: string | null = null;
    let affinityPin: AffinityPin | null = null;
    if (model.planner.sessionAffinity === true) {
      const key = this.request.callerId ?? ANONYMOUS_AFFINITY_KEY;
      this.affinityKey = key;
      affinityPin = this.deps.affinity.lookup(key, model.id, nowMs);
      if (affinityPin !== null) {
        const route = this.admitted(modal, affinityPin.endpointId, nowMs);
        if (route === null) {
          this.deps.affinity.dropIfPinnedTo(key, model.id, affinityPin.endpointId); // no longer admissible
          affinityPin = null;
        } else if (this.deps.prefill.backlogTokens(route.endpointId) > this.deps.settings.prefillAffinityCeilingTokens) {
          bypassed = route.endpointId; // backlogged: draw among the others, re-pin below
        } else {
          const claim = this.health.beginDispatch(route.endpointId, nowMs);
          if (claim) return [this.dispatchPinned(route, claim, affinityPin, nowMs)];
          this.deps.affinity.dropIfPinnedTo(key, model.id, affinityPin.endpointId);
          affinityPin = null;
        }
      }
    }
    const candidates: Candidate[] = [];
    for (const r of modal) {
      if (r.endpointId !== bypassed && r.effectiveWeight > 0 && this.health.allowRequest(r.endpointId, nowMs)) {
        candidates.push({ endpointId: r.endpointId, weight: r.effectiveWeight, routeIndex: r.routeIndex });
      }
    }
    if (bypassed !== null && candidates.length === 0) {
      // Nowhere else to go: a backlogged pin still beats a rejection (never blocks or rejects).
      const route = this.admitted(modal, bypassed, nowMs)!;
      const claim = this.health.beginDispatch(route.endpointId, nowMs);
      if (claim) return [this.dispatchPinned(route, claim, affinityPin!, nowMs)];
    }
    // A planner pick whose claim is refused is dropped and the planner asked again. In a
    // single-threaded core allowRequest and beginDispatch agree, so this loop runs once.
    while (candidates.length > 0) {
      const pick = model.planner.pick(candidates, this.request, nowMs, this.rng);
      const chosen = candidates[pick.candidate]!;
      const route = model.routes[chosen.routeIndex]!;
      const claim = this.health.beginDispatch(route.endpointId, nowMs);
      if (claim) {
        this.reason = bypassed !== null ? 'affinity_ceiling' : pick.reason;
        if (this.affinityKey !== null) this.deps.affinity.pin(this.affinityKey, model.id, route.endpointId, nowMs);
        return [this.dispatch(route, claim, nowMs)];
      }
      candidates.splice(pick.candidate, 1);
    }
    return this.fail(
      'all_circuits_open',
      `no admitted route for model '${model.id}'; considered: ${modal.map((r) => r.endpointId).join(', ')}`,
      nowMs,
    );
  }

  step(event: LifecycleEvent, nowMs: number): LifecycleAction[] {
    if (this.done) return [];
    switch (event.kind) {
      case 'attempt_sent':
      case 'first_output':
      case 'deadline':
        return [];
      case 'first_token': {
        const a = this.live.get(event.attemptId);
        if (!a) return [];
        this.releaseLease(a); // prefill is over; decode is not prefill pressure
        if (this.firstTokenAtMs === null) this.firstTokenAtMs = nowMs;
        if (this.request.stream && this.committedAttempt === null) {
          this.committedAttempt = a.attemptId;
          return [{ kind: 'commit', attemptId: a.attemptId }];
        }
        return [];
      }
      case 'finished': {
        const a = this.live.get(event.attemptId);
        if (!a) return [];
        const out: LifecycleAction[] = [];
        if (this.committedAttempt === null) {
          this.committedAttempt = a.attemptId;
          out.push({ kind: 'commit', attemptId: a.attemptId });
        }
        this.endAttempt(a, { kind: 'ok' }, nowMs);
        this.deps.prefill.recordCompletedPrompt(a.route.endpointId, this.request.callerId, this.request.inputTokens, nowMs);
        this.servedBy = a.route;
        out.push(...this.cancelOthers(nowMs));
        out.push(this.doneAction('ok', nowMs, event.usage));
        return out;
      }
      case 'failed': {
        const a = this.live.get(event.attemptId);
        if (!a) return [];
        this.endAttempt(a, event.outcome, nowMs);
        if (this.primaryFailure === null) this.primaryFailure = event.outcome;
        const terminal = event.outcome.kind === 'client_gone' || event.outcome.kind === 'cancelled';
        if (!this.pinned && this.committedAttempt === null && !terminal) {
          const next = this.nextFallback(nowMs);
          if (next) return [next];
        }
        if (this.live.size > 0) return [];
        return this.failWithOutcome(this.committedAttempt === null ? this.primaryFailure : event.outcome, nowMs);
      }
      case 'client_gone': {
        const out = this.cancelOthers(nowMs);
        out.push(this.doneAction('client_gone', nowMs, null));
        return out;
      }
    }
  }

  invariants(): void {
    for (const a of this.live.values()) {
      if (this.done) throw new Error(`${this.requestId}: attempt ${a.attemptId} still live after done`);
    }
    if (this.attempts.length + this.live.size !== this.nextAttemptId - 1) {
      throw new Error(`${this.requestId}: attempts recorded + live != attempts started`);
    }
    let held = 0;
    for (const a of this.live.values()) if (a.lease !== null) held++;
    if (this.leasesTaken !== this.nextAttemptId - 1 || this.leasesTaken !== this.leasesReleased + held) {
      throw new Error(`${this.requestId}: prefill leases taken ${this.leasesTaken} != released ${this.leasesReleased} + held ${held} (attempts ${this.nextAttemptId - 1})`);
    }
  }

  /** The route of `endpointId` among `modal` if it has weight and its breaker admits now, else null. */
  private admitted(modal: readonly ResolvedRoute[], endpointId: string, nowMs: number): ResolvedRoute | null {
    for (const r of modal) {
      if (r.endpointId === endpointId) return r.effectiveWeight > 0 && this.health.allowRequest(endpointId, nowMs) ? r : null;
    }
    return null;
  }

  /** Dispatches to the caller's pinned endpoint and slides the pin's TTL. */
  private dispatchPinned(route: ResolvedRoute, claim: DispatchClaim, pin: AffinityPin, nowMs: number): LifecycleAction {
    this.deps.affinity.slide(pin, nowMs);
    this.reason = 'affinity';
    return this.dispatch(route, claim, nowMs);
  }

  /** Every request carries text; a route must accept text and each extra modality. */
  private acceptsModalities(r: ResolvedRoute): boolean {
    if (!r.modalities.includes('text')) return false;
    for (const m of this.request.modalities) if (!r.modalities.includes(m)) return false;
    return true;
  }

  private dispatch(route: ResolvedRoute, claim: DispatchClaim | null, nowMs: number): LifecycleAction {
    const attemptId = this.nextAttemptId++;
    const lease = this.deps.prefill.acquire(route.endpointId, this.request.callerId, this.request.inputTokens, nowMs);
    this.leasesTaken++;
    this.live.set(attemptId, { attemptId, route, claim, lease, startMs: nowMs });
    return { kind: 'dispatch', attemptId, endpointId: route.endpointId, deadlines: { firstTokenAtMs: null, totalAtMs: null } };
  }

  /** Releases the attempt's prefill lease if it still holds one (idempotent per attempt). */
  private releaseLease(a: LiveAttempt): void {
    if (a.lease === null) return;
    this.deps.prefill.release(a.lease);
    a.lease = null;
    this.leasesReleased++;
  }

  /** Ends an attempt's claim and lease exactly once and records it. */
  private endAttempt(a: LiveAttempt, outcome: Outcome, nowMs: number): void {
    this.live.delete(a.attemptId);
    this.releaseLease(a);
    if (this.affinityKey !== null && outcome.kind !== 'ok' && outcome.kind !== 'cancelled' && outcome.kind !== 'client_gone') {
      this.deps.affinity.dropIfPinnedTo(this.affinityKey, this.model!.id, a.route.endpointId);
    }
    if (a.claim) this.health.endDispatch(a.claim, outcome, nowMs);
    else this.health.recordUnadmitted(a.route.endpointId, outcome, nowMs);
    if (outcome.kind === 'http_status' && outcome.errorClass === 'auth_rejected') {
      this.health.markDegraded(a.route.endpointId, nowMs);
    }
    this.model?.planner.observe?.(a.route.endpointId, outcome, nowMs);
    this.attempts.push({ attemptId: a.attemptId, endpointId: a.route.endpointId, startMs: a.startMs, endMs: nowMs, outcome });
  }

  private cancelOthers(nowMs: number): LifecycleAction[] {
    const out: LifecycleAction[] = [];
    for (const a of [...this.live.values()]) {
      out.push({ kind: 'cancel', attemptId: a.attemptId });
      this.endAttempt(a, { kind: 'cancelled' }, nowMs);
    }
    return out;
  }

  /** Whether an attempt (ended or live) already went to `endpointId`. Fallback path only. */
  private tried(endpointId: string): boolean {
    for (const a of this.attempts) if (a.endpointId === endpointId) return true;
    for (const a of this.live.values()) if (a.route.endpointId === endpointId) return true;
    return false;
  }

  private nextFallback(nowMs: number): LifecycleAction | null {
    for (const r of this.model!.routes) {
      if (this.tried(r.endpointId) || r.effectiveWeight <= 0 || !this.acceptsModalities(r)) continue;
      const claim = this.health.beginDispatch(r.endpointId, nowMs);
      if (claim) return this.dispatch(r, claim, nowMs);
    }
    return null;
  }

  private failWithOutcome(outcome: Outcome, nowMs: number): LifecycleAction[] {
    const e = errorForOutcome(outcome);
    const tried = this.attempts.map((a) => `${a.endpointId}=${a.outcome.kind === 'http_status' ? a.outcome.status : a.outcome.kind}`);
    return this.fail(e.code, `all attempts failed: ${tried.join(', ')}`, nowMs, e.status, e.retryAfterSec);
  }

  private fail(code: ErrorCode, message: string, nowMs: number, status = ERROR_STATUS[code], retryAfterSec: number | null = null): LifecycleAction[] {
    if (code === 'client_gone') return [this.doneAction(code, nowMs, null)];
    return [{ kind: 'respond_error', status, code, message, retryAfterSec }, this.doneAction(code, nowMs, null)];
  }

  private doneAction(status: string, nowMs: number, usage: Usage | null): LifecycleAction {
    this.done = true;
    const last = this.attempts[this.attempts.length - 1];
    const route = this.servedBy ?? (last ? this.model!.routes.find((r) => r.endpointId === last.endpointId) ?? null : null);
    const metadata: RoutingMetadata = {
      requestId: this.requestId,
      modelId: this.model?.id ?? this.request.model,
      strategy: this.model?.strategy ?? 'none',
      endpointId: route?.endpointId ?? null,
      provider: route?.provider ?? null,
      baseUrl: route?.baseUrl ?? null,
      reason: this.reason,
      fallback: status === 'ok' && this.attempts.length > 1,
      attempts: this.attempts,
      status,
      firstTokenAtMs: this.firstTokenAtMs,
      finishedAtMs: nowMs,
      usage,
      offloadReason: null,
    };
    return { kind: 'done', metadata };
  }
}
