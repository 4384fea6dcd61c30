/**
 * The one request life, for `router:` models and multi-target aliases alike: a state machine
 * behind the seam (`lifecycle/seam.ts`) composed of
 * - a **candidate source** `S` (which routes or targets, in which order: `candidates/route-source.ts`
 *   for a model's own routes in the planner's order, `candidates/tier-source.ts` for an alias's
 *   priority-tier walk), which runs selection and keeps the request's walk state;
 * - the **admission gates** (`admission/`): every attempt of every kind asks the same check
 *   gates and queue gates (outbound slot per provider key, engine hold);
 * - the family's **attempt policy** (`router-policy.ts`, `alias-policy.ts`, over the resolved
 *   rules of `policy/kind-policy.ts`): what a failure, a stall, a queue give-up or the overall
 *   deadline leads to (retry, fail over, offload, hedge, the error), and which shared tables hear
 *   of each attempt.
 *
 * The life itself owns what every kind shares: the attempt table (`live-attempt.ts`), the
 * deadline book (`deadline-book.ts`, which the life extends: overall, queue give-up, headers,
 * first token, non-stream total, stream idle, engine wait, hedge, backoff), the attempt ledger
 * (ids, ended attempts' records, ticket counts: the life's own fields), the commit
 * (`policy/commit.ts`), and the ending (`ending.ts`, `metadata.ts`). Every slot, hold place and
 * deadline an attempt takes is ended exactly once on every path.
 */
import type { Rng } from '../rng.ts';
import type { ResolvedModel, ResolvedRoute, ResolvedTarget } from '../model/resolved-model.ts';
import type { DispatchClaim, HealthRegistry } from '../health/health-registry.ts';
import type { Outcome } from '../lifecycle/outcome.ts';
import { ERROR_STATUS, errorForOutcome, type ErrorCode } from '../lifecycle/errors.ts';
import type { AttemptRecord, LifecycleAction, LifecycleEvent, RequestLife, RouteRequest, RoutingMetadata, Usage } from '../lifecycle/seam.ts';
import type { RoutingSettings } from '../config/routing-settings.ts';
import type { Admission } from '../admission/admission.ts';
import type { RequestKindPolicy } from './policy/kind-policy.ts';
import { attemptTotalAtMs, firstTokenAtMs } from './policy/attempt-deadlines.ts';
import { commitsAt, type CommitEvent } from './policy/commit.ts';
import { idleDeadlineFired, recordStreamChunk } from './policy/stream-idle.ts';
import { attemptsSummary, respondError } from './ending.ts';
import { reportAttemptOutcome } from './attempt-outcome.ts';
import { DeadlineBook, deadlineAttempt, deadlineKind } from './deadline-book.ts';
import { isKeyRelatedFailure } from '../keys/key-pools.ts';
import type { QueueTarget } from '../admission/queue-gate.ts';
import { CANCELLED, FIRST_TOKEN_TIMEOUT, KEY_SILENCED, OK, endedRecord, newLiveAttempt, type AttemptRole, type LiveAttempt } from './live-attempt.ts';
import type { AttemptPolicy, CandidateSource } from './family.ts';
import { checkLedger } from './life-checks.ts';

/** The attempt table of a life with none live: shared, never written (see `Life.live`). */
const NO_LIVE: LiveAttempt[] = Object.freeze([]) as unknown as LiveAttempt[];
/** The records of a life with none ended yet: shared, never written (see `Life.recorded`). */
const NO_RECORDS: AttemptRecord[] = Object.freeze([]) as unknown as AttemptRecord[];

/** What a life is built from besides the request (owned by `RoutingCore`, shared by every life). */
export interface LifeParts {
  readonly health: HealthRegistry;
  readonly settings: Readonly<RoutingSettings>;
  readonly admission: Admission;
}

/**
 * One request in flight under candidate source `S`, and its own deadline book (`arm`, `disarm`,
 * `disarmAttempt`, `take`). Created by `request-life.ts`.
 */
export class Life<S extends CandidateSource<Life<S>>> extends DeadlineBook implements RequestLife {
  /**
   * The life the driver holds for this one (a planner's or stats tap wrapping it); outbound-slot
   * wake-ups are addressed to it. Null ⇒ this life itself. A field, not a WeakMap entry per request.
   */
  outerLife: RequestLife | null = null;
  readonly requestId: string;
  /** True once `done` has been emitted; `step` then ignores every event. */
  done = false;
  /** The committed attempt's id, or null before the commit. */
  committed: number | null = null;
  /**
   * Attempts started and not ended (one, or two while a hedge races). Starts as a shared empty
   * array; the first attempt gets the life its own, sized to it.
   */
  live: LiveAttempt[] = NO_LIVE;
  /** The id the next attempt gets (ids count from 1; a skipped attempt takes one too). */
  nextAttemptId = 1;
  /**
   * Every ended attempt, in start order. Starts as a shared empty array and becomes the
   * request's own at the first record, sized to it (most lives record one attempt).
   */
  private recorded: AttemptRecord[] = NO_RECORDS;
  /** Tickets (outbound slot or engine-hold place) taken, and released, by this life's attempts. */
  ticketsTaken = 0;
  ticketsReleased = 0;
  /** The failure the client is told of when every attempt failed, and its attempt. */
  firstFailure: Outcome | null = null;
  firstFailureAttemptId: number | null = null;
  /** An explicit pin (admin): no fallback, no retry. */
  pinned = false;
  /** Why the first route or target was chosen (the metadata's `reason`). */
  reason = 'none';
  firstTokenAtMs: number | null = null;
  /** The overall deadline, absolute ms (Infinity until `setOverall`). */
  overallAtMs = Number.POSITIVE_INFINITY;
  /** The attempt that served the request, once one did. */
  servedBy: LiveAttempt | null = null;

  constructor(
    readonly model: ResolvedModel | null,
    readonly request: RouteRequest,
    readonly rng: Rng,
    readonly parts: LifeParts,
    /** The family's resolved rules (waits, commit point, failure rules); null for an unknown alias. */
    readonly kind: RequestKindPolicy | null,
    readonly source: S,
    readonly policy: AttemptPolicy<Life<S>>,
  ) {
    super();
    this.requestId = request.requestId;
  }

  get isDone(): boolean {
    return this.done;
  }

  /** Every ended attempt, in start order. */
  get attempts(): readonly AttemptRecord[] {
    return this.recorded;
  }

  /** Appends the record of an ended (or skipped) attempt. */
  recordAttempt(r: AttemptRecord): void {
    if (this.recorded === NO_RECORDS) this.recorded = [r];
    else this.recorded.push(r);
  }

  /** The records as the request's own array (for the routing metadata, which outlives the life). */
  attemptList(): AttemptRecord[] {
    return this.recorded === NO_RECORDS ? [] : this.recorded;
  }

  /** Runs selection at `nowMs`. Called once, by `request-life.ts`. */
  begin(nowMs: number): LifecycleAction[] {
    return this.source.begin(this, nowMs);
  }

  invariants(): void {
    checkLedger(this);
    this.policy.check(this);
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
        if (!a || a.phase !== 'sent') return [];
        this.gotOutput(a);
        this.policy.firstOutput(this, a, nowMs);
        return this.commitIf(a, 'first_output', nowMs);
      }
      case 'first_token': {
        const a = this.liveAttempt(event.attemptId);
        if (!a || a.phase !== 'sent') return [];
        this.gotOutput(a);
        this.disarm(a.attemptId, 'first_token');
        this.policy.firstToken(this, a, nowMs);
        if (this.firstTokenAtMs === null) this.firstTokenAtMs = nowMs;
        return this.commitIf(a, 'first_token', nowMs);
      }
      case 'chunk': {
        const a = this.liveAttempt(event.attemptId);
        if (!a || a.phase !== 'sent') return [];
        const atMs = recordStreamChunk(a, nowMs, this.parts.settings.streamIdleTimeoutSec);
        return atMs === null ? [] : [this.arm('idle', a.attemptId, atMs)];
      }
      case 'finished': {
        const a = this.liveAttempt(event.attemptId);
        if (!a || a.phase !== 'sent') return [];
        const commit: LifecycleAction | null = this.committed === null ? { kind: 'commit', attemptId: a.attemptId } : null;
        if (commit !== null) this.committed = a.attemptId;
        this.policy.finishing(this, a, nowMs);
        this.endAttempt(a, OK, nowMs, OK, event.usage);
        this.policy.served(this, a, nowMs);
        this.servedBy = a;
        if (this.live.length === 0) {
          const done = this.doneAction('ok', nowMs, event.usage);
          return commit === null ? [done] : [commit, done]; // the usual end: sized literals
        }
        const out: LifecycleAction[] = commit === null ? [] : [commit];
        this.cancelOthers(nowMs, -1, out, 'hedge_lost'); // a hedge race: the other attempt lost
        out.push(this.doneAction('ok', nowMs, event.usage));
        return out;
      }
      case 'failed': {
        const a = this.liveAttempt(event.attemptId);
        if (!a || a.phase !== 'sent') return [];
        if (a.key !== null) {
          const again = this.retryOnAnotherKey(a, event.outcome, nowMs);
          if (again !== null) return again;
        }
        return this.policy.failed(this, a, event.outcome, nowMs);
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

  // ---- attempts -------------------------------------------------------------------------

  /**
   * Starts an attempt on `route` (an alias's `target`, else null): queued behind an outbound slot
   * or engine-hold place when one applies and none is free (`acquire_slot` + a give-up
   * `wait_until`), else sent at once. Actions go to `out`; returns `out`.
   */
  startAttempt(route: ResolvedRoute, target: ResolvedTarget | null, claim: DispatchClaim | null, role: AttemptRole, nowMs: number, out: LifecycleAction[] = []): LifecycleAction[] {
    const attemptId = this.nextAttemptId++;
    const a = newLiveAttempt(attemptId, route, target, claim, role, nowMs);
    if (this.live.length === 0) this.live = [a];
    else this.live.push(a);
    const policy = this.policy;
    policy.attemptStarting(this, a);
    let queueTarget: QueueTarget = route;
    const keyGate = this.parts.admission.gates.keyPool;
    if (keyGate !== null) {
      const pick = keyGate.pick(route.endpointId, this.request.callerRole ?? null, this.request.callerId, nowMs);
      if (pick !== null) {
        if (pick.kind === 'exhausted') {
          // No upstream call: a failed attempt that falls back (seed 000 KeyPoolExhausted).
          out.push(...policy.failed(this, a, { kind: 'key_pool_exhausted', roleRestricted: pick.roleRestricted }, nowMs));
          return out;
        }
        a.key = { keyId: pick.keyId, fingerprint: pick.fingerprint };
        queueTarget = keyGate.queueTarget(route.endpointId, pick.fingerprint);
      }
    }
    if (this.parts.admission.queue(queueTarget, policy.holdLimit(this), this, attemptId, a)) {
      this.ticketsTaken++;
      if (a.ticket!.state !== 'held') {
        const giveUpAtMs = Math.min(nowMs + policy.queueWaitMs(this, a), this.overallAtMs);
        out.push({ kind: 'acquire_slot', attemptId, endpointId: route.endpointId, giveUpAtMs }, this.arm('queue', attemptId, giveUpAtMs));
        return out;
      }
    }
    this.send(a, nowMs, out);
    return out;
  }

  /**
   * Sends a (no longer queued) attempt: the dispatch, then its waits in this order (equal-time
   * timers fire in arming order): a stream's first token, the headers, a non-stream attempt's
   * total (a stream's is the overall deadline), the family's own. The headers wait is left out
   * when the first-token wait is due no later: output comes before or with the first token, and
   * the first-token wait (armed first) ends the attempt, so the headers wait could never fire.
   */
  send(a: LiveAttempt, nowMs: number, out: LifecycleAction[]): void {
    if (a.ticket !== null) this.disarm(a.attemptId, 'queue');
    a.phase = 'sent';
    const k = this.kind!;
    const stream = this.request.stream;
    this.policy.beforeDispatch(this, a, nowMs);
    out.push(a.key === null ? { kind: 'dispatch', attemptId: a.attemptId, endpointId: a.route.endpointId } : { kind: 'dispatch', attemptId: a.attemptId, endpointId: a.route.endpointId, key: a.key });
    const firstAtMs = firstTokenAtMs(k.waits, stream, nowMs, this.overallAtMs);
    if (firstAtMs !== null) out.push(this.arm('first_token', a.attemptId, firstAtMs));
    const headersAtMs = nowMs + k.headersMs;
    if (firstAtMs === null || firstAtMs > headersAtMs) out.push(this.arm('headers', a.attemptId, headersAtMs));
    const totalAtMs = attemptTotalAtMs(k.waits, stream, nowMs, this.overallAtMs);
    if (totalAtMs !== null) out.push(this.arm('total', a.attemptId, totalAtMs));
    this.policy.afterDispatch(this, a, nowMs, out);
  }

  /** `send` collecting its actions into a fresh array. */
  sent(a: LiveAttempt, nowMs: number): LifecycleAction[] {
    const out: LifecycleAction[] = [];
    this.send(a, nowMs, out);
    return out;
  }

  /** First upstream output (headers, preamble or a token): lifts the headers and engine waits, frees a hold place. */
  gotOutput(a: LiveAttempt): void {
    if (a.gotOutput) return;
    a.gotOutput = true;
    this.disarm(a.attemptId, 'headers');
    this.disarm(a.attemptId, 'engine_wait');
    if (a.ticketGate?.releasedAtFirstOutput === true) this.releaseTicket(a, null);
  }

  /** Commits `a` when `event` is the family's commit point; the other attempt of a hedge race loses. */
  private commitIf(a: LiveAttempt, event: CommitEvent, nowMs: number): LifecycleAction[] {
    if (this.committed !== null || !commitsAt(this.kind!.commitPoint, event, this.request.stream)) return [];
    this.committed = a.attemptId;
    const out: LifecycleAction[] = [{ kind: 'commit', attemptId: a.attemptId }];
    return this.live.length > 1 ? this.cancelOthers(nowMs, a.attemptId, out, 'hedge_lost') : out;
  }

  /** Gives the attempt's slot or hold place back if it still holds one (idempotent per attempt). */
  releaseTicket(a: LiveAttempt, outcome: Outcome | null): void {
    if (this.parts.admission.release(a, outcome)) this.ticketsReleased++;
  }

  /**
   * Ends an attempt exactly once — ticket, deadlines, the family's tables, the breaker and
   * planner — and records it. `healthOutcome` is what shared state hears (neutral for offload
   * cuts); `usage` is what the upstream reported for this attempt (the serving one): recorded
   * on router attempts when given, and on alias attempts always (zero when absent: not billed).
   */
  endAttempt(a: LiveAttempt, outcome: Outcome, nowMs: number, healthOutcome: Outcome = outcome, usage?: Usage): void {
    // With a key pool only the key is blamed for a key-related failure; the endpoint hears of
    // it only once every key is silenced (seed 000).
    if (healthOutcome === outcome && this.keyBlamed(a, outcome) && !this.parts.admission.gates.keyPool!.allSilenced(a.route.endpointId, nowMs)) healthOutcome = KEY_SILENCED;
    const live = this.live;
    const i = live.indexOf(a);
    if (i >= 0) {
      if (i === live.length - 1) live.pop();
      else live.splice(i, 1);
    }
    this.disarmAttempt(a.attemptId);
    this.releaseTicket(a, outcome);
    this.policy.attemptEnded(this, a, outcome, healthOutcome, nowMs);
    const sent = a.phase === 'sent';
    if (sent || a.claim !== null) reportAttemptOutcome(this.parts.health, this.model, a.route.endpointId, a.claim, sent, healthOutcome, nowMs);
    this.recordAttempt(endedRecord(a, outcome, nowMs, usage));
  }

  /**
   * Whether `outcome` of `a` blames its pooled key (401/402/403/429 on an attempt that sent with
   * one): then the key is silenced, and the endpoint-wide tables (Retry-After, breaker) are left
   * alone while another key remains.
   */
  keyBlamed(a: LiveAttempt, outcome: Outcome): boolean {
    return a.key !== null && isKeyRelatedFailure(outcome);
  }

  /**
   * A pooled attempt failed: silence its key when the failure is key-related and, while the
   * caller still has a key of the pool in the rotation, send the request again on the same
   * route with the next key (no breaker count; a breaker that gives no fresh claim, a commit,
   * a pin or a hedge race leave it to the family's policy). Null when the policy decides.
   */
  private retryOnAnotherKey(a: LiveAttempt, outcome: Outcome, nowMs: number): LifecycleAction[] | null {
    const gate = this.parts.admission.gates.keyPool;
    if (gate === null || !gate.keyFailed(a.route.endpointId, a.key!.fingerprint, outcome, nowMs)) return null;
    if (this.committed !== null || this.pinned || this.live.length > 1) return null;
    if (!gate.usableBy(a.route.endpointId, this.request.callerRole ?? null, nowMs)) return null;
    let claim: DispatchClaim | null = null;
    if (a.claim !== null) {
      claim = this.parts.admission.gates.breaker.claim(a.route.endpointId, nowMs);
      if (claim === null) return null;
    }
    this.endAttempt(a, outcome, nowMs, KEY_SILENCED);
    return this.startAttempt(a.route, a.target, claim, 'retry', nowMs);
  }

  /** Cancels every live attempt except `keep` (sent ones get a `cancel`; queued ones just leave), recorded as `outcome`. */
  cancelOthers(nowMs: number, keep = -1, out: LifecycleAction[] = [], reason?: 'hedge_lost', outcome: Outcome = CANCELLED): LifecycleAction[] {
    // Backwards: `endAttempt` removes the attempt from `live`.
    for (let i = this.live.length - 1; i >= 0; i--) {
      const a = this.live[i]!;
      if (a.attemptId === keep) continue;
      if (a.phase === 'sent') out.push(reason === undefined ? { kind: 'cancel', attemptId: a.attemptId } : { kind: 'cancel', attemptId: a.attemptId, reason });
      this.endAttempt(a, outcome, nowMs);
    }
    return out;
  }

  /** The live attempt with `attemptId`, or undefined. */
  liveAttempt(attemptId: number): LiveAttempt | undefined {
    const live = this.live;
    for (let i = 0; i < live.length; i++) if (live[i]!.attemptId === attemptId) return live[i];
    return undefined;
  }

  /** Whether an attempt (ended or live) already went to `endpointId`. */
  tried(endpointId: string): boolean {
    for (const a of this.attempts) if (a.endpointId === endpointId) return true;
    for (const a of this.live) if (a.route.endpointId === endpointId) return true;
    return false;
  }

  // ---- deadlines --------------------------------------------------------------------------

  /** Sets the overall deadline from `nowMs` (done before the first attempt starts). */
  setOverall(nowMs: number): void {
    this.overallAtMs = nowMs + this.parts.settings.overallDeadlineSec * 1000;
  }

  /** Appends the overall deadline's `wait_until` to `begin`'s actions (unless the life already ended). */
  withOverall(out: LifecycleAction[]): LifecycleAction[] {
    if (!this.done) out.push(this.arm('overall', 0, this.overallAtMs));
    return out;
  }

  private onDeadline(deadlineId: number, nowMs: number): LifecycleAction[] {
    const packed = this.take(deadlineId);
    if (packed === 0) return [];
    const kind = deadlineKind(packed);
    // A wait due with (or after) the overall deadline yields to it: a queue give-up capped by the
    // overall deadline fires at the same instant, and the request has no time left to act on it.
    // A first-token wait does not: it fails its attempt like any upstream failure, and the overall
    // deadline, when due, ends what follows.
    if (kind === 'overall' || (nowMs >= this.overallAtMs && kind !== 'first_token')) {
      const out = this.cancelOthers(nowMs, -1, [], undefined, this.policy.overallOutcome);
      out.push(...this.fail('upstream_timeout', `request exceeded its overall deadline of ${this.parts.settings.overallDeadlineSec} s`, nowMs));
      return out;
    }
    if (kind === 'backoff') return this.policy.backoffDone(this, deadlineId, nowMs);
    const a = this.liveAttempt(deadlineAttempt(packed));
    if (!a) return [];
    switch (kind) {
      case 'queue':
        if (a.phase !== 'queued') return [];
        if (a.ticket !== null && a.ticket.state === 'held') return this.sent(a, nowMs); // granted, wake-up not yet delivered
        return this.policy.queueGaveUp(this, a, nowMs);
      case 'engine_wait':
        return this.policy.engineWaitExpired(this, a, nowMs);
      case 'hedge':
        return this.policy.hedgeCheckpoint(this, a, nowMs);
      case 'first_token': // none came (the wait is forgotten at the first token): a failure like a driver-reported one
        if (a.phase !== 'sent') return [];
        return [{ kind: 'cancel', attemptId: a.attemptId, reason: 'first_token_timeout' }, ...this.policy.failed(this, a, FIRST_TOKEN_TIMEOUT, nowMs)];
      case 'headers':
      case 'total':
        return a.phase === 'sent' ? this.policy.stalled(this, a, nowMs) : [];
      case 'idle': {
        if (a.phase !== 'sent') return [];
        const rearmAtMs = idleDeadlineFired(a, nowMs, this.parts.settings.streamIdleTimeoutSec);
        if (rearmAtMs !== null) return [this.arm('idle', a.attemptId, rearmAtMs)]; // chunks came since
        return this.policy.stalled(this, a, nowMs);
      }
    }
  }

  // ---- endings ----------------------------------------------------------------------------

  /** Records `outcome` of attempt `attemptId` as the one the client hears of, unless one is already. */
  noteFailure(outcome: Outcome, attemptId: number): void {
    if (this.firstFailure !== null) return;
    this.firstFailure = outcome;
    this.firstFailureAttemptId = attemptId;
  }

  /** Ends with the error of `outcome`, reported by attempt `attemptId` (its body may pass through). */
  failWithOutcome(outcome: Outcome, nowMs: number, attemptId: number | null): LifecycleAction[] {
    const e = errorForOutcome(outcome);
    return this.fail(e.code, this.policy.allFailedMessage(this, attemptsSummary(this.attempts)), nowMs, e.status, e.retryAfterSec, attemptId);
  }

  /** Ends with error `code` (a `respond_error` unless the client left, then `done`). */
  fail(code: ErrorCode, message: string, nowMs: number, status = ERROR_STATUS[code], retryAfterSec: number | null = null, attemptId: number | null = null): LifecycleAction[] {
    const respond = respondError(code, message, status, retryAfterSec, attemptId);
    const done = this.doneAction(code, nowMs, null);
    return respond === null ? [done] : [respond, done];
  }

  /** Ends the life: `done` with the routing metadata. `step` ignores everything from here on. */
  doneAction(status: string, nowMs: number, usage: Usage | null): LifecycleAction {
    this.done = true;
    this.policy.ended(this);
    return { kind: 'done', metadata: this.policy.metadata(this, status, nowMs, usage) };
  }
}
