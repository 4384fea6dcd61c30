/**
 * The life of one request to a multi-target model (seed 003), executed as a state machine behind
 * the same seam as the per-model lifecycle.
 *
 * Selection: published (else 404) → explicit pin (admin; no retries, no fallback) → the
 * candidate pipeline (tags, CIDR, modalities, priority tiers; `candidates.ts`) → within the
 * highest tier, the strategy's order over the targets not cooling down → the first target under
 * its own rate limit. A target over its rate limit is skipped and recorded as a failed 429
 * attempt (no upstream call, no fallback budget). When a tier runs out the walk crosses into the
 * next tier in the same request; each tier is ordered when the walk enters it, so a stateful
 * strategy (round robin) advances only for tiers that are used.
 *
 * Attempts: a retryable failure (`retry-policy.ts`) is retried on the same target after a
 * backoff — a `wait_until` the driver performs — up to the target's `retries` (else the block's;
 * else none while another target is left, and the deployment default on the last one); then the
 * walk moves to the next target, at most `max_fallbacks` extra targets across all tiers. Other
 * failures go straight back to the caller. Streams commit at the first token when the block sets
 * `stream_timeout_ms` (which also bounds the wait for it), otherwise when the upstream response
 * starts; after the commit nothing is retried. Nothing admitted at the start: 429 when targets
 * were skipped for their rate limits, else 503 `all_candidates_unavailable` — or, under
 * `when_all_unavailable: try_anyway`, the walk runs again ignoring cooldown.
 *
 * Shared state: every upstream attempt is counted in `EndpointStats` (in flight, latency), its
 * outcome recorded in the shared `HealthRegistry` (for /health/deep; the `fixed` router's breaker
 * never ejects a target here — admission is not asked) and fed to the cooldown registry and the
 * planner. Each attempt's begin is matched by exactly one end on every path.
 */
import type { Rng } from '../rng.ts';
import type { ResolvedModel } from '../routing-core.ts';
import type { HealthRegistry } from '../health/health-registry.ts';
import type { Outcome } from './outcome.ts';
import { ERROR_STATUS, errorForOutcome, type ErrorCode } from './errors.ts';
import type { AttemptRecord, LifecycleAction, LifecycleEvent, RequestLife, RouteRequest, RoutingMetadata, Usage } from './seam.ts';
import { planOrder, type Candidate } from '../strategies/planner.ts';
import type { EndpointStats } from '../multi-target/endpoint-stats.ts';
import type { CooldownRegistry } from '../multi-target/cooldown.ts';
import type { MultiTargetOptions } from '../multi-target/multi-target-options.ts';
import type { ResolvedMultiTarget, ResolvedTarget } from '../multi-target/multi-target-model.ts';
import { selectCandidates } from '../multi-target/candidates.ts';
import { backoffMs, classifyFailure } from '../multi-target/retry-policy.ts';

/** Process-wide state a multi-target life uses, owned by `RoutingCore`. */
export interface MultiTargetDeps {
  readonly health: HealthRegistry;
  readonly stats: EndpointStats;
  readonly cooldowns: CooldownRegistry;
  readonly options: Readonly<MultiTargetOptions>;
}

interface LiveAttempt {
  readonly attemptId: number;
  readonly target: ResolvedTarget;
  readonly startMs: number;
  sampled: boolean;
}

const NO_USAGE: Usage = Object.freeze({ inputTokens: 0, outputTokens: 0, cachedTokens: 0 });

function isTimeout(o: Outcome): boolean {
  return o.kind === 'first_token_timeout' || (o.kind === 'transport' && o.cause === 'timeout');
}

/** Implementation of `RequestLife` for multi-target models. Created by `RoutingCore.start`. */
export class MultiTargetLifecycle implements RequestLife {
  readonly requestId: string;
  private readonly mt: ResolvedMultiTarget | null;
  private done = false;
  private tiers: ReadonlyArray<readonly ResolvedTarget[]> = [];
  private tierIdx = 0;
  /** The current tier in the strategy's order; null until the walk enters the tier. */
  private tierOrder: ResolvedTarget[] | null = null;
  private tierReason = 'none';
  private tierPos = 0;
  /** Target indices dispatched to or skipped; each target is entered once per request. */
  private readonly tried = new Set<number>();
  private ignoreCooldown = false;
  private live: LiveAttempt | null = null;
  private wait: { deadlineId: number; target: ResolvedTarget } | null = null;
  private nextAttemptId = 1;
  private nextDeadlineId = 1;
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
      return [this.dispatch(t, nowMs, false)];
    }
    const sel = selectCandidates(model.id, mt, this.request);
    if (sel.kind === 'reject') return this.fail(sel.code, sel.message, nowMs);
    this.tiers = sel.tiers;

    let t = this.walk(nowMs);
    if (!t && mt.whenAllUnavailable === 'try_anyway' && this.anyCooling(nowMs)) {
      this.ignoreCooldown = true;
      this.tierIdx = 0;
      this.tierOrder = null;
      t = this.walk(nowMs);
      if (t) this.tierReason = 'try_anyway';
    }
    if (!t) {
      if (this.skippedForRate > 0) {
        const after = Number.isFinite(this.soonestTokenMs) ? Math.max(1, Math.ceil(this.soonestTokenMs / 1000)) : null;
        return this.fail('target_rate_limited', `every eligible target of model '${model.id}' is over its rate limit`, nowMs, ERROR_STATUS.target_rate_limited, after);
      }
      const cooling = this.tiers.flat().map((x) => {
        const s = this.deps.cooldowns.status(x.endpointId, nowMs);
        return `${x.model} (${s.state === 'cooldown' ? `cooldown: ${s.reason}` : s.state})`;
      });
      return this.fail('all_candidates_unavailable', `no admissible target for model '${model.id}'; considered: ${cooling.join(', ')}`, nowMs);
    }
    this.reason = this.tierReason;
    return [this.dispatch(t, nowMs, false)];
  }

  step(event: LifecycleEvent, nowMs: number): LifecycleAction[] {
    if (this.done) return [];
    switch (event.kind) {
      case 'attempt_sent':
      case 'chunk': // seam extensions of issue #6 that multi-target lives do not use
      case 'slot_acquired':
        return [];
      case 'first_output': {
        const a = this.liveAttempt(event.attemptId);
        // Without stream_timeout a stream commits when the upstream response starts (seed 003).
        if (a && this.request.stream && this.mt?.streamTimeoutMs === null && this.committed === null) {
          this.committed = a.attemptId;
          return [{ kind: 'commit', attemptId: a.attemptId }];
        }
        return [];
      }
      case 'first_token': {
        const a = this.liveAttempt(event.attemptId);
        if (!a) return [];
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
      case 'finished': {
        const a = this.liveAttempt(event.attemptId);
        if (!a) return [];
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
        if (!a) return [];
        return this.onFailure(a, event.outcome, nowMs);
      }
      case 'deadline': {
        const w = this.wait;
        if (!w || w.deadlineId !== event.deadlineId) return [];
        this.wait = null;
        const t = w.target;
        if (t.rateLimit && !t.rateLimit.tryTake(nowMs)) {
          this.recordRateSkip(t, nowMs);
          return this.moveOn(nowMs);
        }
        return [this.dispatch(t, nowMs, true)];
      }
      case 'client_gone': {
        const out: LifecycleAction[] = [];
        const a = this.live;
        if (a) {
          out.push({ kind: 'cancel', attemptId: a.attemptId });
          this.endAttempt(a, { kind: 'cancelled' }, nowMs, NO_USAGE);
        }
        this.wait = null;
        out.push(this.doneAction('client_gone', nowMs, null));
        return out;
      }
    }
  }

  invariants(): void {
    const id = this.requestId;
    if (this.done && (this.live !== null || this.wait !== null)) throw new Error(`${id}: attempt or backoff still pending after done`);
    if (this.live !== null && this.wait !== null) throw new Error(`${id}: an attempt in flight while backing off`);
    if (this.attempts.length + (this.live ? 1 : 0) !== this.nextAttemptId - 1) throw new Error(`${id}: attempts recorded + live != attempts started`);
    const max = this.mt?.maxFallbacks ?? null;
    if (max !== null && this.targetsDispatched - 1 > max) throw new Error(`${id}: ${this.targetsDispatched - 1} fallbacks > max_fallbacks ${max}`);
    for (const r of this.attempts) if (r.skipped && r.startMs !== r.endMs) throw new Error(`${id}: skipped attempt ${r.attemptId} has a duration`);
  }

  // ---- the walk ---------------------------------------------------------------------------

  /**
   * The next target to dispatch to: continues the current tier's order, entering (and ordering)
   * later tiers as earlier ones run out. Skips targets already tried or cooling down; records a
   * 429 skip for each target over its rate limit. Null when the fallback budget is spent or every
   * tier is exhausted.
   */
  private walk(nowMs: number): ResolvedTarget | null {
    const model = this.model!;
    while (this.tierIdx < this.tiers.length) {
      if (this.tierOrder === null) {
        const admissible = this.tiers[this.tierIdx]!.filter((t) => !this.tried.has(t.index) && this.admits(t, nowMs));
        if (admissible.length === 0) {
          this.tierIdx++;
          continue;
        }
        const candidates: Candidate[] = admissible.map((t) => ({ endpointId: t.endpointId, weight: t.weight, routeIndex: t.index }));
        const ordering = planOrder(model.planner, candidates, this.request, nowMs, this.rng);
        this.tierOrder = ordering.order.map((i) => admissible[i]!);
        this.tierReason = ordering.reason;
        this.tierPos = 0;
      }
      while (this.tierPos < this.tierOrder.length) {
        const t = this.tierOrder[this.tierPos++]!;
        if (this.tried.has(t.index) || !this.admits(t, nowMs)) continue;
        if (!this.budgetLeft()) return null;
        if (t.rateLimit && !t.rateLimit.tryTake(nowMs)) {
          this.recordRateSkip(t, nowMs);
          continue;
        }
        return t;
      }
      this.tierIdx++;
      this.tierOrder = null;
    }
    return null;
  }

  /** Whether another target could still be dispatched (pure apart from rate-limit refills). */
  private anotherTargetLeft(nowMs: number): boolean {
    if (!this.budgetLeft()) return false;
    for (let i = this.tierIdx; i < this.tiers.length; i++) {
      for (const t of this.tiers[i]!) {
        if (!this.tried.has(t.index) && this.admits(t, nowMs) && (!t.rateLimit || t.rateLimit.available(nowMs))) return true;
      }
    }
    return false;
  }

  private budgetLeft(): boolean {
    const max = this.mt!.maxFallbacks;
    return max === null || this.targetsDispatched === 0 || this.targetsDispatched - 1 < max;
  }

  private admits(t: ResolvedTarget, nowMs: number): boolean {
    return this.ignoreCooldown || !this.deps.cooldowns.active(t.endpointId, nowMs);
  }

  private anyCooling(nowMs: number): boolean {
    return this.tiers.some((tier) => tier.some((t) => !this.tried.has(t.index) && this.deps.cooldowns.active(t.endpointId, nowMs)));
  }

  // ---- attempts ---------------------------------------------------------------------------

  private onFailure(a: LiveAttempt, outcome: Outcome, nowMs: number): LifecycleAction[] {
    if (isTimeout(outcome) && !a.sampled) this.deps.stats.sample(a.target.endpointId, nowMs - a.startMs);
    this.endAttempt(a, outcome, nowMs, NO_USAGE);
    if (this.firstFailure === null) this.firstFailure = outcome;
    const cls = classifyFailure(outcome, this.mt!.rules);
    if (cls !== 'retryable' || this.committed !== null || this.pinned) return this.failWithOutcome(outcome, nowMs);
    const t = a.target;
    const allowed = t.retries ?? this.mt!.retries ?? (this.anotherTargetLeft(nowMs) ? 0 : this.deps.options.lastTargetRetries);
    if (this.retriesOnCurrent < allowed) {
      const retryAfterMs = outcome.kind === 'http_status' ? outcome.retryAfterMs : null;
      const delay = backoffMs(this.retriesOnCurrent + 1, this.deps.options.backoffBaseMs, this.deps.options.backoffMaxMs, retryAfterMs, this.rng);
      const deadlineId = this.nextDeadlineId++;
      this.wait = { deadlineId, target: t };
      return [{ kind: 'wait_until', deadlineId, atMs: nowMs + delay }];
    }
    return this.moveOn(nowMs);
  }

  /** Fails over to the next target, or ends with the first upstream failure's error. */
  private moveOn(nowMs: number): LifecycleAction[] {
    const next = this.walk(nowMs);
    if (next) return [this.dispatch(next, nowMs, false)];
    if (this.firstFailure !== null) return this.failWithOutcome(this.firstFailure, nowMs);
    return this.fail('target_rate_limited', `every remaining target of model '${this.model!.id}' is over its rate limit`, nowMs);
  }

  private dispatch(t: ResolvedTarget, nowMs: number, retry: boolean): LifecycleAction {
    const attemptId = this.nextAttemptId++;
    this.live = { attemptId, target: t, startMs: nowMs, sampled: false };
    if (retry) {
      this.retriesOnCurrent++;
      this.retriesTotal++;
    } else {
      this.tried.add(t.index);
      this.targetsDispatched++;
      this.retriesOnCurrent = 0;
    }
    this.deps.stats.begin(t.endpointId);
    const timeout = this.mt?.streamTimeoutMs ?? null;
    const firstTokenAtMs = this.request.stream && timeout !== null ? nowMs + timeout : null;
    return { kind: 'dispatch', attemptId, endpointId: t.endpointId, deadlines: { firstTokenAtMs, totalAtMs: null } };
  }

  private liveAttempt(attemptId: number): LiveAttempt | null {
    return this.live !== null && this.live.attemptId === attemptId ? this.live : null;
  }

  /** Ends the live attempt exactly once: stats, shared health, cooldown, planner, record. */
  private endAttempt(a: LiveAttempt, outcome: Outcome, nowMs: number, usage: Usage): void {
    this.live = null;
    const id = a.target.endpointId;
    this.deps.stats.end(id);
    this.deps.health.recordUnadmitted(id, outcome, nowMs);
    if (outcome.kind === 'http_status' && outcome.errorClass === 'auth_rejected') this.deps.health.markDegraded(id, nowMs);
    this.deps.cooldowns.record(id, outcome, nowMs);
    this.model!.planner.observe?.(id, outcome, nowMs);
    this.attempts.push({ attemptId: a.attemptId, endpointId: id, startMs: a.startMs, endMs: nowMs, outcome, target: a.target.model, usage });
  }

  /** A target over its own rate limit: a failed 429 attempt with no upstream call. */
  private recordRateSkip(t: ResolvedTarget, nowMs: number): void {
    const retryAfterMs = t.rateLimit ? t.rateLimit.retryAfterMs(nowMs) : null;
    this.tried.add(t.index);
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

  private failWithOutcome(outcome: Outcome, nowMs: number): LifecycleAction[] {
    const e = errorForOutcome(outcome);
    const tried = this.attempts.map((r) => `${r.target ?? r.endpointId}=${r.skipped ? 'skipped_429' : r.outcome.kind === 'http_status' ? r.outcome.status : r.outcome.kind}`);
    return this.fail(e.code, `model '${this.model?.id ?? this.request.model}': all attempts failed: ${tried.join(', ')}`, nowMs, e.status, e.retryAfterSec);
  }

  private fail(code: ErrorCode, message: string, nowMs: number, status = ERROR_STATUS[code], retryAfterSec: number | null = null): LifecycleAction[] {
    if (code === 'client_gone') return [this.doneAction(code, nowMs, null)];
    return [{ kind: 'respond_error', status, code, message, retryAfterSec }, this.doneAction(code, nowMs, null)];
  }

  private doneAction(status: string, nowMs: number, usage: Usage | null): LifecycleAction {
    this.done = true;
    this.wait = null;
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
