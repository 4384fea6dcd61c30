/**
 * The body-read deadline (`server.body_read_timeout_ms`): a request whose body has not arrived
 * whole within it is answered 408 `request_timeout` and its connection closed, so a slow-body
 * client cannot hold an in-flight place (and its buffered chunks) for long. One shared sweep
 * timer serves every body being read, in every gateway of the process, instead of a timer per
 * request: starting and ending a watch is a Set insert and delete. A deadline fires between
 * its time and one sweep period later (a quarter of the shortest timeout watched, at most
 * 1 s, at least 10 ms).
 *
 * uWS closes on its own any connection that has not completed a request 10–12 s after its
 * last one (its fixed idle timeout, which also covers slow headers and idle keep-alive
 * connections); the gateway's deadline matters when set below that.
 */

/** One body being read. */
export interface BodyWatch {
  /** `performance.now()` ms at which the body is late. */
  readonly deadlineMs: number;
  /** Called once when the deadline has passed and the watch was not ended. */
  readonly onLate: () => void;
}

const watched = new Set<BodyWatch>();
let sweepTimer: NodeJS.Timeout | null = null;
let sweepEveryMs = 1_000;

function sweep(): void {
  const now = performance.now();
  for (const w of watched) {
    if (w.deadlineMs > now) continue;
    watched.delete(w);
    w.onLate();
  }
  if (watched.size === 0 && sweepTimer !== null) {
    clearInterval(sweepTimer);
    sweepTimer = null;
    sweepEveryMs = 1_000;
  }
}

/**
 * Watches a body read that must end within `timeoutMs` (> 0); `onLate` runs once if it does
 * not. End the watch with `endBodyWatch` when the body is whole, refused or the client is gone.
 */
export function watchBody(timeoutMs: number, onLate: () => void): BodyWatch {
  const w: BodyWatch = { deadlineMs: performance.now() + timeoutMs, onLate };
  watched.add(w);
  const every = Math.max(10, Math.min(1_000, Math.floor(timeoutMs / 4)));
  if (sweepTimer === null || every < sweepEveryMs) {
    if (sweepTimer !== null) clearInterval(sweepTimer);
    sweepEveryMs = every;
    sweepTimer = setInterval(sweep, every);
    sweepTimer.unref();
  }
  return w;
}

/** Ends a watch (idempotent): its `onLate` will not run. */
export function endBodyWatch(w: BodyWatch | null): void {
  if (w !== null) watched.delete(w);
}

/** Bodies watched now (for tests and `/metrics`). */
export function bodiesWatched(): number {
  return watched.size;
}
