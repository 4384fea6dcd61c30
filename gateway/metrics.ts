/**
 * The gateway's Prometheus metrics (prom-client), one registry per gateway so that several
 * gateways in one process (tests) do not share counters. A finished request (`observeRequest`)
 * adds plain numbers: a count per label tuple (`RequestSeries`) and bucket counts per TTFT and
 * E2E label set (`LatencyCounts`); prom-client reads them at scrape time, as it reads the gauges that mirror core state
 * (breakers, availability, dispatch claims, outbound queue and engine-hold depths) and the request
 * log's counters. prom-client's own `inc`/`observe` hash the label object and validate it on every
 * call, even on memoised children: about 4–5 µs per request against 0.5–0.7 µs for the series
 * (`bench/metrics.bench.ts`); a scrape is rare and may pay instead.
 *
 * Names follow Prometheus conventions: `switchyard_` prefix, base units (seconds), `_total` on
 * counters. Latency buckets (seconds) span 5 ms … 120 s: LLM TTFTs run from tens of ms (small
 * prompts, warm caches) to tens of seconds (long prompts behind a queue).
 */
import { readdirSync } from 'node:fs';
import { Counter, Gauge, Histogram, Registry, type Metric } from 'prom-client';
import { bodiesWatched } from './server/body-read-watch.ts';
import type { RoutingCore } from '../core/index.ts';
import type { RequestLog } from './request-log/request-log.ts';

/**
 * The `model` label of a request that names no configured model: its body had no usable
 * `model` (bad JSON, a missing or non-string field), it was refused before its body was read
 * (401, 413, 503), or its name resolves to no model. One value for all of them keeps the label
 * bounded by the configuration, whatever names clients send.
 */
export const NO_MODEL_LABEL = 'none';

const LATENCY_BUCKETS_SEC = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];
const BREAKER_VALUE: Record<string, number> = { closed: 0, half_open: 1, open: 2 };

/** What one finished request reports. */
export interface RequestObservation {
  /** Canonical model id, or `none` when the name the client wrote resolves to no model. */
  model: string;
  /** Serving endpoint id, or `none`. */
  endpoint: string;
  /** HTTP status sent to the client (499: client gone). */
  httpStatus: number;
  stream: boolean;
  /** Seconds to first token, null when none. */
  ttftSec: number | null;
  e2eSec: number;
  fallback: boolean;
  /** Offload reason when the offload route was tried, else null. */
  offloadReason: string | null;
  /** The request's endpoint family (`chat`, `messages`, `responses`, …); absent: not counted by family. */
  api?: string;
}

/**
 * What one RouteWise probe reports (gateway/routewise/prober.ts). Probes are not client
 * requests: they are counted in `switchyard_probes_total` / `switchyard_probe_ttft_seconds`,
 * never in `switchyard_requests_total` or the client TTFT histogram.
 */
export interface ProbeObservation {
  /** Model id whose planner asked for the probe. */
  model: string;
  /** Endpoint id probed. */
  endpoint: string;
  /** `ok` (first token seen), `failed` (error before the first token), `timeout` (the driver gave up). */
  result: 'ok' | 'failed' | 'timeout';
  /** Seconds to first token, null unless `ok`. */
  ttftSec: number | null;
}

/** Where the scrape-time gauges read from (swapped on reload). */
export interface MetricsSources {
  core(): RoutingCore;
  inFlight(): number;
  nowMs(): number;
  requestLog(): RequestLog | null;
  /** Upstream pool stats per origin. */
  upstreams(): Array<{ origin: string; connected: number; running: number; pending: number }>;
  /** RouteWise quota-source routes at the last poll (routewise/quota-poller.ts); absent: none. */
  quotaSources?(): ReadonlyArray<{ model: string; route: string; resolved: boolean }>;
}

/** The `le` label of each bucket line, `+Inf` last (shared by every histogram line). */
const LE_LABELS: ReadonlyArray<Readonly<Record<string, string | number>>> = [...LATENCY_BUCKETS_SEC.map((le) => ({ le })), { le: '+Inf' }];
const NO_LABELS: Readonly<Record<string, string>> = {};

/** Latency observations of one exposed label set: per-bucket counts (not cumulative) over `LATENCY_BUCKETS_SEC` plus an overflow slot, and their sum, seconds. */
class LatencyCounts {
  readonly counts = new Float64Array(LATENCY_BUCKETS_SEC.length + 1);
  sumSec = 0;
  constructor(readonly labels: Readonly<Record<string, string>>) {}

  observe(sec: number): void {
    let i = 0;
    while (i < LATENCY_BUCKETS_SEC.length && sec > LATENCY_BUCKETS_SEC[i]!) i++;
    this.counts[i]!++;
    this.sumSec += sec;
  }
}

/**
 * A latency histogram kept as `LatencyCounts` per label set and written at scrape time as
 * cumulative `_bucket{le}` lines, `_sum` and `_count`, the layout of prom-client's own
 * Histogram. prom-client's registry reads a metric through `name`, `help`, `type`,
 * `getForPromString()` or `get()` (and `reset()` from `resetMetrics`), so this class stands in
 * for a `Histogram` (hence `asMetric`).
 */
class LatencyHistogram {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  private readonly sets = new Map<string, LatencyCounts>();
  constructor(
    readonly name: string,
    readonly help: string,
  ) {}

  /** The counts of one label set (`key`: the label values joined), created on first use. */
  countsFor(key: string, labels: Record<string, string>): LatencyCounts {
    let c = this.sets.get(key);
    if (c === undefined) this.sets.set(key, (c = new LatencyCounts(labels)));
    return c;
  }

  /**
   * The samples in prom-client's histogram layout: `le` (or nothing) as `labels`, the label set
   * as `sharedLabels`, the same object on each of the set's lines, so the registry formats and
   * escapes it once per set (it caches by object) rather than once per line.
   */
  getForPromString() {
    const values: Array<{ labels: Record<string, string | number>; sharedLabels: Readonly<Record<string, string>>; value: number; metricName: string }> = [];
    const bucket = `${this.name}_bucket`;
    for (const { labels, counts, sumSec } of this.sets.values()) {
      if (counts.every((n) => n === 0)) continue; // nothing observed yet (e.g. only refusals): no lines, as prom-client
      let total = 0;
      for (let i = 0; i < counts.length; i++) {
        total += counts[i]!;
        values.push({ labels: LE_LABELS[i]!, sharedLabels: labels, value: total, metricName: bucket });
      }
      values.push({ labels: NO_LABELS, sharedLabels: labels, value: sumSec, metricName: `${this.name}_sum` });
      values.push({ labels: NO_LABELS, sharedLabels: labels, value: total, metricName: `${this.name}_count` });
    }
    return { name: this.name, help: this.help, type: 'histogram' as const, values, aggregator: 'sum' as const };
  }

  /** The samples with each line's labels whole (prom-client's `get()`, used by `getMetricsAsJSON`). */
  get() {
    const m = this.getForPromString();
    return { ...m, values: m.values.map(({ labels, sharedLabels, value, metricName }) => ({ labels: { ...labels, ...sharedLabels }, value, metricName })) };
  }

  /**
   * Zeroes the latency counts (prom-client's `resetMetrics`). Request counts are kept:
   * `switchyard_requests_total` is rebuilt from the series at every scrape.
   */
  reset(): void {
    for (const c of this.sets.values()) {
      c.counts.fill(0);
      c.sumSec = 0;
    }
  }

  asMetric(): Metric {
    return this as unknown as Metric;
  }
}

/**
 * The requests of one label tuple (model, endpoint, HTTP status, stream): how many, and the
 * latency counts of its TTFT (by model, endpoint) and E2E (by model, endpoint, stream) label
 * sets, shared with the other tuples of those sets so that each sum adds up in arrival order.
 */
class RequestSeries {
  requests = 0;
  constructor(
    readonly model: string,
    readonly endpoint: string,
    readonly status: string,
    readonly ttft: LatencyCounts,
    readonly e2e: LatencyCounts,
  ) {}
}

/** The metrics of one gateway. */
export class GatewayMetrics {
  /** The prom-client registry (`/metrics` serves `registry.metrics()`). */
  readonly registry = new Registry();
  /**
   * Per-request counts by label tuple. Tuples are bounded by the configuration: a model name
   * the core does not resolve is counted under `NO_MODEL_LABEL`, never as itself.
   */
  private readonly series = new Map<string, RequestSeries>();
  private readonly ttft = new LatencyHistogram('switchyard_ttft_seconds', 'Time to first token (streams) or to the whole body (non-streams), seconds');
  private readonly e2e = new LatencyHistogram('switchyard_e2e_seconds', 'Arrival to last byte, seconds');
  private readonly fallbacks: Counter<'model'>;
  private readonly offloads: Counter<'model' | 'reason'>;
  private readonly reloads: Counter<'result'>;
  private readonly probes: Counter<'model' | 'endpoint' | 'result'>;
  private readonly probeTtft: Histogram<'model' | 'endpoint'>;
  private readonly healthChecks: Counter<'model' | 'endpoint' | 'mode' | 'result'>;
  /** Requests answered by endpoint family and HTTP status (`api\u0000status` → count). */
  private readonly byApi = new Map<string, number>();

  constructor(private readonly src: MetricsSources) {
    const registers = [this.registry];
    const series = this.series;
    const byApi = this.byApi;
    new Counter({
      name: 'switchyard_api_requests_total',
      help: 'Requests answered after routing, by endpoint family (chat, completion, embedding, messages, count_tokens, responses, …) and HTTP status',
      labelNames: ['api', 'status'],
      registers,
      collect() {
        this.reset();
        for (const [key, n] of byApi) {
          const [api, status] = key.split('\u0000') as [string, string];
          this.inc({ api, status }, n);
        }
      },
    });
    new Counter({
      name: 'switchyard_requests_total',
      help: 'Requests answered, by model, serving endpoint and HTTP status',
      labelNames: ['model', 'endpoint', 'status'],
      registers,
      collect() {
        this.reset();
        for (const s of series.values()) if (s.requests > 0) this.inc({ model: s.model, endpoint: s.endpoint, status: s.status }, s.requests);
      },
    });
    this.registry.registerMetric(this.ttft.asMetric());
    this.registry.registerMetric(this.e2e.asMetric());
    this.fallbacks = new Counter({ name: 'switchyard_fallbacks_total', help: 'Requests served by a later attempt after an earlier one failed', labelNames: ['model'], registers });
    this.offloads = new Counter({ name: 'switchyard_offloads_total', help: 'Requests that tried the offload route, by reason', labelNames: ['model', 'reason'], registers });
    this.reloads = new Counter({ name: 'switchyard_config_reloads_total', help: 'SIGHUP reloads, by result (ok | invalid)', labelNames: ['result'], registers });
    this.probes = new Counter({ name: 'switchyard_probes_total', help: 'RouteWise idle-route probes (1-token requests sent by the gateway, not by clients), by model, endpoint and result', labelNames: ['model', 'endpoint', 'result'], registers });
    this.probeTtft = new Histogram({ name: 'switchyard_probe_ttft_seconds', help: 'Time to first token of RouteWise probes, seconds', labelNames: ['model', 'endpoint'], buckets: LATENCY_BUCKETS_SEC, registers });
    this.healthChecks = new Counter({ name: 'switchyard_health_checks_total', help: 'Background health-check probes (sent by the gateway, not by clients), by model, endpoint, mode (report_only | enforce) and result (pass | fail)', labelNames: ['model', 'endpoint', 'mode', 'result'], registers });
    new Gauge({
      name: 'switchyard_health_check_unhealthy',
      help: 'Background health check per endpoint: 1 unhealthy, 0 healthy (mode enforce: an unhealthy endpoint is out of routing; several workers: the worst)',
      labelNames: ['endpoint', 'mode'],
      registers,
      aggregator: 'max',
      collect() {
        this.reset();
        for (const c of src.core().healthChecks.snapshot()) this.set({ endpoint: c.endpointId, mode: c.mode }, c.state === 'unhealthy' ? 1 : 0);
      },
    });
    new Gauge({
      name: 'switchyard_open_descriptors',
      help: 'File descriptors this process holds (client and upstream connections, files), read from /proc/self/fd at scrape; absent where there is none',
      registers,
      collect() {
        const n = openDescriptors();
        if (n !== null) this.set(n);
      },
    });
    new Gauge({
      name: 'switchyard_bodies_being_read',
      help: 'Request bodies being read now, each under server.body_read_timeout_ms (slow-body clients show here)',
      registers,
      collect() {
        this.set(bodiesWatched());
      },
    });
    new Gauge({
      name: 'switchyard_in_flight_requests',
      help: 'Requests admitted and not yet answered',
      registers,
      collect() {
        this.set(src.inFlight());
      },
    });
    new Gauge({
      name: 'switchyard_breaker_state',
      help: 'Circuit breaker per endpoint: 0 closed, 1 half-open, 2 open (several workers: the worst)',
      labelNames: ['endpoint'],
      registers,
      aggregator: 'max',
      collect() {
        this.reset();
        for (const h of src.core().health.snapshot(src.nowMs())) this.set({ endpoint: h.endpointId }, BREAKER_VALUE[h.state] ?? -1);
      },
    });
    new Gauge({
      name: 'switchyard_endpoint_availability',
      help: 'EWMA availability per endpoint (0..1; several workers: the lowest)',
      labelNames: ['endpoint'],
      registers,
      aggregator: 'min',
      collect() {
        this.reset();
        for (const h of src.core().health.snapshot(src.nowMs())) this.set({ endpoint: h.endpointId }, h.availability);
      },
    });
    new Gauge({
      name: 'switchyard_dispatch_claims',
      help: 'Attempts in flight per endpoint (health claims)',
      labelNames: ['endpoint'],
      registers,
      collect() {
        this.reset();
        for (const h of src.core().health.snapshot(src.nowMs())) this.set({ endpoint: h.endpointId }, h.claimsInFlight);
      },
    });
    new Gauge({
      name: 'switchyard_outbound_queue_depth',
      help: 'Attempts waiting for an outbound concurrency slot, per provider key',
      labelNames: ['key'],
      registers,
      collect() {
        this.reset();
        for (const s of src.core().limiter.snapshot()) this.set({ key: s.key }, s.waiting);
      },
    });
    new Gauge({
      name: 'switchyard_engine_hold_depth',
      help: 'Attempts held back from an engine (waiting for a place), per endpoint',
      labelNames: ['endpoint'],
      registers,
      collect() {
        this.reset();
        for (const s of src.core().hold.snapshot()) this.set({ endpoint: s.endpointId }, s.waiting);
      },
    });
    new Gauge({
      name: 'switchyard_routewise_quota_source_unresolved',
      help: 'RouteWise quota-source routes whose quota_source matched no fetched usage record at the last poll (1; the route is skipped), 0 once it resolves',
      labelNames: ['model', 'route'],
      registers,
      aggregator: 'max',
      collect() {
        this.reset();
        for (const q of src.quotaSources?.() ?? []) this.set({ model: q.model, route: q.route }, q.resolved ? 0 : 1);
      },
    });
    new Gauge({
      name: 'switchyard_upstream_connections',
      help: 'Open connections per upstream origin',
      labelNames: ['origin'],
      registers,
      collect() {
        this.reset();
        for (const u of src.upstreams()) this.set({ origin: u.origin }, u.connected);
      },
    });
    // The request log keeps running totals; each counter adds what grew since the last scrape.
    const logRowsCounter = (name: string, help: string, total: (log: RequestLog) => number): void => {
      let seen = 0;
      new Counter({
        name,
        help,
        registers,
        collect() {
          const log = src.requestLog();
          const n = log ? total(log) : 0;
          if (n > seen) this.inc(n - seen);
          seen = n;
        },
      });
    };
    logRowsCounter('switchyard_request_log_dropped_rows_total', 'Request-log rows dropped because the log buffer was full', (log) => log.droppedRows);
    logRowsCounter('switchyard_request_log_lost_rows_total', 'Request-log rows the writer took but could not write (a DuckDB error; the gateway logs each one)', (log) => log.lostRows);
    new Gauge({
      name: 'switchyard_request_log_buffered_rows',
      help: 'Request-log rows waiting to be written',
      registers,
      collect() {
        this.set(src.requestLog()?.unwrittenRows ?? 0);
      },
    });
  }

  /** Records one finished request. A latency that is not a finite number is left out (a bug upstream of here must not poison a sum). */
  observeRequest(o: RequestObservation): void {
    const s = this.seriesOf(o.model, o.endpoint, o.httpStatus, o.stream);
    s.requests++;
    if (o.ttftSec !== null && Number.isFinite(o.ttftSec)) s.ttft.observe(o.ttftSec);
    if (Number.isFinite(o.e2eSec)) s.e2e.observe(o.e2eSec);
    if (o.api !== undefined) {
      const key = `${o.api}\u0000${o.httpStatus}`;
      this.byApi.set(key, (this.byApi.get(key) ?? 0) + 1);
    }
    if (o.fallback) this.fallbacks.inc({ model: o.model });
    if (o.offloadReason !== null) this.offloads.inc({ model: o.model, reason: o.offloadReason });
  }

  /**
   * Requests answered so far by each serving endpoint id (every model and status), from the
   * series behind `switchyard_requests_total`; this process only.
   */
  requestsByEndpoint(): Map<string, number> {
    const out = new Map<string, number>();
    for (const s of this.series.values()) if (s.endpoint !== 'none') out.set(s.endpoint, (out.get(s.endpoint) ?? 0) + s.requests);
    return out;
  }

  /**
   * Counts a request answered before routing (no endpoint).
   * @param modelName `model` as the client wrote it, when its body had one (a body-check 400):
   *   counted under the canonical id it resolves to, else under `NO_MODEL_LABEL`.
   */
  observeRefused(httpStatus: number, modelName: string | null = null): void {
    const model = modelName === null ? NO_MODEL_LABEL : (this.src.core().model(modelName)?.id ?? NO_MODEL_LABEL);
    this.seriesOf(model, 'none', httpStatus, false).requests++;
  }

  private seriesOf(model: string, endpoint: string, httpStatus: number, stream: boolean): RequestSeries {
    const key = `${model}\u0000${endpoint}\u0000${httpStatus}\u0000${stream ? 1 : 0}`;
    let s = this.series.get(key);
    if (s === undefined) {
      const ttft = this.ttft.countsFor(`${model}\u0000${endpoint}`, { model, endpoint });
      const e2e = this.e2e.countsFor(`${model}\u0000${endpoint}\u0000${stream}`, { model, endpoint, stream: String(stream) });
      this.series.set(key, (s = new RequestSeries(model, endpoint, String(httpStatus), ttft, e2e)));
    }
    return s;
  }

  /** Counts one recorded background health-check probe (kept apart from client requests). */
  observeHealthCheck(o: { model: string; endpoint: string; mode: string; result: 'pass' | 'fail' }): void {
    this.healthChecks.inc({ model: o.model, endpoint: o.endpoint, mode: o.mode, result: o.result });
  }

  /** Records one finished RouteWise probe (kept apart from client requests). */
  observeProbe(o: ProbeObservation): void {
    this.probes.inc({ model: o.model, endpoint: o.endpoint, result: o.result });
    if (o.ttftSec !== null) this.probeTtft.observe({ model: o.model, endpoint: o.endpoint }, o.ttftSec);
  }

  /** Counts a reload attempt. */
  observeReload(ok: boolean): void {
    this.reloads.inc({ result: ok ? 'ok' : 'invalid' });
  }
}

/** File descriptors this process holds (entries of /proc/self/fd), or null where it cannot be read (not Linux). */
export function openDescriptors(): number | null {
  try {
    return readdirSync('/proc/self/fd').length;
  } catch {
    return null;
  }
}
