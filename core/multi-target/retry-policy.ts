/**
 * What a failed attempt means for a multi-target request (seed 003 "adjust retries and runtime
 * behaviour"), as pure functions: whether the failure may be retried or failed over, and how long
 * to back off before a same-target retry.
 *
 * Retryable: 5xx, transport errors and timeouts (including a stream's first-token timeout and a
 * queue-wait timeout); 429 only with `retry_on_429`; any status listed in `fallback_on_statuses`.
 * Everything else — other 4xx, our credential refused — goes straight back to the caller:
 * sending a bad request to more targets only multiplies the same failure.
 */
import type { Rng } from '../rng.ts';
import type { Outcome } from '../lifecycle/outcome.ts';

/** The block's retry switches, resolved. */
export interface RetryRules {
  readonly retryOn429: boolean;
  /** Extra statuses (400–599) that may move the request on. */
  readonly fallbackOnStatuses: ReadonlySet<number>;
}

/** How the lifecycle treats a failed attempt. */
export type FailureClass = 'retryable' | 'final' | 'terminal';

/**
 * Classifies a failed attempt's outcome: `retryable` (same-target retry or fail over),
 * `final` (return this error to the caller now), `terminal` (the client left or the attempt was
 * cancelled: end without an upstream error).
 * @throws Error for `ok` (not a failure — a bug in the caller).
 */
export function classifyFailure(outcome: Outcome, rules: RetryRules): FailureClass {
  switch (outcome.kind) {
    case 'ok':
      throw new Error('classifyFailure called with an ok outcome');
    case 'cancelled':
    case 'client_gone':
      return 'terminal';
    case 'transport':
    case 'first_token_timeout':
    case 'queue_wait_timeout':
      return 'retryable';
    case 'http_status':
      if (rules.fallbackOnStatuses.has(outcome.status)) return 'retryable';
      if (outcome.status >= 500) return 'retryable';
      if (outcome.status === 429) return rules.retryOn429 ? 'retryable' : 'final';
      return 'final';
  }
}

/**
 * Backoff before same-target retry number `retry` (1 = first), ms: exponential from `baseMs`,
 * capped at `maxMs`, with equal jitter (half fixed, half drawn, one `rng.float()`), and at least
 * the upstream's Retry-After when it gave one (capped at `maxMs` too).
 */
export function backoffMs(retry: number, baseMs: number, maxMs: number, retryAfterMs: number | null, rng: Rng): number {
  const ceiling = Math.min(maxMs, baseMs * 2 ** Math.max(0, retry - 1));
  const jittered = ceiling / 2 + rng.float() * (ceiling / 2);
  const floor = retryAfterMs === null ? 0 : Math.min(maxMs, Math.max(0, retryAfterMs));
  return Math.max(jittered, floor);
}
