// `switchyard gateway --workers 2` with `state.backend: redis`: the worker threads of one process
// share their routing state through Redis as separate replicas do, so a model whose routing keeps
// state (a least_latency router) is served instead of refused, and the breaker of a failing
// upstream counts the failures of both workers together: with a threshold of 4 it opens after
// about 4 failures in all (each worker alone would need 4), while both workers carry traffic.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { hashKey } from '../../gateway/callers.ts';
import { freePort } from '../free-port.ts';
import { PROCESS_KEY, startCountingUpstream, startGatewayProcess, type CountingUpstream, type GatewayProcess } from './gateway-processes.ts';

const url = inject('redisUrl');
const skip = inject('redisSkip');
if (skip) console.warn(`worker shared-state tests skipped: ${skip}`);

const procs: GatewayProcess[] = [];
const ups: CountingUpstream[] = [];
const dirs: string[] = [];
afterAll(async () => {
  await Promise.all(procs.map((p) => p.stop()));
  await Promise.all(ups.map((u) => u.close()));
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** One chat request on a connection of its own (so the kernel may hand it to either worker); resolves with the status. */
function askOnNewConnection(base: string, model: string): Promise<number> {
  const body = JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 });
  return new Promise((resolve, reject) => {
    const req = request(`${base}/v1/chat/completions`, { method: 'POST', agent: false, headers: { authorization: `Bearer ${PROCESS_KEY}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), connection: 'close' } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end(body);
  });
}

describe.skipIf(!!skip)('--workers 2 sharing routing state through Redis', () => {
  it('serves a stateful model, and the workers open one breaker together', async () => {
    const bad = await startCountingUpstream(0, () => 500);
    const good = await startCountingUpstream(0);
    ups.push(bad, good);
    const dir = mkdtempSync(join(tmpdir(), 'switchyard-workers-'));
    dirs.push(dir);
    const port = await freePort();
    writeFileSync(
      join(dir, 'models.yaml'),
      [
        'models:',
        '  - id: m',
        '    route:',
        `      - base_url: ${bad.baseUrl}`,
        '        weight: 1000',
        `      - base_url: ${good.baseUrl}`,
        '        weight: 1',
        '  - id: ll',
        '    router: least_latency',
        '    route:',
        `      - base_url: ${good.baseUrl}`,
        '',
      ].join('\n'),
    );
    writeFileSync(
      join(dir, 'gateway.yaml'),
      [
        'server:',
        `  port: ${port}`,
        '  admin_port: off',
        '  workers: 2',
        '  seed: 1',
        '  log_level: warn',
        'auth:',
        '  keys:',
        `    - { id: t, sha256: ${hashKey(PROCESS_KEY)}, admin: true }`,
        'routing_settings:\n  affinity_enabled: false\n  prefill_aware_enabled: false',
        'health:\n  failure_threshold: 4\n  cooldown_sec: 600',
        `state:\n  backend: redis\n  url: ${url}\n  prefix: "wrk${process.pid}:"\n  acquire_timeout_ms: 200\n  max_staleness_ms: 200`,
        '',
      ].join('\n'),
    );
    const gw = await startGatewayProcess(dir);
    procs.push(gw);
    expect(gw.out()).toContain('2 worker(s)');
    expect(gw.out()).toContain('shared through Redis');
    expect(await askOnNewConnection(gw.url, 'll')).toBe(200);
    for (let i = 0; i < 40; i++) {
      expect(await askOnNewConnection(gw.url, 'm')).toBe(200);
      // Time for a worker's breaker facts to reach the other through Redis.
      await new Promise((r) => setTimeout(r, 30));
    }
    // Shared: the fourth failure in all opens the breaker on both workers (one more may race the
    // publication). Split per worker it would take four on each.
    expect(bad.hits).toBeGreaterThanOrEqual(4);
    expect(bad.hits).toBeLessThanOrEqual(5);
    // Both workers sent to the healthy upstream: each worker has its own connection pool, and
    // sequential requests reuse one pooled connection per worker.
    expect(good.connections).toBeGreaterThanOrEqual(2);
    const deep = (await (await fetch(`${gw.url}/health/deep`, { headers: { authorization: `Bearer ${PROCESS_KEY}` } })).json()) as { workers?: unknown[]; shared_state?: { status: string } };
    expect(deep.workers).toHaveLength(2);
    expect(deep.shared_state?.status).toBe('up');
  }, 60_000);
});
