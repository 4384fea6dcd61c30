/**
 * The gateway's per-request metrics: what `GatewayMetrics.observeRequest` costs (a request count
 * and two latency histograms as plain-number series, handed to prom-client at scrape time), next
 * to the same three updates through prom-client's own memoised labelled children (what the
 * gateway did before), in the same run; and one `/metrics` scrape of the series.
 *
 *   npx tsx bench/metrics.bench.ts [--requests 200000]
 *
 * Observations cycle over 8 label tuples (2 models × 2 endpoints × 2 statuses) with latencies
 * spread over the buckets. Prints one JSON line per case. Used by `npm run bench`.
 */
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { Counter, Histogram, Registry } from 'prom-client';
import { GatewayMetrics, type MetricsSources, type RequestObservation } from '../gateway/metrics.ts';

/** One printed case. */
export interface MetricsBenchLine {
  bench: string;
  [k: string]: string | number;
}

const BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];
const NO_SOURCES: MetricsSources = {
  core: () => ({ health: { snapshot: () => [] }, limiter: { snapshot: () => [] }, hold: { snapshot: () => [] } }) as never,
  inFlight: () => 0,
  nowMs: () => 0,
  requestLog: () => null,
  upstreams: () => [],
};

function observations(): RequestObservation[] {
  const out: RequestObservation[] = [];
  for (const model of ['a', 'b']) for (const endpoint of ['x', 'y']) for (const httpStatus of [200, 502]) {
    for (let i = 0; i < 16; i++) out.push({ model, endpoint, httpStatus, stream: i % 2 === 0, ttftSec: 0.002 * (i + 1) ** 2, e2eSec: 0.01 * (i + 1) ** 2, fallback: false, offloadReason: null });
  }
  return out;
}

function nsPer(n: number, f: (i: number) => void): number {
  for (let i = 0; i < Math.min(n, 5_000); i++) f(i); // warm-up
  const t = process.hrtime.bigint();
  for (let i = 0; i < n; i++) f(i);
  return Number(process.hrtime.bigint() - t) / n;
}

/**
 * Runs the cases and returns their lines (also printed when `print`).
 * @param requests observations per case (≥ 1).
 */
export async function runMetricsBench(requests = 200_000, print = true): Promise<MetricsBenchLine[]> {
  const obs = observations();
  const ours = new GatewayMetrics(NO_SOURCES);
  const oursNs = nsPer(requests, (i) => ours.observeRequest(obs[i % obs.length]!));

  // The previous path: prom-client children memoised per label tuple.
  const registers = [new Registry()];
  const counter = new Counter({ name: 'r_total', help: 'h', labelNames: ['model', 'endpoint', 'status'], registers });
  const ttft = new Histogram({ name: 't', help: 'h', labelNames: ['model', 'endpoint'], buckets: BUCKETS, registers });
  const e2e = new Histogram({ name: 'e', help: 'h', labelNames: ['model', 'endpoint', 'stream'], buckets: BUCKETS, registers });
  const children = new Map<string, { requests: { inc(): void }; ttft: { observe(v: number): void }; e2e: { observe(v: number): void } }>();
  const promNs = nsPer(requests, (i) => {
    const o = obs[i % obs.length]!;
    const key = `${o.model}\u0000${o.endpoint}\u0000${o.httpStatus}\u0000${o.stream ? 1 : 0}`;
    let c = children.get(key);
    if (c === undefined) {
      c = {
        requests: counter.labels({ model: o.model, endpoint: o.endpoint, status: String(o.httpStatus) }),
        ttft: ttft.labels({ model: o.model, endpoint: o.endpoint }),
        e2e: e2e.labels({ model: o.model, endpoint: o.endpoint, stream: o.stream ? 'true' : 'false' }),
      };
      children.set(key, c);
    }
    c.requests.inc();
    if (o.ttftSec !== null) c.ttft.observe(o.ttftSec);
    c.e2e.observe(o.e2eSec);
  });

  const t = process.hrtime.bigint();
  const text = await ours.registry.metrics();
  const scrapeMs = Number(process.hrtime.bigint() - t) / 1e6;

  const lines: MetricsBenchLine[] = [
    { bench: 'metrics/observe-request', requests, nsSeries: Math.round(oursNs), nsPromClientChildren: Math.round(promNs), ratio: Number((oursNs / promNs).toFixed(2)) },
    { bench: 'metrics/scrape', series: 16, ms: Number(scrapeMs.toFixed(2)), bytes: text.length },
  ];
  if (print) for (const l of lines) console.log(JSON.stringify(l));
  return lines;
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === import.meta.filename) {
  const { values } = parseArgs({ options: { requests: { type: 'string', default: '200000' } } });
  const n = Number(values.requests);
  if (!Number.isInteger(n) || n < 1) {
    process.stderr.write(`metrics bench: --requests must be a positive integer, got '${values.requests}'\n`);
    process.exit(2);
  }
  await runMetricsBench(n);
}
