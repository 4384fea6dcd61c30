// A request-log row for tests that write the log directly: one successful non-stream chat
// request of 10 prompt and 2 output tokens with no attempts listed; callers override what
// their case is about.
import type { RequestLogRow } from '../../gateway/request-log/log-row.ts';

/** Row `i` (`requestId` `r-<i>`, arrival `baseUnixMs + i` ms) with the fields of `over` laid on top. */
export function logRow(i: number, baseUnixMs: number, over: Partial<RequestLogRow> = {}): RequestLogRow {
  return {
    arrivalUnixMs: baseUnixMs + i,
    requestId: `r-${i}`,
    sessionId: null,
    callerId: 'user',
    model: 'demo',
    inputTokens: 10,
    outputTokens: 2,
    hashIds: [],
    stream: false,
    ttftMs: null,
    e2eMs: 5,
    api: 'chat',
    endpointId: 'demo/0',
    attempts: 1,
    httpStatus: 200,
    status: 'ok',
    fallback: false,
    cachedTokens: 0,
    costUsd: 0,
    prompt: null,
    offloadReason: null,
    strategy: null,
    attemptLog: [],
    ...over,
  };
}
