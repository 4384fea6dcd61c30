// The console's live reads on a running gateway: GET /admin/health/endpoints (breaker,
// availability, claims, cooldown, outbound pool and engine hold per endpoint, with the models
// that use it) and GET /admin/routewise/profiles (each RouteWise route's learnt TTFT profile:
// counts, mean, age of the last observation, CDF at the profile's query points), and the
// gateway's own sampled history, GET /admin/health/history (bounded, aligned series). Admin only.
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { endpointId } from '../../core/index.ts';
import { HealthHistory, type EndpointLive } from '../../gateway/admin/live-views.ts';
import { hashKey } from '../../gateway/callers.ts';
import { buildGatewayConfig } from '../../gateway/config/load.ts';
import { startGateway } from '../../gateway/gateway.ts';
import { startEmulator } from '../../simulator/emulator/emulator.ts';
import { adminCall, weightPath } from '../store/harness-http.ts';
import { hello, KEYS, startStack, type Stack } from './harness.ts';

let stack: Stack | null = null;
afterEach(async () => {
  await stack?.close();
  stack = null;
});

describe('live admin views', () => {
  it('health/endpoints lists every endpoint with its breaker, pools and models; a drained route stays listed', async () => {
    stack = await startStack([{}, {}]);
    const { gw, ids } = stack;
    await stack.client().chat.completions.create({ model: 'demo', messages: hello, max_tokens: 2 });
    const r = await adminCall(gw.url, 'GET', '/admin/health/endpoints');
    expect(r.status).toBe(200);
    expect(r.body.at_unix_ms).toBeGreaterThan(0);
    const byId = new Map(r.body.endpoints.map((e: { endpoint_id: string }) => [e.endpoint_id, e]));
    for (const id of ids) {
      expect(byId.get(id)).toMatchObject({ endpoint_id: id, models: ['demo'], breaker: 'closed', availability: 1, consecutive_failures: 0, open_for_ms: null, probe_in_flight: false, claims_in_flight: 0, cooldown: { state: 'not_configured', reason: null, remaining_ms: null }, health_check: null });
    }
    // The one request so far was served by one of the two.
    expect(ids.map((id) => (byId.get(id) as { requests_served: number }).requests_served).sort()).toEqual([0, 1]);
    // Loopback upstreams are exempt from the outbound limiter.
    expect((byId.get(ids[0]!) as { outbound: unknown }).outbound).toBeNull();
    expect(r.body.probes).toMatchObject({ active: expect.any(Boolean) });
    expect((await adminCall(gw.url, 'PUT', weightPath('demo', ids[0]!), { body: { weight: 0 } })).status).toBe(200);
    const after = await adminCall(gw.url, 'GET', '/admin/health/endpoints');
    expect(after.body.endpoints.map((e: { endpoint_id: string }) => e.endpoint_id)).toEqual([...r.body.endpoints.map((e: { endpoint_id: string }) => e.endpoint_id)]);
    expect((await adminCall(gw.url, 'GET', '/admin/health/endpoints', { key: KEYS.user })).status).toBe(404);
    expect((await adminCall(gw.url, 'GET', '/admin/health/endpoints', { key: 'sk-wrong' })).status).toBe(401);
  });

  it('health/history holds the gateway\'s samples as aligned series; the ring keeps the newest', async () => {
    stack = await startStack([{}, {}]);
    const r = await adminCall(stack.gw.url, 'GET', '/admin/health/history');
    expect(r.status).toBe(200);
    expect(r.body.interval_ms).toBe(2000);
    expect(r.body.at_unix_ms.length).toBeGreaterThanOrEqual(1); // one sample at start
    for (const id of stack.ids) {
      const s = r.body.endpoints[id];
      for (const field of ['breaker', 'availability', 'claims_in_flight', 'requests_served', 'waiting']) expect(s[field], field).toHaveLength(r.body.at_unix_ms.length);
      expect(s.breaker[0]).toBe('closed');
    }
    const row = (id: string, served: number): EndpointLive => ({ endpoint_id: id, models: ['m'], provider: 'p', breaker: 'closed', availability: 1, consecutive_failures: 0, open_for_ms: null, probe_in_flight: false, claims_in_flight: 0, requests_served: served, cooldown: { state: 'not_configured', reason: null, remaining_ms: null }, outbound: { key: 'k', limit: 4, held: 1, waiting: 2 }, hold: null, health_check: null });
    const h = new HealthHistory(2);
    h.record(1, [row('a', 1)]);
    h.record(2, [row('a', 2), row('b', 5)]);
    h.record(3, [row('b', 6)]);
    expect(h.view(2000)).toEqual({
      interval_ms: 2000,
      at_unix_ms: [2, 3],
      endpoints: {
        a: { breaker: ['closed', null], availability: [1, null], claims_in_flight: [0, null], requests_served: [2, null], waiting: [2, null] },
        b: { breaker: ['closed', 'closed'], availability: [1, 1], claims_in_flight: [0, 0], requests_served: [5, 6], waiting: [2, 2] },
      },
    });
    expect(() => new HealthHistory(0)).toThrow(RangeError);
  });

  it('routewise/profiles reports the learnt profile of each RouteWise route, and nothing for other routers', async () => {
    const price = { input_usd_per_1m: 0.3, output_usd_per_1m: 1.2 };
    stack = await startStack([{}]);
    expect((await adminCall(stack.gw.url, 'GET', '/admin/routewise/profiles')).body.models).toEqual([]);
    await stack.close();
    stack = null;
    const emu = await startEmulator({ faults: { latency_scale: 0.02 } });
    const gw = await startGateway({
      config: buildGatewayConfig({
        models: { models: [{ id: 'rw', router: 'routewise', route: [{ base_url: emu.baseUrl, pricing: price }] }] },
        gateway: { auth: { mode: 'keys', keys: [{ id: 'admin', sha256: hashKey(KEYS.admin), admin: true }] } },
      }),
      host: '127.0.0.1',
      port: 0,
      seed: 3,
      logger: pino({ level: 'silent' }),
    });
    try {
      const id = endpointId('rw', 'openai_compat', emu.baseUrl);
      for (let i = 0; i < 3; i++) {
        const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${KEYS.admin}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'rw', messages: hello, max_tokens: 2 }) });
        expect(res.status).toBe(200);
        await res.text();
      }
      const r = await adminCall(gw.url, 'GET', '/admin/routewise/profiles');
      expect(r.status).toBe(200);
      expect(r.body.models).toHaveLength(1);
      const route = r.body.models[0].routes[0];
      expect(route).toMatchObject({ endpoint_id: id, successes: 3, failures: 0, censored: 0 });
      expect(route.mean_ttft_ms).toBeGreaterThan(0);
      expect(route.last_observed_age_ms).toBeGreaterThanOrEqual(0);
      // Hedging is off by default: the profile's one query point is the SLO (3000 ms), where all three answered.
      expect(route.cdf).toEqual([{ ttft_ms: 3000, probability: 1 }]);
    } finally {
      await gw.close();
      await emu.close();
    }
  });
});
