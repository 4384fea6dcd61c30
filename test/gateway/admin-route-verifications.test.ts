// The `…-verifications` twins of the runtime-route and offload writes against a real gateway on
// 127.0.0.1: a live upstream verifies, a closed port reports the failure, every validation
// answer (400 / 404 / 409, and 412 for a stale If-Match) equals the write's own, and nothing is saved — the route listing, the
// offload policies and the generation stay as they were, and the audit entries carry no change.
import { createServer } from 'node:net';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { endpointId } from '../../core/index.ts';
import { hashKey } from '../../gateway/callers.ts';
import { buildGatewayConfig } from '../../gateway/config/load.ts';
import { startGateway, type RunningGateway } from '../../gateway/gateway.ts';
import { startEmulator, type RunningEmulator } from '../../simulator/emulator/emulator.ts';
import { KEYS } from './harness.ts';
import { adminCall } from '../store/harness-http.ts';

async function closedPortUrl(): Promise<string> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as { port: number }).port;
  await new Promise((r) => s.close(r));
  return `http://127.0.0.1:${port}/v1`;
}

const M = 'org/demo';
const enc = encodeURIComponent;

describe('runtime-route verifications', () => {
  let emu: RunningEmulator;
  let spare: RunningEmulator;
  let dead: string;
  let dead2: string;
  let gw: RunningGateway;
  let live: string;
  let deadId: string;
  const call = (method: string, path: string, body?: unknown) => adminCall(gw.url, method, path, { body });
  const snapshot = async () => ({
    routes: (await call('GET', '/admin/routing/provider-routes')).body,
    offload: (await call('GET', '/admin/routing/offload-routes')).body,
    routing: (await call('GET', '/admin/routing')).body,
  });
  /** The twin answers a refused body exactly as its write does. */
  const sameRefusal = async (method: string, write: string, twin: string, body: unknown, status: number, code: string) => {
    const w = await call(method, write, body);
    const v = await call(method, twin, body);
    expect([w.status, w.body.error?.code], JSON.stringify(w.body)).toEqual([status, code]);
    expect(v).toEqual(w);
  };

  beforeAll(async () => {
    emu = await startEmulator({ faults: { latency_scale: 0.02 } });
    spare = await startEmulator({ faults: { latency_scale: 0.02 } });
    dead = await closedPortUrl();
    dead2 = await closedPortUrl();
    live = endpointId(M, 'openai_compat', emu.baseUrl);
    deadId = endpointId(M, 'openai_compat', dead);
    const config = buildGatewayConfig({
      models: { models: [{ id: M, route: [{ base_url: emu.baseUrl }, { base_url: dead }] }] },
      gateway: {
        routing_settings: { affinity_enabled: false, prefill_aware_enabled: false },
        auth: { mode: 'keys', keys: [{ id: 'admin', sha256: hashKey(KEYS.admin), admin: true }] },
      },
    });
    gw = await startGateway({ config, host: '127.0.0.1', port: 0, seed: 3, logger: pino({ level: 'silent' }) });
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all([emu?.close(), spare?.close()]);
  });

  it('POST provider-route-models-verifications tries the new route, and refuses as the write does', async () => {
    const before = await snapshot();
    const twin = '/admin/routing/provider-route-models-verifications';
    const ok = await call('POST', twin, { model_id: 'org/new', route: { route_id: 'first', base_url: spare.baseUrl } });
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    expect(ok.body).toMatchObject({ model_id: 'org/new', route_id: 'first', verified: true, saved: false });
    expect(ok.body.results).toEqual([{ endpoint_id: endpointId('org/new', 'openai_compat', spare.baseUrl), status: 'ok', http_status: 200, latency_ms: expect.any(Number), error: null }]);
    const down = await call('POST', `${twin}?timeout_ms=3000`, { model_id: 'org/new', route: { base_url: dead } });
    expect(down.body).toMatchObject({ verified: false, saved: false, results: [{ status: 'failed', http_status: null, error: 'connection refused' }] });
    const write = '/admin/routing/provider-route-models';
    await sameRefusal('POST', write, twin, { model_id: M, route: { base_url: spare.baseUrl } }, 409, 'model_exists');
    await sameRefusal('POST', write, twin, { model_id: 'org/x', route: { base_url: 'not a url' } }, 400, 'invalid_request');
    await sameRefusal('POST', write, twin, { model_id: 'auto', route: { base_url: spare.baseUrl } }, 400, 'invalid_request');
    const t = await call('POST', `${twin}?timeout_ms=0`, { model_id: 'org/new', route: { base_url: spare.baseUrl } });
    expect([t.status, t.body.error.param]).toEqual([400, 'timeout_ms']);
    expect(await snapshot()).toEqual(before);
  });

  it('POST provider-route-candidates-verifications/{model_id} takes the model id raw or encoded', async () => {
    const before = await snapshot();
    for (const name of [M, enc(M)]) {
      const ok = await call('POST', `/admin/routing/provider-route-candidates-verifications/${name}`, { route_id: 'extra', base_url: spare.baseUrl });
      expect(ok.status, JSON.stringify(ok.body)).toBe(200);
      expect(ok.body).toMatchObject({ model_id: M, route_id: 'extra', verified: true, saved: false, results: [{ endpoint_id: endpointId(M, 'openai_compat', spare.baseUrl), status: 'ok' }] });
    }
    const down = await call('POST', `/admin/routing/provider-route-candidates-verifications/${M}`, { base_url: dead2 });
    expect(down.body).toMatchObject({ verified: false, saved: false, results: [{ status: 'failed', error: 'connection refused' }] });
    const write = `/admin/routing/provider-route-candidates/${enc(M)}`;
    const twin = `/admin/routing/provider-route-candidates-verifications/${enc(M)}`;
    await sameRefusal('POST', write, twin, { base_url: spare.baseUrl, weight: -1 }, 400, 'invalid_request');
    await sameRefusal('POST', write, twin, { base_url: emu.baseUrl }, 409, 'route_exists');
    await sameRefusal('POST', write, twin, { route_id: 'other', base_url: emu.baseUrl }, 409, 'endpoint_exists');
    await sameRefusal('POST', '/admin/routing/provider-route-candidates/nope', '/admin/routing/provider-route-candidates-verifications/nope', { base_url: spare.baseUrl }, 404, 'model_not_found');
    expect(await snapshot()).toEqual(before);
  });

  it('PUT provider-routes-verifications/{model_id}/{route_id} tries the re-pointed upstream', async () => {
    const before = await snapshot();
    const twin = (route: string, model = M) => `/admin/routing/provider-routes-verifications/${model}/${enc(route)}`;
    const ok = await call('PUT', twin(deadId), { base_url: spare.baseUrl });
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    expect(ok.body).toMatchObject({ model_id: M, route_id: deadId, verified: true, saved: false, results: [{ endpoint_id: endpointId(M, 'openai_compat', spare.baseUrl), status: 'ok', http_status: 200 }] });
    const enc2 = await call('PUT', twin(deadId, enc(M)), { base_url: spare.baseUrl });
    expect(enc2.body.verified).toBe(true);
    const down = await call('PUT', twin(live), { base_url: dead2 });
    expect(down.body).toMatchObject({ verified: false, saved: false, results: [{ status: 'failed', error: 'connection refused' }] });
    const write = (route: string, model = M) => `/admin/routing/provider-routes/${model}/${enc(route)}`;
    await sameRefusal('PUT', write('nope'), twin('nope'), { base_url: spare.baseUrl }, 404, 'route_not_found');
    await sameRefusal('PUT', write(live, 'nope'), twin(live, 'nope'), { base_url: spare.baseUrl }, 404, 'model_not_found');
    await sameRefusal('PUT', write(live), twin(live), {}, 400, 'invalid_request');
    await sameRefusal('PUT', write(live), twin(live), { base_url: dead }, 409, 'endpoint_exists');
    await sameRefusal('PUT', write(live), twin(live), { base_url: spare.baseUrl, version: 7 }, 409, 'version_conflict');
    const w = await adminCall(gw.url, 'PUT', write(live), { body: { base_url: spare.baseUrl }, ifMatch: '"3"' });
    expect([w.status, w.body.error.code]).toEqual([412, 'precondition_failed']);
    expect(await adminCall(gw.url, 'PUT', twin(live), { body: { base_url: spare.baseUrl }, ifMatch: '"3"' })).toEqual(w);
    expect(await snapshot()).toEqual(before);
  });

  it("PUT offload-routes-verifications/{model_id} tries the offload route's upstream", async () => {
    const before = await snapshot();
    const twin = (model = enc(M)) => `/admin/routing/offload-routes-verifications/${model}`;
    const ok = await call('PUT', twin(M), { route_id: live, wait_sec: 5 });
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    expect(ok.body).toMatchObject({ model_id: M, route_id: live, verified: true, saved: false, results: [{ endpoint_id: live, status: 'ok' }] });
    const down = await call('PUT', twin(), { route_id: deadId, wait_sec: 5 });
    expect(down.body).toMatchObject({ verified: false, saved: false, results: [{ endpoint_id: deadId, status: 'failed', error: 'connection refused' }] });
    const write = (model = enc(M)) => `/admin/routing/offload-routes/${model}`;
    await sameRefusal('PUT', write(), twin(), { route_id: live, wait_sec: 0 }, 400, 'invalid_request');
    await sameRefusal('PUT', write(), twin(), { route_id: ' ', wait_sec: 5 }, 400, 'invalid_request');
    await sameRefusal('PUT', write(), twin(), { route_id: 'nope', wait_sec: 5 }, 404, 'route_not_found');
    await sameRefusal('PUT', write(), twin(), { route_id: live, wait_sec: 5, version: 2 }, 409, 'version_conflict');
    await sameRefusal('PUT', write('nope'), twin('nope'), { route_id: live, wait_sec: 5 }, 404, 'model_not_found');
    expect(await snapshot()).toEqual(before);
    expect(before.offload.policies).toEqual([]);
  });

  it('a twin writes only its audit entry, with no change in it', async () => {
    const audit = (await call('GET', '/admin/audit?limit=200')).body.entries as Array<{ method: string; path: string; status: number; before: unknown; after: unknown }>;
    const v = audit.filter((e) => e.path.includes('-verifications'));
    expect(new Set(v.map((e) => e.path.split('-verifications')[0]))).toEqual(
      new Set(['/admin/routing/provider-route-models', '/admin/routing/provider-route-candidates', '/admin/routing/provider-routes', '/admin/routing/offload-routes']),
    );
    for (const e of v) expect([e.before, e.after]).toEqual([null, null]);
    expect((await call('GET', '/admin/routing')).body.generation).toBe(1);
  });
});
