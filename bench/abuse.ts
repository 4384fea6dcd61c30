/**
 * Abusive clients side by side: well-behaved clients' latency with and without abusers — idle
 * keep-alive connections, slow-header and slow-body clients, header floods, kept open by
 * `bench/abuse-clients.mjs` in a child process (it reopens what the server closes) — against one
 * in-process gateway over an echo emulator. After a warm-up phase, three phases of `--seconds` each: without abusers,
 * with them, without them again (so drift is told from their effect). Per phase: well-behaved
 * p50 / p99 / max (ms), errors, the gateway process's descriptors and RSS (max during the
 * phase), and the abusers' connections open and closed by the server.
 *
 *   npx tsx bench/abuse.ts [--idle 10000] [--slow-header 200] [--slow-body 200] [--flood 200] [--seconds 20] [--rate 200] [--body-timeout-ms 10000]
 *
 * `--rate` is the well-behaved load, requests per second (paced, 8 keep-alive connections). The
 * result line gives `p99Ratio` = p99 with abusers / p99 of the first phase without (the target
 * is ≤ 1.5). The idle connections need a descriptor limit above `--idle` + 1,000 (`ulimit -n`).
 */
import { spawn } from 'node:child_process';
import { parseArgs } from 'node:util';
import { Agent, request } from 'undici';
import { openDescriptors } from '../gateway/metrics.ts';
import { KEYS, startStack } from '../test/gateway/harness.ts';

const { values } = parseArgs({
  options: {
    idle: { type: 'string', default: '10000' },
    'slow-header': { type: 'string', default: '200' },
    'slow-body': { type: 'string', default: '200' },
    flood: { type: 'string', default: '200' },
    seconds: { type: 'string', default: '20' },
    rate: { type: 'string', default: '200' },
    'body-timeout-ms': { type: 'string', default: '10000' },
  },
});
const n = (k: keyof typeof values): number => {
  const v = Number(values[k]);
  if (!Number.isFinite(v) || v < 0) throw new Error(`--${k} must be a number ≥ 0 (got ${String(values[k])})`);
  return v;
};
const seconds = n('seconds');
const rate = n('rate');
const stack = await startStack([{ mode: 'echo' }], { server: { body_read_timeout_ms: n('body-timeout-ms'), max_in_flight: 100_000 } });
const port = new URL(stack.gw.url).port;
const agent = new Agent({ connections: 8, keepAliveTimeout: 5_000 });
const url = `${stack.gw.url}/v1/chat/completions`;
const body = JSON.stringify({ model: 'demo', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 });

/** One phase of paced well-behaved load; latencies in ms. */
async function phase(name: string, abusers: { last: string } | null): Promise<Record<string, unknown>> {
  const lat: number[] = [];
  let errors = 0;
  let maxFds = 0;
  let maxRssMb = 0;
  const sampler = setInterval(() => {
    maxFds = Math.max(maxFds, openDescriptors() ?? 0);
    maxRssMb = Math.max(maxRssMb, Math.round(process.memoryUsage().rss / 2 ** 20));
  }, 250);
  const started = performance.now();
  const total = Math.round(rate * seconds);
  const pending: Array<Promise<void>> = [];
  for (let i = 0; i < total; i++) {
    const due = started + (i * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    const t0 = performance.now();
    pending.push(
      request(url, { method: 'POST', dispatcher: agent, headers: { authorization: `Bearer ${KEYS.user}`, 'content-type': 'application/json' }, body })
        .then(async (res) => {
          await res.body.text();
          if (res.statusCode !== 200) errors++;
          lat.push(performance.now() - t0);
        })
        .catch(() => void errors++),
    );
  }
  await Promise.all(pending);
  clearInterval(sampler);
  lat.sort((a, b) => a - b);
  const q = (p: number): number => +lat[Math.min(lat.length - 1, Math.floor(p * lat.length))]!.toFixed(2);
  return { phase: name, requests: total, errors, p50Ms: q(0.5), p99Ms: q(0.99), maxMs: +lat.at(-1)!.toFixed(2), maxFds, maxRssMb, inFlightAfter: stack.gw.inFlight(), abusers: abusers === null ? null : JSON.parse(abusers.last || '{}') };
}

// A warm-up phase first (JIT, pools), not reported.
await phase('warm_up', null);
const fds0 = openDescriptors();
const rss0 = Math.round(process.memoryUsage().rss / 2 ** 20);
const before = await phase('without', null);
console.log(JSON.stringify(before));

const child = spawn(process.execPath, ['bench/abuse-clients.mjs', port, KEYS.user, values.idle!, values['slow-header']!, values['slow-body']!, values.flood!], { stdio: ['ignore', 'pipe', 'inherit'] });
const seen = { last: '' };
child.stdout!.on('data', (d: Buffer) => {
  const lines = d.toString().trim().split('\n');
  seen.last = lines.at(-1)!;
});
// Let the abusers open their connections first.
const want = n('idle') + n('slow-header') + n('slow-body');
const until = Date.now() + 60_000;
while (Date.now() < until) {
  await new Promise((r) => setTimeout(r, 500));
  const s = seen.last ? (JSON.parse(seen.last) as Record<string, { open: number }>) : null;
  if (s && s.idle!.open + s.slow_header!.open + s.slow_body!.open >= want * 0.95) break;
}
const withAbusers = await phase('with_abusers', seen);
console.log(JSON.stringify(withAbusers));
child.kill('SIGTERM');
await new Promise((r) => child.once('exit', r));
await new Promise((r) => setTimeout(r, 1_000));
const after = await phase('without_again', null);
console.log(JSON.stringify(after));
console.log(
  JSON.stringify({
    summary: true,
    fdsAtStart: fds0,
    rssMbAtStart: rss0,
    fdsAtEnd: openDescriptors(),
    rssMbAtEnd: Math.round(process.memoryUsage().rss / 2 ** 20),
    p99Ratio: +((withAbusers.p99Ms as number) / (before.p99Ms as number)).toFixed(2),
    p99RatioAgain: +((after.p99Ms as number) / (before.p99Ms as number)).toFixed(2),
  }),
);
await agent.close();
await stack.close();
