/**
 * The gateway's Prometheus metrics (prom-client), one registry per gateway so that several
 * gateways in one process (tests) do not share counters. Counters and histograms are updated
 * once per finished request (`observeRequest`); gauges that mirror core state (breakers,
 * availability, dispatch claims, outbound queue and engine-hold depths) and the request log's
 * counters are read from their owners at scrape time, so the hot path pays nothing for them.
 *
 * Names follow Prometheus conventions: `switchyard_` prefix, base units (seconds), `_total` on
 * counters. Latency buckets (seconds) span 5 ms … 120 s: LLM TTFTs run from tens of ms (small
 * prompts, warm caches) to tens of seconds (long prompts behind a queue).
 */
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { RoutingCore } from '../core/index.ts';
import type { RequestLog } from './request-log/request-log.ts';

const LATENCY_BUCKETS_SEC = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];
const BREAKER_VALUE: Record<string, number> = { closed: 0, half_open: 1, open: 2 };

/** What one finished request reports. */
export interface RequestObservation {
  /** Model id (the canonical id when known, else as the client wrote it). */
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
}

/** The metrics of one gateway. */
export class GatewayMetrics {
  /** The prom-client registry (`/metrics` serves `registry.metrics()`). */
  readonly registry = new Registry();
  private readonly requests: Counter<'model' | 'endpoint' | 'status'>;
  private readonly ttft: Histogram<'model' | 'endpoint'>;
  private readonly e2e: Histogram<'model' | 'endpoint' | 'stream'>;
  private readonly fallbacks: Counter<'model'>;
  private readonly offloads: Counter<'model' | 'reason'>;
  private readonly reloads: Counter<'result'>;
  private readonly probes: Counter<'model' | 'endpoint' | 'result'>;
  private readonly probeTtft: Histogram<'model' | 'endpoint'>;
  /** Memoised labelled children of the per-request metrics, by label tuple. */
  private readonly children = new Map<string, { requests: { inc(): void }; ttft: { observe(v: number): void }; e2e: { observe(v: number): void } }>();

  constructor(src: MetricsSources) {
    const registers = [this.registry];
    this.requests = new Counter({ name: 'switchyard_requests_total', help: 'Requests answered, by model, serving endpoint and HTTP status', labelNames: ['model', 'endpoint', 'status'], registers });
    this.ttft = new Histogram({ name: 'switchyard_ttft_seconds', help: 'Time to first token (streams) or to the whole body (non-streams), seconds', labelNames: ['model', 'endpoint'], buckets: LATENCY_BUCKETS_SEC, registers });
    this.e2e = new Histogram({ name: 'switchyard_e2e_seconds', help: 'Arrival to last byte, seconds', labelNames: ['model', 'endpoint', 'stream'], buckets: LATENCY_BUCKETS_SEC, registers });
    this.fallbacks = new Counter({ name: 'switchyard_fallbacks_total', help: 'Requests served by a later attempt after an earlier one failed', labelNames: ['model'], registers });
    this.offloads = new Counter({ name: 'switchyard_offloads_total', help: 'Requests that tried the offload route, by reason', labelNames: ['model', 'reason'], registers });
    this.reloads = new Counter({ name: 'switchyard_config_reloads_total', help: 'SIGHUP reloads, by result (ok | invalid)', labelNames: ['result'], registers });
    this.probes = new Counter({ name: 'switchyard_probes_total', help: 'RouteWise idle-route probes (1-token requests sent by the gateway, not by clients), by model, endpoint and result', labelNames: ['model', 'endpoint', 'result'], registers });
    this.probeTtft = new Histogram({ name: 'switchyard_probe_ttft_seconds', help: 'Time to first token of RouteWise probes, seconds', labelNames: ['model', 'endpoint'], buckets: LATENCY_BUCKETS_SEC, registers });
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
      help: 'Circuit breaker per endpoint: 0 closed, 1 half-open, 2 open',
      labelNames: ['endpoint'],
      registers,
      collect() {
        this.reset();
        for (const h of src.core().health.snapshot(src.nowMs())) this.set({ endpoint: h.endpointId }, BREAKER_VALUE[h.state] ?? -1);
      },
    });
    new Gauge({
      name: 'switchyard_endpoint_availability',
      help: 'EWMA availability per endpoint (0..1)',
      labelNames: ['endpoint'],
      registers,
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
      name: 'switchyard_upstream_connections',
      help: 'Open connections per upstream origin',
      labelNames: ['origin'],
      registers,
      collect() {
        this.reset();
        for (const u of src.upstreams()) this.set({ origin: u.origin }, u.connected);
      },
    });
    let droppedSeen = 0;
    new Counter({
      name: 'switchyard_request_log_dropped_rows_total',
      help: 'Request-log rows dropped because the log buffer was full',
      registers,
      collect() {
        const d = src.requestLog()?.droppedRows ?? 0;
        if (d > droppedSeen) this.inc(d - droppedSeen);
        droppedSeen = d;
      },
    });
    new Gauge({
      name: 'switchyard_request_log_buffered_rows',
      help: 'Request-log rows waiting to be written',
      registers,
      collect() {
        this.set(src.requestLog()?.unwrittenRows ?? 0);
      },
    });
  }

  /** Records one finished request. */
  observeRequest(o: RequestObservation): void {
    // Labelled children are memoised per label tuple: prom-client hashes the label object on
    // every `inc`/`observe` otherwise, which showed in the gateway's per-request profile.
    const key = `${o.model}\u0000${o.endpoint}\u0000${o.httpStatus}\u0000${o.stream ? 1 : 0}`;
    let c = this.children.get(key);
    if (c === undefined) {
      if (this.children.size >= 10_000) this.children.clear(); // bounded: label sets are few in practice
      c = {
        requests: this.requests.labels({ model: o.model, endpoint: o.endpoint, status: String(o.httpStatus) }),
        ttft: this.ttft.labels({ model: o.model, endpoint: o.endpoint }),
        e2e: this.e2e.labels({ model: o.model, endpoint: o.endpoint, stream: o.stream ? 'true' : 'false' }),
      };
      this.children.set(key, c);
    }
    c.requests.inc();
    if (o.ttftSec !== null) c.ttft.observe(o.ttftSec);
    c.e2e.observe(o.e2eSec);
    if (o.fallback) this.fallbacks.inc({ model: o.model });
    if (o.offloadReason !== null) this.offloads.inc({ model: o.model, reason: o.offloadReason });
  }

  /** Counts a request answered before routing (no model resolved, no endpoint). */
  observeRefused(httpStatus: number): void {
    this.requests.inc({ model: 'none', endpoint: 'none', status: String(httpStatus) });
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
