/**
 * The life of one request to a multi-target alias (seed 003), a state machine behind the same
 * seam as the per-model life and composed of the same parts (`request/request-life.ts` picks it).
 *
 * Selection: published (else 404) → explicit pin (admin; no retries, no fallback) → the
 * candidate pipeline (tags, CIDR, modalities, priority tiers; `multi-target/candidates.ts`) →
 * the context-window floor → the tier walk (`request/candidates/tier-walk.ts`): within the
 * highest tier, the strategy's order over the targets the admission admits, then the next tier.
 * A target over its rate limit is recorded as a failed 429 attempt (no upstream call, no
 * fallback budget). Nothing admitted at the start: 429/503 with Retry-After when targets are
 * cooling after upstream hints, 429 when targets were skipped for their rate limits, else 503
 * `all_candidates_unavailable` — or, under `when_all_unavailable: try_anyway`, the walk runs
 * again ignoring cooldown.
 *
 * Attempt policy (`request/policy/kind-policy.ts`, alias family): a retryable failure
 * (`request/policy/retry-policy.ts`) is retried on the same target after a backoff
 * (`request/policy/backoff.ts`, a `wait_until` the driver performs) up to the target's `retries`
 * (else the block's; else none while another target is left, and the deployment default on the
 * last one); then the walk moves on, at most `max_fallbacks` extra targets across all tiers.
 * Other failures go straight back to the caller. Streams commit (`request/policy/commit.ts`) at
 * the first token when a first-chunk wait is set, else at the upstream's response start. A
 * same-target retry waits at least the upstream's Retry-After; when that would outlast the
 * overall deadline the request fails over, or returns the error with the hint.
 *
 * Deadlines (`request/deadline-book.ts`, `request/policy/attempt-deadlines.ts`): overall, headers,
 * a non-stream attempt's total, a stream's first-chunk wait and the stream-idle wait after
 * `chunk` events. Admission (`admission/`): the Retry-After and cooldown gates, the per-target
 * rate limit and the outbound slot of the provider key — the same slots per-model routes use.
 *
 * Shared state: every upstream attempt is counted in `EndpointStats` (in flight, latency), its
 * outcome recorded in the shared `HealthRegistry` (`request/attempt-outcome.ts`; the breaker is
 * recorded into, never claimed — ejection is the target's opt-in cooldown) and fed to the
 * cooldown registry and the planner. Each attempt's begin is matched by exactly one end.
 */
import type { Rng } from '../rng.ts';
import type { ResolvedModel } from '../model/resolved-model.ts';
import type { HealthRegistry } from '../health/health-registry.ts';
import type { Outcome } from '../lifecycle/outcome.ts';
import { ERROR_STATUS, errorForOutcome, type ErrorCode } from '../lifecycle/errors.ts';
import type { AttemptRecord, LifecycleAction, LifecycleEvent, RequestLife, RouteRequest, RoutingMetadata, Usage } from '../lifecycle/seam.ts';
import type { EndpointStats } from '../stats/endpoint-stats.ts';
import type { RoutingSettings } from '../config/routing-settings.ts';
import type { OutboundLimiter } from '../outbound/outbound-limiter.ts';
import type { SlotTicket } from '../outbound/slot-pool.ts';
import type { RetryAfterTable } from '../health/retry-after.ts';
import type { Admission } from '../admission/admission.ts';
import type { QueueGate } from '../admission/queue-gate.ts';
import type { CooldownRegistry } from '../health/cooldown.ts';
import type { MultiTargetOptions } from '../multi-target/multi-target-options.ts';
import type { ResolvedMultiTarget, ResolvedTarget } from '../multi-target/multi-target-model.ts';
import { selectCandidates } from '../multi-target/candidates.ts';
import { classifyFailure } from './policy/retry-policy.ts';
import { backoffMs } from './policy/backoff.ts';
import { contextNeedTokens, fitsWindow, noWindowFitsMessage, refusalFloorTokens } from './candidates/context-floor.ts';
import { aliasPolicy, type RequestKindPolicy } from './policy/kind-policy.ts';
import { commitsAt } from './policy/commit.ts';
import { dispatchDeadlines } from './policy/attempt-deadlines.ts';
import { attemptsSummary, respondError } from './ending.ts';
import { reportAttemptOutcome } from './attempt-outcome.ts';
import { TierWalk } from './candidates/tier-walk.ts';
import { DeadlineBook, deadlineAttempt, deadlineKind, type DeadlineKind, type WaitUntil } from './deadline-book.ts';
import { idleDeadlineFired, recordStreamChunk, type StreamIdleState } from './policy/stream-idle.ts';

/** Process-wide state a multi-target life uses, owned by `RoutingCore`. */
export interface MultiTargetDeps {
  readonly health: HealthRegistry;
  readonly stats: EndpointStats;
  readonly cooldowns: CooldownRegistry;
  readonly options: Readonly<MultiTargetOptions>;
  readonly settings: Readonly<RoutingSettings>;
  /** Outbound slots per provider key, shared with per-model routers. */
  readonly limiter: OutboundLimiter;
  /** Retry-After not-before times per endpoint, shared with per-model routers. */
  readonly retryAfter: RetryAfterTable;
  /** The gates every attempt asks (checks: Retry-After, cooldown; rate limit; outbound slot). */
  readonly admission: Admission;
}

interface LiveAttempt extends StreamIdleState {
  readonly attemptId: number;
  readonly target: ResolvedTarget;
  readonly startMs: number;
  sampled: boolean;
  /** Queued for an outbound slot, or sent upstream. */
  phase: 'queued' | 'sent';
  /** The outbound slot while held or waited for; null when exempt or released. */
  ticket: SlotTicket | null;
  /** The queue gate that issued `ticket`; null when none applied. */
  ticketGate: QueueGate | null;
  /** Whether this attempt is a same-target retry (it costs no fallback budget). */
  readonly retry: boolean;
  gotOutput: boolean;
}

const TIMEOUT: Outcome = { kind: 'transport', cause: 'timeout' };

const NO_USAGE: Usage = Object.freeze({ inputTokens: 0, outputTokens: 0, cachedTokens: 0 });

function isTimeout(o: Outcome): boolean {
  return o.kind === 'first_token_timeout' || (o.kind === 'transport' && o.cause === 'timeout');
}

/** Implementation of `RequestLife` for multi-target models. Created by `RoutingCore.start`. */
export class MultiTargetLifecycle implements RequestLife {
  /** The life the driver holds for this one, when wrapped; outbound-slot wake-ups go to it. */
  outerLife: RequestLife | null = null;
  readonly requestId: string;
  private readonly mt: ResolvedMultiTarget | null;
  /** The alias family's attempt policy for this model (`request/policy/kind-policy.ts`). */
  private readonly kindPolicy: RequestKindPolicy | null;
  private done = false;
  /** The walk over the candidate tiers (`request/candidates/tier-walk.ts`); set by `begin`. */
  private tiers!: TierWalk;
  private live: LiveAttempt | null = null;
  private wait: { deadlineId: number; target: ResolvedTarget } | null = null;
  /** Armed deadlines (`request/deadline-book.ts`). */
  private readonly deadlines = new DeadlineBook();
  private overallAtMs = Number.POSITIVE_INFINITY;
  private firstFailureAttemptId: number | null = null;
  private ticketsTaken = 0;
  private ticketsReleased = 0;
  private nextAttemptId = 1;
  private readonly attempts: AttemptRecord[] = [];
  /** Distinct targets dispatched to (the first plus the fallbacks). */
  private targetsDispatched = 0;
  private retriesOnCurrent = 0;
  private retriesTotal = 0;
  private firstFailure: Outcome | null = null;
  private skippedForRate = 0;
  private soonestTokenMs = Number.POSITIVE_INFINITY;
  private pinned = false;
  private reason = 'none';
  private committed: number | null = null;
  private firstTokenAtMs: number | null = null;
  private servedBy: ResolvedTarget | null = null;

  constructor(
    private readonly model: ResolvedModel | null,
    private readonly request: RouteRequest,
    private readonly deps: MultiTargetDeps,
    private readonly rng: Rng,
  ) {
    this.requestId = request.requestId;
    this.mt = model?.multiTarget ?? null;
    this.kindPolicy = this.mt === null ? null : aliasPolicy(this.mt, deps.settings);
  }

  get isDone(): boolean {
    return this.done;
  }

  /** Runs selection at `nowMs`. Called once, by `RoutingCore.start`. */
  begin(nowMs: number): LifecycleAction[] {
    const model = this.model;
    const mt = this.mt;
    if (!model || !mt || !model.published) {
      return this.fail('model_not_found', `model '${this.request.model}' does not exist or is not published`, nowMs);
    }
    if (this.request.pin !== null) {
      const pin = this.request.pin;
      const t = mt.targets.find((x) => x.endpointId === pin || x.route.provider === pin || x.model === pin);
      if (!t) {
        return this.fail('route_pin_not_found', `X-Route-Pin '${pin}' matches no target of model '${model.id}'; targets: ${mt.targets.map((x) => x.endpointId).join(', ')}`, nowMs);
      }
      this.pinned = true;
      this.reason = 'pin';
      this.tiers = new TierWalk([], model.planner, this.request, this.rng, this.deps.admission);
      return this.withOverall(this.startAttempt(t, nowMs, false), nowMs);
    }
    const sel = selectCandidates(model.id, mt, this.request);
    if (sel.kind === 'reject') return this.fail(sel.code, sel.message, nowMs);
    let tiers = sel.tiers;
    // Context-window floor: the prompt estimate plus the expected output must fit a target's window.
    const need = contextNeedTokens(this.request);
    const fits = (x: ResolvedTarget) => fitsWindow(x.route.contextLength, need);
    if (!tiers.every((tier) => tier.every(fits))) {
      const fitting = tiers.map((tier) => tier.filter(fits)).filter((tier) => tier.length > 0);
      if (fitting.length === 0) return this.fail('context_length_exceeded', noWindowFitsMessage(model.id, need, tiers.flat().map((x) => x.route.contextLength)), nowMs);
      tiers = fitting;
    }
    this.tiers = new TierWalk(tiers, model.planner, this.request, this.rng, this.deps.admission);

    let t = this.walk(nowMs);
    if (!t && mt.whenAllUnavailable === 'try_anyway' && this.tiers.anyCooling(nowMs)) {
      this.tiers.ignoreCooldown = true;
      this.tiers.restart();
      t = this.walk(nowMs);
      if (t) this.tiers.reason = 'try_anyway';
    }
    if (!t) {
      const cooling = this.coolingAnswer(nowMs);
      if (cooling !== null) return cooling;
      if (this.skippedForRate > 0) {
        const after = Number.isFinite(this.soonestTokenMs) ? Math.max(1, Math.ceil(this.soonestTokenMs / 1000)) : null;
        return this.fail('target_rate_limited', `every eligible target of model '${model.id}' is over its rate limit`, nowMs, ERROR_STATUS.target_rate_limited, after);
      }
      const considered = this.tiers.tiers.flat().map((x) => {
        const s = this.deps.cooldowns.status(x.endpointId, nowMs);
        return `${x.model} (${s.state === 'cooldown' ? `cooldown: ${s.reason}` : s.state})`;
      });
      return this.fail('all_candidates_unavailable', `no admissible target for model '${model.id}'; considered: ${considered.join(', ')}`, nowMs);
    }
    this.reason = this.tiers.reason;
    return this.withOverall(this.startAttempt(t, nowMs, false), nowMs);
  }

  /** Arms the overall deadline after `begin`'s first actions (unless the life already ended). */
  private withOverall(out: LifecycleAction[], nowMs: number): LifecycleAction[] {
    this.overallAtMs = nowMs + this.deps.settings.overallDeadlineSec * 1000;
    if (!this.done) out.push(this.arm('overall', 0, this.overallAtMs));
    return out;
  }

  /**
   * When nothing was admitted because targets are cooling after upstream 429s / busy answers
   * (Retry-After, or a cooldown that a 429 started): 429 (or 503 when a busy answer set the
   * soonest time) with Retry-After until the first target may be tried again. Null when some
   * target was left out for another reason.
   */
  private coolingAnswer(nowMs: number): LifecycleAction[] | null {
    let soonestMs = Number.POSITIVE_INFINITY;
    let status = 429;
    for (const x of this.tiers.tiers.flat()) {
      if (this.tiers.tried.has(x.index)) continue;
      const wait = this.deps.retryAfter.remainingMs(x.endpointId, nowMs);
      const c = this.deps.cooldowns.status(x.endpointId, nowMs);
      let ms = 0;
      let st = 429;
      if (wait > 0) {
        ms = wait;
        st = this.deps.retryAfter.statusOf(x.endpointId);
      }
      if (c.state === 'cooldown' && !this.tiers.ignoreCooldown) {
        if (c.reason !== 'http_429') return null;
        ms = Math.max(ms, c.untilMs! - nowMs);
      }
      if (ms <= 0) return null;
      if (ms < soonestMs) {
        soonestMs = ms;
        status = st;
      }
    }
    if (!Number.isFinite(soonestMs)) return null;
    const after = Math.max(1, Math.ceil(soonestMs / 1000));
    const code = status === 429 ? 'upstream_rate_limited' : 'upstream_overloaded';
    return this.fail(code, `every target of model '${this.model!.id}' asked us to retry later`, nowMs, ERROR_STATUS[code], after);
  }

  step(event: LifecycleEvent, nowMs: number): LifecycleAction[] {
    if (this.done) return [];
    switch (event.kind) {
      case 'attempt_sent':
        return [];
      case 'slot_acquired': {
        const a = this.liveAttempt(event.attemptId);
        if (!a || a.phase !== 'queued' || a.ticket?.state !== 'held') return [];
        return this.send(a, nowMs);
      }
      case 'first_output': {
        const a = this.liveAttempt(event.attemptId);
        if (!a || a.phase !== 'sent') return [];
        this.gotOutput(a);
        // Without a first-chunk wait a stream commits when the upstream response starts (seed 003).
        if (this.committed === null && commitsAt(this.kindPolicy?.commitPoint ?? 'first_token', 'first_output', this.request.stream)) {
          this.committed = a.attemptId;
          return [{ kind: 'commit', attemptId: a.attemptId }];
        }
        return [];
      }
      case 'first_token': {
        const a = this.liveAttempt(event.attemptId);
        if (!a || a.phase !== 'sent') return [];
        this.gotOutput(a);
        if (this.firstTokenAtMs === null) this.firstTokenAtMs = nowMs;
        if (!this.request.stream) return [];
        if (!a.sampled) {
          a.sampled = true;
          this.deps.stats.sample(a.target.endpointId, nowMs - a.startMs);
        }
        if (this.committed === null) {
          this.committed = a.attemptId;
          return [{ kind: 'commit', attemptId: a.attemptId }];
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
        if (this.committed === null) {
          this.committed = a.attemptId;
          out.push({ kind: 'commit', attemptId: a.attemptId });
        }
        if (!a.sampled) this.deps.stats.sample(a.target.endpointId, nowMs - a.startMs);
        this.endAttempt(a, { kind: 'ok' }, nowMs, event.usage);
        this.servedBy = a.target;
        out.push(this.doneAction('ok', nowMs, event.usage));
        return out;
      }
      case 'failed': {
        const a = this.liveAttempt(event.attemptId);
        if (!a || a.phase !== 'sent') return [];
        return this.onFailure(a, event.outcome, nowMs);
      }
      case 'deadline':
        return this.onDeadline(event.deadlineId, nowMs);
      case 'client_gone': {
        const out: LifecycleAction[] = [];
        const a = this.live;
        if (a) {
          if (a.phase === 'sent') out.push({ kind: 'cancel', attemptId: a.attemptId });
          this.endAttempt(a, { kind: 'cancelled' }, nowMs, NO_USAGE);
        }
        this.wait = null;
        out.push(this.doneAction('client_gone', nowMs, null));
        return out;
      }
    }
  }

  private onDeadline(deadlineId: number, nowMs: number): LifecycleAction[] {
    const packed = this.deadlines.take(deadlineId);
    if (packed === 0) return [];
    const d = { kind: deadlineKind(packed), attemptId: deadlineAttempt(packed) };
    switch (d.kind) {
      case 'overall': {
        const out: LifecycleAction[] = [];
        const a = this.live;
        if (a) {
          if (a.phase === 'sent') out.push({ kind: 'cancel', attemptId: a.attemptId });
          this.endAttempt(a, TIMEOUT, nowMs, NO_USAGE);
        }
        this.wait = null;
        out.push(...this.fail('upstream_timeout', `request exceeded its overall deadline of ${this.deps.settings.overallDeadlineSec} s`, nowMs));
        return out;
      }
      case 'backoff': {
        const w = this.wait;
        if (!w || w.deadlineId !== deadlineId) return [];
        this.wait = null;
        const t = w.target;
        if (!this.deps.admission.gates.rateLimit.take(t, nowMs)) {
          this.recordRateSkip(t, nowMs);
          return this.moveOn(nowMs);
        }
        return this.startAttempt(t, nowMs, true);
      }
      case 'queue': {
        const a = this.liveAttempt(d.attemptId);
        if (!a || a.phase !== 'queued') return [];
        if (a.ticket !== null && a.ticket.state === 'held') return this.send(a, nowMs); // granted, wakeup not yet delivered
        return this.onFailure(a, { kind: 'queue_wait_timeout' }, nowMs);
      }
      case 'headers': {
        const a = this.liveAttempt(d.attemptId);
        if (!a || a.phase !== 'sent' || a.gotOutput) return [];
        return [{ kind: 'cancel', attemptId: a.attemptId }, ...this.onFailure(a, TIMEOUT, nowMs)];
      }
      case 'idle': {
        const a = this.liveAttempt(d.attemptId);
        if (!a || a.phase !== 'sent') return [];
        const rearmAtMs = idleDeadlineFired(a, nowMs, this.deps.settings.streamIdleTimeoutSec);
        if (rearmAtMs !== null) return [this.arm('idle', a.attemptId, rearmAtMs)]; // chunks came since
        return [{ kind: 'cancel', attemptId: a.attemptId }, ...this.onFailure(a, TIMEOUT, nowMs)];
      }
      case 'total':
      case 'engine_wait':
      case 'hedge': // never armed by this life
        return [];
    }
  }

  /** Arms a deadline and returns its `wait_until`. */
  private arm(kind: DeadlineKind, attemptId: number, atMs: number): WaitUntil {
    return this.deadlines.arm(kind, attemptId, atMs);
  }

  /** Forgets every deadline of attempt `attemptId` (or those of one kind). */
  private disarm(attemptId: number, kind?: DeadlineKind): void {
    if (kind === undefined) this.deadlines.disarmAttempt(attemptId);
    else this.deadlines.disarm(attemptId, kind);
  }

  private gotOutput(a: LiveAttempt): void {
    if (a.gotOutput) return;
    a.gotOutput = true;
    this.disarm(a.attemptId, 'headers');
  }

  invariants(): void {
    const id = this.requestId;
    if (this.done && (this.live !== null || this.wait !== null)) throw new Error(`${id}: attempt or backoff still pending after done`);
    const held = this.live?.ticket ? 1 : 0;
    if (this.ticketsTaken !== this.ticketsReleased + held) throw new Error(`${id}: slot tickets taken ${this.ticketsTaken} != released ${this.ticketsReleased} + held ${held}`);
    if (this.live !== null && this.wait !== null) throw new Error(`${id}: an attempt in flight while backing off`);
    if (this.attempts.length + (this.live ? 1 : 0) !== this.nextAttemptId - 1) throw new Error(`${id}: attempts recorded + live != attempts started`);
    const max = this.mt?.maxFallbacks ?? null;
    if (max !== null && this.targetsDispatched - 1 > max) throw new Error(`${id}: ${this.targetsDispatched - 1} fallbacks > max_fallbacks ${max}`);
    for (const r of this.attempts) if (r.skipped && r.startMs !== r.endMs) throw new Error(`${id}: skipped attempt ${r.attemptId} has a duration`);
  }

  // ---- the walk ---------------------------------------------------------------------------

  /**
   * The next target to dispatch to (`TierWalk.next`), recording a skipped 429 attempt for each
   * target passed over for its rate limit. Null when the fallback budget is spent or every tier
   * is exhausted.
   */
  private walk(nowMs: number): ResolvedTarget | null {
    const t = this.tiers.next(nowMs, this.budgetLeft());
    for (const skipped of this.tiers.drainRateSkips()) this.recordRateSkip(skipped, nowMs);
    return t;
  }

  private budgetLeft(): boolean {
    const max = this.mt!.maxFallbacks;
    return max === null || this.targetsDispatched === 0 || this.targetsDispatched - 1 < max;
  }

  // ---- attempts ---------------------------------------------------------------------------

  private onFailure(a: LiveAttempt, outcome: Outcome, nowMs: number): LifecycleAction[] {
    if (isTimeout(outcome) && !a.sampled && a.phase === 'sent') this.deps.stats.sample(a.target.endpointId, nowMs - a.startMs);
    this.endAttempt(a, outcome, nowMs, NO_USAGE);
    if (this.firstFailure === null) {
      this.firstFailure = outcome;
      this.firstFailureAttemptId = a.attemptId;
    }
    const retryAfterMs = outcome.kind === 'http_status' ? outcome.retryAfterMs : null;
    this.deps.admission.gates.retryAfter.note(a.target.endpointId, outcome, nowMs);
    const cls = classifyFailure(outcome, this.mt!.rules);
    if (this.committed !== null || this.pinned || cls === 'final' || cls === 'terminal') return this.failWithOutcome(outcome, nowMs, a.attemptId);
    if (cls === 'larger_window') {
      this.tiers.contextFloor = Math.max(this.tiers.contextFloor ?? 0, refusalFloorTokens(a.target.route.contextLength, contextNeedTokens(this.request)));
      return this.moveOn(nowMs, outcome, a.attemptId);
    }
    if (cls === 'fail_over') return this.moveOn(nowMs);
    const t = a.target;
    const allowed = t.retries ?? this.mt!.retries ?? (this.tiers.anotherLeft(nowMs, this.budgetLeft()) ? 0 : this.deps.options.lastTargetRetries);
    if (this.retriesOnCurrent < allowed) {
      const o = this.deps.options;
      const b = this.mt!.backoff;
      const delay = backoffMs(this.retriesOnCurrent + 1, b?.baseMs ?? o.backoffBaseMs, b?.maxMs ?? o.backoffMaxMs, retryAfterMs, this.rng, b?.jitter ?? 'equal');
      // The Retry-After is honoured in full; a request that cannot wait that long moves on, or
      // returns this error with the hint.
      if (nowMs + delay >= this.overallAtMs) return this.moveOn(nowMs, outcome, a.attemptId);
      const wait = this.arm('backoff', 0, nowMs + delay);
      this.wait = { deadlineId: wait.deadlineId, target: t };
      return [wait];
    }
    return this.moveOn(nowMs);
  }

  /**
   * Fails over to the next target, or ends with an error: `outcome` (reported by attempt
   * `attemptId`) when given, else the first upstream failure's.
   */
  private moveOn(nowMs: number, outcome?: Outcome, attemptId?: number): LifecycleAction[] {
    const next = this.walk(nowMs);
    if (next) return this.startAttempt(next, nowMs, false);
    if (outcome !== undefined) return this.failWithOutcome(outcome, nowMs, attemptId ?? null);
    if (this.firstFailure !== null) return this.failWithOutcome(this.firstFailure, nowMs, this.firstFailureAttemptId);
    return this.fail('target_rate_limited', `every remaining target of model '${this.model!.id}' is over its rate limit`, nowMs);
  }

  /**
   * Starts an attempt on `t`: queued behind an outbound slot of its provider key when the
   * limiter applies and none is free (`acquire_slot` + a give-up `wait_until`), else sent now.
   */
  private startAttempt(t: ResolvedTarget, nowMs: number, retry: boolean): LifecycleAction[] {
    const attemptId = this.nextAttemptId++;
    const a: LiveAttempt = { attemptId, target: t, startMs: nowMs, sampled: false, phase: 'queued', ticket: null, ticketGate: null, retry, gotOutput: false, lastChunkAtMs: nowMs, idleArmed: false };
    this.live = a;
    if (retry) {
      this.retriesOnCurrent++;
      this.retriesTotal++;
    } else {
      this.tiers.tried.add(t.index);
      this.targetsDispatched++;
      this.retriesOnCurrent = 0;
    }
    if (this.deps.admission.queue(t.route, null, this, attemptId, a)) {
      this.ticketsTaken++;
      if (a.ticket!.state !== 'held') {
        const giveUpAtMs = Math.min(nowMs + this.deps.settings.upstreamConcurrencyAcquireTimeoutSec * 1000, this.overallAtMs);
        return [{ kind: 'acquire_slot', attemptId, endpointId: t.endpointId, giveUpAtMs }, this.arm('queue', attemptId, giveUpAtMs)];
      }
    }
    return this.send(a, nowMs);
  }

  /** Sends a (no longer queued) attempt: dispatch with its first-chunk and total bounds, and the headers wait. */
  private send(a: LiveAttempt, nowMs: number): LifecycleAction[] {
    this.disarm(a.attemptId, 'queue');
    a.phase = 'sent';
    this.deps.stats.begin(a.target.endpointId);
    const k = this.kindPolicy!;
    return [
      { kind: 'dispatch', attemptId: a.attemptId, endpointId: a.target.endpointId, deadlines: dispatchDeadlines(k.waits, this.request.stream, nowMs, this.overallAtMs) },
      this.arm('headers', a.attemptId, nowMs + k.headersMs),
    ];
  }

  private liveAttempt(attemptId: number): LiveAttempt | null {
    return this.live !== null && this.live.attemptId === attemptId ? this.live : null;
  }

  /** Ends the live attempt exactly once: slot, deadlines, stats, shared health, cooldown, planner, record. */
  private endAttempt(a: LiveAttempt, outcome: Outcome, nowMs: number, usage: Usage): void {
    this.live = null;
    this.disarm(a.attemptId);
    const id = a.target.endpointId;
    if (this.deps.admission.release(a, outcome)) this.ticketsReleased++;
    if (a.phase === 'queued') {
      // Never sent: nothing upstream to count; only the record.
      this.attempts.push({ attemptId: a.attemptId, endpointId: id, startMs: a.startMs, endMs: nowMs, outcome, target: a.target.model, usage });
      return;
    }
    this.deps.stats.end(id);
    this.deps.cooldowns.record(id, outcome, nowMs);
    reportAttemptOutcome(this.deps.health, this.model!.planner, id, null, true, outcome, nowMs);
    this.attempts.push({ attemptId: a.attemptId, endpointId: id, startMs: a.startMs, endMs: nowMs, outcome, target: a.target.model, usage });
  }

  /** A target over its own rate limit: a failed 429 attempt with no upstream call. */
  private recordRateSkip(t: ResolvedTarget, nowMs: number): void {
    const retryAfterMs = t.rateLimit ? t.rateLimit.retryAfterMs(nowMs) : null;
    this.tiers.tried.add(t.index);
    this.skippedForRate++;
    if (retryAfterMs !== null) this.soonestTokenMs = Math.min(this.soonestTokenMs, retryAfterMs);
    this.attempts.push({
      attemptId: this.nextAttemptId++,
      endpointId: t.endpointId,
      startMs: nowMs,
      endMs: nowMs,
      outcome: { kind: 'http_status', status: 429, errorClass: 'rate_limited', retryAfterMs },
      target: t.model,
      usage: NO_USAGE,
      skipped: 'rate_limited',
    });
  }

  // ---- endings ----------------------------------------------------------------------------

  /** Ends with the error of `outcome`, reported by attempt `attemptId` (its body may pass through). */
  private failWithOutcome(outcome: Outcome, nowMs: number, attemptId: number | null): LifecycleAction[] {
    const e = errorForOutcome(outcome);
    return this.fail(e.code, `model '${this.model?.id ?? this.request.model}': all attempts failed: ${attemptsSummary(this.attempts)}`, nowMs, e.status, e.retryAfterSec, attemptId);
  }

  private fail(code: ErrorCode, message: string, nowMs: number, status = ERROR_STATUS[code], retryAfterSec: number | null = null, attemptId: number | null = null): LifecycleAction[] {
    const respond = respondError(code, message, status, retryAfterSec, attemptId);
    const done = this.doneAction(code, nowMs, null);
    return respond === null ? [done] : [respond, done];
  }

  private doneAction(status: string, nowMs: number, usage: Usage | null): LifecycleAction {
    this.done = true;
    this.wait = null;
    this.deadlines.clear();
    let lastUpstream: AttemptRecord | undefined;
    for (let i = this.attempts.length - 1; i >= 0 && !lastUpstream; i--) if (!this.attempts[i]!.skipped) lastUpstream = this.attempts[i];
    const t = this.servedBy ?? (lastUpstream ? this.mt?.targets.find((x) => x.endpointId === lastUpstream!.endpointId) ?? null : null);
    const metadata: RoutingMetadata = {
      requestId: this.requestId,
      modelId: this.model?.id ?? this.request.model,
      strategy: this.model?.strategy ?? 'none',
      endpointId: t?.endpointId ?? null,
      provider: t?.route.provider ?? null,
      baseUrl: t?.route.baseUrl ?? null,
      reason: this.reason,
      fallback: status === 'ok' && this.attempts.length > 1,
      attempts: this.attempts,
      status,
      firstTokenAtMs: this.firstTokenAtMs,
      finishedAtMs: nowMs,
      usage,
      offloadReason: null,
      servedBy: this.servedBy?.model ?? null,
      fallbacks: Math.max(0, this.targetsDispatched - 1),
      retries: this.retriesTotal,
    };
    return { kind: 'done', metadata };
  }
}
