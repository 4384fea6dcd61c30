/**
 * The multi-target part of GET /health/deep (seed 003 "status of targets"): a multi-target model
 * reports `not_applicable` — its availability is its targets' — and each target reports
 * `healthy`, `cooldown` or `unhealthy` (an enforcing background health check failed it:
 * `health_check_failed`) with the reason, plus the shared breaker's view and the learning
 * signals, so an operator can see why a target is or is not getting traffic.
 */
import type { ResolvedModel } from '../model/resolved-model.ts';
import type { HealthRegistry, BreakerState } from '../health/health-registry.ts';
import type { CooldownRegistry } from '../health/cooldown.ts';
import type { EndpointStatsView } from '../stats/endpoint-stats.ts';
import { HEALTH_CHECK_FAILED, type HealthCheckRegistry, type HealthCheckStatus } from '../health/health-checks.ts';

/** One target's status row. */
export interface TargetStatusRow {
  /** The direct model id. */
  readonly model: string;
  readonly endpointId: string;
  readonly priority: number;
  readonly weight: number;
  /**
   * `unhealthy` while an enforcing health check holds it out, else `cooldown` while cooling down,
   * else `healthy` (with or without a cooldown block or a report-only check).
   */
  readonly status: 'healthy' | 'cooldown' | 'unhealthy';
  /**
   * `health_check_failed` when unhealthy; why the cooldown started (`transport_error`,
   * `timeout`, `http_503`, …) when cooling; null when healthy.
   */
  readonly statusReason: string | null;
  /** The target's background health check, or null when its direct model has none. */
  readonly healthCheck: HealthCheckStatus | null;
  readonly cooldownUntilMs: number | null;
  /** The shared breaker's state (the `fixed` router's view; multi-target routing ignores it). */
  readonly breaker: BreakerState;
  readonly availability: number;
  readonly inFlight: number;
  readonly latencyMs: number | null;
}

/** One multi-target model's status. */
export interface MultiTargetStatus {
  readonly modelId: string;
  readonly strategy: string;
  readonly status: 'not_applicable';
  readonly targets: readonly TargetStatusRow[];
}

/** Status of every multi-target model among `models` at `nowMs`, in the given order. Pure. */
export function multiTargetStatuses(
  models: readonly ResolvedModel[],
  nowMs: number,
  health: HealthRegistry,
  cooldowns: CooldownRegistry,
  stats: EndpointStatsView,
  healthChecks: HealthCheckRegistry | null = null,
): MultiTargetStatus[] {
  const out: MultiTargetStatus[] = [];
  for (const m of models) {
    const mt = m.multiTarget;
    if (!mt) continue;
    out.push({
      modelId: m.id,
      strategy: m.strategy,
      status: 'not_applicable',
      targets: mt.targets.map((t) => {
        const c = cooldowns.status(t.endpointId, nowMs);
        const h = health.snapshotOf(t.endpointId, nowMs);
        const hc = healthChecks?.status(t.endpointId) ?? null;
        const unhealthy = hc !== null && hc.excluded;
        return {
          model: t.model,
          endpointId: t.endpointId,
          priority: t.priority,
          weight: t.weight,
          status: unhealthy ? 'unhealthy' : c.state === 'cooldown' ? 'cooldown' : 'healthy',
          statusReason: unhealthy ? HEALTH_CHECK_FAILED : c.reason,
          healthCheck: hc,
          cooldownUntilMs: c.untilMs,
          breaker: h.state,
          availability: h.availability,
          inFlight: stats.inFlight(t.endpointId),
          latencyMs: stats.latencyMs(t.endpointId),
        };
      }),
    });
  }
  return out;
}
