/**
 * The breaker gate (seed 000 "endpoint health"): the pure `allow_request` — an open circuit, or a
 * half-open one whose single probe is already in flight, refuses — and the claim an admitted
 * attempt then takes (`beginDispatch`), which holds the half-open probe slot until the attempt
 * ends. Per-model routers claim; multi-target aliases only record their outcomes
 * (`RequestKindPolicy.breaker`), as seed 003 leaves ejection to the target's cooldown.
 */
import type { DispatchClaim, HealthRegistry } from '../health/health-registry.ts';
import type { AdmissionGate, AdmissionTarget } from './gate.ts';

/** Check gate over the shared `HealthRegistry`, plus the claim. */
export class BreakerGate implements AdmissionGate {
  readonly name = 'breaker' as const;
  constructor(readonly health: HealthRegistry) {}

  admits(target: AdmissionTarget, nowMs: number): boolean {
    return this.health.allowRequest(target.endpointId, nowMs);
  }

  /** True when every breaker is closed (then `admits` is true for every target). */
  admitsEvery(): boolean {
    return this.health.allClosed;
  }

  retryInMs(target: AdmissionTarget, nowMs: number): number {
    return this.health.admitsInMs(target.endpointId, nowMs);
  }

  /** Claims a dispatch to `endpointId` (the probe slot when half-open); null when refused. */
  claim(endpointId: string, nowMs: number): DispatchClaim | null {
    return this.health.beginDispatch(endpointId, nowMs);
  }
}
