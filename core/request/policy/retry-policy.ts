/**
 * What a failed attempt means for a multi-target request (seed 003 "adjust retries and runtime
 * behaviour"), as pure functions: retry the same target, fail over, or return the error — read
 * from the shared outcome table (`outcome-table.ts`) with the alias family's own rules. The wait
 * before a same-target retry is `backoff.ts`.
 *
 * Retried (same target within `retries`, then failed over): 5xx (busy answers included),
 * transport errors and timeouts (a stream's first-token timeout, a queue-wait timeout, the
 * headers and idle waits); 429 only with `retry_on_429`; any status listed in
 * `fallback_on_statuses` (seed 003's own example lists 408 there, so an upstream 408 is returned
 * — as a 504 timeout — unless listed). Failed over without
 * a same-target retry: 404 (the target's model name is wrong; repeating it cannot help) and a
 * context-length refusal (only to a target with a larger window). Everything else — other 4xx,
 * our credential refused — goes straight back to the caller: sending a bad request to more
 * targets only multiplies the same failure.
 */
import type { Outcome } from '../../lifecycle/outcome.ts';
import { OUTCOME_RULES } from '../../lifecycle/outcome-table.ts';

/** Causes of a retryable failure, for the `retry_same_target_on` filter. */
export type RetryCause = 'server_error' | 'timeout' | 'transport' | 'rate_limited' | 'listed_status';

/** The block's retry switches, resolved. */
export interface RetryRules {
  readonly retryOn429: boolean;
  /** Extra statuses (400–599) that may move the request on. */
  readonly fallbackOnStatuses: ReadonlySet<number>;
  /** Causes retried on the same target (extension); null = every retryable cause. */
  readonly retrySameOn?: ReadonlySet<RetryCause> | null;
}

/**
 * How the lifecycle treats a failed attempt: `retryable` (same-target retry, then fail over),
 * `fail_over` (another target, no same-target retry), `larger_window` (only a target with a
 * larger context window), `final` (return this error now), `terminal` (the client left or the
 * attempt was cancelled: end without an upstream error).
 */
export type FailureClass = 'retryable' | 'fail_over' | 'larger_window' | 'final' | 'terminal';

/** The retry cause of an outcome, or null when it is not retryable by cause. */
function causeOf(outcome: Outcome, rules: RetryRules): RetryCause | null {
  switch (outcome.kind) {
    case 'transport':
      return outcome.cause === 'timeout' ? 'timeout' : 'transport';
    case 'first_token_timeout':
    case 'queue_wait_timeout':
      return 'timeout';
    case 'http_status':
      if (rules.fallbackOnStatuses.has(outcome.status)) return 'listed_status';
      if (outcome.status >= 500) return 'server_error';
      if (outcome.errorClass === 'rate_limited') return rules.retryOn429 ? 'rate_limited' : null;
      return null;
    default:
      return null;
  }
}

/**
 * Classifies a failed attempt's outcome (rules in the module comment).
 * @throws Error for `ok` (not a failure — a bug in the caller).
 */
export function classifyFailure(outcome: Outcome, rules: RetryRules): FailureClass {
  if (outcome.kind === 'ok') throw new Error('classifyFailure called with an ok outcome');
  if (outcome.kind === 'cancelled' || outcome.kind === 'client_gone') return 'terminal';
  if (outcome.kind === 'key_pool_exhausted') return 'fail_over'; // no key here for this caller: another target may have one
  if (outcome.kind === 'shared_unit_refused') return 'fail_over'; // spent across replicas: as if the local limit had refused
  const cause = causeOf(outcome, rules);
  if (cause !== null) return rules.retrySameOn == null || rules.retrySameOn.has(cause) ? 'retryable' : 'fail_over';
  if (outcome.kind !== 'http_status') return 'final';
  if (outcome.errorClass === 'route_not_found') return 'fail_over';
  if (OUTCOME_RULES[outcome.errorClass].action === 'larger_window') return 'larger_window';
  return 'final';
}
