// Three gateways in one process sharing state through the run's redis-server, in front of fake
// upstreams that count what reaches them, driven with the official `openai` client: a RouteWise
// quota route (25 requests per window) serves at most 25 requests across the replicas and the
// rest go to the on-demand route; a concurrency route's slots hold across the replicas (counted
// at its upstream) and every hold is given back once, whether the attempt succeeded, failed or
// its client left; a multi-target target's rate limit holds across them. Every request gets
// exactly one answer. Last: Redis killed under load loses no request.
import { spawnSync } from 'node:child_process';
import type { Socket } from 'node:net';
import OpenAI from 'openai';
import pino from 'pino';
import { afterEach, describe, expect, inject, it, vi } from 'vitest';
import { hashKey } from '../../gateway/callers.ts';
import { buildGatewayConfig } from '../../gateway/config/load.ts';
import { startGateway, type RunningGateway } from '../../gateway/gateway.ts';
import { hello, KEYS, rawJson, startRawUpstream, type RawUpstream } from '../gateway/harness.ts';
import { startRedis } from './redis-server.ts';

const url = inject('redisUrl');
const skip = inject('redisSkip');
if (skip) console.warn(`shared quota path tests skipped: ${skip}`);

const COMPLETION = { id: 'c', object: 'chat.completion', created: 0, model: 'up', choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' }], usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 } };
const DEAR = { input_usd_per_1m: 10, output_usd_per_1m: 20 };

/** A fake upstream answering every request after `delayMs`, counting hits and the most in flight at once. */
async function counting(delayMs = 0): Promise<RawUpstream & { hits: number; maxInFlight: number }> {
  let inFlight = 0;
  const u = {
    hits: 0,
    maxInFlight: 0,
    ...(await startRawUpstream((sock: Socket) => {
      u.hits++;
      inFlight++;
      u.maxInFlight = Math.max(u.maxInFlight, inFlight);
      setTimeout(() => {
        inFlight--;
        if (!sock.destroyed) sock.write(rawJson(200, COMPLETION));
      }, delayMs);
    })),
  };
  return u;
}

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of closers.splice(0).reverse()) await c();
});

async function replicas(models: unknown[], prefix: string): Promise<RunningGateway[]> {
  const gws: RunningGateway[] = [];
  for (let i = 0; i < 3; i++) {
    const config = buildGatewayConfig({
      models: { models },
      gateway: {
        routing_settings: { affinity_enabled: false, prefill_aware_enabled: false },
        health: { failure_threshold: 1000 },
        state: { backend: 'redis', url, prefix, acquire_timeout_ms: 500, max_staleness_ms: 200 },
        auth: { mode: 'keys', keys: [{ id: 'user', sha256: hashKey(KEYS.user) }, { id: 'admin', sha256: hashKey(KEYS.admin), admin: true }] },
      },
    });
    const gw = await startGateway({ config, host: '127.0.0.1', port: 0, seed: 7 + i, logger: pino({ level: 'silent' }) });
    closers.push(() => gw.close());
    gws.push(gw);
  }
  return gws;
}

const clientOf = (gw: RunningGateway) => new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: KEYS.user, maxRetries: 0, timeout: 20_000 });

/** `perReplica` concurrent requests on each replica at once; every one's status (200, or the error's). */
async function load(gws: RunningGateway[], model: string, perReplica: number): Promise<number[]> {
  const clients = gws.map(clientOf);
  const one = async (c: OpenAI) => {
    try {
      const r = await c.chat.completions.create({ model, messages: hello, max_tokens: 5 });
      return r.choices[0]!.message.content === 'hi' ? 200 : -1;
    } catch (e) {
      return (e as { status?: number }).status ?? -2;
    }
  };
  return Promise.all(clients.flatMap((c) => Array.from({ length: perReplica }, () => one(c))));
}

/** RouteWise model `rw`: `first` (a subscription route) preferred, then a priced on-demand route. */
function rwModel(first: Record<string, unknown>, api: RawUpstream) {
  return {
    id: 'rw',
    router: 'routewise',
    // Calibrated after one answer; never profiled (so the cheapest eligible route is taken); no exploration leases.
    router_params: { budget_alpha: 0, envelope_min_samples: 1, min_samples: 100_000, cold_start_lease_sec: 0, stateful_providers_single_worker_only: false },
    route: [first, { base_url: api.baseUrl, pricing: DEAR }],
  };
}

describe.skipIf(!!skip)('RouteWise and target limits shared across three replicas', () => {
  it('a quota of 25 requests per window serves at most 25 across the replicas; the rest go on demand', async () => {
    const quota = await counting();
    const api = await counting();
    closers.push(() => quota.close(), () => api.close());
    const gws = await replicas([rwModel({ base_url: quota.baseUrl, provider_type: 'quota', quota: { limit: 25, window_sec: 3600 }, pricing: DEAR }, api)], `rwq${process.pid}:`);
    // One answer per replica calibrates its cost envelope (the quota route is masked until then).
    expect(await load(gws, 'rw', 1)).toEqual([200, 200, 200]);
    const warm = api.hits + quota.hits;
    const statuses = await load(gws, 'rw', 40);
    expect(statuses).toHaveLength(120);
    expect(statuses.filter((s) => s !== 200)).toEqual([]);
    expect(quota.hits).toBeLessThanOrEqual(25);
    expect(quota.hits).toBeGreaterThan(8); // more than one replica's local share: the quota was shared, not split
    expect(quota.hits + api.hits).toBe(120 + warm); // one upstream call per request: a refused unit never went out
    // Later requests find the window spent too (from Redis or from the mirror it fed back).
    expect(await load(gws, 'rw', 5)).toEqual(Array.from({ length: 15 }, () => 200));
    expect(quota.hits).toBeLessThanOrEqual(25);
    const refusedOf = async (gw: RunningGateway) => Number(/switchyard_shared_units_refused_total\{unit="quota"\} (\d+)/.exec(await gw.metrics.registry.metrics())?.[1] ?? 0);
    const refused = (await Promise.all(gws.map(refusedOf))).reduce((a, b) => a + b, 0);
    expect(refused).toBeGreaterThan(0); // the replicas' local ledgers alone would have sent more
    if (process.env.SY_PRINT) console.log(`quota route ${quota.hits}, on demand ${api.hits}, refused by Redis ${refused}`);
  });

  it('a concurrency route of 4 slots never has more than 4 requests in flight across the replicas', async () => {
    const slots = await counting(60);
    const api = await counting();
    closers.push(() => slots.close(), () => api.close());
    const gws = await replicas([rwModel({ base_url: slots.baseUrl, provider_type: 'concurrency', concurrency: { limit: 4 } }, api)], `rwc${process.pid}:`);
    await load(gws, 'rw', 1);
    const statuses = await load(gws, 'rw', 40);
    expect(statuses.filter((s) => s !== 200)).toEqual([]);
    expect(slots.maxInFlight).toBeLessThanOrEqual(4);
    expect(slots.hits).toBeGreaterThan(4);
    if (process.env.SY_PRINT) console.log(`concurrency route ${slots.hits} hits, at most ${slots.maxInFlight} in flight; on demand ${api.hits}`);
    // Every hold was given back: a second burst uses the slots again.
    const before = slots.hits;
    await vi.waitFor(() => expect(gws.every((g) => g.sharedUnitsLive() === 0)).toBe(true));
    await load(gws, 'rw', 10);
    expect(slots.hits).toBeGreaterThan(before);
    expect(slots.maxInFlight).toBeLessThanOrEqual(4);
  });

  it('gives every concurrency hold back exactly once: on success, on upstream failure, on client abort', async () => {
    let k = 0;
    const slots = await startRawUpstream((sock: Socket) => {
      const n = k++;
      setTimeout(() => !sock.destroyed && sock.write(n % 3 === 0 ? rawJson(500, { error: { message: 'boom' } }) : rawJson(200, COMPLETION)), 80);
    });
    const api = await counting();
    closers.push(() => slots.close(), () => api.close());
    const prefix = `rwh${process.pid}:`;
    const gws = await replicas([rwModel({ base_url: slots.baseUrl, provider_type: 'concurrency', concurrency: { limit: 6 } }, api)], prefix);
    await load(gws, 'rw', 1);
    const outcomes = await Promise.all(
      gws.flatMap((gw, i) =>
        Array.from({ length: 12 }, async (_, j) => {
          const abort = new AbortController();
          if (j % 4 === 0) setTimeout(() => abort.abort(), 30); // the client leaves while its attempt is upstream
          try {
            await clientOf(gw).chat.completions.create({ model: 'rw', messages: hello, max_tokens: 5 }, { signal: abort.signal });
            return 'ok';
          } catch (e) {
            return abort.signal.aborted ? 'aborted' : `error ${(e as Error).message} on replica ${i}`;
          }
        }),
      ),
    );
    expect(outcomes.filter((o) => o !== 'ok' && o !== 'aborted')).toEqual([]);
    expect(k).toBeGreaterThan(6); // the slots were used, some by attempts that failed (every third answer is a 500)
    expect(outcomes.filter((o) => o === 'aborted').length).toBeGreaterThan(0);
    await vi.waitFor(() => expect(gws.map((g) => g.sharedUnitsLive())).toEqual([0, 0, 0]));
    const { Redis } = await import('ioredis');
    const r = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0 });
    await r.connect();
    try {
      // Redis drops a holder set once its last hold is gone: none is left.
      await vi.waitFor(async () => expect(await r.keys(`${prefix}{cc:*`)).toEqual([]));
    } finally {
      r.disconnect();
    }
  });

  it("a target's rate limit (burst 10, 1 per minute) holds across the replicas; the rest fall to the next target", async () => {
    const a = await counting();
    const b = await counting();
    closers.push(() => a.close(), () => b.close());
    const gws = await replicas(
      [
        { id: 'a', route: [{ base_url: a.baseUrl }] },
        { id: 'b', route: [{ base_url: b.baseUrl }] },
        { id: 'g', routing: { targets: [{ model: 'a', rate_limit: { requests_per_minute: 1, burst: 10 } }, { model: 'b', priority: -1 }] } },
      ],
      `rwr${process.pid}:`,
    );
    const statuses = await load(gws, 'g', 40);
    expect(statuses.filter((s) => s !== 200)).toEqual([]);
    expect(a.hits).toBeLessThanOrEqual(11); // the burst, and at most one token refilled meanwhile
    expect(a.hits).toBeGreaterThanOrEqual(10);
    expect(a.hits + b.hits).toBe(120);
    if (process.env.SY_PRINT) console.log(`rate-limited target ${a.hits}, next target ${b.hits}`);
  });

  // Last: it stops and restarts the run's server.
  it('loses no request when Redis dies under load, and takes shared units again when it returns', async () => {
    const quota = await counting(5);
    const api = await counting(5);
    closers.push(() => quota.close(), () => api.close());
    const gws = await replicas([rwModel({ base_url: quota.baseUrl, provider_type: 'quota', quota: { limit: 1000, window_sec: 3600 }, pricing: DEAR }, api)], `rwk${process.pid}:`);
    await load(gws, 'rw', 1);
    const port = inject('redisPort');
    const during = load(gws, 'rw', 30);
    spawnSync('redis-cli', ['-p', String(port), 'shutdown', 'nosave']);
    const statuses = await during;
    statuses.push(...(await load(gws, 'rw', 10))); // on the local share
    const server = await startRedis(inject('redisBin'), port, inject('redisDir'));
    server.unref();
    await vi.waitFor(async () => {
      const deep = await Promise.all(gws.map(async (g) => (await (await fetch(`${g.url}/health/deep`, { headers: { authorization: `Bearer ${KEYS.admin}` } })).json()) as { shared_state: { status: string } }));
      expect(deep.map((d) => d.shared_state.status)).toEqual(['up', 'up', 'up']);
    }, { timeout: 15_000, interval: 100 });
    statuses.push(...(await load(gws, 'rw', 10)));
    expect(statuses).toHaveLength(150);
    expect(statuses.filter((s) => s !== 200)).toEqual([]);
    expect(quota.hits + api.hits).toBe(153);
    const fallbacks = await Promise.all(gws.map(async (g) => Number(/switchyard_shared_quota_fallbacks_total (\d+)/.exec(await g.metrics.registry.metrics())?.[1] ?? 0)));
    expect(fallbacks.some((f) => f > 0)).toBe(true); // takes answered from the local share while Redis was gone, counted
  });
});
