/**
 * The body of `GET /status/models` on the admin listener (seed 003, "status of targets"): one row
 * per model. A direct model is `healthy`, `cooldown` (its opt-in cooldown is running, started by
 * a failure it had as a multi-target target) or `unhealthy` (no route in rotation admits a
 * request now: every breaker of its live routes is open, an enforcing background health check
 * holds every one out, or no route has weight > 0). A
 * multi-target model is `not_applicable` — its availability is its targets' — and lists its
 * targets with the core's per-target status (`RoutingCore.multiTargetStatus`).
 *
 * The core's clock is monotonic (`Generation.now`, ms); cooldown ends are turned into ISO wall
 * times with the wall clock read at the same moment, so `cooldown_until` is as exact as the two
 * clocks' agreement over the cooldown (milliseconds).
 */
import { HEALTH_CHECK_FAILED } from '../../core/index.ts';
import type { ServerContext } from './uws.ts';

/** One route of a direct model in `/status/models`. */
export interface StatusRoute {
  readonly endpoint_id: string;
  readonly effective_weight: number;
  /** The breaker's state: `closed`, `open` or `half_open`. */
  readonly breaker: string;
  /** `healthy`, `cooldown`, or `not_configured` (the model has no enabled `cooldown:` block). */
  readonly cooldown: string;
  /** The route's background health check (`mode`, `state`), or null when it has none. */
  readonly health_check: { readonly mode: string; readonly state: string } | null;
}

/** One target of a multi-target model in `/status/models`. */
export interface StatusTarget {
  readonly model: string;
  readonly endpoint_id: string;
  readonly priority: number;
  readonly weight: number;
  readonly status: 'healthy' | 'cooldown' | 'unhealthy';
  readonly status_reason: string | null;
  readonly cooldown_until: string | null;
  readonly breaker: string;
}

/** One row of `/status/models`. */
export interface ModelStatus {
  /** The model id (also `display_name`, the name the seed's examples select on). */
  readonly model: string;
  readonly display_name: string;
  readonly aliases: readonly string[];
  readonly kind: 'direct' | 'multi_target';
  readonly status: 'healthy' | 'cooldown' | 'unhealthy' | 'not_applicable';
  /**
   * Why the status is not `healthy`: the cooldown's trigger (`transport_error`, `timeout`,
   * `http_503`, …), `circuit_open` (every live route's breaker refuses), `health_check_failed`
   * (an enforcing health check holds every live route out) or `no_route_in_rotation` (every
   * route has weight 0); null when healthy or not applicable.
   */
  readonly status_reason: string | null;
  /** ISO 8601 end of the running cooldown (the latest over the model's routes); null when none. */
  readonly cooldown_until: string | null;
  /** Direct models: their routes. */
  readonly routes?: readonly StatusRoute[];
  /** Multi-target models: their targets. */
  readonly targets?: readonly StatusTarget[];
}

/**
 * Every model of the generation in force, in configuration order, as `/status/models` reports it.
 * @param wallNowMs the wall clock (Unix ms) read together with the generation's monotonic clock.
 */
export function modelStatusView(ctx: ServerContext, wallNowMs: number): ModelStatus[] {
  const g = ctx.gen;
  const now = g.now();
  const iso = (monoMs: number | null): string | null => (monoMs === null ? null : new Date(wallNowMs + (monoMs - now)).toISOString());
  const multi = new Map(g.core.multiTargetStatus(now).map((s) => [s.modelId, s]));
  return g.core.allModels().map((m): ModelStatus => {
    const base = { model: m.id, display_name: m.id, aliases: m.aliases };
    const mt = multi.get(m.id);
    if (mt) {
      return {
        ...base,
        kind: 'multi_target',
        status: 'not_applicable',
        status_reason: null,
        cooldown_until: null,
        targets: mt.targets.map((t) => ({
          model: t.model,
          endpoint_id: t.endpointId,
          priority: t.priority,
          weight: t.weight,
          status: t.status,
          status_reason: t.statusReason,
          cooldown_until: iso(t.cooldownUntilMs),
          breaker: t.breaker,
        })),
      };
    }
    const rows = m.routes.map((r) => ({ r, breaker: g.core.health.snapshotOf(r.endpointId, now).state, cd: g.core.cooldowns.status(r.endpointId, now), hc: g.core.healthChecks.status(r.endpointId) }));
    const cooling = rows.filter((x) => x.cd.state === 'cooldown');
    const untilMs = cooling.reduce<number | null>((u, x) => (x.cd.untilMs !== null && (u === null || x.cd.untilMs > u) ? x.cd.untilMs : u), null);
    const live = rows.filter((x) => x.r.effectiveWeight > 0);
    const unhealthy =
      live.length === 0
        ? 'no_route_in_rotation'
        : live.every((x) => x.hc?.excluded === true)
          ? HEALTH_CHECK_FAILED
          : live.every((x) => !g.core.health.allowRequest(x.r.endpointId, now) || x.hc?.excluded === true)
            ? 'circuit_open'
            : null;
    return {
      ...base,
      kind: 'direct',
      // A refusing breaker is the stronger claim: even a direct request cannot be served.
      status: unhealthy ? 'unhealthy' : cooling.length > 0 ? 'cooldown' : 'healthy',
      status_reason: unhealthy ?? cooling[0]?.cd.reason ?? null,
      cooldown_until: iso(untilMs),
      routes: rows.map((x) => ({ endpoint_id: x.r.endpointId, effective_weight: x.r.effectiveWeight, breaker: x.breaker, cooldown: x.cd.state, health_check: x.hc && { mode: x.hc.mode, state: x.hc.state } })),
    };
  });
}
