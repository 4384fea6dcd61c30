/**
 * The life of one request under a per-model (`router:`) router: the pipeline and fallback plan of
 * seed 000 ("how FixedRouter picks an endpoint", "fallback") as a state machine, composed of the
 * parts every model kind shares (`request/request-life.ts` picks it).
 *
 * Candidate stages (`request/candidates/`): published and non-empty routes (else 404) →
 * modality → context-window floor → explicit pin (no fallback, no affinity) → session affinity
 * when the planner asks for it (`affinity.ts`) → weight and admission (`admitted.ts`) → the
 * planner's pick (prefill-aware for `fixed`). Every fresh primary choice is pinned; a failure on
 * the pinned endpoint drops the pin (cancellation and client disconnects are not its failures).
 * Fallback: the remaining routes in declaration order, skipping weight 0, routes refused by a
 * gate or whose breaker gives no claim; if all fail the client gets the primary's error.
 * Request-scoped errors (`lifecycle/outcome-table.ts`) go straight back; a committed stream
 * never falls back.
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
 * The life owns every dispatch claim, prefill lease, outbound slot and hold place it takes and
 * ends each exactly once on every path: a lease at the attempt's first token or its end; a hold
 * place at the first output or the end; a slot and a claim at the attempt's end.
 */
import type { Rng } from '../rng.ts';
import type { ResolvedModel, ResolvedRoute } from '../model/resolved-model.ts';
import type { DispatchClaim, HealthRegistry } from '../health/health-registry.ts';
import type { Outcome } from '../lifecycle/outcome.ts';
import { ERROR_STATUS, errorForOutcome, type ErrorCode } from '../lifecycle/errors.ts';
import { OUTCOME_RULES } from '../lifecycle/outcome-table.ts';
import { acceptsModalities, routesAccepting } from './candidates/modality.ts';
import { affinityStage, type AffinityOutcome } from './candidates/affinity.ts';
import { admittedCandidates, coolestRetryAfterMs, noAdmittedRoute } from './candidates/admitted.ts';
import { contextNeedTokens, fitsWindow, noWindowFitsMessage, refusalFloorTokens, routesFitting } from './candidates/context-floor.ts';
import type {
  AttemptRecord,
  LifecycleAction,
  LifecycleEvent,
  RequestLife,
  RouteRequest,
  RoutingMetadata,
  Usage,
} from '../lifecycle/seam.ts';
import type { RoutingSettings } from '../config/routing-settings.ts';
import type { PrefillLease, PrefillLoad } from '../prefill/prefill-load.ts';
import type { AffinityTable } from '../affinity/affinity-table.ts';
import { ANONYMOUS_AFFINITY_KEY } from '../affinity/affinity-key.ts';
import { OutboundLimiter } from '../outbound/outbound-limiter.ts';
import { EngineHold } from '../outbound/engine-hold.ts';
import type { SlotTicket } from '../outbound/slot-pool.ts';
import { RetryAfterTable } from '../health/retry-after.ts';
import { CooldownRegistry } from '../health/cooldown.ts';
import { buildAdmissions, type Admission } from '../admission/admission.ts';
import type { QueueGate } from '../admission/queue-gate.ts';
import { OffloadPlan, type OffloadReason } from './policy/offload.ts';
import { HedgePlan } from './policy/hedge.ts';
import { routerPolicy, type RequestKindPolicy } from './policy/kind-policy.ts';
import { commitsAt } from './policy/commit.ts';
import { dispatchDeadlines } from './policy/attempt-deadlines.ts';
import { attemptsSummary, respondError } from './ending.ts';
import { reportAttemptOutcome } from './attempt-outcome.ts';
import { DeadlineBook, deadlineAttempt, deadlineKind, type DeadlineKind } from './deadline-book.ts';
import { idleDeadlineFired, recordStreamChunk, type StreamIdleState } from './policy/stream-idle.ts';

/** The process-wide state a life works with, owned by `RoutingCore`. */
export interface LifecycleDeps {
  readonly health: HealthRegistry;
  readonly prefill: PrefillLoad;
  readonly affinity: AffinityTable;
  readonly settings: Readonly<RoutingSettings>;
  /**
   * Adaptive outbound slots per provider key (seed 000 "出站并发"). Optional only so that code
   * building deps by hand keeps compiling; absent ⇒ a private, unshared instance (use
   * `RoutingCore.lifecycleDeps` to share the core's).
   */
  readonly limiter?: OutboundLimiter;
  /** Engine-hold places per local engine (seed 000 "引擎队列上限"); absent ⇒ private instance. */
  readonly hold?: EngineHold;
  /** Not-before times from Retry-After; absent ⇒ private instance. */
  readonly retryAfter?: RetryAfterTable;
  /**
   * The gates every attempt asks (`admission/admission.ts`), over the tables above; absent ⇒
   * built from them (use `RoutingCore.lifecycleDeps` to share the core's).
   */
  readonly admission?: Admission;
  /** The `router:` family's attempt policy under `settings`; absent ⇒ derived from them. */
  readonly kindPolicy?: RequestKindPolicy;
}

/** `LifecycleDeps` with every shared table present. */
type FullDeps = Required<LifecycleDeps>;

function completeDeps(d: LifecycleDeps): FullDeps {
  if (d.limiter && d.hold && d.retryAfter && d.admission && d.kindPolicy) return d as FullDeps;
  const s = d.settings;
  const limiter =
    d.limiter ??
    new OutboundLimiter(
      { enabled: s.upstreamConcurrencyEnabled, initialLimit: s.upstreamConcurrencyInitialLimit, maxLimit: s.upstreamConcurrencyMaxLimit, probeSuccessInterval: s.upstreamConcurrencyProbeSuccessInterval },
      () => {},
    );
  const hold = d.hold ?? new EngineHold(() => {});
  const retryAfter = d.retryAfter ?? new RetryAfterTable();
  const admission =
    d.admission ??
    buildAdmissions({ health: d.health, retryAfter, cooldowns: new CooldownRegistry(), limiter, hold, outboundLimitEnabled: s.upstreamConcurrencyEnabled }).router;
  return { ...d, limiter, hold, retryAfter, admission, kindPolicy: d.kindPolicy ?? routerPolicy(s) };
}

export type { OffloadReason } from './policy/offload.ts';

/**
 * `normal`: may be interrupted for offload; `offload`: the offload attempt; `retry`/`pinned`:
 * never interrupted; `hedge`: the planner's backup racing the primary (never interrupted).
 */
type AttemptRole = 'normal' | 'offload' | 'retry' | 'pinned' | 'hedge';
interface LiveAttempt extends StreamIdleState {
  readonly attemptId: number;
  readonly route: ResolvedRoute;
  /** Null when the attempt bypassed admission (explicit pin). */
  readonly claim: DispatchClaim | null;
  readonly role: AttemptRole;
  readonly startMs: number;
  phase: 'queued' | 'sent';
  /** Outbound slot (limiter) or engine-hold place; null when exempt or already given up. */
  ticket: SlotTicket | null;
  /** The queue gate that issued `ticket` (outbound slot or engine hold); null when none applied. */
  ticketGate: QueueGate | null;
  /** Held from dispatch until the first token or the attempt's end; then null. */
  lease: PrefillLease | null;
  gotOutput: boolean;
}

/**
 * Shared plans for the usual request: no offload policy, no hedge order. Neither is ever
 * mutated (every mutating call needs a policy or an order first), so one instance serves all.
 */
const NO_OFFLOAD = new OffloadPlan(null);
const NO_HEDGE = new HedgePlan();

const NEUTRAL: Outcome = { kind: 'cancelled' };
const CANCELLED: Outcome = { kind: 'cancelled' };
const OK: Outcome = { kind: 'ok' };
const TIMEOUT: Outcome = { kind: 'transport', cause: 'timeout' };

/** Implementation of `RequestLife` for per-model routers. Created by `RoutingCore.start`. */
export class RequestLifecycle implements RequestLife {
  /**
   * The life the driver holds for this one (a planner's or stats tap wrapping it), set by
   * `RoutingCore.start`; outbound-slot wake-ups are addressed to it. Null ⇒ this life itself.
   * A field rather than a WeakMap in the core: a WeakMap entry per request showed up as GC time.
   */
  outerLife: RequestLife | null = null;
  readonly requestId: string;
  private done = false;
  private committedAttempt: number | null = null;
  private nextAttemptId = 1;
  /** Attempts started and not ended (one, or two while a hedge races); a short array, not a Map. */
  private readonly live: LiveAttempt[] = [];
  /** Armed deadlines (`request/deadline-book.ts`). */
  private readonly deadlines = new DeadlineBook();
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
  private ticketsTaken = 0;
  private ticketsReleased = 0;
  private overallAtMs = Number.POSITIVE_INFINITY;
  /** Queue-wait offload of this request (`request/policy/offload.ts`). */
  private readonly offload: OffloadPlan;
  /** The offload route's endpoint id when the policy is active (it is never primary then). */
  private readonly offloadId: string | null;
  /** After a context-length rejection: routes need a `context_length` above this. */
  private contextFloor: number | null = null;
  /** Routes that passed the modality and context-window stages (fallback walks these). */
  private eligibleRoutes: readonly ResolvedRoute[] = [];
  /** The attempt whose failure the client is told of when every attempt failed. */
  private primaryFailureAttemptId: number | null = null;
  /** The planner's hedge order for the primary (`request/policy/hedge.ts`); shared empty plan until one is made. */
  private hedge: HedgePlan = NO_HEDGE;
  private readonly health: HealthRegistry;
  private readonly deps: FullDeps;
  /** The gates every attempt asks (checks: Retry-After; breaker claim; outbound slot, engine hold). */
  private readonly admission: Admission;

  constructor(
    private readonly model: ResolvedModel | null,
    private readonly request: RouteRequest,
    deps: LifecycleDeps,
    private readonly rng: Rng,
  ) {
    this.requestId = request.requestId;
    this.deps = completeDeps(deps);
    this.health = deps.health;
    this.admission = this.deps.admission;
    this.offload = model?.offload?.active === true ? new OffloadPlan(model) : NO_OFFLOAD;
    this.offloadId = this.offload.endpointId;
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
    // Modality stage: usually every route accepts the request, and `modal` is the route list itself.
    let modal = routesAccepting(model.routes, this.request.modalities);
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
          this.hedge.plan(pick.hedge, this.nextAttemptId); // the attempt started next; armed at its dispatch
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
        this.endAttempt(a, OK, nowMs);
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

  invariants(): void {
    if (this.done && this.live.length > 0) throw new Error(`${this.requestId}: ${this.live.length} attempt(s) still live after done`);
    if (this.attempts.length + this.live.length !== this.nextAttemptId - 1) {
      throw new Error(`${this.requestId}: attempts recorded + live != attempts started`);
    }
    let leases = 0;
    let tickets = 0;
    for (const a of this.live) {
      if (a.lease !== null) leases++;
      if (a.ticket !== null) {
        tickets++;
        if (a.ticket.state === 'released') throw new Error(`${this.requestId}: attempt ${a.attemptId} keeps a released ticket`);
      }
    }
    if (this.leasesTaken !== this.leasesReleased + leases) {
      throw new Error(`${this.requestId}: prefill leases taken ${this.leasesTaken} != released ${this.leasesReleased} + held ${leases}`);
    }
    if (this.ticketsTaken !== this.ticketsReleased + tickets) {
      throw new Error(`${this.requestId}: slot tickets taken ${this.ticketsTaken} != released ${this.ticketsReleased} + held ${tickets}`);
    }
  }

  // ---- attempts -------------------------------------------------------------------------

  /**
   * Starts an attempt on `route`: queued behind an outbound slot or engine-hold place when one
   * applies and none is free (`acquire_slot` + a give-up `wait_until`), else sent at once.
   */
  private startAttempt(route: ResolvedRoute, claim: DispatchClaim | null, role: AttemptRole, nowMs: number, out: LifecycleAction[]): void {
    const attemptId = this.nextAttemptId++;
    const a: LiveAttempt = {
      attemptId,
      route,
      claim,
      role,
      startMs: nowMs,
      phase: 'queued',
      ticket: null,
      ticketGate: null,
      lease: null,
      gotOutput: false,
      lastChunkAtMs: nowMs,
      idleArmed: false,
    };
    this.live.push(a);
    const s = this.deps.settings;
    const holdLimit = this.request.stream && this.model?.offload?.active === true ? this.model.offload.engineQueueLimit : null;
    this.admission.queue(route, holdLimit, this, attemptId, a);
    if (a.ticket === null || a.ticket.state === 'held') {
      if (a.ticket !== null) this.ticketsTaken++;
      this.send(a, nowMs, out);
      return;
    }
    this.ticketsTaken++;
    const acquireMs = s.upstreamConcurrencyAcquireTimeoutSec * 1000;
    const waitMs = this.interruptible(a) ? Math.min(acquireMs, this.offload.waitMs) : acquireMs;
    const giveUpAtMs = Math.min(nowMs + waitMs, this.overallAtMs);
    out.push({ kind: 'acquire_slot', attemptId, endpointId: route.endpointId, giveUpAtMs }, this.arm('queue', attemptId, giveUpAtMs));
  }

  /** Sends a (no longer queued) attempt: prefill lease, dispatch, headers/total/engine-wait deadlines. */
  private send(a: LiveAttempt, nowMs: number, out: LifecycleAction[]): void {
    this.disarm(a, 'queue');
    a.phase = 'sent';
    a.lease = this.deps.prefill.acquire(a.route.endpointId, this.request.callerId, this.request.inputTokens, nowMs, this.affinityKey !== null && this.deps.settings.prefillAffinityExcludeOwn);
    this.leasesTaken++;
    const k = this.deps.kindPolicy;
    out.push(
      { kind: 'dispatch', attemptId: a.attemptId, endpointId: a.route.endpointId, deadlines: dispatchDeadlines(k.waits, this.request.stream, nowMs, this.overallAtMs) },
      this.arm('headers', a.attemptId, nowMs + k.headersMs),
    );
    if (!this.request.stream) out.push(this.arm('total', a.attemptId, nowMs + k.waits.totalMs));
    // Engine wait: a stream on a non-offload route of an offload model gets `wait` to show output.
    if (this.request.stream && this.interruptible(a)) out.push(this.arm('engine_wait', a.attemptId, nowMs + this.offload.waitMs));
    const hedgeAtMs = this.hedge.checkpointAtMs(a.attemptId, nowMs);
    if (hedgeAtMs !== null) out.push(this.arm('hedge', a.attemptId, hedgeAtMs));
  }

  /** First upstream output (preamble, buffered output or a token): lifts headers and engine-wait limits, frees the hold place. */
  private gotOutput(a: LiveAttempt): void {
    if (a.gotOutput) return;
    a.gotOutput = true;
    this.disarm(a, 'headers');
    this.disarm(a, 'engine_wait');
    if (a.ticketGate?.releasedAtFirstOutput === true) this.releaseTicket(a, null);
  }

  /** Whether `a` may still be cut short to go to the offload route. */
  private interruptible(a: LiveAttempt): boolean {
    return this.offload.interruptible(a.role === 'normal', a.route.endpointId, this.contextFloor, this.admission);
  }

  /** Whether the offload route is available to this request now (never twice). */
  private canOffload(nowMs: number): boolean {
    return this.offload.available(this.contextFloor, this.admission, nowMs) !== null;
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
   * is the outcome table's row (`outcome-table.ts`): request-scoped errors go straight back to
   * the caller; a context-length refusal moves on only to a route with a larger window (and goes
   * back when there is none); everything else fails over.
   */
  private attemptFailed(a: LiveAttempt, outcome: Outcome, healthOutcome: Outcome, nowMs: number): LifecycleAction[] {
    this.endAttempt(a, outcome, nowMs, healthOutcome);
    let requestScoped = false;
    if (outcome.kind === 'http_status') {
      this.admission.gates.retryAfter.note(a.route.endpointId, outcome, nowMs);
      const action = OUTCOME_RULES[outcome.errorClass].action;
      if (action === 'larger_window') {
        this.contextFloor = Math.max(this.contextFloor ?? 0, refusalFloorTokens(a.route.contextLength, contextNeedTokens(this.request)));
        requestScoped = !this.largerWindowLeft(nowMs);
      } else requestScoped = action === 'return';
    }
    const terminal = outcome.kind === 'client_gone' || outcome.kind === 'cancelled' || requestScoped;
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

  /** Weight, modality, Retry-After and context-window checks of a fallback route. */
  private usable(r: ResolvedRoute, nowMs: number): boolean {
    if (r.effectiveWeight <= 0 || !acceptsModalities(r, this.request.modalities)) return false;
    if (!fitsWindow(r.contextLength, 0, this.contextFloor)) return false;
    return this.admission.admits(r, nowMs);
  }

  // ---- bookkeeping ------------------------------------------------------------------------

  /** Appends the overall deadline to `begin`'s actions. */
  private withOverall(out: LifecycleAction[]): LifecycleAction[] {
    out.push(this.arm('overall', 0, this.overallAtMs));
    return out;
  }

  /** Arms a deadline: records it and returns the `wait_until` for the driver. */
  private arm(kind: DeadlineKind, attemptId: number, atMs: number): LifecycleAction {
    return this.deadlines.arm(kind, attemptId, atMs);
  }

  /** Forgets `a`'s deadlines of `kind` (their `deadline` events are then ignored). */
  private disarm(a: LiveAttempt, kind: DeadlineKind): void {
    this.deadlines.disarm(a.attemptId, kind);
  }

  /** The live attempt with `attemptId`, or undefined. */
  private liveAttempt(attemptId: number): LiveAttempt | undefined {
    for (const a of this.live) if (a.attemptId === attemptId) return a;
    return undefined;
  }

  /** `startAttempt` collecting its actions into a fresh array. */
  private started(route: ResolvedRoute, claim: DispatchClaim | null, role: AttemptRole, nowMs: number): LifecycleAction[] {
    const out: LifecycleAction[] = [];
    this.startAttempt(route, claim, role, nowMs, out);
    return out;
  }

  /** `send` collecting its actions into a fresh array. */
  private sent(a: LiveAttempt, nowMs: number): LifecycleAction[] {
    const out: LifecycleAction[] = [];
    this.send(a, nowMs, out);
    return out;
  }

  /** Releases the attempt's prefill lease if it still holds one (idempotent per attempt). */
  private releaseLease(a: LiveAttempt): void {
    if (a.lease === null) return;
    this.deps.prefill.release(a.lease);
    a.lease = null;
    this.leasesReleased++;
  }

  /** Releases the attempt's slot or hold place if it still holds one (idempotent per attempt). */
  private releaseTicket(a: LiveAttempt, outcome: Outcome | null): void {
    if (this.admission.release(a, outcome)) this.ticketsReleased++;
  }

  /**
   * Ends an attempt's claim, lease, ticket and deadlines exactly once and records it.
   * `healthOutcome` is what the breaker, affinity and planner hear (neutral for offload cuts).
   */
  private endAttempt(a: LiveAttempt, outcome: Outcome, nowMs: number, healthOutcome: Outcome = outcome): void {
    const i = this.live.indexOf(a);
    if (i >= 0) this.live.splice(i, 1);
    this.deadlines.disarmAttempt(a.attemptId);
    this.releaseLease(a);
    this.releaseTicket(a, outcome);
    const h = healthOutcome.kind;
    if (this.affinityKey !== null && h !== 'ok' && h !== 'cancelled' && h !== 'client_gone' && h !== 'queue_wait_timeout') {
      this.deps.affinity.dropIfPinnedTo(this.affinityKey, this.model!.id, a.route.endpointId);
    }
    reportAttemptOutcome(this.health, this.model?.planner, a.route.endpointId, a.claim, a.phase === 'sent', healthOutcome, nowMs);
    if (outcome.kind !== 'ok' && outcome.kind !== 'cancelled' && outcome.kind !== 'client_gone') {
      const interruption = outcome.kind === 'queue_wait_timeout' || (outcome.kind === 'first_token_timeout' && healthOutcome === NEUTRAL);
      if (this.primaryFailure === null && !interruption) {
        this.primaryFailure = outcome;
        this.primaryFailureAttemptId = a.attemptId;
      }
    }
    this.attempts.push({ attemptId: a.attemptId, endpointId: a.route.endpointId, startMs: a.startMs, endMs: nowMs, outcome });
  }

  /** Cancels every live attempt except `keep` (sent ones get a `cancel` action; queued ones just leave). */
  private cancelOthers(nowMs: number, keep = -1, out: LifecycleAction[] = [], reason?: 'hedge_lost'): LifecycleAction[] {
    // Backwards: `endAttempt` removes the attempt from `live`.
    for (let i = this.live.length - 1; i >= 0; i--) {
      const a = this.live[i]!;
      if (a.attemptId === keep) continue;
      if (a.phase === 'sent') out.push(reason === undefined ? { kind: 'cancel', attemptId: a.attemptId } : { kind: 'cancel', attemptId: a.attemptId, reason });
      this.endAttempt(a, CANCELLED, nowMs);
    }
    return out;
  }

  /** Whether an attempt (ended or live) already went to `endpointId`. Fallback path only. */
  private tried(endpointId: string): boolean {
    for (const a of this.attempts) if (a.endpointId === endpointId) return true;
    for (const a of this.live) if (a.route.endpointId === endpointId) return true;
    return false;
  }

  /** Ends with the error of `outcome`, reported by attempt `attemptId` (its body may pass through). */
  private failWithOutcome(outcome: Outcome, nowMs: number, attemptId: number | null): LifecycleAction[] {
    const e = errorForOutcome(outcome);
    return this.fail(e.code, `all attempts failed: ${attemptsSummary(this.attempts)}`, nowMs, e.status, e.retryAfterSec, attemptId);
  }

  private fail(code: ErrorCode, message: string, nowMs: number, status = ERROR_STATUS[code], retryAfterSec: number | null = null, attemptId: number | null = null): LifecycleAction[] {
    const respond = respondError(code, message, status, retryAfterSec, attemptId);
    const done = this.doneAction(code, nowMs, null);
    return respond === null ? [done] : [respond, done];
  }

  private doneAction(status: string, nowMs: number, usage: Usage | null): LifecycleAction {
    this.done = true; // `step` ignores everything from here on, armed deadlines included
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
      // A hedge's cancelled loser is not a fallback; a failed attempt before the served one is.
      fallback: status === 'ok' && this.attempts.length > 1 && this.attempts.some((x) => x.outcome !== CANCELLED && x.outcome.kind !== 'ok'),
      attempts: this.attempts,
      status,
      firstTokenAtMs: this.firstTokenAtMs,
      finishedAtMs: nowMs,
      usage,
      offloadReason: this.offload.reason,
      offloadEndpointId: this.offload.offloaded ? this.offloadId : null,
    };
    if (this.model?.planner.plansHedges === true) metadata.hedgeEndpointId = this.hedge.sentTo;
    return { kind: 'done', metadata };
  }
}
