/**
 * The lifecycle seam from the loop's side: carrying out the actions the core returns (dispatch,
 * queue for a slot, cancel, arm a deadline, record an error, end the try), feeding it what the
 * endpoints report (first token, finish, failure), and ending a client try — which finishes the
 * request or schedules the client's retry.
 */
import type { LifecycleAction, RoutingMetadata } from '../../core/lifecycle/seam.ts';
import type { Outcome } from '../../core/lifecycle/outcome.ts';
import { firstTokenDelayMs, streamDelayMs } from '../engine/api-server.ts';
import { isRetryable, retryDelayMs } from '../client-behaviour.ts';
import { deliveredFinish, deliveredFirst, dispatch, endAttempt } from './dispatch.ts';
import { finishRequest, pushAttemptRows } from './rows.ts';
import { LANE_LIFE_DEADLINE, type ReplayState, type ReqState } from './state.ts';

/** A connection reset, as a crash or a mid-stream disconnect looks to the core. */
export const RESET: Outcome = { kind: 'transport', cause: 'reset' };

/** Carries out `actions` of request `reqIdx`'s current life, in order. */
export function apply(s: ReplayState, reqIdx: number, lr: ReqState, actions: readonly LifecycleAction[]): void {
  for (const a of actions) {
    switch (a.kind) {
      case 'dispatch': {
        const queuedAt = lr.queuedAt.get(a.attemptId);
        if (queuedAt !== undefined) {
          lr.queueWaitMs = (lr.queueWaitMs ?? 0) + (s.now - queuedAt);
          lr.queuedAt.delete(a.attemptId);
        }
        dispatch(s, reqIdx, lr, a.attemptId, a.endpointId, a.key?.keyId ?? null);
        break;
      }
      case 'acquire_slot':
        // Queued in the gateway for an outbound slot or engine-hold place; `dispatch` follows.
        lr.queuedAt.set(a.attemptId, s.now);
        break;
      case 'cancel': {
        const gid = lr.gids.get(a.attemptId);
        if (gid !== undefined && s.atts[gid]!.live) endAttempt(s, gid, false, a.reason === 'hedge_lost');
        break;
      }
      case 'wait_until':
        s.q.pushLane(LANE_LIFE_DEADLINE, a.atMs, { k: 'deadline', req: reqIdx, tryNo: lr.tryNo, deadlineId: a.deadlineId });
        break;
      case 'commit':
        break;
      case 'respond_error':
        lr.lastError = { status: a.status, retryAfterSec: a.retryAfterSec };
        break;
      case 'done':
        tryDone(s, reqIdx, lr, a.metadata);
        break;
    }
  }
}

/** The life of one client try ended: record its attempts, then finish or retry the request. */
function tryDone(s: ReplayState, reqIdx: number, lr: ReqState, md: RoutingMetadata): void {
  for (const at of md.attempts) {
    const gid = lr.gids.get(at.attemptId);
    if (gid !== undefined && s.atts[gid]?.live) endAttempt(s, gid, false); // the life ended it; free the endpoint too
  }
  pushAttemptRows(s, reqIdx, lr, md);
  lr.attemptBase += md.attempts.length;
  lr.gids.clear();
  lr.queuedAt.clear();
  if (lr.life) s.reqOfLife.delete(lr.life);
  lr.life = null;
  lr.lastEndpointId = md.endpointId ?? lr.lastEndpointId;
  if (md.status === 'ok') return finishRequest(s, reqIdx, lr, 'ok', md);
  const reason = lr.endReason ?? md.status;
  const client = s.client;
  if (reason !== 'client_abandoned' && lr.tryNo < client.retries.max) {
    const key = reason === 'client_timeout' ? 'timeout' : lr.lastError?.status;
    if (key !== undefined && isRetryable(client, key)) {
      const retryAfterMs = lr.lastError?.retryAfterSec == null ? null : lr.lastError.retryAfterSec * 1000;
      s.q.push(s.now + retryDelayMs(client, s.plan, reqIdx, lr.tryNo, reason === 'client_timeout' ? null : retryAfterMs), { k: 'retry', req: reqIdx, tryNo: lr.tryNo + 1 });
      return;
    }
  }
  finishRequest(s, reqIdx, lr, reason, md);
}

/** The client received attempt `gid`'s first token now. */
export function onFirstToken(s: ReplayState, gid: number): void {
  const a = s.atts[gid]!;
  const lr = s.reqs[a.req]!;
  a.firstDeliveredAtMs = s.now;
  if (s.plan.stream[a.req] === 1) lr.visible = true;
  if (a.fx && a.fx.disconnectAfterMs !== null) s.q.push(s.now + a.fx.disconnectAfterMs, { k: 'att_fail', gid, outcome: RESET });
  apply(s, a.req, lr, lr.life!.step({ kind: 'first_token', attemptId: a.attemptId }, s.now));
}

/** The client received attempt `gid`'s whole response now. */
export function onFinished(s: ReplayState, gid: number): void {
  const a = s.atts[gid]!;
  const lr = s.reqs[a.req]!;
  endAttempt(s, gid, true);
  lr.cachedTokens = a.cachedTokens;
  lr.visible = true;
  const row = s.rows[a.req]!;
  apply(s, a.req, lr, lr.life!.step({ kind: 'finished', attemptId: a.attemptId, usage: { inputTokens: row.inputTokens, outputTokens: row.outputTokens, cachedTokens: a.cachedTokens } }, s.now));
}

/** Attempt `gid` failed with `outcome` (a no-op when it already ended). */
export function failAttempt(s: ReplayState, gid: number, outcome: Outcome): void {
  const a = s.atts[gid]!;
  if (!a.live) return;
  endAttempt(s, gid, false);
  const lr = s.reqs[a.req]!;
  apply(s, a.req, lr, lr.life!.step({ kind: 'failed', attemptId: a.attemptId, outcome }, s.now));
}

/**
 * Handles the engine events of the call that just returned. They wait until the engine call
 * returns, so a fallback dispatch never re-enters a replica in the middle of its own step.
 */
export function drainEngineEvents(s: ReplayState): void {
  const { emitted, now } = s;
  for (let i = 0; i < emitted.length; i++) {
    const e = emitted[i]!;
    const a = s.atts[e.attemptId];
    if (!a || !a.live) continue; // cancelled, failed, or its request finished
    if (e.kind !== 'first_token') a.inEngine = false; // finished or rejected: the engine let it go
    const row = s.rows[a.req]!;
    if (e.kind === 'first_token') {
      a.cachedTokens = e.cachedTokens;
      const apiMs = firstTokenDelayMs(s.apiServer, row.inputTokens);
      if (a.fx || apiMs > 0) {
        const at = deliveredFirst(a, now + apiMs);
        a.shiftMs = at - now;
        if (at > now) {
          s.q.push(at, { k: 'att_first', gid: e.attemptId });
          continue;
        }
      }
      onFirstToken(s, e.attemptId);
    } else if (e.kind === 'finished') {
      const apiMs = streamDelayMs(s.apiServer, row.outputTokens);
      if (a.fx || a.firstDeliveredAtMs === null || apiMs > 0) {
        const at = deliveredFinish(a, now + apiMs, a.firstDeliveredAtMs ?? now + a.shiftMs, row.outputTokens);
        if (at > now || a.firstDeliveredAtMs === null) {
          s.q.push(at, { k: 'att_finish', gid: e.attemptId });
          continue;
        }
      }
      onFinished(s, e.attemptId);
    } else {
      failAttempt(s, e.attemptId, { kind: 'http_status', status: 400, errorClass: 'context_length', retryAfterMs: null });
    }
  }
  emitted.length = 0;
}
