/**
 * One operational view of a `--workers N` gateway. Each worker thread is a whole gateway with its
 * own metrics, breakers and in-flight count; the worker serving `/metrics` or `/health/deep`
 * (worker 0's admin listener, or any worker for an admin key on the public port) asks the other
 * workers for a `WorkerSnapshot` and merges them with its own:
 *
 * - `/metrics`: prom-client's `AggregatorRegistry.aggregate` over every worker's
 *   `getMetricsAsJSON()` — counters, histograms and most gauges are summed per label set; a
 *   gauge may name another aggregator (`switchyard_breaker_state`: `max`, the worst worker's;
 *   `switchyard_endpoint_availability`: `min`).
 * - `/health/deep`: the worst status, the summed in-flight count, the union of unavailable
 *   models, per endpoint the snapshot of the worker whose breaker is furthest from closed (ties:
 *   the lower availability), the shared-state connections as one (`down` when any worker's is),
 *   and one line per worker.
 *
 * A worker that does not answer is never left out silently: `/health/deep` lists it under
 * `workers_missing` (status at least `degraded`) and `/metrics` says so in a comment line and in
 * `switchyard_workers_missing`.
 */
import { AggregatorRegistry, type MetricObjectWithValues, type MetricValue } from 'prom-client';
import type { SharedStateHealth } from '../state/shared-state.ts';
import type { RouteExclusion } from '../../core/index.ts';
import { providersMap, type DeepEndpointHealth, type DeepHealthCheck, type ProviderHealth } from './operational-views.ts';

/** The store's state as `/health/deep` reports it. */
export interface StoreHealth {
  kind: 'pglite' | 'postgres';
  status: 'ok' | 'down';
  /** The last check's error when down. */
  error: string | null;
  schema_version: number;
}

/** Body of `GET /health/deep` for one worker (and, merged, for all). */
export interface DeepHealth {
  /** `ok`, `degraded` (some breaker not closed, or a worker missing), `unavailable` (a published model has no admissible route), `draining`. */
  status: 'ok' | 'degraded' | 'unavailable' | 'draining';
  in_flight: number;
  models_unavailable: string[];
  /** Every configured endpoint's breaker (times as wall-clock ISO strings and ages in ms). */
  endpoints: DeepEndpointHealth[];
  route_exclusions: RouteExclusion[];
  /** `endpoints` keyed by endpoint id, each with `excluded_from_models` and `exclusion_reasons` merged in. */
  providers: Record<string, ProviderHealth>;
  /**
   * Background health checks (`health_check:`), one per checked route in configuration order:
   * the core's `HealthCheckStatus` plus the route's model. `report_only` ones never change
   * routing; an `enforce` one reading unhealthy (`excluded: true`) holds its route out.
   */
  health_checks: DeepHealthCheck[];
  /** The store (absent without `store:`): `ok`, or `down` with the error of the last check. */
  store?: StoreHealth;
  /** The shared routing state (absent with `state: {backend: local}`): `up`, or `down` while serving on local state. */
  shared_state?: SharedStateHealth;
  /** Multi-worker only: each worker's own status and in-flight count, by worker index. */
  workers?: Array<{ worker: number; status: DeepHealth['status']; in_flight: number; shared_state?: SharedStateHealth['status'] }>;
  /** Multi-worker only: workers that did not answer in time (their numbers are missing). */
  workers_missing?: number[];
}

/** What one worker reports to the others (structured-clone safe). */
export interface WorkerSnapshot {
  worker: number;
  /** `registry.getMetricsAsJSON()` of that worker. */
  metrics: Array<MetricObjectWithValues<MetricValue<string>>>;
  deep: DeepHealth;
}

/** A peer's answer: its snapshot, or the worker index and why there is none. */
export type PeerAnswer = WorkerSnapshot | { worker: number; error: string };

const STATUS_RANK: Record<DeepHealth['status'], number> = { ok: 0, degraded: 1, unavailable: 2, draining: 3 };
const BREAKER_RANK: Record<string, number> = { closed: 0, half_open: 1, open: 2 };

function isSnapshot(a: PeerAnswer): a is WorkerSnapshot {
  return !('error' in a);
}

/**
 * The Prometheus text of all workers' metrics merged (see the module comment).
 * @param answers every worker's answer, the asking worker's own snapshot included.
 */
export async function aggregateMetricsText(answers: readonly PeerAnswer[]): Promise<string> {
  const snapshots = answers.filter(isSnapshot);
  const missing = answers.filter((a) => !isSnapshot(a)).map((a) => a.worker);
  const text = await AggregatorRegistry.aggregate(snapshots.map((s) => s.metrics)).metrics();
  const head =
    missing.length > 0 ? `# switchyard: worker(s) ${missing.join(', ')} did not answer; their counts are missing from this scrape (${answers.filter((a) => !isSnapshot(a)).map((a) => (a as { error: string }).error).join('; ')})\n` : '';
  const gauge = `# HELP switchyard_workers_missing Worker threads whose metrics are missing from this scrape (did not answer in time)\n# TYPE switchyard_workers_missing gauge\nswitchyard_workers_missing ${missing.length}\n`;
  return `${head}${text}${text.endsWith('\n') ? '' : '\n'}${gauge}`;
}

/**
 * All workers' `/health/deep` merged (see the module comment).
 * @param answers every worker's answer, the asking worker's own snapshot included.
 */
export function mergeDeepHealth(answers: readonly PeerAnswer[]): DeepHealth {
  const snapshots = answers.filter(isSnapshot).sort((a, b) => a.worker - b.worker);
  const missing = answers.filter((a) => !isSnapshot(a)).map((a) => a.worker).sort((a, b) => a - b);
  const worst = new Map<string, DeepEndpointHealth>();
  for (const s of snapshots) {
    for (const e of s.deep.endpoints) {
      const cur = worst.get(e.endpointId);
      const rank = (x: DeepEndpointHealth) => BREAKER_RANK[x.state] ?? 0;
      if (!cur || rank(e) > rank(cur) || (rank(e) === rank(cur) && e.availability < cur.availability)) worst.set(e.endpointId, e);
    }
  }
  let status: DeepHealth['status'] = missing.length > 0 ? 'degraded' : 'ok';
  for (const s of snapshots) if (STATUS_RANK[s.deep.status] > STATUS_RANK[status]) status = s.deep.status;
  return {
    status,
    in_flight: snapshots.reduce((n, s) => n + s.deep.in_flight, 0),
    models_unavailable: [...new Set(snapshots.flatMap((s) => s.deep.models_unavailable))].sort(),
    endpoints: [...worst.values()].sort((a, b) => a.endpointId.localeCompare(b.endpointId)),
    // The configuration is the same in every worker, so are its exclusions.
    route_exclusions: snapshots[0]?.deep.route_exclusions ?? [],
    providers: providersMap([...worst.values()], snapshots[0]?.deep.route_exclusions ?? []),
    health_checks: worstHealthChecks(snapshots),
    ...(snapshots[0]?.deep.store && { store: snapshots[0].deep.store }),
    ...mergedSharedState(snapshots),
    workers: snapshots.map((s) => ({ worker: s.worker, status: s.deep.status, in_flight: s.deep.in_flight, ...(s.deep.shared_state && { shared_state: s.deep.shared_state.status }) })),
    workers_missing: missing,
  };
}

/**
 * Every worker's shared-state connection as one (each worker holds its own): `down` when any is,
 * the oldest mirror, the first down worker's error, and outages, fallbacks and failed writes summed.
 * Absent when no worker shares state.
 */
function mergedSharedState(snapshots: readonly WorkerSnapshot[]): { shared_state?: SharedStateHealth } {
  const all = snapshots.map((s) => s.deep.shared_state).filter((x): x is SharedStateHealth => x !== undefined);
  if (all.length === 0) return {};
  const down = all.find((x) => x.status === 'down');
  const ages = all.map((x) => x.mirrorAgeMs);
  return {
    shared_state: {
      backend: 'redis',
      status: down ? 'down' : 'up',
      maxStalenessMs: all[0]!.maxStalenessMs,
      mirrorAgeMs: ages.includes(null) ? null : Math.max(...(ages as number[])),
      lastError: down?.lastError ?? '',
      outages: all.reduce((n, x) => n + x.outages, 0),
      fallbacks: all.reduce((n, x) => n + x.fallbacks, 0),
      failedWrites: all.reduce((n, x) => n + x.failedWrites, 0),
    },
  };
}

/** Each checked endpoint once, in the first worker's order: the worst worker's view (unhealthy over healthy, then most failures). */
function worstHealthChecks(snapshots: readonly WorkerSnapshot[]): DeepHealth['health_checks'] {
  const worst = new Map<string, DeepHealth['health_checks'][number]>();
  for (const s of snapshots) {
    for (const c of s.deep.health_checks ?? []) {
      const cur = worst.get(c.endpointId);
      const rank = (x: typeof c) => (x.state === 'unhealthy' ? 1 : 0);
      if (!cur || rank(c) > rank(cur) || (rank(c) === rank(cur) && c.consecutiveFailures > cur.consecutiveFailures)) worst.set(c.endpointId, c);
    }
  }
  return [...worst.values()];
}
