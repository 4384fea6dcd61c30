/**
 * The attempt policy of multi-target aliases (seed 003), plugged into the one request life
 * (`life.ts`) over the alias's tier source (`candidates/tier-source.ts`):
 * - every upstream attempt is counted in `EndpointStats` (in flight until it ends, latency: TTFT
 *   for streams, the whole response otherwise, the response headers for a request that asks so
 *   — `RouteRequest.latencyAt`, speech and streamed transcriptions —, a timeout's wait) and its outcome fed to the cooldown registry;
 *   the breaker is recorded into, never claimed (ejection is the target's opt-in cooldown);
 * - what a failure means is the family's failure rule (`policy/failure-rule.ts`,
 *   `policy/retry-policy.ts`): a retryable failure is retried on the same target after a backoff
 *   (`policy/same-target-retry.ts`, `policy/backoff.ts`; a `wait_until` the driver performs) up
 *   to the target's `retries` (else the block's; else none while another target is left, and
 *   the deployment default on the last one); then the walk moves on, at most `max_fallbacks`
 *   extra targets across all tiers. Other failures go straight back to the caller. A
 *   same-target retry waits at least the upstream's Retry-After; when that would outlast the
 *   overall deadline the request fails over, or returns the error with the hint;
 * - a committed attempt, or a pinned one, never retries or fails over; nor does an answered one
 *   (an HTTP error status) of a request that must not be replayed (`RouteRequest.replayAnswered`);
 * - a target the walk reaches that cannot serve a family every target must serve ends the
 *   request (`RouteRequest.targetMustServe`, `multi-target/candidates.ts`).
 */
import type { Outcome } from '../lifecycle/outcome.ts';
import type { AttemptRecord, LifecycleAction, RoutingMetadata } from '../lifecycle/seam.ts';
import type { Life } from './life.ts';
import type { AttemptPolicy } from './family.ts';
import type { TierSource } from './candidates/tier-source.ts';
import { failureClassOf, failureStep } from './policy/failure-rule.ts';
import { targetCannotServe } from '../multi-target/candidates.ts';
import { sameTargetDelayMs, sameTargetRetries } from './policy/same-target-retry.ts';
import { contextNeedTokens, refusalFloorTokens } from './candidates/context-floor.ts';
import { aliasMetadata } from './metadata.ts';
import { TIMEOUT, isTimeout, type LiveAttempt } from './live-attempt.ts';

type AliasLife = Life<TierSource>;

/**
 * Fails over to the next target, or ends with an error: `outcome` (reported by attempt
 * `attemptId`) when given, else the first upstream failure's.
 */
function moveOn(life: AliasLife, nowMs: number, outcome?: Outcome, attemptId?: number): LifecycleAction[] {
  const next = life.source.walk(life, nowMs);
  if (next) {
    const cannot = targetCannotServe(life.model!.id, next, life.request);
    if (cannot) return life.fail(cannot.code, cannot.message, nowMs, cannot.status);
    return life.startAttempt(next.route, next, null, 'normal', nowMs);
  }
  if (outcome !== undefined) return life.failWithOutcome(outcome, nowMs, attemptId ?? null);
  if (life.firstFailure !== null) return life.failWithOutcome(life.firstFailure, nowMs, life.firstFailureAttemptId);
  return life.fail('target_rate_limited', `every remaining target of model '${life.model!.id}' is over its rate limit`, nowMs);
}

/** Attempt `a` failed with `outcome`: retry the same target after a backoff, fail over, or end. */
function onFailure(life: AliasLife, a: LiveAttempt, outcome: Outcome, nowMs: number): LifecycleAction[] {
  const s = life.source;
  if (isTimeout(outcome) && !a.sampled && a.phase === 'sent') s.deps.stats.sample(a.route.endpointId, nowMs - a.startMs);
  life.endAttempt(a, outcome, nowMs);
  life.noteFailure(outcome, a.attemptId);
  const retryAfterMs = outcome.kind === 'http_status' ? outcome.retryAfterMs : null;
  if (!life.keyBlamed(a, outcome)) s.deps.admission.gates.retryAfter.note(a.route.endpointId, outcome, nowMs);
  const k = life.kind!;
  const step = failureStep(k, failureClassOf(k, outcome));
  const answered = outcome.kind === 'http_status' && life.request.replayAnswered === false;
  if (life.committed !== null || life.pinned || step === 'end' || answered) return life.failWithOutcome(outcome, nowMs, a.attemptId);
  if (step === 'larger_window') {
    s.tiers.contextFloor = Math.max(s.tiers.contextFloor ?? 0, refusalFloorTokens(a.route.contextLength, contextNeedTokens(life.request)));
    return moveOn(life, nowMs, outcome, a.attemptId);
  }
  if (step === 'fail_over') return moveOn(life, nowMs);
  const t = a.target!;
  const allowed = sameTargetRetries(t, s.mt, s.deps.options, () => s.tiers.anotherLeft(nowMs, s.budgetLeft()));
  if (s.retriesOnCurrent < allowed) {
    const delay = sameTargetDelayMs(s.retriesOnCurrent + 1, s.mt, s.deps.options, retryAfterMs, life.rng);
    // The Retry-After is honoured in full; a request that cannot wait that long moves on, or
    // returns this error with the hint.
    if (nowMs + delay >= life.overallAtMs) return moveOn(life, nowMs, outcome, a.attemptId);
    const wait = life.arm('backoff', 0, nowMs + delay);
    s.wait = { deadlineId: wait.deadlineId, target: t };
    return [wait];
  }
  return moveOn(life, nowMs);
}

/** The alias family's attempt policy (stateless; one for every alias life). */
export const ALIAS_POLICY: AttemptPolicy<Life<TierSource>> = {
  holdLimit: () => null,

  queueWaitMs: (life) => life.parts.settings.upstreamConcurrencyAcquireTimeoutSec * 1000,

  attemptStarting(life, a) {
    const s = life.source;
    if (a.role === 'retry') {
      s.retriesOnCurrent++;
      s.retriesTotal++;
    } else {
      s.tiers.tried.add(a.target!.index);
      s.targetsDispatched++;
      s.retriesOnCurrent = 0;
    }
  },

  beforeDispatch(life, a) {
    life.source.deps.stats.begin(a.route.endpointId);
  },

  afterDispatch() {},

  firstOutput(life, a, nowMs) {
    if (life.request.latencyAt !== 'headers' || a.sampled) return;
    a.sampled = true;
    life.source.deps.stats.sample(a.route.endpointId, nowMs - a.startMs);
  },

  firstToken(life, a, nowMs) {
    if (!life.request.stream || life.request.latencyAt === 'headers' || a.sampled) return;
    a.sampled = true;
    life.source.deps.stats.sample(a.route.endpointId, nowMs - a.startMs);
  },

  finishing(life, a, nowMs) {
    if (!a.sampled) life.source.deps.stats.sample(a.route.endpointId, nowMs - a.startMs);
  },

  served() {},

  attemptEnded(life, a, outcome, _healthOutcome, nowMs) {
    if (a.phase !== 'sent') return; // never sent: nothing upstream to count
    const d = life.source.deps;
    d.stats.end(a.route.endpointId);
    d.cooldowns.record(a.route.endpointId, outcome, nowMs);
  },

  failed: onFailure,

  stalled(life, a, nowMs) {
    return [{ kind: 'cancel', attemptId: a.attemptId }, ...onFailure(life, a, TIMEOUT, nowMs)];
  },

  queueGaveUp: (life, a, nowMs) => onFailure(life, a, { kind: 'queue_wait_timeout' }, nowMs),

  engineWaitExpired: () => [], // never armed by this family

  hedgeCheckpoint: () => [], // never armed by this family

  backoffDone(life, deadlineId, nowMs) {
    const s = life.source;
    const w = s.wait;
    if (!w || w.deadlineId !== deadlineId) return [];
    s.wait = null;
    const t = w.target;
    if (!s.deps.admission.gates.rateLimit.take(t, nowMs)) {
      s.recordRateSkip(life, t, nowMs);
      return moveOn(life, nowMs);
    }
    return life.startAttempt(t.route, t, null, 'retry', nowMs);
  },

  overallOutcome: TIMEOUT,

  allFailedMessage: (life, summary) => `model '${life.model?.id ?? life.request.model}': all attempts failed: ${summary}`,

  metadata(life, status, nowMs, usage): RoutingMetadata {
    const s = life.source;
    const attempts = life.attempts;
    let lastUpstream: AttemptRecord | undefined;
    for (let i = attempts.length - 1; i >= 0 && !lastUpstream; i--) if (!attempts[i]!.skipped) lastUpstream = attempts[i];
    const t = life.servedBy?.target ?? (lastUpstream ? s.mt.targets.find((x) => x.endpointId === lastUpstream!.endpointId) ?? null : null);
    const route = t === null ? null : { endpointId: t.endpointId, provider: t.route.provider, baseUrl: t.route.baseUrl };
    const servedBy = life.servedBy?.target?.model ?? null;
    return aliasMetadata(life, route, status === 'ok' && attempts.length > 1, status, nowMs, usage, servedBy, Math.max(0, s.targetsDispatched - 1), s.retriesTotal);
  },

  ended(life) {
    life.source.wait = null;
    life.disarmAll();
  },

  check(life) {
    const s = life.source;
    const id = life.requestId;
    if (life.done && s.wait !== null) throw new Error(`${id}: backoff still pending after done`);
    if (life.live.length > 1) throw new Error(`${id}: ${life.live.length} attempts in flight at once`);
    if (life.live.length > 0 && s.wait !== null) throw new Error(`${id}: an attempt in flight while backing off`);
    const max = s.mt.maxFallbacks;
    if (max !== null && s.targetsDispatched - 1 > max) throw new Error(`${id}: ${s.targetsDispatched - 1} fallbacks > max_fallbacks ${max}`);
    for (const r of life.attempts) if (r.skipped && r.startMs !== r.endMs) throw new Error(`${id}: skipped attempt ${r.attemptId} has a duration`);
  },
};
