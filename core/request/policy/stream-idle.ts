/**
 * The stream-idle deadline of an attempt, shared by every model kind: after the commit, the gap
 * between two chunks may not exceed `timeout_stream_idle_sec`. One `wait_until` is armed at the
 * first chunk and never re-armed per chunk (that would be one timer per chunk): each chunk only
 * records its time, and when the deadline fires it is moved to the last chunk's time plus the
 * limit if chunks came since, lazily.
 */

/** The per-attempt state the idle deadline reads and writes. */
export interface StreamIdleState {
  /** Time of the last chunk (or of the dispatch before any), ms. */
  lastChunkAtMs: number;
  /** Whether an idle `wait_until` is outstanding for this attempt. */
  idleArmed: boolean;
}

/**
 * Records a chunk at `nowMs`.
 * @returns the time to arm the idle deadline at (ms), or null when one is already armed.
 */
export function recordStreamChunk(a: StreamIdleState, nowMs: number, idleTimeoutSec: number): number | null {
  a.lastChunkAtMs = nowMs;
  if (a.idleArmed) return null;
  a.idleArmed = true;
  return nowMs + idleTimeoutSec * 1000;
}

/**
 * The idle deadline fired at `nowMs`.
 * @returns the time to re-arm it at (ms) when a chunk came within the limit, or null when the
 *   stream has been silent for the whole limit (the attempt stalled).
 */
export function idleDeadlineFired(a: StreamIdleState, nowMs: number, idleTimeoutSec: number): number | null {
  const due = a.lastChunkAtMs + idleTimeoutSec * 1000;
  return due > nowMs ? due : null;
}
