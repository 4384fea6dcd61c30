/**
 * The life of one request to a multi-target alias (seed 003), a state machine behind the same
 * seam as the per-model life and composed of the same parts (`request/request-life.ts` picks it).
 *
 * Selection: published (else 404) → explicit pin (admin; no retries, no fallback) → the
 * candidate pipeline (tags, CIDR, modalities, priority tiers; `multi-target/candidates.ts`) →
 * the context-window floor → the tier walk (`request/candidates/tier-walk.ts`): within the
 * highest tier, the strategy's order over the targets the admission admits, then the next tier.
 * A target over its rate limit is recorded as a failed 429 attempt (no upstream call, no
 * fallback budget). Nothing admitted at the start (`candidates/no-target-admitted.ts`): 429/503
 * with Retry-After when targets are cooling after upstream hints, 429 when targets were skipped
 * for their rate limits, else 503 `all_candidates_unavailable` — or, under
 * `when_all_unavailable: try_anyway`, the walk runs again ignoring cooldown. The attempts and
 * their bookkeeping live in the life's attempt ledger (`alias-attempts.ts`).
 *
 * Attempt policy (`request/policy/kind-policy.ts`, alias family): what a failure means is the
 * family's failure rule (`request/policy/failure-rule.ts`, `retry-policy.ts`); a retryable
 * failure is retried on the same target after a backoff (`request/policy/same-target-retry.ts`,
 * `backoff.ts`; a `wait_until` the driver performs) up to the target's `retries` (else the
 * block's; else none while another target is left, and the deployment default on the
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
import type { Outcome } from '../lifecycle/outcome.ts';
import type { LifecycleAction, LifecycleEvent, RequestLife } from '../lifecycle/seam.ts';
import type { ResolvedTarget } from '../multi-target/multi-target-model.ts';
import { selectCandidates } from '../multi-target/candidates.ts';
import { failureClassOf, failureStep } from './policy/failure-rule.ts';
import { sameTargetDelayMs, sameTargetRetries } from './policy/same-target-retry.ts';
import { contextNeedTokens, fitsWindow, noWindowFitsMessage, refusalFloorTokens } from './candidates/context-floor.ts';
import { noTargetAdmitted } from './candidates/no-target-admitted.ts';
import { commitsAt } from './policy/commit.ts';
import { TierWalk } from './candidates/tier-walk.ts';
import { deadlineAttempt, deadlineKind } from './deadline-book.ts';
import { idleDeadlineFired, recordStreamChunk } from './policy/stream-idle.ts';
import { AliasAttempts, NO_USAGE, TIMEOUT, isTimeout, type LiveAttempt } from './alias-attempts.ts';

export type { MultiTargetDeps } from './alias-attempts.ts';

/** Implementation of `RequestLife` for multi-target models. Created by `RoutingCore.start`. */
export class MultiTargetLifecycle extends AliasAttempts implements RequestLife {
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
      const skips = { count: this.skippedForRate, soonestTokenMs: this.soonestTokenMs };
      const e = noTargetAdmitted(model.id, this.tiers, this.deps.retryAfter, this.deps.cooldowns, skips, nowMs);
      return this.fail(e.code, e.message, nowMs, e.status, e.retryAfterSec);
    }
    this.reason = this.tiers.reason;
    return this.withOverall(this.startAttempt(t, nowMs, false), nowMs);
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

  private onFailure(a: LiveAttempt, outcome: Outcome, nowMs: number): LifecycleAction[] {
    if (isTimeout(outcome) && !a.sampled && a.phase === 'sent') this.deps.stats.sample(a.target.endpointId, nowMs - a.startMs);
    this.endAttempt(a, outcome, nowMs, NO_USAGE);
    if (this.firstFailure === null) {
      this.firstFailure = outcome;
      this.firstFailureAttemptId = a.attemptId;
    }
    const retryAfterMs = outcome.kind === 'http_status' ? outcome.retryAfterMs : null;
    this.deps.admission.gates.retryAfter.note(a.target.endpointId, outcome, nowMs);
    const k = this.kindPolicy!;
    const cls = failureClassOf(k, outcome);
    const step = failureStep(k, cls);
    if (this.committed !== null || this.pinned || step === 'end') return this.failWithOutcome(outcome, nowMs, a.attemptId);
    if (step === 'larger_window') {
      this.tiers.contextFloor = Math.max(this.tiers.contextFloor ?? 0, refusalFloorTokens(a.target.route.contextLength, contextNeedTokens(this.request)));
      return this.moveOn(nowMs, outcome, a.attemptId);
    }
    if (step === 'fail_over') return this.moveOn(nowMs);
    const t = a.target;
    const allowed = sameTargetRetries(t, this.mt!, this.deps.options, () => this.tiers.anotherLeft(nowMs, this.budgetLeft()));
    if (this.retriesOnCurrent < allowed) {
      const delay = sameTargetDelayMs(this.retriesOnCurrent + 1, this.mt!, this.deps.options, retryAfterMs, this.rng);
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
}
