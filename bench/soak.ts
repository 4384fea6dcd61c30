/**
 * Soak: a long run of steady traffic through one in-process gateway (request log on, a DuckDB
 * file in a temporary directory) over an echo emulator, reported per time window, to show that
 * memory does not drift and latency does not degrade with time.
 *
 * Two modes:
 * - paced (default): `--rate` requests per second (half streaming, half not) on 16 keep-alive
 *   connections, for `--minutes`; per window: requests, errors, p50 / p99 / max latency (ms),
 *   RSS and V8 heap at the window's end (MiB), CPU µs per request (this process: gateway,
 *   emulator and client together). The summary gives `rssDriftPct` (last window's RSS over the
 *   first window's, after warm-up), `p99WorstOverFirst` (the worst window's p99 over the first
 *   window's; target ≤ 1.5) and the error count (target 0 on healthy upstreams).
 * - `--max-load`: closed loop, `--connections` requests always in flight, no pacing: the CPU per
 *   request of each window; `cpuLastOverFirst` is the last window's over the first's (target
 *   ≤ 1.1 over a 5-minute run with 1-minute windows).
 * A warm-up of `--warmup-s` seconds (JIT, pools, caches) comes first and is not reported.
 * Prints one JSON line per window and a summary line.
 *
 *   npx tsx bench/soak.ts [--minutes 30] [--window-s 300] [--rate 200] [--warmup-s 30]
 *   npx tsx bench/soak.ts --max-load [--minutes 5] [--window-s 60] [--connections 32]
 *
 * The process measures itself: client and emulator allocations are in its RSS and CPU too, so
 * the figures bound the gateway's from above; the ratios between windows are what the targets use.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Agent, request } from 'undici';
import { KEYS, startStack } from '../test/gateway/harness.ts';

const { values } = parseArgs({
  options: {
    minutes: { type: 'string' },
    'window-s': { type: 'string' },
    rate: { type: 'string', default: '200' },
    'warmup-s': { type: 'string', default: '30' },
    connections: { type: 'string', default: '32' },
    'max-load': { type: 'boolean', default: false },
  },
});
const maxLoad = values['max-load'];
const num = (name: string, v: string | undefined, fallback: number): number => {
  const x = v === undefined ? fallback : Number(v);
  if (!Number.isFinite(x) || x <= 0) throw new Error(`--${name} must be a number > 0 (got ${String(v)})`);
  return x;
};
const minutes = num('minutes', values.minutes, maxLoad ? 5 : 30);
const windowS = num('window-s', values['window-s'], maxLoad ? 60 : 300);
const rate = num('rate', values.rate, 200);
const warmupS = num('warmup-s', values['warmup-s'], 30);
const connections = Math.round(num('connections', values.connections, 32));

const dir = mkdtempSync(join(tmpdir(), 'switchyard-soak-'));
const stack = await startStack([{ mode: 'echo' }], { request_log: { path: join(dir, 'log.duckdb') }, server: { max_in_flight: 100_000 } });
const agent = new Agent({ connections: maxLoad ? connections : 16, keepAliveTimeout: 10_000 });
const url = `${stack.gw.url}/v1/chat/completions`;
const headers = { authorization: `Bearer ${KEYS.user}`, 'content-type': 'application/json' };
const bodies = [false, true].map((stream) => JSON.stringify({ model: 'demo', messages: [{ role: 'user', content: 'hello there, soak' }], max_tokens: 8, stream }));

/** Window accumulator. */
interface Window {
  lat: number[];
  errors: number;
}
let current: Window = { lat: [], errors: 0 };
let sent = 0;

/** One request; its latency (ms, to the end of the body) goes into the window current at its end. */
async function one(): Promise<void> {
  const body = bodies[sent++ & 1]!;
  const t0 = performance.now();
  try {
    const res = await request(url, { method: 'POST', dispatcher: agent, headers, body });
    const text = await res.body.text();
    if (res.statusCode !== 200 || (body.includes('"stream":true') && !text.includes('[DONE]'))) current.errors++;
    else current.lat.push(performance.now() - t0);
  } catch {
    current.errors++;
  }
}

const cpuUs = (): number => {
  const u = process.cpuUsage();
  return u.user + u.system;
};
const mib = (b: number): number => Math.round((b / 2 ** 20) * 10) / 10;
const q = (sorted: number[], p: number): number => (sorted.length === 0 ? NaN : +sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!.toFixed(2));

let stopAt = 0;
/** Drives traffic until `stopAt` (ms, performance clock): paced or closed-loop. */
async function drive(): Promise<void> {
  if (maxLoad) {
    const loop = async (): Promise<void> => {
      while (performance.now() < stopAt) await one();
    };
    await Promise.all(Array.from({ length: connections }, loop));
    return;
  }
  const pending = new Set<Promise<void>>();
  const started = performance.now();
  for (let i = 0; ; i++) {
    const due = started + (i * 1000) / rate;
    if (due >= stopAt) break;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    const p = one().finally(() => pending.delete(p));
    pending.add(p);
  }
  await Promise.all(pending);
}

// Warm-up, not reported.
stopAt = performance.now() + warmupS * 1000;
await drive();

const rows: Array<Record<string, number>> = [];
const windows = Math.max(1, Math.round((minutes * 60) / windowS));
const t0 = performance.now();
stopAt = t0 + windows * windowS * 1000;
const traffic = drive();
for (let w = 0; w < windows; w++) {
  const cpu0 = cpuUs();
  current = { lat: [], errors: 0 };
  const end = t0 + (w + 1) * windowS * 1000;
  await new Promise((r) => setTimeout(r, Math.max(0, end - performance.now())));
  const done = current;
  const n = done.lat.length + done.errors;
  done.lat.sort((a, b) => a - b);
  const m = process.memoryUsage();
  const row = {
    window: w,
    fromS: w * windowS,
    requests: n,
    errors: done.errors,
    p50Ms: q(done.lat, 0.5),
    p99Ms: q(done.lat, 0.99),
    maxMs: done.lat.length ? +done.lat.at(-1)!.toFixed(2) : NaN,
    rssMiB: mib(m.rss),
    heapUsedMiB: mib(m.heapUsed),
    cpuUsPerRequest: n ? Math.round((cpuUs() - cpu0) / n) : NaN,
  };
  rows.push(row);
  console.log(JSON.stringify({ bench: 'soak', mode: maxLoad ? 'max_load' : 'paced', ...row }));
}
await traffic;
const first = rows[0]!;
const last = rows.at(-1)!;
console.log(
  JSON.stringify({
    bench: 'soak',
    summary: true,
    mode: maxLoad ? 'max_load' : 'paced',
    minutes,
    windowS,
    ...(maxLoad ? { connections } : { rate }),
    requests: rows.reduce((s, r) => s + r.requests!, 0),
    errors: rows.reduce((s, r) => s + r.errors!, 0),
    rssDriftPct: +((100 * (last.rssMiB! - first.rssMiB!)) / first.rssMiB!).toFixed(1),
    p99WorstOverFirst: +(Math.max(...rows.map((r) => r.p99Ms!)) / first.p99Ms!).toFixed(2),
    cpuLastOverFirst: +(last.cpuUsPerRequest! / first.cpuUsPerRequest!).toFixed(2),
    inFlightAfter: stack.gw.inFlight(),
  }),
);
await agent.close();
await stack.close();
rmSync(dir, { recursive: true, force: true });
