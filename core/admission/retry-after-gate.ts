/**
 * The Retry-After gate: an endpoint that answered 429 or a busy 503/529 with a Retry-After is
 * left out until that time (RFC 9110 §10.2.3; seed 003 "冷却"). Always on, for every model kind:
 * the upstream asked to be left alone. The table itself is shared state (`health/retry-after.ts`).
 */
import type { Outcome } from '../lifecycle/outcome.ts';
import type { RetryAfterTable } from '../health/retry-after.ts';
import type { AdmissionGate, AdmissionTarget } from './gate.ts';

/** Check gate over the shared Retry-After table. */
export class RetryAfterGate implements AdmissionGate {
  readonly name = 'retry_after' as const;
  constructor(readonly table: RetryAfterTable) {}

  admits(target: AdmissionTarget, nowMs: number): boolean {
    return this.table.remainingMs(target.endpointId, nowMs) === 0;
  }

  retryInMs(target: AdmissionTarget, nowMs: number): number {
    return this.table.remainingMs(target.endpointId, nowMs);
  }

  /** True when no endpoint has a not-before time recorded (the usual case). */
  admitsEvery(): boolean {
    return this.table.isEmpty;
  }

  /** The status (429, or 503 for busy answers) whose Retry-After set `endpointId`'s wait. */
  statusOf(endpointId: string): number {
    return this.table.statusOf(endpointId);
  }

  /**
   * Records the hint an ended attempt carried: a 429, a 503 or an overload answer with a
   * Retry-After sets `endpointId`'s not-before time `nowMs + retryAfterMs`. Other outcomes: no-op.
   */
  note(endpointId: string, outcome: Outcome, nowMs: number): void {
    if (outcome.kind !== 'http_status' || outcome.retryAfterMs === null) return;
    const c = outcome.errorClass;
    if (outcome.status === 429 || outcome.status === 503 || c === 'rate_limited' || c === 'overloaded') {
      this.table.set(endpointId, nowMs + outcome.retryAfterMs, outcome.status === 429 ? 429 : 503);
    }
  }
}
