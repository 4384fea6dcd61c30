/**
 * The candidate source of a multi-target alias (seed 003): published (else 404) → explicit pin
 * (admin; no retries, no fallback) → the candidate pipeline (tags, CIDR, modalities, priority
 * tiers; `multi-target/candidates.ts`) → the context-window floor → the tier walk
 * (`tier-walk.ts`): within the highest tier, the strategy's order over the targets the
 * admission admits, then the next tier. A target over its rate limit is recorded as a failed
 * 429 attempt (no upstream call, no fallback budget). Nothing admitted at the start
 * (`no-target-admitted.ts`): 429/503 with Retry-After when targets are cooling after upstream
 * hints, 429 when targets were skipped for their rate limits, else 503
 * `all_candidates_unavailable` — or, under `when_all_unavailable: try_anyway`, the walk runs
 * again ignoring cooldown.
 *
 * It also keeps the walk's budget the alias attempt policy (`../alias-policy.ts`) spends:
 * targets dispatched (`max_fallbacks` counts all but the first), same-target retries, and the
 * pending backoff.
 */
import type { ResolvedMultiTarget, ResolvedTarget } from '../../model/resolved-model.ts';
import type { LifecycleAction } from '../../lifecycle/seam.ts';
import type { MultiTargetDeps } from '../alias-deps.ts';
import type { Life } from '../life.ts';
import type { CandidateSource } from '../family.ts';
import { selectCandidates, targetCannotServe } from '../../multi-target/candidates.ts';
import { NO_USAGE } from '../live-attempt.ts';
import { contextNeedTokens, fitsWindow, noWindowFitsMessage } from './context-floor.ts';
import { noTargetAdmitted } from './no-target-admitted.ts';
import { TierWalk } from './tier-walk.ts';

/** One alias request's walk and budget. */
export class TierSource implements CandidateSource<Life<TierSource>> {
  /** The walk over the candidate tiers; set by `begin`. */
  tiers!: TierWalk;
  /** A same-target retry waiting out its backoff, or null. */
  wait: { deadlineId: number; target: ResolvedTarget } | null = null;
  /** Distinct targets dispatched to (the first plus the fallbacks). */
  targetsDispatched = 0;
  retriesOnCurrent = 0;
  retriesTotal = 0;
  skippedForRate = 0;
  soonestTokenMs = Number.POSITIVE_INFINITY;

  constructor(
    readonly deps: MultiTargetDeps,
    readonly mt: ResolvedMultiTarget,
  ) {}

  begin(life: Life<TierSource>, nowMs: number): LifecycleAction[] {
    const model = life.model;
    const mt = this.mt;
    const request = life.request;
    if (!model || !model.published) {
      return life.fail('model_not_found', `model '${request.model}' does not exist or is not published`, nowMs);
    }
    if (request.pin !== null) {
      const pin = request.pin;
      const t = mt.targets.find((x) => x.endpointId === pin || x.route.provider === pin || x.model === pin);
      if (!t) {
        return life.fail('route_pin_not_found', `X-Route-Pin '${pin}' matches no target of model '${model.id}'; targets: ${mt.targets.map((x) => x.endpointId).join(', ')}`, nowMs);
      }
      life.pinned = true;
      life.reason = 'pin';
      this.tiers = new TierWalk([], model.planner, request, life.rng, this.deps.admission);
      return this.first(life, t, nowMs);
    }
    const sel = selectCandidates(model.id, mt, request);
    if (sel.kind === 'reject') return life.fail(sel.code, sel.message, nowMs);
    let tiers = sel.tiers;
    // Context-window floor: the prompt estimate plus the expected output must fit a target's window.
    const need = contextNeedTokens(request);
    const fits = (x: ResolvedTarget) => fitsWindow(x.route.contextLength, need);
    if (!tiers.every((tier) => tier.every(fits))) {
      const fitting = tiers.map((tier) => tier.filter(fits)).filter((tier) => tier.length > 0);
      if (fitting.length === 0) return life.fail('context_length_exceeded', noWindowFitsMessage(model.id, need, tiers.flat().map((x) => x.route.contextLength)), nowMs);
      tiers = fitting;
    }
    this.tiers = new TierWalk(tiers, model.planner, request, life.rng, this.deps.admission);

    let t = this.walk(life, nowMs);
    if (!t && mt.whenAllUnavailable === 'try_anyway' && this.tiers.anyCooling(nowMs)) {
      this.tiers.ignoreCooldown = true;
      this.tiers.restart();
      t = this.walk(life, nowMs);
      if (t) this.tiers.reason = 'try_anyway';
    }
    if (!t) {
      const skips = { count: this.skippedForRate, soonestTokenMs: this.soonestTokenMs };
      const e = noTargetAdmitted(model.id, this.tiers, this.deps.retryAfter, this.deps.cooldowns, skips, nowMs);
      return life.fail(e.code, e.message, nowMs, e.status, e.retryAfterSec);
    }
    life.reason = this.tiers.reason;
    return this.first(life, t, nowMs);
  }

  /**
   * The overall deadline, then the first attempt, whose queue give-up and total are capped by it
   * (as every later attempt's are); the overall `wait_until` goes last, after the attempt's actions.
   */
  private first(life: Life<TierSource>, t: ResolvedTarget, nowMs: number): LifecycleAction[] {
    const cannot = targetCannotServe(life.model!.id, t, life.request);
    if (cannot) return life.fail(cannot.code, cannot.message, nowMs, cannot.status);
    life.setOverall(nowMs);
    return life.withOverall(life.startAttempt(t.route, t, null, life.pinned ? 'pinned' : 'normal', nowMs));
  }

  /**
   * The next target to dispatch to (`TierWalk.next`), recording a skipped 429 attempt for each
   * target passed over for its rate limit. Null when the fallback budget is spent or every tier
   * is exhausted.
   */
  walk(life: Life<TierSource>, nowMs: number): ResolvedTarget | null {
    const t = this.tiers.next(nowMs, this.budgetLeft());
    for (const skipped of this.tiers.drainRateSkips()) this.recordRateSkip(life, skipped, nowMs);
    return t;
  }

  /** Whether `max_fallbacks` still allows another target. */
  budgetLeft(): boolean {
    const max = this.mt.maxFallbacks;
    return max === null || this.targetsDispatched === 0 || this.targetsDispatched - 1 < max;
  }

  /** A target over its own rate limit: a failed 429 attempt with no upstream call. */
  recordRateSkip(life: Life<TierSource>, t: ResolvedTarget, nowMs: number): void {
    const retryAfterMs = t.rateLimit ? t.rateLimit.retryAfterMs(nowMs) : null;
    this.tiers.tried.add(t.index);
    this.skippedForRate++;
    if (retryAfterMs !== null) this.soonestTokenMs = Math.min(this.soonestTokenMs, retryAfterMs);
    life.recordAttempt({
      attemptId: life.nextAttemptId++,
      endpointId: t.endpointId,
      startMs: nowMs,
      endMs: nowMs,
      outcome: { kind: 'http_status', status: 429, errorClass: 'rate_limited', retryAfterMs },
      target: t.model,
      usage: NO_USAGE,
      skipped: 'rate_limited',
    });
  }
}
