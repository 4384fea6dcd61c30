/**
 * The attempts of a per-model (`router:`) life and its bookkeeping: how an attempt starts (queued
 * behind an outbound slot or engine-hold place, or sent at once), is dispatched (prefill lease,
 * headers/total/engine-wait/hedge deadlines), takes its first output and ends — every dispatch
 * claim, prefill lease, slot or hold place and deadline ended exactly once, the breaker,
 * affinity and planner told — and how the life ends (error answer, routing metadata).
 * `RequestLifecycle` (`router-life.ts`) builds on it with selection and the attempt policy.
 */
import type { Rng } from '../rng.ts';
import type { ResolvedModel, ResolvedRoute } from '../model/resolved-model.ts';
import type { DispatchClaim, HealthRegistry } from '../health/health-registry.ts';
import type { Outcome } from '../lifecycle/outcome.ts';
import { ERROR_STATUS, errorForOutcome, type ErrorCode } from '../lifecycle/errors.ts';
import type { AttemptRecord, LifecycleAction, RequestLife, RouteRequest, Usage } from '../lifecycle/seam.ts';
import type { PrefillLease } from '../prefill/prefill-load.ts';
import type { SlotTicket } from '../outbound/slot-pool.ts';
import type { Admission } from '../admission/admission.ts';
import type { QueueGate } from '../admission/queue-gate.ts';
import { OffloadPlan } from './policy/offload.ts';
import { HedgePlan } from './policy/hedge.ts';
import { dispatchDeadlines } from './policy/attempt-deadlines.ts';
import { attemptsSummary, respondError } from './ending.ts';
import { reportAttemptOutcome } from './attempt-outcome.ts';
import { baseMetadata } from './metadata.ts';
import { AttemptLedger } from './attempt-ledger.ts';
import { DeadlineBook, type DeadlineKind } from './deadline-book.ts';
import type { StreamIdleState } from './policy/stream-idle.ts';
import { completeDeps, type FullDeps, type LifecycleDeps } from './router-deps.ts';

/**
 * `normal`: may be interrupted for offload; `offload`: the offload attempt; `retry`/`pinned`:
 * never interrupted; `hedge`: the planner's backup racing the primary (never interrupted).
 */
export type AttemptRole = 'normal' | 'offload' | 'retry' | 'pinned' | 'hedge';
/** One attempt the life has started and not ended. */
export interface LiveAttempt extends StreamIdleState {
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

/**
 * What the breaker, affinity and planner hear of an attempt cut short for offload: nothing (a
 * cancellation). A distinct object from `CANCELLED`: `endAttempt` tells an offload cut by identity.
 */
export const NEUTRAL: Outcome = { kind: 'cancelled' };
/** An attempt cancelled by the life (hedge loser, client gone, overall deadline); compared by identity. */
export const CANCELLED: Outcome = { kind: 'cancelled' };
/** A served attempt. */
export const OK: Outcome = { kind: 'ok' };
/** A silent upstream: a headers, total or stream-idle wait ran out. */
export const TIMEOUT: Outcome = { kind: 'transport', cause: 'timeout' };

/**
 * The attempt ledger of a per-model life (abstract: `RequestLifecycle` adds selection, events
 * and the attempt policy). Every field is the life's own per-request state.
 */
export abstract class RouterAttempts {
  /**
   * The life the driver holds for this one (a planner's or stats tap wrapping it), set by
   * `RoutingCore.start`; outbound-slot wake-ups are addressed to it. Null ⇒ this life itself.
   * A field rather than a WeakMap in the core: a WeakMap entry per request showed up as GC time.
   */
  outerLife: RequestLife | null = null;
  readonly requestId: string;
  protected done = false;
  protected committedAttempt: number | null = null;
  /** Attempts started and not ended (one, or two while a hedge races); a short array, not a Map. */
  protected readonly live: LiveAttempt[] = [];
  /** Armed deadlines (`request/deadline-book.ts`). */
  protected readonly deadlines = new DeadlineBook();
  /** Attempt ids, ended attempts and ticket counts (`attempt-ledger.ts`). */
  protected readonly ledger = new AttemptLedger();
  /** The ledger's records: every ended attempt, in start order. */
  protected readonly attempts: AttemptRecord[] = this.ledger.records;
  protected primaryFailure: Outcome | null = null;
  protected pinned = false;
  protected reason = 'none';
  protected firstTokenAtMs: number | null = null;
  protected servedBy: ResolvedRoute | null = null;
  /** The caller key when affinity applies to this request, else null. */
  protected affinityKey: string | null = null;
  protected leasesTaken = 0;
  protected leasesReleased = 0;
  protected overallAtMs = Number.POSITIVE_INFINITY;
  /** Queue-wait offload of this request (`request/policy/offload.ts`). */
  protected readonly offload: OffloadPlan;
  /** The offload route's endpoint id when the policy is active (it is never primary then). */
  protected readonly offloadId: string | null;
  /** After a context-length rejection: routes need a `context_length` above this. */
  protected contextFloor: number | null = null;
  /** Routes that passed the endpoint-family, modality and context-window stages (fallback walks these). */
  protected eligibleRoutes: readonly ResolvedRoute[] = [];
  /** The attempt whose failure the client is told of when every attempt failed. */
  protected primaryFailureAttemptId: number | null = null;
  /** The planner's hedge order for the primary (`request/policy/hedge.ts`); shared empty plan until one is made. */
  protected hedge: HedgePlan = NO_HEDGE;
  protected readonly health: HealthRegistry;
  protected readonly deps: FullDeps;
  /** The gates every attempt asks (checks: Retry-After; breaker claim; outbound slot, engine hold). */
  protected readonly admission: Admission;

  constructor(
    protected readonly model: ResolvedModel | null,
    protected readonly request: RouteRequest,
    deps: LifecycleDeps,
    protected readonly rng: Rng,
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

  invariants(): void {
    if (this.done && this.live.length > 0) throw new Error(`${this.requestId}: ${this.live.length} attempt(s) still live after done`);
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
    this.ledger.check(this.requestId, this.live.length, tickets);
  }


  // ---- attempts -------------------------------------------------------------------------

  /**
   * Starts an attempt on `route`: queued behind an outbound slot or engine-hold place when one
   * applies and none is free (`acquire_slot` + a give-up `wait_until`), else sent at once.
   */
  protected startAttempt(route: ResolvedRoute, claim: DispatchClaim | null, role: AttemptRole, nowMs: number, out: LifecycleAction[]): void {
    const attemptId = this.ledger.take();
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
      if (a.ticket !== null) this.ledger.ticketsTaken++;
      this.send(a, nowMs, out);
      return;
    }
    this.ledger.ticketsTaken++;
    const acquireMs = s.upstreamConcurrencyAcquireTimeoutSec * 1000;
    const waitMs = this.interruptible(a) ? Math.min(acquireMs, this.offload.waitMs) : acquireMs;
    const giveUpAtMs = Math.min(nowMs + waitMs, this.overallAtMs);
    out.push({ kind: 'acquire_slot', attemptId, endpointId: route.endpointId, giveUpAtMs }, this.arm('queue', attemptId, giveUpAtMs));
  }

  /** Sends a (no longer queued) attempt: prefill lease, dispatch, headers/total/engine-wait deadlines. */
  protected send(a: LiveAttempt, nowMs: number, out: LifecycleAction[]): void {
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
  protected gotOutput(a: LiveAttempt): void {
    if (a.gotOutput) return;
    a.gotOutput = true;
    this.disarm(a, 'headers');
    this.disarm(a, 'engine_wait');
    if (a.ticketGate?.releasedAtFirstOutput === true) this.releaseTicket(a, null);
  }

  /** Whether `a` may still be cut short to go to the offload route. */
  protected interruptible(a: LiveAttempt): boolean {
    return this.offload.interruptible(a.role === 'normal', a.route.endpointId, this.contextFloor, this.admission);
  }

  /** Whether the offload route is available to this request now (never twice). */
  protected canOffload(nowMs: number): boolean {
    return this.offload.available(this.contextFloor, this.admission, nowMs) !== null;
  }


  // ---- bookkeeping ------------------------------------------------------------------------

  /** Appends the overall deadline to `begin`'s actions. */
  protected withOverall(out: LifecycleAction[]): LifecycleAction[] {
    out.push(this.arm('overall', 0, this.overallAtMs));
    return out;
  }

  /** Arms a deadline: records it and returns the `wait_until` for the driver. */
  protected arm(kind: DeadlineKind, attemptId: number, atMs: number): LifecycleAction {
    return this.deadlines.arm(kind, attemptId, atMs);
  }

  /** Forgets `a`'s deadlines of `kind` (their `deadline` events are then ignored). */
  protected disarm(a: LiveAttempt, kind: DeadlineKind): void {
    this.deadlines.disarm(a.attemptId, kind);
  }

  /** The live attempt with `attemptId`, or undefined. */
  protected liveAttempt(attemptId: number): LiveAttempt | undefined {
    for (const a of this.live) if (a.attemptId === attemptId) return a;
    return undefined;
  }

  /** `startAttempt` collecting its actions into a fresh array. */
  protected started(route: ResolvedRoute, claim: DispatchClaim | null, role: AttemptRole, nowMs: number): LifecycleAction[] {
    const out: LifecycleAction[] = [];
    this.startAttempt(route, claim, role, nowMs, out);
    return out;
  }

  /** `send` collecting its actions into a fresh array. */
  protected sent(a: LiveAttempt, nowMs: number): LifecycleAction[] {
    const out: LifecycleAction[] = [];
    this.send(a, nowMs, out);
    return out;
  }

  /** Releases the attempt's prefill lease if it still holds one (idempotent per attempt). */
  protected releaseLease(a: LiveAttempt): void {
    if (a.lease === null) return;
    this.deps.prefill.release(a.lease);
    a.lease = null;
    this.leasesReleased++;
  }

  /** Releases the attempt's slot or hold place if it still holds one (idempotent per attempt). */
  protected releaseTicket(a: LiveAttempt, outcome: Outcome | null): void {
    if (this.admission.release(a, outcome)) this.ledger.ticketsReleased++;
  }

  /**
   * Ends an attempt's claim, lease, ticket and deadlines exactly once and records it.
   * `healthOutcome` is what the breaker, affinity and planner hear (neutral for offload cuts);
   * `usage` is what the upstream reported for this attempt (the serving one), recorded with it.
   */
  protected endAttempt(a: LiveAttempt, outcome: Outcome, nowMs: number, healthOutcome: Outcome = outcome, usage?: Usage): void {
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
    this.attempts.push(usage ? { attemptId: a.attemptId, endpointId: a.route.endpointId, startMs: a.startMs, endMs: nowMs, outcome, usage } : { attemptId: a.attemptId, endpointId: a.route.endpointId, startMs: a.startMs, endMs: nowMs, outcome });
  }

  /** Cancels every live attempt except `keep` (sent ones get a `cancel` action; queued ones just leave). */
  protected cancelOthers(nowMs: number, keep = -1, out: LifecycleAction[] = [], reason?: 'hedge_lost'): LifecycleAction[] {
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
  protected tried(endpointId: string): boolean {
    for (const a of this.attempts) if (a.endpointId === endpointId) return true;
    for (const a of this.live) if (a.route.endpointId === endpointId) return true;
    return false;
  }

  /** Ends with the error of `outcome`, reported by attempt `attemptId` (its body may pass through). */
  protected failWithOutcome(outcome: Outcome, nowMs: number, attemptId: number | null): LifecycleAction[] {
    const e = errorForOutcome(outcome);
    return this.fail(e.code, `all attempts failed: ${attemptsSummary(this.attempts)}`, nowMs, e.status, e.retryAfterSec, attemptId);
  }

  protected fail(code: ErrorCode, message: string, nowMs: number, status = ERROR_STATUS[code], retryAfterSec: number | null = null, attemptId: number | null = null): LifecycleAction[] {
    const respond = respondError(code, message, status, retryAfterSec, attemptId);
    const done = this.doneAction(code, nowMs, null);
    return respond === null ? [done] : [respond, done];
  }

  protected doneAction(status: string, nowMs: number, usage: Usage | null): LifecycleAction {
    this.done = true; // `step` ignores everything from here on, armed deadlines included
    const last = this.attempts[this.attempts.length - 1];
    const route = this.servedBy ?? (last ? this.model!.routes.find((r) => r.endpointId === last.endpointId) ?? null : null);
    const metadata = baseMetadata({
      requestId: this.requestId,
      model: this.model,
      request: this.request,
      route,
      reason: this.reason,
      // A hedge's cancelled loser is not a fallback; a failed attempt before the served one is.
      fallback: status === 'ok' && this.attempts.length > 1 && this.attempts.some((x) => x.outcome !== CANCELLED && x.outcome.kind !== 'ok'),
      attempts: this.attempts,
      status,
      firstTokenAtMs: this.firstTokenAtMs,
      finishedAtMs: nowMs,
      usage,
      offloadReason: this.offload.reason,
    });
    metadata.offloadEndpointId = this.offload.offloaded ? this.offloadId : null;
    if (this.model?.planner.plansHedges === true) metadata.hedgeEndpointId = this.hedge.sentTo;
    return { kind: 'done', metadata };
  }
}
