/**
 * Client behaviour in the loop: a request arrives and starts its first try; a try is started
 * through the core (with the client's timeout armed); the client gives up on a try (timeout) or
 * on the request (abandonment, drawn patience), and retries a failed try after a back-off.
 * The draws themselves (stream, patience, jitter) are made up front in client-behaviour.ts.
 */
import type { RoutingCore } from '../../core/routing-core.ts';
import { apply } from './actions.ts';
import { finishRequest } from './rows.ts';
import { autoChoice } from './auto-profiles.ts';
import { LANE_CLIENT_TIMEOUT, type ReplayState, type ReqState } from './state.ts';

/** Request `req` arrives now: its state is created, its patience armed, its first try started. */
export function onArrival(s: ReplayState, req: number): void {
  const lr: ReqState = {
    life: null,
    gateway: 0,
    tryNo: 0,
    gids: new Map(),
    attemptBase: 0,
    visible: false,
    costUsd: 0,
    cachedTokens: 0,
    endReason: null,
    lastError: null,
    lastEndpointId: null,
    queuedAt: new Map(),
    queueWaitMs: null,
  };
  s.reqs[req] = lr;
  const patience = s.plan.patienceMs[req]!;
  if (patience !== Infinity) s.q.push(s.now + patience, { k: 'abandon', req });
  startTry(s, req, lr);
}

/**
 * Tells the core every replica's load now (waiting and running requests, KV-cache use), as an
 * engine's metrics endpoint would; done before a decision of a planner that reads them, so the
 * report is fresh (a real gateway scrapes on an interval and sees it somewhat stale).
 */
function reportEngineLoads(s: ReplayState, core: RoutingCore): void {
  for (const ep of s.endpoints) {
    if (!ep.engine) continue;
    const l = ep.engine.load(s.now);
    core.engineSignals.reportLoad(ep.endpointId, { waiting: l.waiting, running: l.running, kvUsage: l.kvUsage }, s.now);
  }
}

/** Starts try `lr.tryNo` of request `reqIdx` through the core. */
export function startTry(s: ReplayState, reqIdx: number, lr: ReqState): void {
  const row = s.rows[reqIdx]!;
  lr.endReason = null;
  lr.lastError = null;
  lr.gateway = s.picker.pick(reqIdx, lr.tryNo, s.callers[reqIdx]!);
  const g = s.gateways[lr.gateway]!;
  // A row naming an auto model is routed as the candidate its profile picks (auto-profiles.ts).
  let model = s.exp.model;
  if (g.auto !== null && row.model !== null) {
    const choice = autoChoice(g.auto, g.core, row.model, s.callers[reqIdx]!, row.sessionId ?? row.requestId, row.inputTokens, row.outputTokens, s.now);
    if (choice.kind === 'reject') return finishRequest(s, reqIdx, lr, choice.code, null);
    model = choice.model;
  }
  if (g.core.model(model)?.planner.readsEngineSignals) reportEngineLoads(s, g.core);
  const { life, actions } = g.core.start(
    {
      requestId: row.requestId,
      model,
      sessionId: row.sessionId,
      callerId: s.callers[reqIdx]!,
      inputTokens: row.inputTokens,
      outputTokensHint: row.outputTokens,
      stream: s.plan.stream[reqIdx] === 1,
      modalities: [],
      pin: null,
      prefixHashes: row.hashIds,
      callerRole: s.callerRoles[reqIdx] ?? null,
    },
    s.now,
    g.strategyRng,
  );
  lr.life = life;
  s.reqOfLife.set(life, reqIdx);
  if (s.client.timeout_ms !== undefined) s.q.pushLane(LANE_CLIENT_TIMEOUT, s.now + s.client.timeout_ms, { k: 'client_timeout', req: reqIdx, tryNo: lr.tryNo });
  apply(s, reqIdx, lr, actions);
}

/** The client disconnects from its current try (timeout or abandonment). */
function clientGone(s: ReplayState, reqIdx: number, lr: ReqState, reason: 'client_timeout' | 'client_abandoned'): void {
  lr.endReason = reason;
  apply(s, reqIdx, lr, lr.life!.step({ kind: 'client_gone' }, s.now));
}

/** The client's timeout of try `tryNo` fired (a no-op when that try already ended). */
export function onClientTimeout(s: ReplayState, req: number, tryNo: number): void {
  const lr = s.reqs[req];
  if (lr?.life && lr.tryNo === tryNo) clientGone(s, req, lr, 'client_timeout');
}

/** The client's patience ran out: it abandons the request unless it has seen output. */
export function onAbandon(s: ReplayState, req: number): void {
  const lr = s.reqs[req];
  if (!lr || lr.visible) return;
  if (lr.life) clientGone(s, req, lr, 'client_abandoned');
  else finishRequest(s, req, lr, 'client_abandoned', null); // waiting to retry: it never comes
}

/** The client retries now with try `tryNo` (a no-op when it abandoned meanwhile). */
export function onRetry(s: ReplayState, req: number, tryNo: number): void {
  const lr = s.reqs[req];
  if (!lr || lr.life) return;
  lr.tryNo = tryNo;
  startTry(s, req, lr);
}
