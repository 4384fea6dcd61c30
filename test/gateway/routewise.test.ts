// RouteWise in the gateway, on loopback with real engine emulators: the per-request budget
// header (`x-switchyard-budget-alpha`, via the official `openai` client), the idle-route prober
// (1-token probes, one in flight per process, stopped on drain and re-made on reload), and the
// worker-scope refusal of quota / concurrency routes at start and on reload.
import OpenAI from 'openai';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { BUDGET_ALPHA_HEADER, endpointId, RouteWisePlanner } from '../../core/index.ts';
import { hashKey } from '../../gateway/callers.ts';
import { buildGatewayConfig, ConfigError, type GatewayConfig } from '../../gateway/config/load.ts';
import { startGateway, type GatewayOptions, type RunningGateway } from '../../gateway/gateway.ts';
import { parseBudgetAlphaHeader } from '../../gateway/routewise/budget-alpha.ts';
import { startEmulator, type RunningEmulator } from '../../simulator/emulator/emulator.ts';
import type { RequestRecord } from '../../simulator/emulator/request-log.ts';
import { hello, KEYS, servedEndpoint } from './harness.ts';

const CHEAP = { input_usd_per_1m: 1, output_usd_per_1m: 2 };
const DEAR = { input_usd_per_1m: 10, output_usd_per_1m: 20 };

interface RwStack {
  gw: RunningGateway;
  emus: RunningEmulator[];
  ids: string[];
  config: GatewayConfig;
  planner(): RouteWisePlanner;
  client(opts?: { defaultHeaders?: Record<string, string> }): OpenAI;
  close(): Promise<void>;
}

let stack: RwStack | null = null;
afterEach(async () => {
  await stack?.close();
  stack = null;
});

/** Model `rw` (router routewise) over one route per entry of `routes` (extra route fields). */
function rwConfig(emus: RunningEmulator[], params: Record<string, unknown>, routes: Array<Record<string, unknown>>, server: Record<string, unknown> = {}): GatewayConfig {
  return buildGatewayConfig({
    models: { models: [{ id: 'rw', router: 'routewise', router_params: params, route: routes.map((r, i) => ({ base_url: emus[i]!.baseUrl, ...r })) }] },
    gateway: {
      routing_settings: { affinity_enabled: false, prefill_aware_enabled: false },
      health: { failure_threshold: 1000 },
      server,
      auth: { mode: 'keys', keys: [{ id: 'user', sha256: hashKey(KEYS.user), allowed_models: ['rw'] }, { id: 'admin', sha256: hashKey(KEYS.admin), admin: true }] },
    },
  });
}

async function startRw(routes: Array<Record<string, unknown>>, params: Record<string, unknown>, opts: { latencyScale?: number; gw?: Partial<GatewayOptions> } = {}): Promise<RwStack> {
  const emus = await Promise.all(routes.map((_, i) => startEmulator({ seed: i + 1, faults: { latency_scale: opts.latencyScale ?? 0.05 } })));
  const config = rwConfig(emus, params, routes);
  const gw = await startGateway({ config, host: '127.0.0.1', port: 0, seed: 7, logger: pino({ level: 'silent' }), ...opts.gw });
  return {
    gw,
    emus,
    ids: emus.map((e) => endpointId('rw', 'openai_compat', e.baseUrl)),
    config,
    planner: () => gw.core.model('rw')!.planner as RouteWisePlanner,
    client: (o = {}) => new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: KEYS.user, maxRetries: 0, timeout: 10_000, ...o }),
    async close() {
      await gw.close();
      await Promise.all(emus.map((e) => e.close()));
    },
  };
}

async function until(cond: () => boolean, timeoutMs = 5_000, what = 'condition'): Promise<void> {
  const end = performance.now() + timeoutMs;
  while (!cond()) {
    if (performance.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

const isProbe = (r: RequestRecord) => typeof r.requestId === 'string' && r.requestId.startsWith('probe-');

describe('x-switchyard-budget-alpha', () => {
  it('parses plain decimals in [0, 1] only', () => {
    for (const [raw, alpha] of [['0', 0], ['1', 1], ['0.25', 0.25], [' .5 ', 0.5], ['5e-1', 0.5], ['1.0', 1]] as const) {
      expect(parseBudgetAlphaHeader(raw)).toEqual({ kind: 'ok', alpha });
    }
    expect(parseBudgetAlphaHeader('')).toEqual({ kind: 'absent' });
    for (const raw of ['abc', '1.5', '-0.1', 'NaN', 'Infinity', '0x1', '1e3', '0.5.5', ' ']) {
      const r = parseBudgetAlphaHeader(raw);
      expect(r.kind, raw).toBe('invalid');
      if (r.kind === 'invalid') expect(r.message).toMatch(/x-switchyard-budget-alpha.*\[0, 1\]/);
    }
  });

  it('overrides the model budget_alpha per request (openai client, default and per-request headers)', async () => {
    // Model α = 0 (cheapest only); min_samples 1 so one answer profiles a route.
    stack = await startRw([{ pricing: CHEAP }, { pricing: DEAR }], { budget_alpha: 0, min_samples: 1 });
    const [cheap, dear] = stack.ids as [string, string];
    const ask = async (client: OpenAI, headers?: Record<string, string>) => {
      const { data, response } = await client.chat.completions.create({ model: 'rw', messages: hello, max_tokens: 4 }, headers ? { headers } : {}).withResponse();
      expect(data.choices[0]!.message.content).toBeTruthy();
      return servedEndpoint(stack!.gw, response);
    };

    // No header: cold start on the cheapest route at the model's α.
    expect(await ask(stack.client())).toBe(cheap);
    expect(stack.planner().lastDecision).toMatchObject({ alpha: 0, reason: 'cold_start' });

    // α = 1 from the client's default headers: the dear route fits the budget, so it is explored.
    const generous = stack.client({ defaultHeaders: { [BUDGET_ALPHA_HEADER]: '1' } });
    expect(await ask(generous)).toBe(dear);
    expect(stack.planner().lastDecision).toMatchObject({ alpha: 1, reason: 'explore' });

    // A per-request header beats the default one: α = 0 puts only the cheap route in budget.
    expect(await ask(generous, { [BUDGET_ALPHA_HEADER]: '0' })).toBe(cheap);
    expect(stack.planner().lastDecision).toMatchObject({ alpha: 0, reason: 'routewise' });

    // An in-between value arrives as given.
    await ask(stack.client(), { [BUDGET_ALPHA_HEADER]: '0.35' });
    expect(stack.planner().lastDecision.alpha).toBe(0.35);
  });

  it('a malformed value gets 400 naming the header and the range; nothing goes upstream', async () => {
    stack = await startRw([{ pricing: CHEAP }, { pricing: DEAR }], {});
    const client = stack.client();
    for (const bad of ['abc', '1.5', '-0.1', 'NaN', '0x1']) {
      const err = await client.chat.completions.create({ model: 'rw', messages: hello }, { headers: { [BUDGET_ALPHA_HEADER]: bad } }).catch((e: unknown) => e);
      expect(err, bad).toBeInstanceOf(OpenAI.BadRequestError);
      const e = err as InstanceType<typeof OpenAI.BadRequestError>;
      expect(e.status).toBe(400);
      expect(e.message).toContain(BUDGET_ALPHA_HEADER);
      expect(e.message).toContain('[0, 1]');
      expect(e.param).toBe(BUDGET_ALPHA_HEADER);
      expect(e.code).toBe('invalid_request');
    }
    const res = await fetch(`${stack.gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEYS.user}`, 'content-type': 'application/json', [BUDGET_ALPHA_HEADER]: '2' },
      body: JSON.stringify({ model: 'rw', messages: hello }),
    });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: Record<string, unknown> };
    expect(body.error).toMatchObject({ type: 'invalid_request_error', param: BUDGET_ALPHA_HEADER, code: 'invalid_request' });
    expect(String(body.error.message)).toMatch(/'x-switchyard-budget-alpha' header "2": expected a number in the range \[0, 1\]/);
    expect(stack.emus.reduce((n, e) => n + e.log.all().length, 0)).toBe(0);
  });
});

describe('RouteWise prober', () => {
  const PROBING = { probe_enabled: true, probe_idle_sec: 0.2, probe_interval_sec: 0.001, min_samples: 1 };

  it('schema defaults stay 900 s idle / 300 s interval', async () => {
    const { parseRouteWiseParams } = await import('../../core/index.ts');
    expect(parseRouteWiseParams({})).toMatchObject({ probe_enabled: false, probe_idle_sec: 900, probe_interval_sec: 300, probe_max_concurrency: 1 });
  });

  it('sends 1-token stream probes to idle routes, one at a time; the profile gains samples; not client requests', async () => {
    // Slow-ish engines so that ungated probes would overlap; a 2 ms tick asks often.
    stack = await startRw([{ pricing: CHEAP }, { pricing: DEAR }, { pricing: DEAR }], PROBING, { latencyScale: 1, gw: { probeTickMs: 2 } });
    const [, idle] = stack.ids as [string, string, string];
    const planner = stack.planner();
    expect(planner.profile(idle)!.observations(performance.now())).toBe(0);
    expect(stack.gw.probes()).toMatchObject({ active: true, tickMs: 2 });

    const probe = await stack.emus[1]!.log.waitFor((r) => isProbe(r) && r.outcome !== null, 10_000);
    expect(probe.body).toMatchObject({ model: 'rw', max_tokens: 1, stream: true, messages: [{ role: 'user' }] });
    expect(probe.stream).toBe(true);
    expect(probe.outcome).toBe('ok');
    expect(probe.tokensSent).toBe(1);
    await until(() => planner.profile(idle)!.observations(performance.now()) >= 1, 5_000, 'a profile sample on the idle route');
    expect(planner.profile(idle)!.successes(performance.now())).toBeGreaterThanOrEqual(1);
    expect(Number.isFinite(planner.profile(idle)!.lastObservedMs)).toBe(true);

    // Let a few more rounds run, then check nothing ever overlapped.
    await until(() => stack!.gw.probes().sent >= 5, 10_000, 'five probes');
    const status = stack.gw.probes();
    expect(status.maxInFlight).toBe(1);
    expect(status.inFlight).toBeLessThanOrEqual(1);
    const done = stack.emus
      .flatMap((e) => e.log.all().filter(isProbe))
      .filter((r) => r.endedAtMs !== null)
      .sort((a, b) => a.receivedAtMs - b.receivedAtMs);
    expect(done.length).toBeGreaterThanOrEqual(4);
    for (let i = 1; i < done.length; i++) expect(done[i]!.receivedAtMs).toBeGreaterThanOrEqual(done[i - 1]!.endedAtMs!);
    // Every probe the upstreams saw was a probe: no client request was made.
    expect(stack.emus.every((e) => e.log.all().every(isProbe))).toBe(true);

    // Metrics: probes under their own family, never as client requests.
    const text = await stack.gw.metrics.registry.metrics();
    expect(text).toMatch(new RegExp(`switchyard_probes_total\\{model="rw",endpoint="${idle.replace(/[|.]/g, '\\$&')}",result="ok"\\} [1-9]`));
    expect(text).toMatch(/switchyard_probe_ttft_seconds_count\{model="rw"/);
    expect(text).not.toMatch(/switchyard_requests_total\{model="rw"/);
  });

  it('a failing route is probed too and recorded as a failure', async () => {
    stack = await startRw([{ pricing: CHEAP }, { pricing: DEAR }], PROBING, { gw: { probeTickMs: 2 } });
    const [, broken] = stack.ids as [string, string];
    stack.emus[1]!.setFaults({ error_rate: 1 });
    await until(() => stack!.planner().profile(broken)!.counts(performance.now()).failures >= 1, 10_000, 'a failure sample');
    const text = await stack.gw.metrics.registry.metrics();
    expect(text).toMatch(/switchyard_probes_total\{model="rw",endpoint="[^"]+",result="failed"\} [1-9]/);
  });

  it('no prober without probe_enabled; reload stops and re-creates it; drain stops it', async () => {
    stack = await startRw([{ pricing: CHEAP }, { pricing: DEAR }], { min_samples: 1 }, { gw: { probeTickMs: 2 } });
    expect(stack.gw.probes()).toMatchObject({ active: false, tickMs: null, sent: 0 });

    stack.gw.reload(rwConfig(stack.emus, PROBING, [{ pricing: CHEAP }, { pricing: DEAR }]));
    expect(stack.gw.probes().active).toBe(true);
    await until(() => stack!.gw.probes().sent >= 1, 10_000, 'a probe after reload');
    // The new generation's planner learnt from it.
    await until(() => stack!.ids.some((id) => stack!.planner().profile(id)!.observations(performance.now()) > 0), 5_000, 'a sample in the new planner');

    stack.gw.reload(rwConfig(stack.emus, { min_samples: 1 }, [{ pricing: CHEAP }, { pricing: DEAR }]));
    expect(stack.gw.probes().active).toBe(false);
    await until(() => stack!.gw.probes().inFlight === 0, 5_000, 'the last probe to end');
    const sent = stack.gw.probes().sent;
    await new Promise((r) => setTimeout(r, 100));
    expect(stack.gw.probes().sent).toBe(sent);

    stack.gw.reload(rwConfig(stack.emus, PROBING, [{ pricing: CHEAP }, { pricing: DEAR }]));
    expect(stack.gw.probes().active).toBe(true);
    await until(() => stack!.gw.probes().sent > sent, 10_000, 'probing to resume');
    await stack.gw.drain(1_000);
    expect(stack.gw.probes().active).toBe(false);
    const after = stack.gw.probes().sent;
    await new Promise((r) => setTimeout(r, 100));
    expect(stack.gw.probes().sent).toBe(after);
  });
});

describe('worker scope', () => {
  const routes = [
    { pricing: CHEAP },
    { provider_type: 'quota', quota: { limit: 100, window_sec: 3600 } },
    { provider_type: 'concurrency', concurrency: { limit: 2 } },
  ];

  it('quota / concurrency routes refuse more than one worker at load, naming model, routes and fix', async () => {
    const emus = await Promise.all(routes.map(() => startEmulator({})));
    try {
      const ids = emus.map((e) => endpointId('rw', 'openai_compat', e.baseUrl));
      let err: unknown = null;
      try {
        rwConfig(emus, {}, routes, { workers: 2 });
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(ConfigError);
      const p = (err as ConfigError).problems.find((x) => x.field === 'server.workers')!;
      expect(p.message).toContain("model 'rw' (router routewise; quota/concurrency routes");
      expect(p.message).toContain(`${ids[1]}, ${ids[2]} keep process-local reservations`);
      expect(p.message).not.toContain(ids[0]!);
      expect(p.fix).toMatch(/server\.workers: 1 \(or --workers 1\)/);
    } finally {
      await Promise.all(emus.map((e) => e.close()));
    }
  });

  it('start and reload refuse a worker count the state cannot take; a refused reload keeps the old configuration', async () => {
    stack = await startRw([{ pricing: CHEAP }, { pricing: DEAR }], { min_samples: 1 });
    const before = stack.gw.core;
    const emus = await Promise.all(routes.map(() => startEmulator({})));
    try {
      const ids = emus.map((e) => endpointId('rw', 'openai_compat', e.baseUrl));
      const one = rwConfig(emus, {}, routes);
      // As the CLI does with --workers: the override comes after the file's checks.
      const two: GatewayConfig = { ...one, settings: { ...one.settings, server: { ...one.settings.server, workers: 2 } } };
      expect(() => stack!.gw.reload(two)).toThrow(new RegExp(`model 'rw' \\(router routewise; quota/concurrency routes .*${ids[1]!.replace(/[|.]/g, '\\$&')}.*fix: share the routing state through Redis.*set server\\.workers: 1`));
      expect(stack.gw.core).toBe(before);
      const { response } = await stack.client().chat.completions.create({ model: 'rw', messages: hello, max_tokens: 2 }).withResponse();
      expect(stack.ids).toContain(await servedEndpoint(stack.gw, response));

      await expect(startGateway({ config: two, host: '127.0.0.1', port: 0, logger: pino({ level: 'silent' }) })).rejects.toThrow(/quota\/concurrency routes .* keep process-local reservations\) — fix: share the routing state through Redis.*set server\.workers: 1/);

      // One worker: accepted; the planner agrees on which routes are stateful.
      stack.gw.reload(one);
      const planner = stack.planner();
      expect(planner.statefulRoutes()).toEqual([ids[1], ids[2]]);
      expect(() => planner.assertWorkerScope(2)).toThrow(/quota\/concurrency routes/);
    } finally {
      await Promise.all(emus.map((e) => e.close()));
    }
  });
});

describe('hedging through the gateway (hedge: probability)', () => {
  it('a primary past its checkpoint is hedged: the backup answers the client, the primary is cancelled upstream', async () => {
    stack = await startRw([{ pricing: CHEAP }, { pricing: DEAR }], { hedge: 'probability', budget_alpha: 0, slo_ms: 1000 });
    const [cheap, dear] = stack.ids as [string, string];
    const planner = stack.planner();
    // Profiles as if observed: the cheap route answers in 50 ms 8 times in 10 and takes 5 s
    // otherwise; the dear one always answers in 50 ms. So at α = 0 the cheap route is primary and
    // the plan hedges to the dear one at the latest checkpoint (0.9 × 1,000 ms).
    const now = performance.now();
    for (let i = 0; i < 10; i++) {
      planner.onFirstToken(cheap, i % 5 === 0 ? 5_000 : 50, now);
      planner.onFirstToken(dear, 50, now);
    }
    stack.emus[0]!.setFaults({ first_token_stall_ms: 5_000 }); // this time the cheap route is slow
    const t0 = performance.now();
    const raw = await fetch(`${stack.gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEYS.user}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'rw', messages: hello, max_tokens: 3, stream: true }),
    });
    const body = await raw.text();
    const elapsedMs = performance.now() - t0;
    expect(raw.status).toBe(200);
    expect(await servedEndpoint(stack.gw, raw)).toBe(dear);
    expect(body.trim().endsWith('data: [DONE]')).toBe(true);
    expect(elapsedMs).toBeGreaterThanOrEqual(850); // the hedge waited for its checkpoint …
    expect(elapsedMs).toBeLessThan(4_000); // … and did not wait for the slow primary
    // Both routes received the request; the primary's upstream request was cancelled.
    await until(() => stack!.emus[0]!.log.all().some((r) => !isProbe(r) && r.endedAtMs !== null), 5_000, 'primary attempt ended upstream');
    const primary = stack.emus[0]!.log.all().filter((r) => !isProbe(r));
    expect(primary).toHaveLength(1);
    expect(primary[0]!.firstTokenAtMs).toBeNull();
    expect(stack.emus[1]!.log.all().filter((r) => !isProbe(r))).toHaveLength(1);
    expect(planner.profile(cheap)!.counts(performance.now()).censored).toBe(1); // the loser, as a censored TTFT
  });
});
