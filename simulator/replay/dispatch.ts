/**
 * Attempts on the endpoint side: sending one to a replica or a provider (with the fault plan's
 * effect on it), when its tokens reach the client under faults,
 * and ending it (freeing the replica slot or the provider's capacity, billing).
 */
import { billProviderAttempt } from './billing.ts';
import { type Attempt, type ReplayState, type ReqState } from './state.ts';

/**
 * Ends attempt `gid` on the endpoint side: frees it, bills it. `completed` = all tokens produced;
 * `hedgeLost` = cancelled because the other attempt of a hedge race answered first.
 */
export function endAttempt(s: ReplayState, gid: number, completed: boolean, hedgeLost = false): void {
  const a = s.atts[gid]!;
  a.live = false;
  s.liveByEp[a.ep]!.delete(gid);
  const ep = s.endpoints[a.ep]!;
  if (ep.engine) {
    if (a.inEngine) {
      a.inEngine = false;
      const t = ep.engine.cancel(gid, s.now);
      if (t !== null) s.q.arm(a.ep, t);
    }
    return;
  }
  ep.provider!.release(gid);
  billProviderAttempt(s, gid, completed, hedgeLost);
}

/**
 * Sends attempt `attemptId` of request `reqIdx`'s current try to `endpointId`, as the core
 * decided; `keyId` is the pooled key the core chose (null: the route has no key pool), which
 * answers 429 when over its own RPM.
 */
export function dispatch(s: ReplayState, reqIdx: number, lr: ReqState, attemptId: number, endpointId: string, keyId: string | null = null): void {
  const { q, now, faults } = s;
  const epIdx = s.epOf.get(endpointId)!;
  const gid = s.nextGid++;
  const a: Attempt = { req: reqIdx, attemptId, tryNo: lr.tryNo, ep: epIdx, startMs: now, live: true, fx: null, shiftMs: 0, firstDeliveredAtMs: null, cachedTokens: 0, costUsd: 0, rawFirstAtMs: Infinity, tpotMs: 0, limit: null, inEngine: false };
  s.atts[gid] = a;
  lr.gids.set(attemptId, gid);
  s.liveByEp[epIdx]!.add(gid);
  // Every bound on the attempt (first token, headers, total, …) is a core `wait_until` (`actions.ts`).
  const fx = faults ? faults.onDispatch(epIdx, reqIdx, lr.tryNo) : null;
  if (fx?.reply) {
    q.push(now + fx.reply.delayMs, { k: 'att_fail', gid, outcome: fx.reply.outcome });
    return;
  }
  a.fx = fx;
  const ep = s.endpoints[epIdx]!;
  const row = s.rows[reqIdx]!;
  if (ep.engine) {
    a.inEngine = true;
    const t = ep.engine.enqueue({ attemptId: gid, inputTokens: row.inputTokens, outputTokens: row.outputTokens, hashIds: row.hashIds }, now, s.emit);
    if (t !== null) q.arm(epIdx, t);
    return;
  }
  const p = ep.provider!;
  if (keyId !== null) {
    const k = s.keyLimits.tryAcquire(endpointId, keyId, now, row.inputTokens + row.outputTokens);
    if (!k.ok) {
      a.limit = k.limit;
      q.push(now + p.spec.rejectLatencyMs, { k: 'att_fail', gid, outcome: { kind: 'http_status', status: 429, errorClass: 'rate_limited', retryAfterMs: k.retryAfterMs } });
      return;
    }
  }
  const adm = p.admit(
    { gid, reqIndex: reqIdx, tryNo: lr.tryNo, inputTokens: row.inputTokens, outputTokens: row.outputTokens, hashIds: row.hashIds },
    now,
    faults ? faults.slowFactor(epIdx) : 1,
  );
  if (!adm.ok) {
    a.limit = adm.limit;
    q.push(now + p.spec.rejectLatencyMs, { k: 'att_fail', gid, outcome: { kind: 'http_status', status: 429, errorClass: 'rate_limited', retryAfterMs: adm.retryAfterMs } });
    return;
  }
  a.cachedTokens = adm.cachedTokens;
  a.rawFirstAtMs = adm.firstTokenAtMs;
  a.tpotMs = adm.tpotMs;
  const first = deliveredFirst(a, adm.firstTokenAtMs);
  a.shiftMs = first - adm.firstTokenAtMs;
  q.push(first, { k: 'att_first', gid });
  q.push(deliveredFinish(a, adm.finishedAtMs, first, row.outputTokens), { k: 'att_finish', gid });
}

/** When the client gets a first token the endpoint produced at `producedAtMs` (faults stretch and delay it). */
export function deliveredFirst(a: Attempt, producedAtMs: number): number {
  const fx = a.fx;
  if (!fx) return producedAtMs;
  return a.startMs + (producedAtMs - a.startMs) * fx.ttftFactor + fx.ttftAddMs;
}

/** When the client gets the last token produced at `producedAtMs` (never before the first). */
export function deliveredFinish(a: Attempt, producedAtMs: number, firstAtMs: number, outputTokens: number): number {
  const mid = a.fx && outputTokens > 1 ? a.fx.midStallMs : 0;
  return Math.max(producedAtMs + a.shiftMs + mid, firstAtMs);
}
