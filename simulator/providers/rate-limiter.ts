/**
 * A hosted provider's admission limits: requests per minute, tokens per minute, concurrent
 * requests, and quota windows — each refusal is a 429 with a Retry-After the way providers send
 * it (whole seconds, at least 1).
 *
 * - RPM / TPM: sliding 60 s windows over admitted requests (OpenAI and Anthropic document
 *   per-minute limits enforced continuously rather than at minute boundaries); a request's tokens
 *   are its prompt plus its output tokens (providers count `max_tokens` up front; the trace's
 *   output count stands in for it). Retry-After = when enough of the window has expired.
 * - concurrency: at most N requests in flight (subscription plans such as Featherless);
 *   Retry-After = `concurrencyRetryAfterMs` (the provider cannot know when a slot frees).
 * - quota: fixed windows aligned to virtual time 0 (e.g. 4500 requests per 5 h, MiniMax Plus);
 *   Retry-After = until the window resets.
 * Limits are checked in that order — concurrency, quota, RPM, TPM — and the first refusal is
 * reported; a refused request consumes nothing. No clock: every call takes `nowMs`.
 */

/** One fixed quota window: at most `requests` and/or `tokens` per `windowMs`. */
export interface QuotaWindow {
  readonly windowMs: number;
  readonly requests?: number | undefined;
  readonly tokens?: number | undefined;
}

/** Limits of one provider; absent = unlimited. Counts are integers ≥ 1. */
export interface ProviderLimits {
  readonly rpm?: number | undefined;
  readonly tpm?: number | undefined;
  readonly concurrency?: number | undefined;
  readonly quota: readonly QuotaWindow[];
  /** Retry-After sent with a concurrency refusal, ms. */
  readonly concurrencyRetryAfterMs: number;
}

/** Which limit refused a request. */
export type LimitKind = 'concurrency' | 'quota' | 'rpm' | 'tpm';

/** Result of `tryAcquire`: admitted, or refused with the limit and a Retry-After in ms (whole seconds). */
export type Admission = { readonly ok: true } | { readonly ok: false; readonly limit: LimitKind; readonly retryAfterMs: number };

const MINUTE_MS = 60_000;
const ADMITTED: Admission = { ok: true };

/** Retry-After as an HTTP header carries it: whole seconds, rounded up, at least 1 s. */
function headerMs(ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000 - 1e-9)) * 1000;
}

/** Admission state of one provider. See the module doc for the rules. */
export class RateLimiter {
  private inFlightCount = 0;
  // Sliding windows: admission times and tokens from `head` on (older entries are compacted away).
  private times: number[] = [];
  private tokens: number[] = [];
  private head = 0;
  private tokenSum = 0;
  private readonly windowIndex: number[];
  private readonly windowRequests: number[];
  private readonly windowTokens: number[];
  private readonly needsLog: boolean;

  /** @throws RangeError naming the limit when a count is not an integer ≥ 1 or a window/retry time is not > 0. */
  constructor(readonly limits: ProviderLimits) {
    for (const k of ['rpm', 'tpm', 'concurrency'] as const) {
      const v = limits[k];
      if (v !== undefined && !(Number.isInteger(v) && v >= 1)) throw new RangeError(`limits.${k} must be an integer ≥ 1, got ${v}`);
    }
    limits.quota.forEach((w, i) => {
      if (!(w.windowMs > 0)) throw new RangeError(`limits.quota[${i}].window_ms must be > 0, got ${w.windowMs}`);
    });
    if (!(limits.concurrencyRetryAfterMs > 0)) throw new RangeError(`limits.retry_after_ms must be > 0, got ${limits.concurrencyRetryAfterMs}`);
    this.windowIndex = limits.quota.map(() => -1);
    this.windowRequests = limits.quota.map(() => 0);
    this.windowTokens = limits.quota.map(() => 0);
    this.needsLog = limits.rpm !== undefined || limits.tpm !== undefined;
  }

  /** Requests admitted and not yet released. */
  get inFlight(): number {
    return this.inFlightCount;
  }

  /**
   * Admits a request of `tokens` tokens at `nowMs` (counting it against every limit) or refuses
   * it with the first limit it breaks and a Retry-After. A request larger than the TPM limit
   * alone is refused with a 60 s Retry-After (providers reject such requests outright).
   */
  tryAcquire(nowMs: number, tokens: number): Admission {
    const l = this.limits;
    if (l.concurrency !== undefined && this.inFlightCount >= l.concurrency) {
      return { ok: false, limit: 'concurrency', retryAfterMs: headerMs(l.concurrencyRetryAfterMs) };
    }
    for (let i = 0; i < l.quota.length; i++) {
      const w = l.quota[i]!;
      const idx = Math.floor(nowMs / w.windowMs);
      if (idx !== this.windowIndex[i]) {
        this.windowIndex[i] = idx;
        this.windowRequests[i] = 0;
        this.windowTokens[i] = 0;
      }
      const overRequests = w.requests !== undefined && this.windowRequests[i]! + 1 > w.requests;
      const overTokens = w.tokens !== undefined && this.windowTokens[i]! + tokens > w.tokens;
      if (overRequests || overTokens) return { ok: false, limit: 'quota', retryAfterMs: headerMs((idx + 1) * w.windowMs - nowMs) };
    }
    if (this.needsLog) {
      this.expire(nowMs);
      const n = this.times.length - this.head;
      if (l.rpm !== undefined && n >= l.rpm) {
        return { ok: false, limit: 'rpm', retryAfterMs: headerMs(this.times[this.head + n - l.rpm]! + MINUTE_MS - nowMs) };
      }
      if (l.tpm !== undefined && this.tokenSum + tokens > l.tpm) {
        if (tokens > l.tpm) return { ok: false, limit: 'tpm', retryAfterMs: MINUTE_MS };
        // The earliest time at which the tokens still in the window leave room for this request.
        let excess = this.tokenSum + tokens - l.tpm;
        let i = this.head;
        while (excess > 0) excess -= this.tokens[i++]!;
        return { ok: false, limit: 'tpm', retryAfterMs: headerMs(this.times[i - 1]! + MINUTE_MS - nowMs) };
      }
      this.times.push(nowMs);
      this.tokens.push(tokens);
      this.tokenSum += tokens;
    }
    for (let i = 0; i < l.quota.length; i++) {
      this.windowRequests[i]!++;
      this.windowTokens[i]! += tokens;
    }
    this.inFlightCount++;
    return ADMITTED;
  }

  /** Ends one admitted request (frees its concurrency slot). @throws Error when nothing is in flight. */
  release(): void {
    if (this.inFlightCount === 0) throw new Error('RateLimiter.release: nothing in flight');
    this.inFlightCount--;
  }

  /** @throws Error when a count is negative or over its limit, or the token sum is out of sync. */
  invariants(): void {
    const l = this.limits;
    if (this.inFlightCount < 0) throw new Error(`RateLimiter: inFlight ${this.inFlightCount} < 0`);
    if (l.concurrency !== undefined && this.inFlightCount > l.concurrency) throw new Error(`RateLimiter: inFlight ${this.inFlightCount} > concurrency ${l.concurrency}`);
    let sum = 0;
    for (let i = this.head; i < this.tokens.length; i++) sum += this.tokens[i]!;
    if (sum !== this.tokenSum) throw new Error(`RateLimiter: token sum ${this.tokenSum} != window contents ${sum}`);
    if (l.rpm !== undefined && this.times.length - this.head > l.rpm) throw new Error('RateLimiter: more requests in the window than rpm');
    l.quota.forEach((w, i) => {
      if (w.requests !== undefined && this.windowRequests[i]! > w.requests) throw new Error(`RateLimiter: quota[${i}] over its request limit`);
    });
  }

  private expire(nowMs: number): void {
    const cutoff = nowMs - MINUTE_MS;
    while (this.head < this.times.length && this.times[this.head]! <= cutoff) {
      this.tokenSum -= this.tokens[this.head]!;
      this.head++;
    }
    if (this.head > 1024 && this.head * 2 > this.times.length) {
      this.times = this.times.slice(this.head);
      this.tokens = this.tokens.slice(this.head);
      this.head = 0;
    }
  }
}
