/**
 * The `local` daily request counter of quota routes with `local_quota_fallback: true` (seed 000
 * "RouteWise", quota sources): not a quota source but a plain counter kept by this process. It
 * counts requests only, per worker (never summed across workers), starts at zero with the
 * process, and resets at local midnight. So it can state a daily request allowance and nothing
 * else: 4-hour or monthly windows, token or spend caps, and plans the provider resets on its own
 * schedule need a real `quota_source`.
 *
 * Sans-I/O: the caller passes the wall-clock time (Unix ms) and the local offset from UTC
 * (minutes east of UTC, e.g. +60 for CET, −300 for EST); the counter reads no clock and no zone.
 */

const DAY_MS = 86_400_000;

/**
 * The local calendar day of `unixMs` at `utcOffsetMin` (minutes east of UTC), as a day number
 * (days since 1970-01-01 local). Two times share a day number exactly when no local midnight lies
 * between them.
 */
export function localDayNumber(unixMs: number, utcOffsetMin: number): number {
  return Math.floor((unixMs + utcOffsetMin * 60_000) / DAY_MS);
}

/** The Unix ms of the first local midnight after `unixMs` at `utcOffsetMin`. */
export function nextLocalMidnightUnixMs(unixMs: number, utcOffsetMin: number): number {
  return (localDayNumber(unixMs, utcOffsetMin) + 1) * DAY_MS - utcOffsetMin * 60_000;
}

/** Requests counted since the last local midnight, against a daily `limit`. */
export class LocalDailyCounter {
  private day = Number.NEGATIVE_INFINITY;
  private count = 0;

  /** @param limit requests per local day (> 0). @throws RangeError otherwise. */
  constructor(readonly limit: number) {
    if (!(limit > 0)) throw new RangeError(`local daily quota limit must be > 0 requests, got ${limit}`);
  }

  /** Requests counted today (the local day of `unixMs` at `utcOffsetMin`); 0 after a local midnight. */
  used(unixMs: number, utcOffsetMin: number): number {
    this.roll(unixMs, utcOffsetMin);
    return this.count;
  }

  /** Counts one request at `unixMs`. */
  record(unixMs: number, utcOffsetMin: number): void {
    this.roll(unixMs, utcOffsetMin);
    this.count++;
  }

  /** Requests left today (≥ 0). */
  remaining(unixMs: number, utcOffsetMin: number): number {
    return Math.max(0, this.limit - this.used(unixMs, utcOffsetMin));
  }

  /** Takes `other`'s count and day (the same route's counter of the previous configuration generation). */
  copyFrom(other: LocalDailyCounter): void {
    this.day = other.day;
    this.count = other.count;
  }

  private roll(unixMs: number, utcOffsetMin: number): void {
    const d = localDayNumber(unixMs, utcOffsetMin);
    // A clock stepped back across midnight keeps today's count rather than resurrecting a day.
    if (d > this.day) {
      this.day = d;
      this.count = 0;
    }
  }
}
