// RouteWise quota sources and warm start in the gateway, on loopback with real engine emulators:
// the emulator's usage endpoint read by the example fetcher (registered with
// `registerQuotaFetcher`), a quota source that resolves and whose remaining quota moves routing,
// a misspelt one and one without a fetcher reported at start (warn line + gauge), a fetched
// limit that disagrees with the route's logged once, and a restart on the same request log that
// starts RouteWise warm — or refuses a quota-only model whose envelope it cannot calibrate.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { endpointId, RouteWisePlanner } from '../../core/index.ts';
import { hashKey } from '../../gateway/callers.ts';
import { buildGatewayConfig, type GatewayConfig } from '../../gateway/config/load.ts';
import { startGateway, type GatewayOptions, type RunningGateway } from '../../gateway/gateway.ts';
import { emulatorUsageFetcher } from '../../gateway/routewise/fetchers/emulator-usage.ts';
import { QuotaFetcherRegistry, registerQuotaFetcher } from '../../gateway/routewise/quota-fetchers.ts';
import { startEmulator, type EmulatorOptions, type RunningEmulator } from '../../simulator/emulator/emulator.ts';
import { hello, KEYS, servedEndpoint } from './harness.ts';

const DEAR = { input_usd_per_1m: 10, output_usd_per_1m: 20 };
const HOUR_MS = 3_600_000;
const dir = mkdtempSync(join(tmpdir(), 'switchyard-rw-quota-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

/** A pino logger whose lines land in `lines` (parsed). */
function capture(): { logger: pino.Logger; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      for (const l of String(chunk).split('\n')) if (l.trim()) lines.push(JSON.parse(l) as Record<string, unknown>);
      done();
    },
  });
  return { logger: pino({ level: 'info' }, sink), lines };
}

async function emulator(o: EmulatorOptions = {}): Promise<RunningEmulator> {
  const e = await startEmulator({ faults: { latency_scale: 0.05 }, ...o });
  cleanups.push(() => e.close());
  return e;
}

function config(routes: Array<Record<string, unknown>>, params: Record<string, unknown>, gateway: Record<string, unknown> = {}): GatewayConfig {
  return buildGatewayConfig({
    models: { models: [{ id: 'rw', router: 'routewise', router_params: params, route: routes }] },
    gateway: {
      routing_settings: { affinity_enabled: false, prefill_aware_enabled: false },
      health: { failure_threshold: 1000 },
      auth: { mode: 'keys', keys: [{ id: 'user', sha256: hashKey(KEYS.user), allowed_models: ['rw'] }] },
      ...gateway,
    },
  });
}

async function gateway(cfg: GatewayConfig, opts: Partial<GatewayOptions> = {}): Promise<RunningGateway> {
  // Polls only when the test asks (`pollQuotas`), apart from the one at start.
  const gw = await startGateway({ config: cfg, host: '127.0.0.1', port: 0, seed: 3, logger: pino({ level: 'silent' }), quotaPollMs: HOUR_MS, ...opts });
  cleanups.push(() => gw.close());
  return gw;
}

/** One chat request; returns the endpoint that served it. */
async function ask(gw: RunningGateway): Promise<string | null> {
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${KEYS.user}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'rw', messages: hello, max_tokens: 4 }),
  });
  expect(res.status).toBe(200);
  await res.json();
  return servedEndpoint(gw, res);
}

const planner = (gw: RunningGateway) => gw.core.model('rw')!.planner as RouteWisePlanner;
const idOf = (e: RunningEmulator) => endpointId('rw', 'openai_compat', e.baseUrl);
const quotaRoute = (e: RunningEmulator, label: string, provider = 'emu_quota', limit = 100) => ({
  base_url: e.baseUrl,
  provider_type: 'quota',
  quota: { limit, window_sec: 86_400 },
  quota_source: { provider, usage_label: label, unit: 'requests' },
});

describe('RouteWise quota sources through the emulator usage endpoint', () => {
  it('a resolved source plans with the remaining quota the provider reports', async () => {
    const q = await emulator({ seed: 1, usage: { provider: 'emu_quota', usageLabel: 'requests_daily', limit: 100, windowSec: 86_400 } });
    const api = await emulator({ seed: 2 });
    cleanups.push(registerQuotaFetcher(emulatorUsageFetcher({ provider: 'emu_quota', baseUrl: q.baseUrl })));
    const gw = await gateway(config([{ base_url: api.baseUrl, pricing: DEAR }, quotaRoute(q, 'requests_daily')], { budget_alpha: 0, envelope_min_samples: 1, min_samples: 1 }));
    expect(gw.quotaSources()).toEqual([{ model: 'rw', route: idOf(q), selector: { provider: 'emu_quota', usageLabel: 'requests_daily', unit: 'requests' }, resolved: true, reason: null }]);
    expect(await gw.metrics.registry.metrics()).toMatch(new RegExp(`switchyard_routewise_quota_source_unresolved\\{model="rw",route="${idOf(q)}"\\} 0`));

    // The envelope is calibrated by the first answer (on the API); then the quota route is cheapest.
    expect(await ask(gw)).toBe(idOf(api));
    expect(await ask(gw)).toBe(idOf(q));
    expect(await ask(gw)).toBe(idOf(q));

    // Other clients used the whole allowance: the next poll says so, and RouteWise moves off it.
    q.setUsageUsed(100);
    await gw.pollQuotas();
    expect(planner(gw).ledger.quotaSnapshot(idOf(q))).toMatchObject({ used: 100, limit: 100 });
    expect(await ask(gw)).toBe(idOf(api));
    expect(await ask(gw)).toBe(idOf(api));

    // The provider's window reset: back to the quota route.
    q.setUsageUsed(0);
    await gw.pollQuotas();
    expect(await ask(gw)).toBe(idOf(q));
    expect(q.usage()).toEqual({ used: 1, limit: 100 }); // the emulator's own count (after the reset)
  });

  it('a misspelt label and a provider without a fetcher are reported at start; neither route is used', async () => {
    const q = await emulator({ seed: 1, usage: { provider: 'emu_quota', usageLabel: 'requests_daily', limit: 100 } });
    const q2 = await emulator({ seed: 3 });
    const api = await emulator({ seed: 2 });
    cleanups.push(registerQuotaFetcher(emulatorUsageFetcher({ provider: 'emu_quota', baseUrl: q.baseUrl })));
    const { logger, lines } = capture();
    const gw = await gateway(config([{ base_url: api.baseUrl, pricing: DEAR }, quotaRoute(q, 'request_daily'), quotaRoute(q2, 'requests_daily', 'nobody')], { budget_alpha: 0, envelope_min_samples: 1, min_samples: 1 }), { logger });
    const warns = lines.filter((l) => l.msg === 'quota source unresolved; the route is skipped until it resolves');
    expect(warns.map((w) => w.route)).toEqual([idOf(q), idOf(q2)]);
    expect(warns[0]!.reason).toMatch(/returned no record with usage_label 'request_daily' and unit 'requests' \(it returned: requests_daily\/requests\)/);
    expect(warns[1]!.reason).toMatch(/no quota fetcher is registered for provider 'nobody'/);
    const text = await gw.metrics.registry.metrics();
    expect(text).toMatch(new RegExp(`switchyard_routewise_quota_source_unresolved\\{model="rw",route="${idOf(q)}"\\} 1`));
    expect(text).toMatch(new RegExp(`switchyard_routewise_quota_source_unresolved\\{model="rw",route="${idOf(q2)}"\\} 1`));
    for (let i = 0; i < 3; i++) expect(await ask(gw)).toBe(idOf(api));
    await gw.pollQuotas();
    // Reported once while it stays unresolved.
    expect(lines.filter((l) => l.msg === 'quota source unresolved; the route is skipped until it resolves')).toHaveLength(2);
  });

  it('a fetcher that never answers (and ignores its abort signal) does not hold the start; the source is reported', async () => {
    const q = await emulator({ seed: 1 });
    const api = await emulator({ seed: 2 });
    const fetchers = new QuotaFetcherRegistry();
    fetchers.register({ provider: 'stuck', fetch: () => new Promise(() => {}) });
    expect(() => fetchers.register({ provider: 'stuck', fetch: async () => [] })).toThrow(/provider 'stuck' already has a quota fetcher/);
    const { logger, lines } = capture();
    const gw = await gateway(config([{ base_url: api.baseUrl, pricing: DEAR }, quotaRoute(q, 'requests_daily', 'stuck')], {}), { logger, quotaFetchers: fetchers, quotaFetchTimeoutMs: 50 });
    expect(lines.find((l) => l.msg === 'quota refresh failed; the last records stay in use')).toMatchObject({ provider: 'stuck', reason: 'no answer within 50 ms' });
    expect(gw.quotaSources()[0]).toMatchObject({ resolved: false, reason: 'the fetch failed: no answer within 50 ms' });
    expect(await ask(gw)).toBe(idOf(api));
  });

  it('a fetched limit that disagrees with the route is logged once per change', async () => {
    const q = await emulator({ seed: 1, usage: { provider: 'emu_quota', usageLabel: 'requests_daily', limit: 500 } });
    const api = await emulator({ seed: 2 });
    cleanups.push(registerQuotaFetcher(emulatorUsageFetcher({ provider: 'emu_quota', baseUrl: q.baseUrl })));
    const { logger, lines } = capture();
    const gw = await gateway(config([{ base_url: api.baseUrl, pricing: DEAR }, quotaRoute(q, 'requests_daily', 'emu_quota', 100)], {}), { logger });
    await gw.pollQuotas();
    const diffs = lines.filter((l) => l.msg === 'quota limit differs from route; planning with the fetched limit');
    expect(diffs).toHaveLength(1);
    expect(diffs[0]).toMatchObject({ route: idOf(q), fetchedLimit: 500, configuredLimits: [100] });
    expect(planner(gw).ledger.quotaSnapshot(idOf(q))?.limit).toBe(500);

    // The provider goes away: the failure is logged once, and the last records stay in use.
    await q.close();
    await gw.pollQuotas();
    await gw.pollQuotas();
    const failed = lines.filter((l) => l.msg === 'quota refresh failed; the last records stay in use');
    expect(failed).toHaveLength(1);
    expect(failed[0]).toMatchObject({ provider: 'emu_quota' });
    expect(gw.quotaSources()[0]!.resolved).toBe(true);
  });

  it('a reload that brings a quota-only model with an uncalibrated envelope is refused; the old one stays', async () => {
    const api = await emulator({ seed: 2 });
    const q = await emulator({ seed: 1 });
    const gw = await gateway(config([{ base_url: api.baseUrl, pricing: DEAR }], {}));
    const quotaOnly = config([{ base_url: q.baseUrl, provider_type: 'quota', quota: { limit: 100, window_sec: 86_400 }, pricing: DEAR }], {});
    expect(() => gw.reload(quotaOnly)).toThrow(/model 'rw': routewise cannot route: every route is a quota route/);
    expect(await ask(gw)).toBe(idOf(api));
  });
});

describe('RouteWise warm start from the request log', () => {
  it('a restart on the same log starts with warm profiles, predictor and envelope', async () => {
    const a = await emulator({ seed: 1 });
    const b = await emulator({ seed: 2 });
    const path = join(dir, 'warm.duckdb');
    const cfg = config([{ base_url: a.baseUrl, pricing: { input_usd_per_1m: 1, output_usd_per_1m: 2 } }, { base_url: b.baseUrl, pricing: DEAR }], { min_samples: 1, budget_alpha: 1 }, { request_log: { path } });
    const first = await startGateway({ config: cfg, host: '127.0.0.1', port: 0, seed: 3, logger: pino({ level: 'silent' }) });
    expect(first.warmStart).toEqual([{ model: 'rw', replayed: 0 }]); // a new log: nothing to replay
    const served = new Map<string, number>();
    for (let i = 0; i < 8; i++) {
      const id = (await ask(first))!;
      served.set(id, (served.get(id) ?? 0) + 1);
    }
    await first.close();
    expect([...served.keys()].sort()).toEqual([idOf(a), idOf(b)].sort()); // α = 1 explored both

    const second = await gateway(cfg);
    expect(second.warmStart).toEqual([{ model: 'rw', replayed: 8 }]);
    const p = planner(second);
    const now = performance.now();
    for (const [id, n] of served) {
      expect(p.profile(id)!.counts(now)).toMatchObject({ successes: n, failures: 0 });
      expect(p.profile(id)!.meanIfProfiled(now, 1)).toBeGreaterThan(0);
    }
    expect(p.predictor.samples).toBe(8);
    expect(p.envelope.samples(now)).toBe(8);
    // Warm, the first decision is the LP's, not a cold start's.
    await ask(second);
    expect(p.lastDecision.reason).toMatch(/^routewise/);

    // With db_bootstrap_enabled: false the same log is left alone.
    await second.close();
    const cold = await gateway(config([{ base_url: a.baseUrl, pricing: { input_usd_per_1m: 1, output_usd_per_1m: 2 } }, { base_url: b.baseUrl, pricing: DEAR }], { db_bootstrap_enabled: false }, { request_log: { path } }));
    expect(cold.warmStart).toEqual([]);
    expect(planner(cold).profile(idOf(a))!.counts(performance.now()).successes).toBe(0);
  });

  it('a quota-only model whose envelope the log cannot calibrate refuses to start with EnvelopeNotCalibratedError', async () => {
    const q = await emulator({ seed: 1 });
    const path = join(dir, 'quota-only.duckdb');
    const cfg = config([{ base_url: q.baseUrl, provider_type: 'quota', quota: { limit: 100, window_sec: 86_400 }, pricing: DEAR }], { envelope_min_samples: 5 }, { request_log: { path } });
    const err = await startGateway({ config: cfg, host: '127.0.0.1', port: 0, logger: pino({ level: 'silent' }) }).then(
      () => null,
      (e: unknown) => e as Error,
    );
    expect(err?.name).toBe('EnvelopeNotCalibratedError');
    expect(err?.message).toMatch(/model 'rw': routewise cannot route: every route is a quota route .*0 of envelope_min_samples 5.*db_bootstrap_enabled: true/);

    // A run with an on-demand route beside it leaves enough history; then the quota-only model starts warm.
    const api = await emulator({ seed: 2 });
    const mixed = await startGateway({ config: config([{ base_url: api.baseUrl, pricing: DEAR }, { base_url: q.baseUrl, provider_type: 'quota', quota: { limit: 100, window_sec: 86_400 }, pricing: DEAR }], { envelope_min_samples: 5 }, { request_log: { path } }), host: '127.0.0.1', port: 0, logger: pino({ level: 'silent' }) });
    for (let i = 0; i < 6; i++) await ask(mixed);
    await mixed.close();
    const gw = await gateway(cfg);
    expect(gw.warmStart).toEqual([{ model: 'rw', replayed: 6 }]);
    expect(planner(gw).envelope.envelope(performance.now())).not.toBeNull();
    expect(await ask(gw)).toBe(idOf(q));
  });
});
