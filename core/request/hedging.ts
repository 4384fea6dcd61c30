/**
 * Driving a hedge in a `router:` life (seed 000 RouteWise hedging; Dean & Barroso, "The Tail at
 * Scale"): the checkpoint armed at the hedged primary's dispatch, dropped when the primary's
 * first token comes in time, and at the checkpoint the backup sent as a second attempt racing
 * the primary. The first token (stream) or complete answer (non-stream) commits and the life
 * cancels the other attempt (`hedge_lost`, still billed). The order itself is the per-request
 * plan's (`policy/hedge.ts`), made when the planner's pick came with one.
 */
import type { LifecycleAction } from '../lifecycle/seam.ts';
import type { Life } from './life.ts';
import type { LiveAttempt } from './live-attempt.ts';
import type { RouteSource } from './candidates/route-source.ts';

/** Arms the hedge checkpoint into `out` when `a` is the hedged primary, dispatched at `nowMs`. */
export function armHedge(life: Life<RouteSource>, a: LiveAttempt, nowMs: number, out: LifecycleAction[]): void {
  const atMs = life.source.hedge.checkpointAtMs(a.attemptId, nowMs);
  if (atMs !== null) out.push(life.arm('hedge', a.attemptId, atMs));
}

/** The first token of `a` came: when it is the hedged primary, no hedge is sent. */
export function hedgeAnswered(life: Life<RouteSource>, a: LiveAttempt): void {
  if (life.source.hedge.answered(a.attemptId)) life.disarm(a.attemptId, 'hedge');
}

/**
 * The checkpoint of `primary` passed without its first output: sends the backup as a second
 * attempt racing it, if the backup is still usable, untried and admitted. Otherwise nothing
 * happens (the primary keeps going alone).
 */
export function sendHedge(life: Life<RouteSource>, primary: LiveAttempt, nowMs: number): LifecycleAction[] {
  const s = life.source;
  const order = s.hedge.take();
  if (order === null || primary.gotOutput || life.committed !== null || primary.phase !== 'sent') return [];
  const route = life.model!.routes.find((r) => r.endpointId === order.endpointId);
  if (route === undefined || route.endpointId === s.offloadId || life.tried(route.endpointId) || !s.usable(route, life.request, nowMs)) return [];
  const claim = s.deps.admission.gates.breaker.claim(route.endpointId, nowMs);
  if (claim === null) return [];
  s.hedge.sentTo = route.endpointId;
  return life.startAttempt(route, null, claim, 'hedge', nowMs);
}
