/**
 * Shared-state overhead: the same paced load through two `switchyard gateway` processes that
 * differ only in `state.backend` — `local`, and `redis` against a redis-server this script starts
 * (a free loopback port, no persistence; `test/state/redis-server.ts`) — and straight to the
 * upstream (`direct`), in front of one fake OpenAI-compatible upstream that answers at once. The
 * route is remote (`local: false`, an API key), so the redis gateway leases its outbound slots,
 * mirrors its breakers and writes affinity pins through Redis as in production.
 *
 * Paths run in turn within each round (direct, then the two gateways, which goes first
 * alternating by round), `--rounds` times; each round gives
 * two ratios, redis/local:
 * - CPU per request of the gateway process (user + system, all threads, /proc; its Redis client
 *   included, the redis-server's own CPU not);
 * - added latency: the path's p50 (and p99) minus direct's in the same round.
 * The median and the range over rounds are printed. Numbers move with what else runs on the
 * machine; the ratios, measured side by side, move far less than the absolute values.
 *
 *   npx tsx bench/shared-state-overhead.ts [--seconds 3] [--rps 400] [--rounds 3] [--connections 16]
 *
 * Without a `redis-server` on PATH it prints why and returns null.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { measurePaced, type PathRun } from './load-runs.ts';
import { median } from './overhead-summary.ts';
import { freePort } from '../test/free-port.ts';
import { startRedis } from '../test/state/redis-server.ts';
import { gatewayDir, PROCESS_KEY, startCountingUpstream, startGatewayProcess, type GatewayProcess } from '../test/state/gateway-processes.ts';

/** Options of `runSharedStateOverhead`. */
export interface SharedStateOverheadOptions {
  /** Seconds of load per path and round. */
  seconds: number;
  /** The paced rate, requests per second. */
  rateRps: number;
  rounds: number;
  /** Keep-alive connections of the load generator. */
  connections: number;
}

/** One round: each path's run and the redis/local ratios. */
export interface SharedStateRound {
  direct: PathRun;
  local: PathRun;
  redis: PathRun;
  /** Gateway CPU per request, redis / local. */
  cpuRatio: number;
  /** (p50 − direct p50), redis / local. */
  addedP50Ratio: number;
  /** (p99 − direct p99), redis / local. */
  addedP99Ratio: number;
}

const ratio = (a: number, b: number) => (b > 0 ? a / b : Number.NaN);
const range = (xs: number[]) => `${median(xs).toFixed(2)} (${Math.min(...xs).toFixed(2)}–${Math.max(...xs).toFixed(2)})`;

/** Runs the comparison and prints it; null (with the reason printed) when there is no redis-server. */
export async function runSharedStateOverhead(o: SharedStateOverheadOptions, write: (s: string) => void = (s) => process.stdout.write(s)): Promise<SharedStateRound[] | null> {
  const bin = spawnSync('sh', ['-c', 'command -v redis-server'], { encoding: 'utf8' }).stdout.trim();
  if (!bin) {
    write('shared-state overhead skipped: no redis-server on PATH (install the redis-server package)\n');
    return null;
  }
  const redisDir = mkdtempSync(join(tmpdir(), 'switchyard-bench-redis-'));
  const port = await freePort();
  const redis = await startRedis(bin, port, redisDir);
  const up = await startCountingUpstream(0);
  const gws: GatewayProcess[] = [];
  try {
    const models = `models:\n  - id: m\n    route:\n      - base_url: ${up.baseUrl}\n        local: false\n        api_key: sk-upstream\n`;
    const common = 'routing_settings:\n  upstream_concurrency_initial_limit: 256\n  upstream_concurrency_max_limit: 256\n';
    const local = await startGatewayProcess(gatewayDir(models, `${common}state:\n  backend: local\n`));
    gws.push(local);
    const shared = await startGatewayProcess(gatewayDir(models, `${common}state:\n  backend: redis\n  url: redis://127.0.0.1:${port}\n  prefix: "bench:"\n`));
    gws.push(shared);
    const headers = { authorization: `Bearer ${PROCESS_KEY}`, 'content-type': 'application/json' };
    const body = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 });
    const run = (url: string, pid: number | null) => measurePaced(url, headers, body, { rateRps: o.rateRps, connections: o.connections, seconds: o.seconds, pid });
    // Warm-up (JIT, connection pools, the first lease).
    for (const g of gws) await measurePaced(`${g.url}/v1/chat/completions`, headers, body, { rateRps: o.rateRps, connections: o.connections, seconds: 1 });
    write(`${o.rounds} rounds × ${o.seconds} s at ${o.rateRps} req/s, ${o.connections} connections; paths in turn: direct, then state local and state redis (alternating order)\n`);
    const rounds: SharedStateRound[] = [];
    for (let i = 0; i < o.rounds; i++) {
      const direct = await run(`${up.baseUrl}/chat/completions`, null);
      // Alternate which gateway goes first, so neither always runs on the warmer machine.
      const runLocal = () => run(`${local.url}/v1/chat/completions`, local.child.pid ?? null);
      const runRedis = () => run(`${shared.url}/v1/chat/completions`, shared.child.pid ?? null);
      let l: PathRun;
      let r: PathRun;
      if (i % 2 === 0) {
        l = await runLocal();
        r = await runRedis();
      } else {
        r = await runRedis();
        l = await runLocal();
      }
      const round = {
        direct,
        local: l,
        redis: r,
        cpuRatio: ratio(r.cpuUsPerRequest ?? Number.NaN, l.cpuUsPerRequest ?? Number.NaN),
        addedP50Ratio: ratio(r.p50Ms - direct.p50Ms, l.p50Ms - direct.p50Ms),
        addedP99Ratio: ratio(r.p99Ms - direct.p99Ms, l.p99Ms - direct.p99Ms),
      };
      rounds.push(round);
      const f = (p: PathRun) => `p50 ${p.p50Ms.toFixed(3)} ms, p99 ${p.p99Ms.toFixed(3)} ms${p.cpuUsPerRequest !== null ? `, CPU ${p.cpuUsPerRequest.toFixed(0)} µs/req` : ''}${p.bad ? `, ${p.bad} bad` : ''}`;
      write(`  round ${i + 1}: direct ${f(direct)} | local ${f(l)} | redis ${f(r)}\n`);
    }
    const deep = (await (await fetch(`${shared.url}/health/deep`, { headers })).json()) as { shared_state?: { status: string; outbound?: { leaseCalls: number; fallbacks: number } } };
    const ss = deep.shared_state;
    write(`redis gateway: shared state ${ss?.status ?? '?'}, ${ss?.outbound?.leaseCalls ?? '?'} outbound lease calls, ${ss?.outbound?.fallbacks ?? '?'} fallbacks\n`);
    write(`redis/local, median (range) over rounds: gateway CPU per request ×${range(rounds.map((x) => x.cpuRatio))}, added p50 latency ×${range(rounds.map((x) => x.addedP50Ratio))}, added p99 latency ×${range(rounds.map((x) => x.addedP99Ratio))}\n`);
    return rounds;
  } finally {
    await Promise.all(gws.map((g) => g.stop()));
    await up.close();
    redis.kill('SIGTERM');
    await new Promise((r) => redis.once('exit', r));
    rmSync(redisDir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({ options: { seconds: { type: 'string', default: '3' }, rps: { type: 'string', default: '400' }, rounds: { type: 'string', default: '3' }, connections: { type: 'string', default: '16' } } });
  await runSharedStateOverhead({ seconds: Number(values.seconds), rateRps: Number(values.rps), rounds: Number(values.rounds), connections: Number(values.connections) });
}
