/**
 * The attempts of a multi-target alias's life and its bookkeeping: how an attempt starts
 * (queued behind the outbound slot of its provider key, or sent at once), is dispatched, takes
 * its first output and ends — slot, deadlines, endpoint statistics, shared health, cooldown and
 * planner each told exactly once — how a target over its own rate limit is recorded, how the
 * tier walk is stepped under the `max_fallbacks` budget, and how the life ends (error answer,
 * routing metadata). `MultiTargetLifecycle` (`alias-life.ts`) builds on it with selection,
 * events and the attempt policy.
 */
import type { Rng } from '../rng.ts';
import type { ResolvedModel } from '../model/resolved-model.ts';
import type { HealthRegistry } from '../health/health-registry.ts';
import type { Outcome } from '../lifecycle/outcome.ts';
import { ERROR_STATUS, errorForOutcome, type ErrorCode } from '../lifecycle/errors.ts';
import type { AttemptRecord, LifecycleAction, RequestLife, RouteRequest, Usage } from '../lifecycle/seam.ts';
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
import { aliasPolicy, type RequestKindPolicy } from './policy/kind-policy.ts';
import { dispatchDeadlines } from './policy/attempt-deadlines.ts';
import { attemptsSummary, respondError } from './ending.ts';
import { reportAttemptOutcome } from './attempt-outcome.ts';
import { baseMetadata } from './metadata.ts';
import type { TierWalk } from './candidates/tier-walk.ts';
import { AttemptLedger } from './attempt-ledger.ts';
import { DeadlineBook, type DeadlineKind, type WaitUntil } from './deadline-book.ts';
import type { StreamIdleState } from './policy/stream-idle.ts';

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

/** The attempt the life has started and not ended. */
export interface LiveAttempt extends StreamIdleState {
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

/** A silent upstream: a headers or stream-idle wait, or the overall deadline, ran out. */
export const TIMEOUT: Outcome = { kind: 'transport', cause: 'timeout' };

/** The usage of an attempt that served nothing (failed attempts are not billed). */
export const NO_USAGE: Usage = Object.freeze({ inputTokens: 0, outputTokens: 0, cachedTokens: 0 });

/** Whether `o` is a timeout (headers, first chunk or a transport timeout). */
export function isTimeout(o: Outcome): boolean {
  return o.kind === 'first_token_timeout' || (o.kind === 'transport' && o.cause === 'timeout');
}

/**
 * The attempt ledger of an alias's life (abstract: `MultiTargetLifecycle` adds selection, events
 * and the attempt policy). Every field is the life's own per-request state.
 */
export abstract class AliasAttempts {
  /** The life the driver holds for this one, when wrapped; outbound-slot wake-ups go to it. */
  outerLife: RequestLife | null = null;
  readonly requestId: string;
  protected readonly mt: ResolvedMultiTarget | null;
  /** The alias family's attempt policy for this model (`request/policy/kind-policy.ts`). */
  protected readonly kindPolicy: RequestKindPolicy | null;
  protected done = false;
  /** The walk over the candidate tiers (`request/candidates/tier-walk.ts`); set by `begin`. */
  protected tiers!: TierWalk;
  protected live: LiveAttempt | null = null;
  protected wait: { deadlineId: number; target: ResolvedTarget } | null = null;
  /** Armed deadlines (`request/deadline-book.ts`). */
  protected readonly deadlines = new DeadlineBook();
  protected overallAtMs = Number.POSITIVE_INFINITY;
  protected firstFailureAttemptId: number | null = null;
  /** Attempt ids, ended attempts and ticket counts (`attempt-ledger.ts`). */
  protected readonly ledger = new AttemptLedger();
  /** The ledger's records: every ended attempt, in start order. */
  protected readonly attempts: AttemptRecord[] = this.ledger.records;
  /** Distinct targets dispatched to (the first plus the fallbacks). */
  protected targetsDispatched = 0;
  protected retriesOnCurrent = 0;
  protected retriesTotal = 0;
  protected firstFailure: Outcome | null = null;
  protected skippedForRate = 0;
  protected soonestTokenMs = Number.POSITIVE_INFINITY;
  protected pinned = false;
  protected reason = 'none';
  protected committed: number | null = null;
  protected firstTokenAtMs: number | null = null;
  protected servedBy: ResolvedTarget | null = null;

  constructor(
    protected readonly model: ResolvedModel | null,
    protected readonly request: RouteRequest,
    protected readonly deps: MultiTargetDeps,
    protected readonly rng: Rng,
  ) {
    this.requestId = request.requestId;
    this.mt = model?.multiTarget ?? null;
    this.kindPolicy = this.mt === null ? null : aliasPolicy(this.mt, deps.settings);
  }

  get isDone(): boolean {
    return this.done;
  }

  /** Arms the overall deadline after `begin`'s first actions (unless the life already ended). */
  protected withOverall(out: LifecycleAction[], nowMs: number): LifecycleAction[] {
    this.overallAtMs = nowMs + this.deps.settings.overallDeadlineSec * 1000;
    if (!this.done) out.push(this.arm('overall', 0, this.overallAtMs));
    return out;
  }
  /** Arms a deadline and returns its `wait_until`. */
  protected arm(kind: DeadlineKind, attemptId: number, atMs: number): WaitUntil {
    return this.deadlines.arm(kind, attemptId, atMs);
  }

  /** Forgets every deadline of attempt `attemptId` (or those of one kind). */
  protected disarm(attemptId: number, kind?: DeadlineKind): void {
    if (kind === undefined) this.deadlines.disarmAttempt(attemptId);
    else this.deadlines.disarm(attemptId, kind);
  }

  protected gotOutput(a: LiveAttempt): void {
    if (a.gotOutput) return;
    a.gotOutput = true;
    this.disarm(a.attemptId, 'headers');
  }

  invariants(): void {
    const id = this.requestId;
    if (this.done && (this.live !== null || this.wait !== null)) throw new Error(`${id}: attempt or backoff still pending after done`);
    this.ledger.check(id, this.live ? 1 : 0, this.live?.ticket ? 1 : 0);
    if (this.live !== null && this.wait !== null) throw new Error(`${id}: an attempt in flight while backing off`);
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
  protected walk(nowMs: number): ResolvedTarget | null {
    const t = this.tiers.next(nowMs, this.budgetLeft());
    for (const skipped of this.tiers.drainRateSkips()) this.recordRateSkip(skipped, nowMs);
    return t;
  }

  protected budgetLeft(): boolean {
    const max = this.mt!.maxFallbacks;
    return max === null || this.targetsDispatched === 0 || this.targetsDispatched - 1 < max;
  }

  // ---- attempts ---------------------------------------------------------------------------

  /**
   * Starts an attempt on `t`: queued behind an outbound slot of its provider key when the
   * limiter applies and none is free (`acquire_slot` + a give-up `wait_until`), else sent now.
   */
  protected startAttempt(t: ResolvedTarget, nowMs: number, retry: boolean): LifecycleAction[] {
    const attemptId = this.ledger.take();
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
      this.ledger.ticketsTaken++;
      if (a.ticket!.state !== 'held') {
        const giveUpAtMs = Math.min(nowMs + this.deps.settings.upstreamConcurrencyAcquireTimeoutSec * 1000, this.overallAtMs);
        return [{ kind: 'acquire_slot', attemptId, endpointId: t.endpointId, giveUpAtMs }, this.arm('queue', attemptId, giveUpAtMs)];
      }
    }
    return this.send(a, nowMs);
  }

  /** Sends a (no longer queued) attempt: dispatch with its first-chunk and total bounds, and the headers wait. */
  protected send(a: LiveAttempt, nowMs: number): LifecycleAction[] {
    this.disarm(a.attemptId, 'queue');
    a.phase = 'sent';
    this.deps.stats.begin(a.target.endpointId);
    const k = this.kindPolicy!;
    return [
      { kind: 'dispatch', attemptId: a.attemptId, endpointId: a.target.endpointId, deadlines: dispatchDeadlines(k.waits, this.request.stream, nowMs, this.overallAtMs) },
      this.arm('headers', a.attemptId, nowMs + k.headersMs),
    ];
  }

  protected liveAttempt(attemptId: number): LiveAttempt | null {
    return this.live !== null && this.live.attemptId === attemptId ? this.live : null;
  }

  /** Ends the live attempt exactly once: slot, deadlines, stats, shared health, cooldown, planner, record. */
  protected endAttempt(a: LiveAttempt, outcome: Outcome, nowMs: number, usage: Usage): void {
    this.live = null;
    this.disarm(a.attemptId);
    const id = a.target.endpointId;
    if (this.deps.admission.release(a, outcome)) this.ledger.ticketsReleased++;
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
  protected recordRateSkip(t: ResolvedTarget, nowMs: number): void {
    const retryAfterMs = t.rateLimit ? t.rateLimit.retryAfterMs(nowMs) : null;
    this.tiers.tried.add(t.index);
    this.skippedForRate++;
    if (retryAfterMs !== null) this.soonestTokenMs = Math.min(this.soonestTokenMs, retryAfterMs);
    this.attempts.push({
      attemptId: this.ledger.take(),
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
  protected failWithOutcome(outcome: Outcome, nowMs: number, attemptId: number | null): LifecycleAction[] {
    const e = errorForOutcome(outcome);
    return this.fail(e.code, `model '${this.model?.id ?? this.request.model}': all attempts failed: ${attemptsSummary(this.attempts)}`, nowMs, e.status, e.retryAfterSec, attemptId);
  }

  protected fail(code: ErrorCode, message: string, nowMs: number, status = ERROR_STATUS[code], retryAfterSec: number | null = null, attemptId: number | null = null): LifecycleAction[] {
    const respond = respondError(code, message, status, retryAfterSec, attemptId);
    const done = this.doneAction(code, nowMs, null);
    return respond === null ? [done] : [respond, done];
  }

  protected doneAction(status: string, nowMs: number, usage: Usage | null): LifecycleAction {
    this.done = true;
    this.wait = null;
    this.deadlines.clear();
    let lastUpstream: AttemptRecord | undefined;
    for (let i = this.attempts.length - 1; i >= 0 && !lastUpstream; i--) if (!this.attempts[i]!.skipped) lastUpstream = this.attempts[i];
    const t = this.servedBy ?? (lastUpstream ? this.mt?.targets.find((x) => x.endpointId === lastUpstream!.endpointId) ?? null : null);
    const metadata = baseMetadata({
      requestId: this.requestId,
      model: this.model,
      request: this.request,
      route: t === null ? null : { endpointId: t.endpointId, provider: t.route.provider, baseUrl: t.route.baseUrl },
      reason: this.reason,
      fallback: status === 'ok' && this.attempts.length > 1,
      attempts: this.attempts,
      status,
      firstTokenAtMs: this.firstTokenAtMs,
      finishedAtMs: nowMs,
      usage,
      offloadReason: null,
    });
    metadata.servedBy = this.servedBy?.model ?? null;
    metadata.fallbacks = Math.max(0, this.targetsDispatched - 1);
    metadata.retries = this.retriesTotal;
    return { kind: 'done', metadata };
  }
}
