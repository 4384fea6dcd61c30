// The `…-verifications` twins against a real gateway on 127.0.0.1: one small
// request per upstream through the route's adapter, reporting status, latency and error for a
// live upstream, a closed port, an upstream answering 500 and one that never answers, and
// saving nothing (no overlay record, no new generation, no learned state); the same checks as
// the writes they twin; and `verifyUpstream` on a route that is not built yet.
import { createServer } from 'node:net';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { endpointId } from '../../core/index.ts';
import { hashKey } from '../../gateway/callers.ts';
import { buildGatewayConfig } from '../../gateway/config/load.ts';
import { startGateway, type RunningGateway } from '../../gateway/gateway.ts';
import { verifyUpstream } from '../../gateway/admin/verifications.ts';
import { startEmulator, type RunningEmulator } from '../../simulator/emulator/emulator.ts';
import { KEYS, rawJson, startRawUpstream, type RawUpstream } from './harness.ts';
import { adminCall, weightPath } from '../store/harness-http.ts';

async function closedPortUrl(): Promise<string> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as { port: number }).port;
  await new Promise((r) => s.close(r));
  return `http://127.0.0.1:${port}/v1`;
}

describe('verifications', () => {
  let emu: RunningEmulator;
  let failing: RawUpstream;
  let hanging: RawUpstream;
  let dead: string;
  let gw: RunningGateway;
  let ids: { live: string; dead: string; failing: string; hanging: string };
  const verifyPath = (id: string, q = '') => `${weightPath('demo', id).replace('/weights/', '/weights-verifications/')}${q}`;

  beforeAll(async () => {
    emu = await startEmulator({ faults: { latency_scale: 0.02 } });
    failing = await startRawUpstream((sock) => sock.write(rawJson(500, { error: { message: 'engine on fire', type: 'server_error' } })));
    hanging = await startRawUpstream(() => undefined);
    dead = await closedPortUrl();
    const urls = { live: emu.baseUrl, dead, failing: failing.baseUrl, hanging: hanging.baseUrl };
    ids = Object.fromEntries(Object.entries(urls).map(([k, u]) => [k, endpointId('demo', 'openai_compat', u)])) as typeof ids;
    const config = buildGatewayConfig({
      models: { models: [{ id: 'demo', route: Object.values(urls).map((u) => ({ base_url: u })) }] },
      gateway: {
        routing_settings: { affinity_enabled: false, prefill_aware_enabled: false },
        health: { failure_threshold: 1 },
        auth: { mode: 'keys', keys: [{ id: 'user', sha256: hashKey(KEYS.user) }, { id: 'admin', sha256: hashKey(KEYS.admin), admin: true }] },
      },
    });
    gw = await startGateway({ config, host: '127.0.0.1', port: 0, seed: 2, logger: pino({ level: 'silent' }) });
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all([emu?.close(), failing?.close(), hanging?.close()]);
  });

  it('a live upstream verifies; the answer has status, latency and no error, and nothing is saved', async () => {
    const r = await adminCall(gw.url, 'PUT', verifyPath(ids.live), { body: { weight: 0 } });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ model_id: 'demo', endpoint_id: ids.live, verified: true, saved: false });
    expect(r.body.results).toEqual([{ endpoint_id: ids.live, status: 'ok', http_status: 200, latency_ms: expect.any(Number), error: null }]);
    expect(r.body.results[0].latency_ms).toBeGreaterThanOrEqual(0);
  });

  it('a dead, a failing and a silent upstream report the failure, and change nothing', async () => {
    const routingBefore = (await adminCall(gw.url, 'GET', '/admin/routing')).body;
    const healthBefore = Object.values(ids).map((id) => gw.core.health.snapshotOf(id, performance.now()).state);
    const d = await adminCall(gw.url, 'PUT', verifyPath(ids.dead), { body: { weight: 5 } });
    expect(d.status).toBe(200);
    expect(d.body).toMatchObject({ verified: false, saved: false, results: [{ endpoint_id: ids.dead, status: 'failed', http_status: null, error: 'connection refused' }] });
    const f = await adminCall(gw.url, 'PUT', verifyPath(ids.failing), { body: { weight: 5 } });
    expect(f.body.results[0]).toMatchObject({ status: 'failed', http_status: 500, error: expect.stringMatching(/HTTP 500.*engine on fire/) });
    const h = await adminCall(gw.url, 'PUT', verifyPath(ids.hanging, '?timeout_ms=300'), { body: { weight: 5 } });
    expect(h.body.results[0]).toMatchObject({ status: 'timeout', http_status: null, error: 'no answer within 300 ms' });
    expect(h.body.results[0].latency_ms).toBeGreaterThanOrEqual(300);
    // Nothing saved: same generation, no override, no provider record, breakers as they were.
    const routingAfter = (await adminCall(gw.url, 'GET', '/admin/routing')).body;
    expect(routingAfter).toEqual(routingBefore);
    expect(routingAfter.models[0].routes.every((x: { weight_override: unknown }) => x.weight_override === null)).toBe(true);
    expect(Object.values(ids).map((id) => gw.core.health.snapshotOf(id, performance.now()).state)).toEqual(healthBefore);
    // Only the audit entry of each call.
    const audit = (await adminCall(gw.url, 'GET', '/admin/audit?limit=20')).body.entries as Array<{ path: string; status: number; before: unknown; after: unknown }>;
    const v = audit.filter((e) => e.path.includes('-verifications/'));
    expect(v.length).toBeGreaterThanOrEqual(3);
    for (const e of v) expect([e.status, e.before, e.after]).toEqual([200, null, null]);
  });

  it('a provider label verifies every route with it', async () => {
    const providers = (await adminCall(gw.url, 'GET', '/admin/routing/providers')).body.providers as Array<{ provider: string; endpoints: string[] }>;
    const label = providers.find((p) => p.endpoints.includes(ids.live))!;
    const r = await adminCall(gw.url, 'PUT', `/admin/routing/providers-verifications/${encodeURIComponent(label.provider)}?timeout_ms=300`, { body: { disabled: false } });
    expect(r.status).toBe(200);
    expect(r.body.provider).toBe(label.provider);
    expect(r.body.results.map((x: { endpoint_id: string }) => x.endpoint_id).sort()).toEqual([...label.endpoints].sort());
    expect(r.body.verified).toBe(label.endpoints.length === 1);
  });

  it('a verification is checked as its write is (400 naming the field, 404 for unknown names)', async () => {
    const bad = await adminCall(gw.url, 'PUT', verifyPath(ids.live), { body: { weight: -1 } });
    expect([bad.status, bad.body.error.param]).toEqual([400, 'weight']);
    const t = await adminCall(gw.url, 'PUT', verifyPath(ids.live, '?timeout_ms=0'), { body: { weight: 1 } });
    expect([t.status, t.body.error.param]).toEqual([400, 'timeout_ms']);
    const extra = await adminCall(gw.url, 'PUT', verifyPath(ids.live, '?timeout=5'), { body: { weight: 1 } });
    expect([extra.status, extra.body.error.param]).toEqual([400, 'timeout']);
    expect((await adminCall(gw.url, 'PUT', weightPath('nope', ids.live).replace('/weights/', '/weights-verifications/'), { body: { weight: 1 } })).body.error.code).toBe('model_not_found');
    expect((await adminCall(gw.url, 'PUT', verifyPath('demo:local-1'), { body: { weight: 1 } })).body.error.code).toBe('endpoint_not_found');
    const p = await adminCall(gw.url, 'PUT', '/admin/routing/providers-verifications/nobody', { body: { disabled: true } });
    expect([p.status, p.body.error.code]).toEqual([404, 'provider_not_found']);
    const pb = await adminCall(gw.url, 'PUT', `/admin/routing/providers-verifications/${encodeURIComponent((await adminCall(gw.url, 'GET', '/admin/routing/providers')).body.providers[0].provider)}`, { body: { disabled: 'no' } });
    expect([pb.status, pb.body.error.param]).toEqual([400, 'disabled']);
    expect((await adminCall(gw.url, 'POST', verifyPath(ids.live), { body: { weight: 1 } })).status).toBe(404);
    expect((await adminCall(gw.url, 'PUT', verifyPath(ids.live), { key: KEYS.user, body: { weight: 1 } })).status).toBe(404);
  });

  it('verifyUpstream tries a route that is not built yet, on a pool of its own', async () => {
    const ok = await verifyUpstream({ kind: 'openai_compat', baseUrl: emu.baseUrl, apiKey: null, upstreamModel: 'new-model', endpointId: 'new:local' }, 5_000);
    expect(ok).toMatchObject({ endpoint_id: 'new:local', status: 'ok', http_status: 200, error: null });
    const emb = await verifyUpstream({ kind: 'openai_compat', baseUrl: emu.baseUrl, apiKey: null, upstreamModel: 'e', endpoints: ['embedding'] }, 5_000);
    expect(emb.status).toBe('ok');
    const down = await verifyUpstream({ kind: 'openai_compat', baseUrl: dead, apiKey: null, upstreamModel: 'x' }, 5_000);
    expect(down).toMatchObject({ endpoint_id: null, status: 'failed', error: 'connection refused' });
    const kind = await verifyUpstream({ kind: 'carrier_pigeon', baseUrl: emu.baseUrl, apiKey: null, upstreamModel: 'x' }, 5_000);
    expect(kind).toMatchObject({ status: 'failed', error: expect.stringMatching(/no gateway adapter/) });
    const url = await verifyUpstream({ kind: 'openai_compat', baseUrl: 'not a url', apiKey: null, upstreamModel: 'x' }, 5_000);
    expect(url.status).toBe('failed');
  });
});
