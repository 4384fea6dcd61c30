// `--workers N`: the admin `/metrics` and `/health/deep` count every worker's requests (not
// worker 0's only), the start line names the admin URL, and a worker that does not answer is
// reported as missing rather than left out; a refused SIGHUP shows in /status/config.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { aggregateMetricsText, mergeDeepHealth, type DeepHealth, type WorkerSnapshot } from '../../gateway/server/worker-aggregate.ts';
import { startEmulator, type RunningEmulator } from '../../simulator/emulator/emulator.ts';
import { freePort } from '../free-port.ts';

const root = join(import.meta.dirname, '../..');
const cli = join(root, 'bin/switchyard.mjs');
let child: ChildProcess | null = null;
let emu: RunningEmulator | null = null;
afterAll(async () => {
  if (child && child.exitCode === null) child.kill('SIGKILL');
  await emu?.close();
});

/** A port that was free a moment ago. */

/** One request on a fresh connection (no keep-alive), so the kernel spreads them over the workers. */
function post(port: number, body: unknown): Promise<number> {
  return new Promise((resolve, reject) => {
    const data = JSON.stringify(body);
    const req = request({ host: '127.0.0.1', port, path: '/v1/chat/completions', method: 'POST', agent: false, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end(data);
  });
}

/** Sum of a counter's samples in Prometheus text. */
function sumOf(text: string, name: string): number {
  return text
    .split('\n')
    .filter((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `))
    .reduce((n, l) => n + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
}

describe('--workers 2: one operational view', () => {
  it('admin /metrics and /health/deep cover both workers; the start line names the admin URL', async () => {
    emu = await startEmulator({ faults: { latency_scale: 0.01 } });
    const d = mkdtempSync(join(tmpdir(), 'switchyard-workers-'));
    const port = await freePort();
    writeFileSync(join(d, 'models.yaml'), `models:\n  - id: m\n    router: round_robin\n    route:\n      - base_url: ${emu.baseUrl}\n`);
    writeFileSync(join(d, 'gateway.yaml'), `server:\n  host: 127.0.0.1\n  port: ${port}\n  workers: 2\n  admin_port: 0\n  drain_grace_ms: 1000\nauth:\n  mode: none\n  anonymous_admin: true\n`);
    child = spawn(process.execPath, [cli, 'gateway', '--config', d], { cwd: d, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout!.on('data', (x: Buffer) => (out += x.toString()));
    child.stderr!.on('data', (x: Buffer) => (out += x.toString()));
    const exited = new Promise<number | null>((r) => child!.once('exit', (code) => r(code)));
    const until = Date.now() + 30_000;
    let m: RegExpExecArray | null = null;
    while (!(m = /switchyard gateway on http:\/\/127\.0\.0\.1:\d+\/v1 \(seed \d+, 2 worker\(s\), auth none, admin (http:\/\/127\.0\.0\.1:\d+)\)/.exec(out))) {
      if (Date.now() > until || child.exitCode !== null) throw new Error(`gateway did not start:\n${out}`);
      await new Promise((r) => setTimeout(r, 25));
    }
    const admin = m[1]!;

    const n = 40;
    const statuses: number[] = [];
    for (let i = 0; i < n; i++) statuses.push(await post(port, { model: 'm', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 }));
    expect(statuses.every((s) => s === 200)).toBe(true);

    const metrics = await (await fetch(`${admin}/metrics`)).text();
    expect(sumOf(metrics, 'switchyard_requests_total')).toBe(n);
    expect(sumOf(metrics, 'switchyard_ttft_seconds_count')).toBe(n);
    expect(metrics).toContain('switchyard_workers_missing 0');

    const deep = (await (await fetch(`${admin}/health/deep`)).json()) as DeepHealth;
    expect(deep.status).toBe('ok');
    expect(deep.in_flight).toBe(0);
    expect(deep.workers!.map((w) => w.worker)).toEqual([0, 1]);
    expect(deep.workers_missing).toEqual([]);
    expect(deep.endpoints).toHaveLength(1);

    // A SIGHUP the main thread refuses reaches /status/config on worker 0's admin listener too.
    const status = async () => (await (await fetch(`${admin}/status/config`)).json()) as { last_load: { status: string; problems: string[] }; generation: { number: number } };
    const poll = async (done: (s: Awaited<ReturnType<typeof status>>) => boolean) => {
      for (let i = 0; i < 200; i++) {
        const s = await status();
        if (done(s)) return s;
        await new Promise((r) => setTimeout(r, 25));
      }
      throw new Error(`status/config never changed:\n${out}`);
    };
    writeFileSync(join(d, 'models.yaml'), `models:\n  - id: m\n    router: round_robin\n    route:\n      - base_url: ${emu.baseUrl}\n        weight: -1\n`);
    child.kill('SIGHUP');
    const rejected = await poll((s) => s.last_load.status === 'rejected');
    expect(rejected.last_load.problems.join('\n')).toMatch(/weight/);
    expect(rejected.generation.number).toBe(1);
    writeFileSync(join(d, 'models.yaml'), `models:\n  - id: m\n    router: round_robin\n    route:\n      - base_url: ${emu.baseUrl}\n        weight: 2\n`);
    child.kill('SIGHUP');
    expect((await poll((s) => s.last_load.status === 'ok')).generation.number).toBe(2);

    child.kill('SIGTERM');
    expect(await exited).toBe(0);
  }, 60_000);
});

describe('merging worker snapshots', () => {
  const deep = (over: Partial<DeepHealth>): DeepHealth => ({ status: 'ok', in_flight: 0, models_unavailable: [], endpoints: [], route_exclusions: [], providers: {}, health_checks: [], ...over });
  const endpoint = (state: 'closed' | 'half_open' | 'open', availability: number) => ({ endpointId: 'm:a', state, availability, consecutiveFailures: 0, opened_at: null, open_for_ms: null, probeInFlight: false, claimsInFlight: 0 });

  it('/health/deep: worst status and breaker, summed in-flight, a missing worker named (status at least degraded)', () => {
    const a: WorkerSnapshot = { worker: 0, metrics: [], deep: deep({ in_flight: 2, endpoints: [endpoint('closed', 1)] }) };
    const b: WorkerSnapshot = { worker: 1, metrics: [], deep: deep({ status: 'degraded', in_flight: 3, endpoints: [endpoint('open', 0.4)], models_unavailable: ['m'] }) };
    const merged = mergeDeepHealth([a, b]);
    expect(merged).toMatchObject({ status: 'degraded', in_flight: 5, models_unavailable: ['m'], workers_missing: [] });
    expect(merged.endpoints).toEqual([endpoint('open', 0.4)]);
    const partial = mergeDeepHealth([a, { worker: 1, error: 'worker 1 did not answer within 2000 ms' }]);
    expect(partial).toMatchObject({ status: 'degraded', in_flight: 2, workers_missing: [1], workers: [{ worker: 0, status: 'ok', in_flight: 2 }] });
  });

  it('/metrics: counters summed; a missing worker is said in a comment and a gauge', async () => {
    const counter = (v: number) => [{ name: 'switchyard_requests_total', help: 'h', type: 'counter', aggregator: 'sum', values: [{ labels: { model: 'm' }, value: v }] }] as unknown as WorkerSnapshot['metrics'];
    const text = await aggregateMetricsText([
      { worker: 0, metrics: counter(113), deep: deep({}) },
      { worker: 1, metrics: counter(187), deep: deep({}) },
    ]);
    expect(text).toContain('switchyard_requests_total{model="m"} 300');
    expect(text).toContain('switchyard_workers_missing 0');
    const partial = await aggregateMetricsText([{ worker: 0, metrics: counter(113), deep: deep({}) }, { worker: 1, error: 'worker 1 did not answer within 2000 ms' }]);
    expect(partial).toMatch(/^# switchyard: worker\(s\) 1 did not answer; their counts are missing from this scrape/);
    expect(partial).toContain('switchyard_workers_missing 1');
  });
});
