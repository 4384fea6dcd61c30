/**
 * The health-check gate (seed 003: a direct model that a background health check marked unhealthy
 * leaves the candidate sets and the hash ring until it passes again). It refuses an endpoint whose
 * check is `enforce` and reads `unhealthy` in the shared `HealthCheckRegistry`; `report_only`
 * checks never refuse (seed 000). Asked for every model kind: per-model routers and multi-target
 * aliases alike. `when_all_unavailable: try_anyway` lifts it together with the cooldown gate,
 * since both are runtime filters.
 */
import type { HealthCheckRegistry } from '../health/health-checks.ts';
import type { AdmissionGate, AdmissionTarget } from './gate.ts';

/** Check gate over the shared `HealthCheckRegistry`. */
export class HealthCheckGate implements AdmissionGate {
  readonly name = 'health_check' as const;
  constructor(readonly checks: HealthCheckRegistry) {}

  admits(target: AdmissionTarget): boolean {
    return !this.checks.excludes(target.endpointId);
  }

  /** True when no enforcing check reads unhealthy (the usual case). */
  admitsEvery(): boolean {
    return this.checks.excludesNone;
  }

  /** 0 when admitted; Infinity when refused (only a passing probe can end it, at no known time). */
  retryInMs(target: AdmissionTarget): number {
    return this.checks.excludes(target.endpointId) ? Number.POSITIVE_INFINITY : 0;
  }
}
