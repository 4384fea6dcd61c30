/**
 * The attempt policy of `router:` models (seed 000 "fallback"), plugged into the one request life
 * (`life.ts`) over the model's route source (`candidates/route-source.ts`):
 * - every attempt holds a prefill lease from dispatch to its first token (prefill pressure) and
 *   its outcome drops a failed affinity pin (cancellations and client disconnects are not its
 *   failures);
 * - a failure follows the family's failure rule (`policy/failure-rule.ts` over
 *   `lifecycle/outcome-table.ts`): request-scoped errors go straight back to the caller; a
 *   context-length refusal moves on only to a route with a larger window; everything else fails
 *   over to the remaining routes in declaration order, skipping weight 0 and routes a gate
 *   refuses or whose breaker gives no claim, then the offload route as last resort, then the
 *   interrupted route once more; if all fail the client gets the primary's error. A committed
 *   stream never falls back (a stall is an in-band error), nor does a pinned request or one that
 *   asked for a single route (`RouteRequest.singleRoute`);
 * - deadlines beyond the shared ones (headers, total, idle, overall): the engine wait of an offload model
 *   (`offloading.ts`) and the hedge checkpoint (`hedging.ts`).
 */
import type { Outcome } from '../lifecycle/outcome.ts';
import type { LifecycleAction, RoutingMetadata } from '../lifecycle/seam.ts';
import type { Life } from './life.ts';
import type { AttemptPolicy } from './family.ts';
import type { RouteSource } from './candidates/route-source.ts';
import { failureClassOf, failureStep } from './policy/failure-rule.ts';
import { contextNeedTokens, refusalFloorTokens } from './candidates/context-floor.ts';
import { routerMetadata } from './metadata.ts';
import { canOffload, cutForOffload, interruptible, startOffload } from './offloading.ts';
import { armHedge, hedgeAnswered, sendHedge } from './hedging.ts';
import { CANCELLED, NEUTRAL, TIMEOUT, type LiveAttempt } from './live-attempt.ts';

type RouterLife = Life<RouteSource>;

/** Releases the attempt's prefill lease if it still holds one (idempotent per attempt). */
function releaseLease(life: RouterLife, a: LiveAttempt): void {
  if (a.lease === null) return;
  life.source.deps.prefill.release(a.lease);
  a.lease = null;
  life.source.leasesReleased++;
}

/**
 * Whether an attempt of `life` reached an upstream. A single-route request (`/v1/messages`)
 * still picks another route while every refusal so far was a key pool's or a shared limit's (no
 * upstream call; seed 000: it takes the
 * first adapter holding a key the caller may use), and stops at the first upstream answer.
 */
function reachedUpstream(life: RouterLife): boolean {
  for (const a of life.attempts) if (a.outcome.kind !== 'key_pool_exhausted' && a.outcome.kind !== 'shared_unit_refused') return true;
  return life.live.length > 0;
}

/** Whether a route not yet tried has a window above the context floor (or an unknown one). */
function largerWindowLeft(life: RouterLife, nowMs: number): boolean {
  const s = life.source;
  for (const r of s.eligibleRoutes) if (!life.tried(r.endpointId) && s.usable(r, life.request, nowMs)) return true;
  return false;
}

/**
 * The next attempt after one ended without serving: the remaining routes in declaration order,
 * then the offload route as last resort, then the interrupted route once more; else the error.
 */
function continueAfter(life: RouterLife, outcome: Outcome, nowMs: number): LifecycleAction[] {
  if (life.pinned || (life.request.singleRoute === true && reachedUpstream(life))) return life.live.length > 0 ? [] : life.failWithOutcome(life.firstFailure ?? outcome, nowMs, life.firstFailureAttemptId);
  const s = life.source;
  const admission = s.deps.admission;
  for (const r of s.eligibleRoutes) {
    if (r.endpointId === s.offloadId || life.tried(r.endpointId) || !s.usable(r, life.request, nowMs)) continue;
    const claim = admission.gates.breaker.claim(r.endpointId, nowMs);
    if (claim) return life.startAttempt(r, null, claim, 'normal', nowMs);
  }
  const out: LifecycleAction[] = [];
  if (startOffload(life, 'last_resort', nowMs, out)) return out;
  const back = s.offload.takeInterruptedRetry();
  if (back !== null) {
    const claim = admission.gates.breaker.claim(back.endpointId, nowMs);
    if (claim) return life.startAttempt(back, null, claim, 'retry', nowMs);
  }
  if (life.live.length > 0) return [];
  return life.failWithOutcome(life.firstFailure ?? outcome, nowMs, life.firstFailureAttemptId);
}

/** `a` was cut short for offload; when the offload attempt could not start, the fallback goes on. */
function interrupt(life: RouterLife, a: LiveAttempt, reason: 'queue_wait' | 'engine_wait', nowMs: number): LifecycleAction[] {
  const out: LifecycleAction[] = [];
  const recorded = cutForOffload(life, a, reason, nowMs, out);
  if (recorded !== null) out.push(...continueAfter(life, recorded, nowMs));
  return out;
}

/** The `router:` family's attempt policy (stateless; one for every `router:` life). */
export const ROUTER_POLICY: AttemptPolicy<Life<RouteSource>> = {
  holdLimit: (life) => life.source.holdLimit,

  queueWaitMs(life, a) {
    const acquireMs = life.parts.settings.upstreamConcurrencyAcquireTimeoutSec * 1000;
    return interruptible(life, a) ? Math.min(acquireMs, life.source.offload.waitMs) : acquireMs;
  },

  attemptStarting() {},

  beforeDispatch(life, a, nowMs) {
    const s = life.source;
    const r = life.request;
    a.lease = s.deps.prefill.acquire(a.route.endpointId, r.callerId, r.inputTokens, nowMs, s.affinityKey !== null && s.deps.settings.prefillAffinityExcludeOwn);
    s.leasesTaken++;
  },

  afterDispatch(life, a, nowMs, out) {
    // Engine wait: a stream on a non-offload route of an offload model gets `wait` to show output.
    if (life.request.stream && life.source.offload.policy !== null && interruptible(life, a)) out.push(life.arm('engine_wait', a.attemptId, nowMs + life.source.offload.waitMs));
    armHedge(life, a, nowMs, out);
  },

  firstOutput() {},

  firstToken(life, a) {
    releaseLease(life, a); // prefill is over; decode is not prefill pressure
    hedgeAnswered(life, a); // the primary's first token came in time: no hedge
  },

  finishing() {},

  served(life, a, nowMs) {
    const r = life.request;
    life.source.deps.prefill.recordCompletedPrompt(a.route.endpointId, r.callerId, r.inputTokens, nowMs);
  },

  attemptEnded(life, a, outcome, healthOutcome) {
    releaseLease(life, a);
    const s = life.source;
    const h = healthOutcome.kind;
    if (s.affinityKey !== null && h !== 'ok' && h !== 'cancelled' && h !== 'client_gone' && h !== 'queue_wait_timeout') {
      s.deps.affinity.dropIfPinnedTo(s.affinityKey, life.model!.id, a.route.endpointId);
    }
    const k = outcome.kind;
    if (k !== 'ok' && k !== 'cancelled' && k !== 'client_gone') {
      const interruption = k === 'queue_wait_timeout' || (k === 'first_token_timeout' && healthOutcome === NEUTRAL);
      if (!interruption) life.noteFailure(outcome, a.attemptId);
    }
  },

  failed(life, a, outcome, nowMs) {
    life.endAttempt(a, outcome, nowMs);
    const s = life.source;
    if (outcome.kind === 'http_status' && !life.keyBlamed(a, outcome)) s.deps.admission.gates.retryAfter.note(a.route.endpointId, outcome, nowMs);
    const k = life.kind!;
    const cls = failureClassOf(k, outcome);
    let requestScoped = cls === 'final';
    if (failureStep(k, cls) === 'larger_window') {
      s.contextFloor = Math.max(s.contextFloor ?? 0, refusalFloorTokens(a.route.contextLength, contextNeedTokens(life.request)));
      requestScoped = !largerWindowLeft(life, nowMs);
    }
    // An answered attempt of a request that must not be replayed (a paid job may exist) ends it.
    if (outcome.kind === 'http_status' && life.request.replayAnswered === false) requestScoped = true;
    const terminal = cls === 'terminal' || requestScoped;
    if (life.pinned || (life.request.singleRoute === true && reachedUpstream(life)) || life.committed !== null || terminal) {
      if (life.live.length > 0) return [];
      if (requestScoped || life.committed !== null) return life.failWithOutcome(outcome, nowMs, a.attemptId);
      return life.failWithOutcome(life.firstFailure ?? outcome, nowMs, life.firstFailureAttemptId ?? a.attemptId);
    }
    if (life.live.length > 0) return []; // a hedge race: the other attempt may still answer
    return continueAfter(life, outcome, nowMs);
  },

  stalled(life, a, nowMs) {
    const out: LifecycleAction[] = [{ kind: 'cancel', attemptId: a.attemptId }];
    if (life.committed === a.attemptId) {
      // A committed stream went silent: the client gets an in-band error.
      life.endAttempt(a, TIMEOUT, nowMs);
      life.cancelOthers(nowMs, -1, out);
      out.push(...life.fail('upstream_timeout', `upstream ${a.route.endpointId} stalled mid-stream`, nowMs));
      return out;
    }
    out.push(...ROUTER_POLICY.failed(life, a, TIMEOUT, nowMs));
    return out;
  },

  queueGaveUp(life, a, nowMs) {
    if (interruptible(life, a) && canOffload(life, nowMs)) return interrupt(life, a, 'queue_wait', nowMs);
    if (a.ticketGate?.releasedAtFirstOutput === true && a.ticket !== null) {
      // Holding never fails a request: past the acquire timeout it goes in over the limit.
      a.ticket.pool.force(a.ticket);
      return life.sent(a, nowMs);
    }
    const recorded: Outcome = { kind: 'queue_wait_timeout' };
    life.endAttempt(a, recorded, nowMs); // not the endpoint's fault
    return continueAfter(life, recorded, nowMs);
  },

  engineWaitExpired(life, a, nowMs) {
    if (a.gotOutput || !interruptible(life, a) || !canOffload(life, nowMs)) return []; // lifted: wait as long as it takes
    return interrupt(life, a, 'engine_wait', nowMs);
  },

  hedgeCheckpoint: (life, a, nowMs) => sendHedge(life, a, nowMs),

  backoffDone: () => [], // never armed by this family

  overallOutcome: CANCELLED,

  allFailedMessage: (_life, summary) => `all attempts failed: ${summary}`,

  metadata(life, status, nowMs, usage): RoutingMetadata {
    const s = life.source;
    const attempts = life.attempts;
    const last = attempts[attempts.length - 1];
    const route = life.servedBy?.route ?? (last ? life.model!.routes.find((r) => r.endpointId === last.endpointId) ?? null : null);
    // A hedge's cancelled loser is not a fallback; a failed attempt before the served one is.
    const fallback = status === 'ok' && attempts.length > 1 && attempts.some((x) => x.outcome !== CANCELLED && x.outcome.kind !== 'ok');
    const metadata = routerMetadata(life, route, fallback, status, nowMs, usage, s.offload.reason, s.offload.offloaded ? s.offloadId : null);
    if (life.model?.traits.plansHedges === true) metadata.hedgeEndpointId = s.hedge.sentTo;
    return metadata;
  },

  ended() {},

  check(life) {
    const s = life.source;
    let leases = 0;
    for (const a of life.live) if (a.lease !== null) leases++;
    if (s.leasesTaken !== s.leasesReleased + leases) {
      throw new Error(`${life.requestId}: prefill leases taken ${s.leasesTaken} != released ${s.leasesReleased} + held ${leases}`);
    }
  },
};
