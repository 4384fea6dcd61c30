/**
 * The deadlines one exchange's life has asked for (`wait_until`), behind a single Node timer
 * set for the earliest of them. A request arms several deadlines at once (overall, headers, a
 * non-stream attempt's total or a stream's first token) and nearly always ends before any of
 * them; one timer per exchange instead of one per deadline saves the timer objects, their
 * timer-list entries and their cancellation, on every request.
 *
 * Firing is what a timer per deadline would do: a deadline is reported no earlier than its time
 * (the delay is `timerDelayMs`'s), deadlines due at the same time are reported together in the
 * order they were armed, and one armed while others are being reported waits for its own turn
 * (a later timer callback), never the current one.
 */
import { timerDelayMs } from './attempt.ts';

/** Pending deadlines of one exchange, earliest first, and the one timer for the earliest. */
export class DeadlineTimer {
  /** Deadline ids and their times (ms on `now`'s clock), parallel arrays sorted by time; ties in arming order. */
  private readonly ids: number[] = [];
  private readonly atMs: number[] = [];
  private timer: NodeJS.Timeout | null = null;
  /** The time the running timer was set for; Infinity when none runs. */
  private timerAtMs = Number.POSITIVE_INFINITY;

  /**
   * @param now the clock deadlines are given in, ms (the exchange's `ctx.now`)
   * @param fire called with each deadline id once its time has come
   */
  constructor(
    private readonly now: () => number,
    private readonly fire: (deadlineId: number) => void,
  ) {}

  /** Schedules `deadlineId` at `atMs`; O(pending deadlines), which are a handful. */
  add(deadlineId: number, atMs: number): void {
    let i = this.atMs.length;
    while (i > 0 && this.atMs[i - 1]! > atMs) i--;
    if (i === this.atMs.length) {
      this.ids.push(deadlineId);
      this.atMs.push(atMs);
    } else {
      this.ids.splice(i, 0, deadlineId);
      this.atMs.splice(i, 0, atMs);
    }
    if (i === 0) this.arm();
  }

  /** Drops every pending deadline and stops the timer (the exchange is over). */
  clear(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    this.timerAtMs = Number.POSITIVE_INFINITY;
    this.ids.length = 0;
    this.atMs.length = 0;
  }

  /** Sets the timer for the earliest pending deadline, unless one runs for it or earlier. */
  private arm(): void {
    const at = this.atMs[0];
    if (at === undefined || at >= this.timerAtMs) return;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timerAtMs = at;
    this.timer = setTimeout(this.onTimer, timerDelayMs(at, this.now()));
  }

  private readonly onTimer = (): void => {
    const due = this.timerAtMs;
    this.timer = null;
    this.timerAtMs = Number.POSITIVE_INFINITY;
    // Taken out before any is reported: what the reports arm is scheduled on its own.
    let n = 0;
    while (n < this.atMs.length && this.atMs[n]! <= due) n++;
    const fired = this.ids.splice(0, n);
    this.atMs.splice(0, n);
    for (const id of fired) this.fire(id);
    this.arm();
  };
}
