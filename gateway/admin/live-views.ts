/**
 * Live reads of the routing state for the operator's console (seed 000, "endpoint health and
 * circuit breaking", "outbound concurrency", RouteWise):
 *
 * - `GET /admin/health/endpoints`: one row per configured endpoint — breaker state, availability
 *   EWMA, consecutive failures, probe in flight, attempts in flight, the requests it has served
 *   so far (`requests_served`, this process: a poller's difference of two samples is the traffic
 *   between them), cooldown, the outbound pool its provider key shares (limit,
 *   held, waiting) and its engine hold (limit, held, waiting) — plus the prober's counters. `at_unix_ms` stamps the sample, so a poller can draw a history.
 * - `GET /admin/health/history`: the same rows sampled every {@link HISTORY_INTERVAL_MS} ms by
 *   the gateway itself (a timer started with the gateway), the last {@link HISTORY_SAMPLES}
 *   samples, as one array per endpoint and field aligned with `at_unix_ms` (null where the
 *   endpoint did not exist at that sample) — so a console opened now shows the recent past.
 * - `GET /admin/routewise/profiles`: for every model on the `routewise` router, each route's
 *   learnt time-to-first-token profile over its rolling window — counts of successes, failures
 *   and censored attempts, the mean T̄ the planner minimises (null while empty), when it was last
 *   observed, and the profile's CDF at (up to {@link PROFILE_CDF_POINTS}) of its own query points,
 *   where it is exact (the SLO alone when hedging is off; the hedge checkpoints when it is on).
 *
 * Both are read-only views of the generation in force; the core's clock is monotonic, so times
 * are reported as ages (ms before the sample) rather than as the core's own numbers.
 */
import { RouteWisePlanner, type RoutingCore } from '../../core/index.ts';
import type { AdminAnswer, AdminCall } from './admin-api.ts';

/** How often the gateway samples the endpoints for `GET /admin/health/history`, ms. */
export const HISTORY_INTERVAL_MS = 2000;
/** Samples kept (5 minutes at {@link HISTORY_INTERVAL_MS}). */
export const HISTORY_SAMPLES = 150;

/** One endpoint's series in `GET /admin/health/history`, aligned with its `at_unix_ms`. */
export interface EndpointSeries {
  breaker: Array<string | null>;
  availability: Array<number | null>;
  claims_in_flight: Array<number | null>;
  requests_served: Array<number | null>;
  /** Attempts waiting for an outbound slot or an engine place. */
  waiting: Array<number | null>;
}

/** A bounded ring of endpoint samples (oldest dropped first). */
export class HealthHistory {
  private readonly samples: Array<{ atUnixMs: number; rows: ReadonlyMap<string, EndpointLive> }> = [];

  /** @throws RangeError when `capacity` is not a positive integer. */
  constructor(readonly capacity: number = HISTORY_SAMPLES) {
    if (!Number.isInteger(capacity) || capacity < 1) throw new RangeError(`history capacity must be a positive integer, got ${capacity}`);
  }

  /** Appends one sample (the rows of `endpointsView`). */
  record(atUnixMs: number, rows: readonly EndpointLive[]): void {
    this.samples.push({ atUnixMs, rows: new Map(rows.map((r) => [r.endpoint_id, r])) });
    if (this.samples.length > this.capacity) this.samples.splice(0, this.samples.length - this.capacity);
  }

  /** Body of `GET /admin/health/history`. */
  view(intervalMs: number): { interval_ms: number; at_unix_ms: number[]; endpoints: Record<string, EndpointSeries> } {
    const ids = new Set<string>();
    for (const s of this.samples) for (const id of s.rows.keys()) ids.add(id);
    const endpoints: Record<string, EndpointSeries> = {};
    for (const id of [...ids].sort()) {
      const rows = this.samples.map((s) => s.rows.get(id));
      endpoints[id] = {
        breaker: rows.map((r) => r?.breaker ?? null),
        availability: rows.map((r) => r?.availability ?? null),
        claims_in_flight: rows.map((r) => r?.claims_in_flight ?? null),
        requests_served: rows.map((r) => r?.requests_served ?? null),
        waiting: rows.map((r) => (r ? (r.outbound?.waiting ?? 0) + (r.hold?.waiting ?? 0) : null)),
      };
    }
    return { interval_ms: intervalMs, at_unix_ms: this.samples.map((s) => s.atUnixMs), endpoints };
  }
}

/** What the views read. */
export interface LiveViewDeps {
  /** The current generation's core. */
  core(): RoutingCore;
  /** The core's clock, ms (monotonic; `Generation.now`). */
  nowMs(): number;
  /** Wall clock, Unix ms. */
  nowUnixMs(): number;
  /** Requests answered so far per serving endpoint id (absent: none counted). */
  requestsByEndpoint?(): ReadonlyMap<string, number>;
  /** The prober's state and counters (absent: no prober). */
  probes?(): Record<string, unknown>;
  /** The sampled history (absent: `GET /admin/health/history` is a 404). */
  history?: HealthHistory;
}

/** Most CDF points reported per profile (spread evenly over its query grid). */
export const PROFILE_CDF_POINTS = 8;

/** One row of `GET /admin/health/endpoints`. */
export interface EndpointLive {
  endpoint_id: string;
  /** Models that route to it. */
  models: string[];
  provider: string;
  /** `closed`, `open` or `half_open`. */
  breaker: string;
  /** Availability EWMA in [0, 1]. */
  availability: number;
  consecutive_failures: number;
  /** How long the breaker has been open, ms (null when closed). */
  open_for_ms: number | null;
  probe_in_flight: boolean;
  claims_in_flight: number;
  /** Requests this endpoint has answered since the process started (any status; as `switchyard_requests_total`). */
  requests_served: number;
  /** `healthy`, `cooldown` or `not_configured`, with the reason and the time left (ms). */
  cooldown: { state: string; reason: string | null; remaining_ms: number | null };
  /** The outbound pool of the route's provider key (null: exempt, e.g. a loopback server). */
  outbound: { key: string; limit: number; held: number; waiting: number } | null;
  /** The engine hold (null: no hold configured, or none used yet). */
  hold: { limit: number; held: number; waiting: number } | null;
  /**
   * The background health check (`health_check:` on the route; null when it has none): `mode`
   * (`report_only` only reports, `enforce` holds the route out while unhealthy), `state`,
   * `excluded` (held out of selection now), the current runs, the last failure's reason and
   * the time since the last probe, ms.
   */
  health_check: {
    mode: string;
    state: string;
    excluded: boolean;
    consecutive_failures: number;
    consecutive_passes: number;
    last_failure_reason: string | null;
    last_checked_age_ms: number | null;
  } | null;
}

/**
 * The live-view routes, for `AdminDeps.extraRoutes`: an answer for the GETs above, null for any
 * other call.
 */
export function liveViews(d: LiveViewDeps): (call: AdminCall) => Promise<AdminAnswer> | null {
  return (call) => {
    if (call.method !== 'GET') return null;
    if (call.path === '/admin/health/endpoints') return Promise.resolve({ status: 200, body: endpointsView(d) });
    if (call.path === '/admin/health/history' && d.history) return Promise.resolve({ status: 200, body: d.history.view(HISTORY_INTERVAL_MS) });
    if (call.path === '/admin/routewise/profiles') return Promise.resolve({ status: 200, body: profilesView(d) });
    return null;
  };
}

/**
 * Starts sampling `endpointsView(d)` into `d.history` every {@link HISTORY_INTERVAL_MS} ms (one
 * sample now); the timer does not keep the process alive. Returns the function that stops it.
 */
export function startHealthSampling(d: LiveViewDeps & { history: HealthHistory }): () => void {
  const sample = (): void => {
    const v = endpointsView(d);
    d.history.record(v.at_unix_ms, v.endpoints);
  };
  sample();
  const timer = setInterval(sample, HISTORY_INTERVAL_MS);
  timer.unref();
  return () => clearInterval(timer);
}

/** Body of `GET /admin/health/endpoints`. */
export function endpointsView(d: LiveViewDeps): { at_unix_ms: number; endpoints: EndpointLive[]; probes: Record<string, unknown> | null } {
  const core = d.core();
  const now = d.nowMs();
  const pools = new Map(core.limiter.snapshot().map((p) => [p.key, p]));
  const holds = new Map(core.hold.snapshot().map((p) => [p.endpointId, p]));
  const served = d.requestsByEndpoint?.() ?? new Map<string, number>();
  const byEndpoint = new Map<string, { models: string[]; provider: string; outboundKey: string | null }>();
  for (const m of core.allModels()) {
    if (m.multiTarget) continue;
    for (const r of m.routes) {
      const e = byEndpoint.get(r.endpointId) ?? byEndpoint.set(r.endpointId, { models: [], provider: r.provider, outboundKey: r.outboundKey }).get(r.endpointId)!;
      if (!e.models.includes(m.id)) e.models.push(m.id);
    }
  }
  const endpoints = [...byEndpoint.keys()].sort().map((id): EndpointLive => {
    const e = byEndpoint.get(id)!;
    const h = core.health.snapshotOf(id, now);
    const cd = core.cooldowns.status(id, now);
    const pool = e.outboundKey === null ? undefined : pools.get(e.outboundKey);
    const hold = holds.get(id);
    const hc = core.healthChecks.status(id);
    return {
      endpoint_id: id,
      models: e.models,
      provider: e.provider,
      breaker: h.state,
      availability: h.availability,
      consecutive_failures: h.consecutiveFailures,
      open_for_ms: h.openedAtMs === null ? null : Math.max(0, now - h.openedAtMs),
      probe_in_flight: h.probeInFlight,
      claims_in_flight: h.claimsInFlight,
      requests_served: served.get(id) ?? 0,
      cooldown: { state: cd.state, reason: cd.reason, remaining_ms: cd.untilMs === null ? null : Math.max(0, cd.untilMs - now) },
      outbound: e.outboundKey === null ? null : { key: e.outboundKey, limit: pool?.limit ?? 0, held: pool?.held ?? 0, waiting: pool?.waiting ?? 0 },
      hold: hold ? { limit: hold.limit, held: hold.held, waiting: hold.waiting } : null,
      health_check: hc
        ? {
            mode: hc.mode,
            state: hc.state,
            excluded: hc.excluded,
            consecutive_failures: hc.consecutiveFailures,
            consecutive_passes: hc.consecutivePasses,
            last_failure_reason: hc.lastFailureReason,
            last_checked_age_ms: hc.lastCheckedAtMs === null ? null : Math.max(0, now - hc.lastCheckedAtMs),
          }
        : null,
    };
  });
  return { at_unix_ms: d.nowUnixMs(), endpoints, probes: d.probes?.() ?? null };
}

/** Body of `GET /admin/routewise/profiles`. */
export function profilesView(d: LiveViewDeps): { at_unix_ms: number; models: Array<Record<string, unknown>> } {
  const core = d.core();
  const now = d.nowMs();
  const models: Array<Record<string, unknown>> = [];
  for (const m of core.allModels()) {
    if (!(m.planner instanceof RouteWisePlanner)) continue;
    const planner = m.planner;
    models.push({
      model_id: m.id,
      routes: m.routes.map((r) => {
        const p = planner.profile(r.endpointId);
        if (!p) return { endpoint_id: r.endpointId, profiled: false };
        const counts = p.counts(now);
        const last = p.lastObservedMs;
        return {
          endpoint_id: r.endpointId,
          successes: counts.successes,
          failures: counts.failures,
          censored: counts.censored,
          mean_ttft_ms: p.meanMs(now),
          last_observed_age_ms: !Number.isFinite(last) ? null : Math.max(0, now - last),
          cdf: gridSample(p.gridMs).map((x) => ({ ttft_ms: x, probability: p.cdf(x, now) })),
        };
      }),
    });
  }
  return { at_unix_ms: d.nowUnixMs(), models };
}

/** At most {@link PROFILE_CDF_POINTS} points of `grid`, evenly spread, the last one included. */
function gridSample(grid: ArrayLike<number>): number[] {
  const n = grid.length;
  if (n <= PROFILE_CDF_POINTS) return Array.from(grid);
  return Array.from({ length: PROFILE_CDF_POINTS }, (_, i) => grid[Math.round(((i + 1) * (n - 1)) / PROFILE_CDF_POINTS)]!);
}
