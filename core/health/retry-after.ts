/**
 * Retry-After (RFC 9110 §10.2.3, plus the `retry-after-ms` extension some providers send) and the
 * per-endpoint not-before times it sets. Header parsing lives here, pure, so both drivers share
 * it: they call `parseRetryAfterMs` on a 429/503 and put the result on the Outcome's
 * `retryAfterMs`. The lifecycle then records `nowMs + retryAfterMs` as the endpoint's not-before
 * time and skips the endpoint until then.
 */

/**
 * Milliseconds to wait from the response headers, or null when none is usable.
 * `retry-after-ms` (integer or decimal ms) wins over `retry-after`; `retry-after` is delta
 * seconds or an HTTP date. An HTTP date is compared against the wall clock, which the core cannot
 * read: the driver passes `wallNowMs` (Unix epoch ms at the time the response arrived). Past
 * dates give 0. Negative or unparsable values give null.
 * @param headers lower-case header names → values (first value if repeated).
 */
export function parseRetryAfterMs(headers: Readonly<Record<string, string | undefined>>, wallNowMs: number): number | null {
  const ms = headers['retry-after-ms']?.trim();
  if (ms !== undefined && ms !== '' && /^\d+(\.\d+)?$/.test(ms)) return Math.ceil(Number(ms));
  const ra = headers['retry-after']?.trim();
  if (ra === undefined || ra === '') return null;
  if (/^\d+$/.test(ra)) return Number(ra) * 1000;
  if (/^-/.test(ra)) return null;
  const at = Date.parse(ra);
  if (!Number.isFinite(at) || !/[a-z]/i.test(ra)) return null;
  return Math.max(0, at - wallNowMs);
}

/** Not-before times per endpoint (driver clock, ms). Shared by every life; owned by `RoutingCore`. */
export class RetryAfterTable {
  private readonly notBefore = new Map<string, number>();
  private readonly status = new Map<string, number>();

  /** Records a not-before time (and the 429/503 that set it), keeping the later time if already set. */
  set(endpointId: string, atMs: number, status: number): void {
    const prev = this.notBefore.get(endpointId);
    if (prev === undefined || atMs > prev) {
      this.notBefore.set(endpointId, atMs);
      this.status.set(endpointId, status);
    }
  }

  /** The status (429 or 503) whose Retry-After set the endpoint's not-before time; 429 if unknown. */
  statusOf(endpointId: string): number {
    return this.status.get(endpointId) ?? 429;
  }

  /** Whether no not-before time is recorded (then `remainingMs` is 0 for every endpoint). */
  get isEmpty(): boolean {
    return this.notBefore.size === 0;
  }

  /** Remaining wait in ms at `nowMs` (0 when not cooling; expired entries are dropped). */
  remainingMs(endpointId: string, nowMs: number): number {
    if (this.notBefore.size === 0) return 0; // the usual case: nothing is cooling
    const at = this.notBefore.get(endpointId);
    if (at === undefined) return 0;
    if (at <= nowMs) {
      this.notBefore.delete(endpointId);
      this.status.delete(endpointId);
      return 0;
    }
    return at - nowMs;
  }

  /** @throws Error when a not-before time is not finite or lacks its status. */
  invariants(): void {
    for (const [id, at] of this.notBefore) {
      if (!Number.isFinite(at)) throw new Error(`retry-after ${id}: not-before ${at} is not finite`);
      if (!this.status.has(id)) throw new Error(`retry-after ${id}: no status recorded`);
    }
  }

  /** Endpoints cooling at `nowMs` with their not-before times. */
  snapshot(nowMs: number): Array<{ endpointId: string; notBeforeMs: number }> {
    return [...this.notBefore].filter(([, at]) => at > nowMs).map(([endpointId, notBeforeMs]) => ({ endpointId, notBeforeMs }));
  }
}
