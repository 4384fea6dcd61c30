// Learned state on a live gateway across an unrelated admin change and a SIGHUP-style reload:
// a multi-target target's running cooldown stays in force (requests keep avoiding it), and a
// RouteWise model's latency profile keeps its learnt numbers. (Every kind of state and the
// fresh-start rules are covered on the core, test/core/generation-carry.test.ts.)
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { endpointId, type RouteWisePlanner } from '../../core/index.ts';
import { hashKey } from '../../gateway/callers.ts';
import { buildGatewayConfig } from '../../gateway/config/load.ts';
import { startGateway, type RunningGateway } from '../../gateway/gateway.ts';
import { startEmulator, type RunningEmulator } from '../../simulator/emulator/emulator.ts';
import { adminCall, weightPath } from '../store/harness-http.ts';
import { hello, KEYS, servedEndpoint } from './harness.ts';

let emus: RunningEmulator[] = [];
let gw: RunningGateway | null = null;

/** Direct models a (with a cooldown) and b, alias g over them, model c (two routes), RouteWise model rw. */
function config(cWeight = 1) {
  const [e0, e1] = emus.map((e) => e.baseUrl);
  const price = { input_usd_per_1m: 0.3, output_usd_per_1m: 1.2 };
  return buildGatewayConfig({
    models: {
      models: [
        { id: 'a', route: [{ base_url: e0 }], cooldown: { enabled: true, duration_sec: 600, consecutive_failures: 1 } },
        { id: 'b', route: [{ base_url: e1 }] },
        { id: 'g', routing: { targets: [{ model: 'a', weight: 1000 }, { model: 'b', weight: 1 }] } },
        { id: 'c', route: [{ base_url: e0, weight: cWeight }, { base_url: e1 }] },
        { id: 'rw', router: 'routewise', route: [{ base_url: e0, pricing: price }, { base_url: e1, pricing: price }] },
      ],
    },
    gateway: {
      routing_settings: { affinity_enabled: false, prefill_aware_enabled: false },
      auth: { mode: 'keys', keys: [{ id: 'admin', sha256: hashKey(KEYS.admin), admin: true }] },
    },
  });
}

beforeAll(async () => {
  emus = await Promise.all([0, 1].map(() => startEmulator({ faults: { latency_scale: 0.02 } })));
  gw = await startGateway({ config: config(), host: '127.0.0.1', port: 0, seed: 5, logger: pino({ level: 'silent' }) });
});
afterAll(async () => {
  await gw?.close();
  await Promise.all(emus.map((e) => e.close()));
});

describe('learned state on a live gateway', () => {
  it('a cooldown set before an unrelated admin change (and a reload) is still in force after it; a RouteWise profile keeps its numbers', async () => {
    const a = endpointId('a', 'openai_compat', emus[0]!.baseUrl);
    const b = endpointId('b', 'openai_compat', emus[1]!.baseUrl);
    const rwRoute = endpointId('rw', 'openai_compat', emus[0]!.baseUrl);
    const now = () => performance.now();
    gw!.core.cooldowns.record(a, { kind: 'transport', cause: 'reset' }, now());
    const profile = (gw!.core.model('rw')!.planner as RouteWisePlanner).profile(rwRoute)!;
    for (const ttftMs of [120, 180, 240]) profile.recordSuccess(ttftMs, now());
    const learnt = { counts: profile.counts(now()), meanMs: profile.meanMs(now()) };
    const servedBy = async (): Promise<string | null> => {
      const r = await fetch(`${gw!.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${KEYS.admin}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'g', messages: hello, max_tokens: 1 }) });
      expect(r.status).toBe(200);
      return servedEndpoint(gw!, r);
    };
    expect(await servedBy()).toBe(b); // a (weight 1000) is cooling down

    const c0 = endpointId('c', 'openai_compat', emus[0]!.baseUrl);
    const put = await adminCall(gw!.url, 'PUT', weightPath('c', c0), { body: { weight: 0 } });
    expect(put.status).toBe(200);
    const check = async () => {
      expect(gw!.core.cooldowns.status(a, now())).toMatchObject({ state: 'cooldown', reason: 'transport_error' });
      expect(await servedBy()).toBe(b);
      const p = (gw!.core.model('rw')!.planner as RouteWisePlanner).profile(rwRoute)!;
      expect({ counts: p.counts(now()), meanMs: p.meanMs(now()) }).toEqual(learnt);
    };
    await check();
    gw!.reload(config(2)); // SIGHUP with an unrelated weight changed
    expect(gw!.core.model('c')!.routes[0]!.configuredWeight).toBe(2);
    await check();
  });
});
