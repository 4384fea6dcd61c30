/**
 * A per-target request-rate limit of a multi-target model (seed 003: a target over its own rate
 * limit is skipped, recorded as a failed 429 attempt, and the walk goes on; when every target is
 * over its limit the request gets 429). A token bucket: `burst` tokens (default: one minute's
 * worth), refilled continuously at `requestsPerMinute / 60 000` tokens per ms; each dispatch to
 * the target, a same-target retry included, takes one token. Time is passed in; a `nowMs` older
 * than the last call refills nothing.
 */

/** One target's bucket. */
export class TargetRateLimit {
  private tokens: number;
  private lastMs: number | null = null;
  private readonly perMs: number;

  /**
   * @param requestsPerMinute sustained rate, > 0.
   * @param burst bucket size (requests that may go at once after idling), ≥ 1; default the rate.
   * @throws RangeError when either is out of range.
   */
  constructor(
    readonly requestsPerMinute: number,
    readonly burst: number = Math.max(1, Math.floor(requestsPerMinute)),
  ) {
    if (!(Number.isFinite(requestsPerMinute) && requestsPerMinute > 0)) throw new RangeError(`requests_per_minute must be > 0, got ${requestsPerMinute}`);
    if (!(Number.isFinite(burst) && burst >= 1)) throw new RangeError(`burst must be >= 1, got ${burst}`);
    this.tokens = burst;
    this.perMs = requestsPerMinute / 60_000;
  }

  /**
   * Takes over `previous`'s bucket (the same target's limit in the previous configuration
   * generation) when both have the same rate and burst; otherwise keeps a full bucket.
   */
  carryFrom(previous: TargetRateLimit): void {
    if (previous.requestsPerMinute !== this.requestsPerMinute || previous.burst !== this.burst) return;
    this.tokens = previous.tokens;
    this.lastMs = previous.lastMs;
  }

  /** Whether a dispatch at `nowMs` would be admitted. Refills, takes nothing. */
  available(nowMs: number): boolean {
    this.refill(nowMs);
    return this.tokens >= 1;
  }

  /** Takes one token at `nowMs` if there is one; returns whether it did. */
  tryTake(nowMs: number): boolean {
    this.refill(nowMs);
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }

  /**
   * A bucket shared with other gateway replicas held `tokens` at `nowMs` (after this replica's
   * take): this bucket keeps the lower of its own level and that one, so the next decisions see
   * what the other replicas spent. Deterministic: the level is passed in.
   */
  applyShared(tokens: number, nowMs: number): void {
    this.refill(nowMs);
    const t = Number.isFinite(tokens) ? Math.max(0, Math.min(this.burst, tokens)) : this.tokens;
    if (t < this.tokens) this.tokens = t;
  }

  /** Ms from `nowMs` until one token is available (0 when one is). */
  retryAfterMs(nowMs: number): number {
    this.refill(nowMs);
    return this.tokens >= 1 ? 0 : Math.ceil((1 - this.tokens) / this.perMs);
  }

  /** @throws Error when the token count is outside [0, burst]. */
  invariants(): void {
    if (!(this.tokens >= 0 && this.tokens <= this.burst)) throw new Error(`rate limit: ${this.tokens} tokens outside [0, ${this.burst}]`);
  }

  private refill(nowMs: number): void {
    if (this.lastMs !== null && nowMs > this.lastMs) this.tokens = Math.min(this.burst, this.tokens + (nowMs - this.lastMs) * this.perMs);
    if (this.lastMs === null || nowMs > this.lastMs) this.lastMs = nowMs;
  }
}
