/**
 * The per-attempt bounds a dispatch gets, from the waits a model kind sets:
 * - the first-chunk wait of a stream (`router:`: the deployment's first-token timeout; alias:
 *   `stream_timeout`, else its own `timeout`, else none), carried on the dispatch for the driver
 *   (`dispatchDeadlines`);
 * - the attempt's total: a non-stream attempt's is the model's `timeout`, else the deployment's
 *   request timeout; a stream's is the request's overall deadline (its idle wait bounds it between
 *   chunks). Both are the core's own `wait_until`s (`attemptTotalAtMs`): a non-stream total is
 *   armed once, at dispatch, as a `total` deadline; a stream's is the life's `overall` deadline,
 *   armed once per request. Drivers arm no total of their own.
 * Every bound is capped by the request's overall deadline.
 */
import type { AttemptDeadlines } from '../../lifecycle/seam.ts';

/** The waits of one model kind, ms. */
export interface AttemptWaits {
  /** Dispatch → first content token of a stream; null = no such wait. */
  readonly firstChunkMs: number | null;
  /** Dispatch → complete non-stream response. */
  readonly totalMs: number;
}

/**
 * The deadlines a dispatch at `nowMs` carries for the driver (driver clock, ms) for a request
 * whose overall deadline is `overallAtMs` (may be Infinity): the first-token bound of a stream.
 */
export function dispatchDeadlines(waits: AttemptWaits, stream: boolean, nowMs: number, overallAtMs: number): AttemptDeadlines {
  return { firstTokenAtMs: stream && waits.firstChunkMs !== null ? Math.min(overallAtMs, nowMs + waits.firstChunkMs) : null };
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
