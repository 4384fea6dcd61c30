// GatewayMetrics keeps per-request counts as plain series and hands them to prom-client at scrape
// time. Its exposition must read exactly as prom-client's own Counter and Histogram would have
// written the same observations.
import fc from 'fast-check';
import { Counter, Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { GatewayMetrics, NO_MODEL_LABEL, type RequestObservation } from '../../gateway/metrics.ts';

const BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];

function gatewayMetrics(): GatewayMetrics {
  return new GatewayMetrics({ core: () => ({ health: { snapshot: () => [] }, healthChecks: { snapshot: () => [] }, limiter: { snapshot: () => [] }, hold: { snapshot: () => [] } }) as never, inFlight: () => 0, nowMs: () => 0, requestLog: () => null, upstreams: () => [] });
}

/**
 * The lines of `name` (HELP, TYPE and samples) from a Prometheus text exposition, samples sorted
 * and each sample's labels sorted (label order carries no meaning in the format).
 */
function linesOf(text: string, name: string): string[] {
  const lines = text.split('\n').filter((l) => l.startsWith(`${name}`) || l.startsWith(`# HELP ${name} `) || l.startsWith(`# TYPE ${name} `));
  const sortLabels = (l: string) => l.replace(/\{(.*)\}/, (_, inner: string) => `{${inner.split(',').sort().join(',')}}`);
  return [...lines.filter((l) => l.startsWith('#')), ...lines.filter((l) => !l.startsWith('#')).map(sortLabels).sort()];
}

const observation = fc.record({
  model: fc.constantFrom('a', 'b'),
  endpoint: fc.constantFrom('x', 'y', 'none'),
  httpStatus: fc.constantFrom(200, 429, 499, 502),
  stream: fc.boolean(),
  ttftSec: fc.option(fc.constantFrom(0, 0.004, 0.005, 0.0051, 0.3, 1, 119.9, 120, 500), { nil: null }),
  e2eSec: fc.constantFrom(0, 0.005, 0.02, 2.5, 7, 120, 121),
  fallback: fc.constant(false),
  offloadReason: fc.constant(null),
});

describe('GatewayMetrics', () => {
  it("writes requests, TTFT and E2E exactly as prom-client's own Counter and Histogram would", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(observation, { maxLength: 40 }), fc.array(fc.constantFrom(400, 401, 413), { maxLength: 4 }), async (obs: RequestObservation[], refused) => {
        const m = gatewayMetrics();
        const ref = new Registry();
        const registers = [ref];
        const requests = new Counter({ name: 'switchyard_requests_total', help: 'Requests answered, by model, serving endpoint and HTTP status', labelNames: ['model', 'endpoint', 'status'], registers });
        const ttft = new Histogram({ name: 'switchyard_ttft_seconds', help: 'Time to first token (streams) or to the whole body (non-streams), seconds', labelNames: ['model', 'endpoint'], buckets: BUCKETS, registers });
        const e2e = new Histogram({ name: 'switchyard_e2e_seconds', help: 'Arrival to last byte, seconds', labelNames: ['model', 'endpoint', 'stream'], buckets: BUCKETS, registers });
        for (const o of obs) {
          m.observeRequest(o);
          requests.inc({ model: o.model, endpoint: o.endpoint, status: String(o.httpStatus) });
          if (o.ttftSec !== null) ttft.observe({ model: o.model, endpoint: o.endpoint }, o.ttftSec);
          e2e.observe({ model: o.model, endpoint: o.endpoint, stream: String(o.stream) }, o.e2eSec);
        }
        for (const status of refused) {
          m.observeRefused(status);
          requests.inc({ model: 'none', endpoint: 'none', status: String(status) });
        }
        const ours = await m.registry.metrics();
        const theirs = await ref.metrics();
        for (const name of ['switchyard_requests_total', 'switchyard_ttft_seconds', 'switchyard_e2e_seconds']) expect(linesOf(ours, name)).toEqual(linesOf(theirs, name));
      }),
      { numRuns: 200 },
    );
  });

  it('a refusal that names a model counts under its canonical id; an unknown name or none under the sentinel', async () => {
    const models: Record<string, { id: string }> = { demo: { id: 'demo' }, 'demo-chat': { id: 'demo' } };
    const m = new GatewayMetrics({ core: () => ({ model: (n: string) => models[n] ?? null, health: { snapshot: () => [] }, healthChecks: { snapshot: () => [] }, limiter: { snapshot: () => [] }, hold: { snapshot: () => [] } }) as never, inFlight: () => 0, nowMs: () => 0, requestLog: () => null, upstreams: () => [] });
    m.observeRefused(400, 'demo-chat');
    m.observeRefused(400, 'demo');
    m.observeRefused(400, 'made-up');
    m.observeRefused(400);
    const lines = linesOf(await m.registry.metrics(), 'switchyard_requests_total');
    expect(lines).toContain(`switchyard_requests_total{endpoint="none",model="demo",status="400"} 2`);
    expect(lines).toContain(`switchyard_requests_total{endpoint="none",model="${NO_MODEL_LABEL}",status="400"} 2`);
    expect(lines.join('\n')).not.toContain('made-up');
  });

  it('leaves out latencies that are not finite numbers, and resets with the registry', async () => {
    const m = gatewayMetrics();
    const o: RequestObservation = { model: 'a', endpoint: 'x', httpStatus: 200, stream: false, ttftSec: Number.NaN, e2eSec: Number.POSITIVE_INFINITY, fallback: false, offloadReason: null };
    m.observeRequest(o);
    m.observeRequest({ ...o, ttftSec: 0.5, e2eSec: 1 });
    let text = await m.registry.metrics();
    expect(linesOf(text, 'switchyard_ttft_seconds')).toContain('switchyard_ttft_seconds_sum{endpoint="x",model="a"} 0.5');
    expect(linesOf(text, 'switchyard_e2e_seconds')).toContain('switchyard_e2e_seconds_count{endpoint="x",model="a",stream="false"} 1');
    expect(linesOf(text, 'switchyard_requests_total')).toContain('switchyard_requests_total{endpoint="x",model="a",status="200"} 2');
    m.registry.resetMetrics();
    text = await m.registry.metrics();
    expect(text).not.toContain('switchyard_ttft_seconds_sum');
  });

  it('keeps counting across scrapes (a scrape resets nothing)', async () => {
    const m = gatewayMetrics();
    const o: RequestObservation = { model: 'a', endpoint: 'x', httpStatus: 200, stream: false, ttftSec: 0.01, e2eSec: 0.01, fallback: false, offloadReason: null };
    m.observeRequest(o);
    await m.registry.metrics();
    m.observeRequest(o);
    const text = await m.registry.metrics();
    expect(linesOf(text, 'switchyard_requests_total')).toContain('switchyard_requests_total{endpoint="x",model="a",status="200"} 2');
    expect(linesOf(text, 'switchyard_ttft_seconds')).toContain('switchyard_ttft_seconds_count{endpoint="x",model="a"} 2');
    expect(linesOf(text, 'switchyard_e2e_seconds')).toContain('switchyard_e2e_seconds_bucket{endpoint="x",le="0.01",model="a",stream="false"} 2');
  });
});
