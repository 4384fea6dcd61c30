/**
 * Gateway overhead: the same load straight to an engine emulator in `echo` mode (answers at
 * once, no model) and through the gateway in front of it, so the difference is what the gateway
 * adds — auth, JSON parse, routing decision, upstream pool, SSE relay, request log. Each server
 * runs in its own process (`switchyard emulate`, `switchyard gateway`, the request log on, in its
 * worker thread); the load generator (autocannon) runs in this one.
 *
 * CPUs are pinned with `taskset` when there are at least two: the gateway alone on CPU 0; the
 * emulator and the load generator on CPU 1 (so the direct path gets no extra core either).
 *
 * Runs, for non-stream and stream chat: fixed-rate steps (`--rps`, autocannon `overallRate`)
 * through both paths, latency percentiles of each path and their difference / ratio; then a
 * max-throughput run (`--connections` connections, no rate limit) through both paths; then the
 * gateway's RSS (now and peak). Latencies are taken per response from autocannon's `response`
 * event (hrtime, sub-ms) — its own histogram rounds to whole ms, too coarse for a 0.2 ms target.
 *
 *   npx tsx bench/gateway-overhead.ts [--seconds 5] [--rps 500,1000,2000] [--connections 64] [--no-pin] [--no-log]
 *   (--rps '' skips the fixed-rate steps; --no-log runs the gateway without its request log)
 *
 * Numbers depend on the machine and on what else runs on it; compare runs on one machine, and
 * distrust a run on a shared, loaded one (the load average is printed).
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { hashKey } from '../gateway/callers.ts';

interface CannonResult {
  requests: { average: number };
  non2xx: number;
  errors: number;
  timeouts: number;
}
interface CannonInstance extends Promise<CannonResult> {
  on(ev: 'response', f: (client: unknown, status: number, bytes: number, responseTimeMs: number) => void): void;
}
type Cannon = (opts: Record<string, unknown>) => CannonInstance;
const autocannon = createRequire(import.meta.url)('autocannon') as Cannon;

const root = join(import.meta.dirname, '..');
const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '5' },
    rps: { type: 'string', default: '500,1000,2000' },
    connections: { type: 'string', default: '64' },
    'no-pin': { type: 'boolean', default: false },
    'no-log': { type: 'boolean', default: false },
  },
});
const seconds = Number(values.seconds);
const rpsSteps = values.rps === '' ? [] : values.rps.split(',').map(Number);
const requestLog = !values['no-log'];
const maxConnections = Number(values.connections);
const KEY = 'sk-bench';

function hasTaskset(): boolean {
  try {
    execFileSync('taskset', ['-V'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}
const pin = !values['no-pin'] && cpus().length >= 2 && hasTaskset();

/** Starts `switchyard <args>` (pinned to `cpu` when pinning) and resolves with the URL it prints. */
function startCli(args: string[], cpu: number): Promise<{ child: ChildProcess; url: string }> {
  const cmd = pin ? 'taskset' : process.execPath;
  const argv = pin ? ['-c', String(cpu), process.execPath, join(root, 'bin/switchyard.mjs'), ...args] : [join(root, 'bin/switchyard.mjs'), ...args];
  const child = spawn(cmd, argv, { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /on (http:\/\/[^\s]+?)(\/v1)?[\s(]/.exec(out);
      if (m) resolve({ child, url: m[1]! });
    });
    child.once('exit', (code) => reject(new Error(`switchyard ${args[0]} exited with ${code}: ${out}`)));
  });
}

/** Percentile (nearest rank) of sorted values. */
function pct(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

interface Measured {
  rps: number;
  p50: number;
  p90: number;
  p99: number;
  p999: number;
  bad: number;
  n: number;
}

async function measure(url: string, body: string, opts: { rate?: number; connections: number; duration: number }): Promise<Measured> {
  const times: number[] = [];
  const inst = autocannon({
    url,
    method: 'POST',
    connections: opts.connections,
    duration: opts.duration,
    ...(opts.rate !== undefined && { overallRate: opts.rate }),
    headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}` },
    body,
  });
  inst.on('response', (_c, status, _b, ms) => {
    if (status === 200) times.push(ms);
  });
  const r = await inst;
  times.sort((a, b) => a - b);
  return { rps: r.requests.average, p50: pct(times, 50), p90: pct(times, 90), p99: pct(times, 99), p999: pct(times, 99.9), bad: r.errors + r.non2xx + r.timeouts, n: times.length };
}

function rssMb(pid: number): { rss: number; peak: number } {
  const s = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (k: string) => Number(new RegExp(`${k}:\\s+(\\d+)`).exec(s)?.[1] ?? NaN);
  return { rss: kb('VmRSS') / 1024, peak: kb('VmHWM') / 1024 };
}

/** The node process under `taskset` (taskset execs it, so the pid is the same). */
function gatewayPid(child: ChildProcess): number {
  return child.pid!;
}

async function main(): Promise<void> {
  if (pin) execFileSync('taskset', ['-cp', '1', String(process.pid)], { stdio: 'ignore' });
  const emu = await startCli(['emulate', '--port', '0', '--mode', 'echo'], 1);
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-bench-'));
  writeFileSync(join(dir, 'models.yaml'), `models:\n  - id: bench\n    route:\n      - base_url: ${emu.url}/v1\n`);
  writeFileSync(
    join(dir, 'gateway.yaml'),
    `server:\n  port: 0\n  admin_port: null\n  log_level: warn\n  seed: 1\nauth:\n  keys:\n    - id: bench\n      sha256: ${hashKey(KEY)}\n${requestLog ? `request_log:\n  path: ${join(dir, 'requests.duckdb')}\n` : ''}`,
  );
  const gw = await startCli(['gateway', '--config', dir], 0);
  const f = (x: number) => x.toFixed(3).padStart(8);
  process.stdout.write(
    `gateway overhead — ${seconds} s per run, fixed-rate steps ${rpsSteps.join('/')} req/s, max run ${maxConnections} connections; ` +
      `${cpus().length} CPUs (${cpus()[0]?.model ?? '?'}), load average ${loadavg()[0]!.toFixed(1)}, ${pin ? 'pinned: gateway CPU 0, emulator + load generator CPU 1' : 'NOT pinned'}; request log ${requestLog ? 'on' : 'off'}\n\n`,
  );
  process.stdout.write('case        load        path      req/s    p50 ms   p90 ms   p99 ms p99.9 ms   bad\n');
  const line = (c: string, load: string, path: string, m: Measured) =>
    process.stdout.write(`${c.padEnd(11)} ${load.padEnd(11)} ${path.padEnd(8)} ${m.rps.toFixed(0).padStart(6)} ${f(m.p50)} ${f(m.p90)} ${f(m.p99)} ${f(m.p999)} ${String(m.bad).padStart(5)}\n`);
  try {
    for (const stream of [false, true]) {
      const c = stream ? 'stream' : 'non-stream';
      const body = JSON.stringify({ model: 'bench', stream, messages: [{ role: 'user', content: 'Say ok.' }], max_tokens: 1 });
      const targets = [
        ['direct', `${emu.url}/v1/chat/completions`],
        ['gateway', `${gw.url}/v1/chat/completions`],
      ] as const;
      // Warm up (JIT, pools) both paths.
      for (const [, url] of targets) await measure(url, body, { connections: 16, duration: 1 });
      for (const rate of rpsSteps) {
        const res: Record<string, Measured> = {};
        for (const [name, url] of targets) {
          res[name] = await measure(url, body, { rate, connections: Math.min(64, rate), duration: seconds });
          line(c, `${rate}/s`, name, res[name]!);
        }
        const d = res.direct!;
        const g = res.gateway!;
        process.stdout.write(`${''.padEnd(32)}added p50 +${(g.p50 - d.p50).toFixed(3)} ms (×${(g.p50 / d.p50).toFixed(2)}), p99 +${(g.p99 - d.p99).toFixed(3)} ms (×${(g.p99 / d.p99).toFixed(2)})\n`);
      }
      const max: Record<string, Measured> = {};
      for (const [name, url] of targets) {
        max[name] = await measure(url, body, { connections: maxConnections, duration: seconds });
        line(c, 'max', name, max[name]!);
      }
      process.stdout.write(`${''.padEnd(32)}max req/s through the gateway = ${(max.gateway!.rps / max.direct!.rps).toFixed(2)} × direct\n`);
    }
    const m = rssMb(gatewayPid(gw.child));
    process.stdout.write(`\ngateway RSS: ${m.rss.toFixed(0)} MB now, ${m.peak.toFixed(0)} MB peak (request log ${requestLog ? 'on' : 'off'})\n`);
  } finally {
    gw.child.kill('SIGTERM');
    emu.child.kill('SIGINT');
    await new Promise((r) => gw.child.once('exit', r));
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
