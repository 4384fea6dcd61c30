/**
 * The bodies of the operational reads: `/routing` (weights per model) and `/health/deep`
 * (seed 000, "endpoint health and circuit breaking", "routes excluded from selection").
 */
import type { EndpointHealthSnapshot, HealthCheckStatus, RouteExclusion } from '../../core/index.ts';
import type { ServerContext } from './uws.ts';
import type { DeepHealth } from './worker-aggregate.ts';

/**
 * Body of `/routing`: per model its strategy and every route's configured and effective weight
 * (0, with reason `health_check`, while an enforcing health check holds the route out), plus `endpoint_health` — the background health checks' verdicts keyed by endpoint id (`mode`,
 * `state`, `excluded`, the current runs, the last failure's reason); empty without checks.
 */
export function routingView(ctx: ServerContext): Record<string, unknown> {
  const g = ctx.gen;
  const endpointHealth: Record<string, unknown> = {};
  for (const c of g.core.healthChecks.snapshot()) {
    endpointHealth[c.endpointId] = { mode: c.mode, state: c.state, excluded: c.excluded, consecutive_failures: c.consecutiveFailures, consecutive_passes: c.consecutivePasses, last_failure_reason: c.lastFailureReason };
  }
  return {
    endpoint_health: endpointHealth,
    models: g.core.allModels().map((m) => ({
      id: m.id,
      aliases: m.aliases,
      strategy: m.strategy,
      published: m.published,
      ...(m.multiTarget && { multi_target: true }),
      routes: m.routes.map((r) => ({
        endpoint_id: r.endpointId,
        provider: r.provider,
        local: r.local,
        configured_weight: r.configuredWeight,
        // An enforcing health check that reads unhealthy holds the route out of selection
        // (the request path asks it per request), so the weight a request sees is 0.
        ...(g.core.healthChecks.excludes(r.endpointId)
          ? { effective_weight: 0, exclusion_reasons: [...r.exclusionReasons, 'health_check'] }
          : { effective_weight: r.effectiveWeight, exclusion_reasons: r.exclusionReasons }),
      })),
    })),
  };
}

/**
 * An endpoint's breaker as `/health/deep` shows it: the core's snapshot with its monotonic-clock
 * `openedAtMs` (meaningless outside the process) replaced by `opened_at`, an ISO 8601 wall-clock
 * time, and `open_for_ms`, the time since it opened; both null while the breaker is closed.
 */
export type DeepEndpointHealth = Omit<EndpointHealthSnapshot, 'openedAtMs'> & { opened_at: string | null; open_for_ms: number | null };

/**
 * A background health check as `/health/deep` shows it: the core's status with the monotonic
 * `lastCheckedAtMs` / `changedAtMs` replaced by ISO 8601 wall-clock times (`last_checked_at`,
 * `changed_at`, null before the first probe / change), plus the route's model.
 */
export type DeepHealthCheck = Omit<HealthCheckStatus, 'lastCheckedAtMs' | 'changedAtMs'> & { model: string; last_checked_at: string | null; changed_at: string | null };

/**
 * The ISO 8601 wall-clock time of `atMs` on the gateway's monotonic clock, whose present reading
 * is `nowMs` while the wall clock reads `wallNowMs` (ms since the epoch); null stays null.
 */
export function wallClockIso(atMs: number | null, nowMs: number, wallNowMs: number): string | null {
  return atMs === null ? null : new Date(wallNowMs - (nowMs - atMs)).toISOString();
}

/** One entry of `/health/deep`'s `providers` map: the breaker snapshot plus the route's exclusions. */
export interface ProviderHealth extends DeepEndpointHealth {
  /** Models that do not route to this endpoint now (effective weight 0). */
  excluded_from_models: string[];
  /** Why its weight differs from the configured one (`weight_override`, `provider_disabled`, `routing_yaml`, `configured_zero`). */
  exclusion_reasons: string[];
}

/**
 * The `providers` map keyed by endpoint id: every endpoint's breaker snapshot with its
 * exclusions merged in, endpoints no request has reached yet included (they read fresh).
 */
export function providersMap(endpoints: readonly DeepEndpointHealth[], exclusions: readonly RouteExclusion[]): Record<string, ProviderHealth> {
  const out: Record<string, ProviderHealth> = {};
  for (const e of endpoints) out[e.endpointId] = { ...e, excluded_from_models: [], exclusion_reasons: [] };
  for (const x of exclusions) {
    const p = (out[x.endpointId] ??= { endpointId: x.endpointId, state: 'closed', availability: 1, consecutiveFailures: 0, opened_at: null, open_for_ms: null, probeInFlight: false, claimsInFlight: 0, excluded_from_models: [], exclusion_reasons: [] });
    if (x.effectiveWeight <= 0 && !p.excluded_from_models.includes(x.modelId)) p.excluded_from_models.push(x.modelId);
    for (const r of x.reasons) if (!p.exclusion_reasons.includes(r)) p.exclusion_reasons.push(r);
  }
  return out;
}

/**
 * `GET /health/deep` of this gateway: every configured endpoint's breaker snapshot (`endpoints`,
 * and the same keyed by endpoint id with exclusions merged in: `providers`), the published models
 * no request could be admitted to now, route exclusions, the store's state, in-flight count and
 * a status — `unavailable` when some published model has routes of weight > 0 and none of them
 * admits a request (breaker refusing, or held out by an enforcing health check), `degraded` when
 * some breaker is open or half-open, an enforcing health check holds a route out, or the store is
 * down, `draining` during a drain. A route an operator zeroed never makes the verdict worse: that
 * is a decision, not a fault (seed 000). A `report_only` health check is listed under
 * `health_checks` and changes neither routing nor the verdict (seed 000: it only reports).
 * Liveness (`/health`) is separate.
 */
export function deepHealthView(ctx: ServerContext): DeepHealth {
  const g = ctx.gen;
  const now = g.now();
  // The wall clock is read here, at the edge, only to label monotonic times for a reader.
  const wallNowMs = Date.now();
  const endpoints: DeepEndpointHealth[] = [...g.routes.keys()].sort().map((id) => {
    const { openedAtMs, ...rest } = g.core.health.snapshotOf(id, now);
    return { ...rest, opened_at: wallClockIso(openedAtMs, now, wallNowMs), open_for_ms: openedAtMs === null ? null : Math.max(0, now - openedAtMs) };
  });
  const modelsUnavailable = g.core
    .allModels()
    .filter((m) => {
      if (!m.published || m.multiTarget) return false;
      const live = m.routes.filter((r) => r.effectiveWeight > 0);
      return live.length > 0 && live.every((r) => !g.core.health.allowRequest(r.endpointId, now) || g.core.healthChecks.excludes(r.endpointId));
    })
    .map((m) => m.id);
  const store = ctx.storeHealth();
  const sharedState = ctx.sharedStateHealth?.() ?? null;
  const modelOf = new Map<string, string>();
  for (const m of g.core.allModels()) if (!m.multiTarget) for (const r of m.routes) modelOf.set(r.endpointId, m.id);
  const checks: DeepHealthCheck[] = g.core.healthChecks.snapshot().map(({ lastCheckedAtMs, changedAtMs, ...c }) => ({
    ...c,
    model: modelOf.get(c.endpointId) ?? 'none',
    last_checked_at: wallClockIso(lastCheckedAtMs, now, wallNowMs),
    changed_at: wallClockIso(changedAtMs, now, wallNowMs),
  }));
  const degraded = endpoints.some((e) => e.state !== 'closed') || checks.some((c) => c.excluded) || store?.status === 'down' || sharedState?.status === 'down';
  const status = ctx.draining ? 'draining' : modelsUnavailable.length > 0 ? 'unavailable' : degraded ? 'degraded' : 'ok';
  const exclusions = g.core.routeExclusions();
  return {
    status,
    in_flight: ctx.inFlight,
    models_unavailable: modelsUnavailable,
    endpoints,
    providers: providersMap(endpoints, exclusions),
    route_exclusions: exclusions,
    health_checks: checks,
    ...(store && { store }),
    ...(sharedState && { shared_state: sharedState }),
  };
}
