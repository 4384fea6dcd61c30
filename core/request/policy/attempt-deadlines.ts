/**
 * The deadlines a dispatch carries, from the waits a model kind sets: the first-chunk wait of a
 * stream (`router:`: the deployment's first-token timeout; alias: `stream_timeout`, else its own
 * `timeout`, else none) and a non-stream attempt's total (the model's `timeout`, else the
 * deployment's request timeout). Both are capped by the request's overall deadline; a stream's
 * total is the overall deadline itself (its idle wait bounds it between chunks).
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
 * Absolute deadlines (driver clock, ms) of a dispatch at `nowMs` for a request whose overall
 * deadline is `overallAtMs` (may be Infinity; then `totalAtMs` of a stream is null).
 */
export function dispatchDeadlines(waits: AttemptWaits, stream: boolean, nowMs: number, overallAtMs: number): AttemptDeadlines {
  const firstTokenAtMs = stream && waits.firstChunkMs !== null ? Math.min(overallAtMs, nowMs + waits.firstChunkMs) : null;
  const totalAtMs = stream ? overallAtMs : Math.min(overallAtMs, nowMs + waits.totalMs);
  return { firstTokenAtMs, totalAtMs: Number.isFinite(totalAtMs) ? totalAtMs : null };
}
