/**
 * One upstream attempt as the exchange (`exchange.ts`) tracks it: its target and running
 * request, the frames held back until commit, the non-stream body or the upstream's error body.
 * It carries no timer: every deadline of an attempt (first token, headers, total, stream idle,
 * overall) is a core `wait_until` the exchange arms as such.
 */
import type { AttemptHandle } from '../upstream/adapter.ts';
import type { RouteTarget } from './exchange-context.ts';

/** One dispatch. Kept by the exchange until it ends (there are few). */
export interface Attempt {
  readonly id: number;
  readonly target: RouteTarget;
  /** The running upstream request; null until started. */
  handle: AttemptHandle | null;
  /** Frames held back until commit. */
  pending: string[];
  /** No more reports for this attempt (ended, cancelled, or timed out by us). */
  closed: boolean;
  /** Non-stream body waiting for commit. */
  body: string | null;
  /** A non-JSON body waiting for commit (`AttemptEnd` `bytes`), or null. */
  bytes: { readonly data: Buffer; readonly contentType: string } | null;
  /** The upstream's error body when the attempt failed with one (status or in-band), else null. */
  errorBody: string | null;
  /** The attempt's final response object, when its family reports one (`AttemptContext.onResponse`), else null. */
  response: Record<string, unknown> | null;
  /** Content frames (content or tool-call deltas) received from the upstream so far. */
  contentFrames: number;
}

/** A fresh attempt `id` on `target`, not yet started. */
export function newAttempt(id: number, target: RouteTarget): Attempt {
  return { id, target, handle: null, pending: [], closed: false, body: null, bytes: null, errorBody: null, response: null, contentFrames: 0 };
}

/**
 * The `setTimeout` delay for a deadline at `atMs` seen at `nowMs` (same clock, ms): whole
 * milliseconds, rounded up so a timer never fires before its deadline, and never negative.
 * Whole numbers matter for the garbage collector, not for timing: Node keeps one timer list per
 * distinct delay value, so fractional delays (differences of `performance.now()` readings) make
 * a new list and priority-queue entry for every timer, and the young generation then keeps
 * several times as much per request alive through each scavenge; whole-ms delays share lists.
 */
export function timerDelayMs(atMs: number, nowMs: number): number {
  return Math.max(0, Math.ceil(atMs - nowMs));
}

