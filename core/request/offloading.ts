/**
 * Driving queue-wait offload in a `router:` life (seed 000 "排队等待卸载", "引擎等待"): starting
 * the offload attempt (at most once per request) and cutting an attempt short for it when its
 * slot or engine-hold wait, or (streams) its wait for first output, runs past the policy's
 * `wait`. The decisions — which route, whether an attempt may still be interrupted, the one
 * more try of the interrupted route — are the per-request plan's (`policy/offload.ts`); the
 * attempt policy (`router-policy.ts`) calls these when the `queue` or `engine_wait` deadline fires.
 */
import type { Outcome } from '../lifecycle/outcome.ts';
import type { LifecycleAction } from '../lifecycle/seam.ts';
import type { Admission } from '../admission/admission.ts';
import type { OffloadPlan, OffloadReason } from './policy/offload.ts';
import type { Life } from './life.ts';
import type { CandidateSource } from './family.ts';
import { NEUTRAL, type LiveAttempt } from './live-attempt.ts';

/** What offloading reads of a request's candidate source (`candidates/route-source.ts`). */
export interface OffloadHost extends CandidateSource<Life<OffloadHost>> {
  readonly offload: OffloadPlan;
  readonly contextFloor: number | null;
  readonly deps: { readonly admission: Admission };
}

/** Whether `a` may still be cut short to go to the offload route. */
export function interruptible(life: Life<OffloadHost>, a: LiveAttempt): boolean {
  if (life.request.singleRoute === true) return false; // one route: no offload on a wait
  const s = life.source;
  return s.offload.interruptible(a.role === 'normal', a.route.endpointId, s.contextFloor, s.deps.admission);
}

/** Whether the offload route is available to this request now (never twice). */
export function canOffload(life: Life<OffloadHost>, nowMs: number): boolean {
  const s = life.source;
  return s.offload.available(s.contextFloor, s.deps.admission, nowMs) !== null;
}

/**
 * Starts the offload attempt for `reason` into `out` when the offload route is available and
 * its breaker gives a claim; returns whether it did.
 */
export function startOffload(life: Life<OffloadHost>, reason: OffloadReason, nowMs: number, out: LifecycleAction[]): boolean {
  const s = life.source;
  const r = s.offload.available(s.contextFloor, s.deps.admission, nowMs);
  if (r === null) return false;
  const claim = s.deps.admission.gates.breaker.claim(r.endpointId, nowMs);
  if (!claim) return false;
  s.offload.taken(reason);
  life.startAttempt(r, null, claim, 'offload', nowMs, out);
  return true;
}

/**
 * Cuts `a` short for the offload route (queue give-up or engine-wait expiry): cancels it if
 * sent, records it (neither the breaker nor the hints hear of it) and starts the offload
 * attempt into `out`. Returns null when the offload attempt started, else what `a` was
 * recorded as (the caller then continues the fallback).
 */
export function cutForOffload(life: Life<OffloadHost>, a: LiveAttempt, reason: 'queue_wait' | 'engine_wait', nowMs: number, out: LifecycleAction[]): Outcome | null {
  if (a.phase === 'sent') out.push({ kind: 'cancel', attemptId: a.attemptId });
  const recorded: Outcome = reason === 'queue_wait' ? { kind: 'queue_wait_timeout' } : { kind: 'first_token_timeout' };
  life.endAttempt(a, recorded, nowMs, NEUTRAL);
  life.source.offload.interrupted = a.route;
  return startOffload(life, reason, nowMs, out) ? null : recorded;
}
