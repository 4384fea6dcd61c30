/**
 * How a request life ends with an error: the `respond_error` action (none when the client has
 * left) and the one-line summary of every attempt that error messages carry. Shared by every
 * model kind so the client sees the same shape whichever life served it.
 */
import type { AttemptRecord, LifecycleAction } from '../lifecycle/seam.ts';
import type { ErrorCode } from '../lifecycle/errors.ts';

/**
 * The `respond_error` for `code`, or null for `client_gone` (nobody to answer). `attemptId`
 * names the attempt whose upstream error this reports (its body may pass through), or null.
 */
export function respondError(code: ErrorCode, message: string, status: number, retryAfterSec: number | null, attemptId: number | null): LifecycleAction | null {
  if (code === 'client_gone') return null;
  return attemptId === null ? { kind: 'respond_error', status, code, message, retryAfterSec } : { kind: 'respond_error', status, code, message, retryAfterSec, attemptId };
}

/**
 * `target-or-endpoint=status-or-kind` for each attempt, comma-separated (`skipped_429` for a
 * target skipped over its rate limit), for "all attempts failed" messages.
 */
export function attemptsSummary(attempts: readonly AttemptRecord[]): string {
  return attempts.map((r) => `${r.target ?? r.endpointId}=${r.skipped ? 'skipped_429' : r.outcome.kind === 'http_status' ? r.outcome.status : r.outcome.kind}`).join(', ');
}
