/**
 * The per-attempt bounds of a dispatch, from the waits a model kind sets. Both are the core's own
 * `wait_until`s, armed once at dispatch; drivers arm no timer of their own:
 * - the first-token wait of a stream (`router:`: the deployment's first-token timeout; alias:
 *   `stream_timeout`, else its own `timeout`, else none), a `first_token` deadline
 *   (`firstTokenAtMs`), forgotten at the attempt's first content or tool-call token; when it
 *   fires the life cancels the attempt and handles it as a `first_token_timeout` failure;
 * - the attempt's total: a non-stream attempt's is the model's `timeout`, else the deployment's
 *   request timeout; a stream's is the request's overall deadline (its idle wait bounds it between
 *   chunks). A non-stream total is a `total` deadline (`attemptTotalAtMs`); a stream's is the
 *   life's `overall` deadline, armed once per request.
 * Every bound is capped by the request's overall deadline.
 */

/** The waits of one model kind, ms. */
export interface AttemptWaits {
  /** Dispatch → first content token of a stream; null = no such wait. */
  readonly firstChunkMs: number | null;
  /** Dispatch → complete non-stream response. */
  readonly totalMs: number;
}

/**
 * When the core's `first_token` deadline of an attempt dispatched at `nowMs` is due (driver
 * clock, ms), capped by the overall deadline `overallAtMs` (may be Infinity); null when none is
 * armed: a non-stream attempt, or a kind without a first-chunk wait.
 */
export function firstTokenAtMs(waits: AttemptWaits, stream: boolean, nowMs: number, overallAtMs: number): number | null {
  return stream && waits.firstChunkMs !== null ? Math.min(overallAtMs, nowMs + waits.firstChunkMs) : null;
}

/**
 * When the core's `total` deadline of an attempt dispatched at `nowMs` is due (driver clock, ms),
 * or null when none is armed because the overall deadline (`overallAtMs`, may be Infinity) bounds
 * the attempt at or before that time: always for a stream, and for a non-stream attempt whose
 * `totalMs` reaches past the overall deadline.
 */
export function attemptTotalAtMs(waits: AttemptWaits, stream: boolean, nowMs: number, overallAtMs: number): number | null {
  if (stream) return null;
  const atMs = nowMs + waits.totalMs;
  return atMs < overallAtMs ? atMs : null;
}
