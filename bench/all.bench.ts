/**
 * `npm run bench`: prints every benchmark table (micro, routing quality, simulator speed, the
 * request log's per-row costs, the shared routing state's cost (`state.backend: redis` vs
 * `local`, `bench/shared-state-overhead.ts`), the cost of OpenTelemetry tracing (on vs off,
 * `bench/tracing-overhead.ts`), and a short gateway-overhead run: direct vs a bare proxy vs
 * Switchyard's gateway vs the Portkey peer, 2 s per run —
 * `npx tsx bench/gateway-overhead.ts` runs the longer default). The gateway table is printed
 * only; it is not part of `npm run bench:check` (too noisy on a shared machine for a CI gate).
 */
import { runGatewayOverhead } from './gateway-overhead.ts';
import { runMicro } from './micro.ts';
import { peerGatewayInstalled } from './peer-gateway.ts';
import { runQuality } from './quality.ts';
import { runMetricsBench } from './metrics.bench.ts';
import { runRequestLogBench } from './request-log.bench.ts';
import { runSharedStateOverhead } from './shared-state-overhead.ts';
import { runTracingOverhead } from './tracing-overhead.ts';

const fmt = (n: number) => (n >= 100 ? n.toFixed(0) : n.toPrecision(3));
console.log('micro (ns per operation; ratio = median / reference median, same run)');
console.table((await runMicro()).map((r) => ({ op: r.name, 'median ns': fmt(r.medianNs), 'p99 ns': fmt(r.p99Ns), ratio: fmt(r.ratio) })));
console.log('routing quality on the Mooncake reference slice (3,000 requests, 4 replicas, seed 1)');
console.table((await runQuality()).map((q) => ({ strategy: q.strategy, 'TTFT p50 ms': fmt(q.ttftP50Ms), 'TTFT p99 ms': fmt(q.ttftP99Ms), 'prefix hit': q.prefixHitRate.toFixed(3), goodput: q.goodput.toFixed(3), '$/1k req': q.costUsdPer1k.toFixed(4) })));
console.log('simulator speed (Mooncake conversation trace)');
await import('./simulator.bench.ts');
console.log('\nrequest log (gateway-thread append, writer thread, prefix hashes)');
await runRequestLogBench(20_000);
console.log('\ngateway metrics (per-request observe, scrape)');
await runMetricsBench(100_000);
console.log('\nshared routing state (gateway state.backend redis vs local, side by side)');
await runSharedStateOverhead({ seconds: 2, rateRps: 400, rounds: 3, connections: 16 });
console.log('\nOpenTelemetry tracing (gateway tracing on, every trace sampled, vs off, side by side)');
await runTracingOverhead({ seconds: 2, rateRps: 400, rounds: 3, connections: 16, sampleRatio: 1 });
// Last: it pins this process to CPU 1 while it runs (restored afterwards).
console.log('\ngateway overhead (short run)');
try {
  await runGatewayOverhead({ seconds: 2, rpsSteps: [100, 1000], maxConnections: 64, pin: true, requestLog: true, peer: peerGatewayInstalled() });
} catch (err) {
  console.log(`gateway overhead skipped: ${(err as Error).message}`);
}
