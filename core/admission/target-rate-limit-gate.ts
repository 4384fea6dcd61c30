/**
 * The per-target rate-limit gate (seed 003 "目标限流"): a target over its own request rate is
 * skipped. Unlike the other check gates this one *takes* (a bucket token per dispatch, same-target
 * retries included), and a refusal is recorded as a failed 429 attempt with no upstream call,
 * so the life calls `take` at the moment it commits to the target, after the pure checks.
 * Replicas sharing state take the same token from a shared bucket before the attempt leaves; a
 * refusal there comes back as a failed attempt (`shared_unit_refused`) and the walk goes on, and
 * the shared level lowers this bucket (`TargetRateLimit.applyShared`).
 */
import type { AdmissionGate, AdmissionTarget } from './gate.ts';

/** Gate over the target's own token bucket (`multi-target/target-rate-limit.ts`). */
export class TargetRateLimitGate implements AdmissionGate {
  readonly name = 'target_rate_limit' as const;

  /** Whether a token is there now (refills, takes nothing). Targets without a limit: true. */
  admits(target: AdmissionTarget, nowMs: number): boolean {
    return !target.rateLimit || target.rateLimit.available(nowMs);
  }

  retryInMs(target: AdmissionTarget, nowMs: number): number {
    return target.rateLimit ? target.rateLimit.retryAfterMs(nowMs) : 0;
  }

  /** Takes one token for a dispatch at `nowMs`; false (nothing taken) when over the limit. */
  take(target: AdmissionTarget, nowMs: number): boolean {
    return !target.rateLimit || target.rateLimit.tryTake(nowMs);
  }
}
