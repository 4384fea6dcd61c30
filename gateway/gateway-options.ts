/**
 * What `startGateway` (gateway.ts) takes and gives back: its options, and the handle of a
 * listening gateway (addresses, the core in force, reload, drain, close, the worker snapshot).
 */
import type { SpanExporter } from '@opentelemetry/sdk-trace-base';
import type { Logger } from 'pino';
import type { RoutingCore } from '../core/index.ts';
import type { GatewayConfig } from './config/load.ts';
import type { GatewayMetrics } from './metrics.ts';
import type { RequestLog } from './request-log/request-log.ts';
import type { PeerAnswer, WorkerSnapshot } from './server/worker-aggregate.ts';
import type { UpstreamPools } from './upstream/pools.ts';
import type { RefusedAuditOptions } from './admin/refused-audit.ts';
import type { QuotaFetcherRegistry } from './routewise/quota-fetchers.ts';
import type { QuotaSourceState } from './routewise/quota-poller.ts';
import type { WarmStartResult } from './routewise/warm-start.ts';

/** Options of `startGateway`. */
export interface GatewayOptions {
  /** A validated configuration (`loadGatewayConfig` / `buildGatewayConfig`). */
  config: GatewayConfig;
  /** Overrides `server.host`. */
  host?: string;
  /** Overrides `server.port`; 0 picks a free port. */
  port?: number;
  /**
   * Port of the admin listener (0 picks one); null or absent ⇒ no admin listener. The CLI passes
   * `server.admin_port`; library callers (tests) opt in, so they never collide on 8081.
   */
  adminPort?: number | null;
  /** Overrides `server.admin_host`. */
  adminHost?: string;
  /** Overrides `server.seed`. */
  seed?: number;
  /** Logger; default pino at `server.log_level` on stdout. */
  logger?: Logger;
  /** Worker index, for the routing streams' names (default 0). */
  worker?: number;
  /**
   * Listen on the public port with SO_REUSEPORT so several worker threads of one process share
   * it (`--workers N`; the main thread first checks the port is free with `assertPortFree`).
   * Default false: the port is bound exclusively, so a port already in use (by another gateway,
   * even one that shares its own port) makes `startGateway` throw. The admin listener is always
   * exclusive.
   */
  sharedPort?: boolean;
  /**
   * RouteWise prober tick, ms (> 0); default a tenth of the smallest `probe_interval_sec` of the
   * probing models, within 10 ms … 30 s. Tests shorten it.
   */
  probeTickMs?: number;
  /** Bound on one RouteWise probe, ms (> 0); default 60 s. */
  probeTimeoutMs?: number;
  /** RouteWise quota-source poll period, ms (> 0); default 60 s. Tests shorten it. */
  quotaPollMs?: number;
  /** Bound on one quota fetch, ms (> 0); default 10 s. */
  quotaFetchTimeoutMs?: number;
  /** The quota fetchers to poll; default the process's registry (`registerQuotaFetcher`). */
  quotaFetchers?: QuotaFetcherRegistry;
  /** Most request-log rows RouteWise's warm start reads (> 0); default 200,000. */
  warmStartMaxRows?: number;
  /** The refused-admin-call audit bound (`admin/refused-audit.ts`); tests shorten its window. */
  refusedAudit?: Partial<RefusedAuditOptions>;
  /**
   * A worker of a multi-worker gateway: asks the other workers for their `snapshot()` (one
   * answer per worker, a missing one as `{worker, error}`), so that `/metrics` and `/health/deep`
   * cover every worker (gateway/server/worker-aggregate.ts). Absent: this gateway's own only.
   */
  peers?: () => Promise<PeerAnswer[]>;
  /**
   * Where spans go when `tracing.enabled` is set, instead of OTLP/HTTP to `tracing.endpoint`
   * (tests pass an `InMemorySpanExporter`). Ignored when tracing is off.
   */
  traceExporter?: SpanExporter;
}

/** The RouteWise prober of a gateway, as `RunningGateway.probes()` reports it. */
export interface ProbeStatus {
  /** Whether the current generation's prober is ticking (some routewise model has `probe_enabled`). */
  active: boolean;
  /** Its tick period, ms, or null when inactive. */
  tickMs: number | null;
  /** Probes started since the gateway started (all generations). */
  sent: number;
  /** Probes running now. */
  inFlight: number;
  /** The most probes ever running at once. */
  maxInFlight: number;
}

/** A listening gateway. */
export interface RunningGateway {
  readonly host: string;
  readonly port: number;
  /** `http://host:port` (the OpenAI base URL is this + `/v1`). */
  readonly url: string;
  /** `http://admin_host:admin_port`, or null without an admin listener. */
  readonly adminUrl: string | null;
  readonly seed: number;
  /** The current generation's core (changes on reload). */
  readonly core: RoutingCore;
  readonly metrics: GatewayMetrics;
  /** The request log, or null when `request_log.path` is null. */
  readonly requestLog: RequestLog | null;
  /**
   * The endpoint id that served request `requestId` (its `x-request-id`) on this gateway, among
   * the last few thousand it finished; null when it ended without an upstream answer serving it.
   * Waits for a request not yet over. Clients are not told the endpoint (`x-switchyard-served-by`
   * names a multi-target alias's direct model only); tests and debugging ask here. This worker's
   * requests only.
   */
  servedEndpoint(requestId: string): Promise<string | null>;
  /** Shared units (Redis quota, concurrency and rate-limit takes) held by attempts now; 0 without shared state. */
  sharedUnitsLive(): number;
  /** Requests admitted and not yet over. */
  inFlight(): number;
  /** The RouteWise prober's state and counters (probes are not counted in `inFlight`). */
  probes(): ProbeStatus;
  /** RouteWise quota-source routes at the last poll: resolved or not, and why not. */
  quotaSources(): readonly QuotaSourceState[];
  /** Polls the quota fetchers now (what the timer does), resolving once applied. */
  pollQuotas(): Promise<void>;
  /** What RouteWise's warm start replayed at start, per model (empty without a request log). */
  readonly warmStart: readonly WarmStartResult[];
  /** Exports the spans ended so far (nothing to do when tracing is off). */
  flushTraces(): Promise<void>;
  /** Upstream pools: per origin, open connections, running and queued requests (empty after close). */
  upstreamStats(): ReturnType<UpstreamPools['stats']>;
  /**
   * Swaps in a new configuration (and restarts the RouteWise prober on it). Returns the settings
   * that differ from what this process runs with (its start configuration) and need a restart.
   * @throws Error (the core's message, or the worker-scope refusal) when it is rejected; the old
   *   one stays, prober included.
   */
  reload(config: GatewayConfig): string[];
  /**
   * Records a reload refused before it reached `reload` (the files did not load: `ConfigError`'s
   * problems, one line each), for `GET /status/config` and the reload counter. The generation in
   * force is unchanged.
   */
  reloadRejected(problems: readonly string[]): void;
  /**
   * Stops accepting (listeners closed; requests on open connections get 503 `draining`), waits
   * for in-flight requests up to `graceMs`, cuts the ones left (`Exchange.cutForDrain`: an
   * in-band `draining` error on a committed stream, else 503), then closes. Returns how many
   * were in flight when the grace ran out.
   */
  drain(graceMs: number): Promise<{ cut: number }>;
  /** Stops listening, drops open connections and upstream pools, closes the request log. */
  close(): Promise<void>;
  /** This gateway's own metrics (prom-client JSON) and `/health/deep`, for another worker to merge. */
  snapshot(): Promise<WorkerSnapshot>;
}
