/**
 * Shared-state overhead: the same paced load through two `switchyard gateway` processes that
 * differ only in `state.backend` — `local`, and `redis` against a redis-server this script starts
 * (a free loopback port, no persistence; `test/state/redis-server.ts`) — and straight to the
 * upstream (`direct`), in front of one fake OpenAI-compatible upstream that answers at once. The
 * route is remote (`local: false`, an API key), so the redis gateway leases its outbound slots,
 * mirrors its breakers and writes affinity pins through Redis as in production.
 *
 * Measured as `side-by-side.ts` does (rounds of direct, local and redis in turn), giving the
 * redis/local ratios of gateway CPU per request (its Redis client included, the redis-server's
 * own CPU not) and of added p50 and p99 latency.
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
import { runSideBySide, type SideBySideLoad, type SideBySideRound } from './side-by-side.ts';
import { freePort } from '../test/free-port.ts';
import { startRedis } from '../test/state/redis-server.ts';
import { PROCESS_KEY } from '../test/state/gateway-processes.ts';

/** Options of `runSharedStateOverhead`: the load (`side-by-side.ts`). */
export type SharedStateOverheadOptions = SideBySideLoad;

/** One round: each path's run and the redis/local ratios (A = local, B = redis). */
export type SharedStateRound = SideBySideRound;

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
  try {
    const common = 'routing_settings:\n  upstream_concurrency_initial_limit: 256\n  upstream_concurrency_max_limit: 256\n';
    return await runSideBySide(
      {
        ...o,
        modelsYaml: 'models:\n  - id: m\n    route:\n      - base_url: {upstream}\n        local: false\n        api_key: sk-upstream\n',
        a: { label: 'local', gatewayYaml: `${common}state:\n  backend: local\n` },
        b: { label: 'redis', gatewayYaml: `${common}state:\n  backend: redis\n  url: redis://127.0.0.1:${port}\n  prefix: "bench:"\n` },
        after: async (_a, shared) => {
          const deep = (await (await fetch(`${shared.url}/health/deep`, { headers: { authorization: `Bearer ${PROCESS_KEY}` } })).json()) as { shared_state?: { status: string; outbound?: { leaseCalls: number; fallbacks: number } } };
          const ss = deep.shared_state;
          write(`redis gateway: shared state ${ss?.status ?? '?'}, ${ss?.outbound?.leaseCalls ?? '?'} outbound lease calls, ${ss?.outbound?.fallbacks ?? '?'} fallbacks\n`);
        },
      },
      write,
    );
  } finally {
    redis.kill('SIGTERM');
    await new Promise((r) => redis.once('exit', r));
    rmSync(redisDir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({ options: { seconds: { type: 'string', default: '3' }, rps: { type: 'string', default: '400' }, rounds: { type: 'string', default: '3' }, connections: { type: 'string', default: '16' } } });
  await runSharedStateOverhead({ seconds: Number(values.seconds), rateRps: Number(values.rps), rounds: Number(values.rounds), connections: Number(values.connections) });
}
