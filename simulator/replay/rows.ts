/**
 * The rows a replay writes: one `attempts` row per attempt of a finished client try, and one
 * `requests` row when a request ends (ok, failed, timed out or abandoned).
 */
import type { RoutingMetadata } from '../../core/lifecycle/seam.ts';
import type { ReplayState, ReqState } from './state.ts';

/** Appends the `attempts` rows of the try `md` describes (attempt ids numbered across tries). */
export function pushAttemptRows(s: ReplayState, reqIdx: number, lr: ReqState, md: RoutingMetadata): void {
  const row = s.rows[reqIdx]!;
  for (const at of md.attempts) {
    const gid = lr.gids.get(at.attemptId);
    const a = gid === undefined ? undefined : s.atts[gid];
    const o = at.outcome;
    s.result.attempts.push({
      runId: s.runId,
      requestId: row.requestId,
      attemptId: lr.attemptBase + at.attemptId,
      endpointId: at.endpointId,
      startMs: at.startMs,
      endMs: at.endMs,
      outcome: o.kind,
      status: o.kind === 'http_status' ? o.status : null,
      clientTry: lr.tryNo,
      retryAfterMs: o.kind === 'http_status' ? o.retryAfterMs : null,
      cause: a?.limit ?? (o.kind === 'http_status' ? o.errorClass : o.kind === 'transport' ? o.cause : null),
      costUsd: a?.costUsd ?? 0,
    });
  }
}

/**
 * Ends request `reqIdx` with `status` at `s.now`: appends its `requests` row (latencies from its
 * arrival; TPOT over the tokens after the first) and counts it done.
 * @throws Error when the request already ended (a conservation bug).
 */
export function finishRequest(s: ReplayState, reqIdx: number, lr: ReqState, status: string, md: RoutingMetadata | null): void {
  if (s.ended[reqIdx]) throw new Error(`request ${s.rows[reqIdx]!.requestId} ended twice`);
  s.ended[reqIdx] = 1;
  const row = s.rows[reqIdx]!;
  const arrival = s.arrivalsMs[reqIdx]!;
  const ok = status === 'ok' && md !== null;
  const ttft = ok && md.firstTokenAtMs !== null ? md.firstTokenAtMs - arrival : null;
  const e2e = ok && md.finishedAtMs !== null ? md.finishedAtMs - arrival : null;
  s.result.requests.push({
    runId: s.runId,
    requestId: row.requestId,
    sessionId: row.sessionId,
    callerId: s.callers[reqIdx]!,
    arrivalMs: arrival,
    endpointId: md?.endpointId ?? lr.lastEndpointId,
    queueWaitMs: lr.queueWaitMs,
    ttftMs: ttft,
    tpotMs: ttft !== null && e2e !== null && row.outputTokens > 1 ? (e2e - ttft) / (row.outputTokens - 1) : null,
    e2eMs: e2e,
    inputTokens: row.inputTokens,
    outputTokens: row.outputTokens,
    cachedTokens: ok ? lr.cachedTokens : 0,
    status,
    costUsd: lr.costUsd,
    fallbacks: md ? md.fallbacks ?? Math.max(0, md.attempts.length - 1) : 0,
    offloadReason: md?.offloadReason ?? null,
    stream: s.plan.stream[reqIdx] === 1,
    tries: lr.tryNo + 1,
    gatewayReplica: lr.gateway,
  });
  s.reqs[reqIdx] = null;
  s.done++;
  s.lastEndMs = s.now;
}
