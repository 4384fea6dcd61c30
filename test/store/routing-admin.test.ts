// Runtime models and routes, re-points, router switches and offload policies through the admin
// API of a real gateway on 127.0.0.1, once with an embedded PGlite store and once with the run's
// PostgreSQL server: a runtime route serves the next request after its POST, every refusal and
// validation error answers with the field and the fix, every change is audited, and a restart
// keeps them. One case runs without a store (the overlay in this process only).
import OpenAI from 'openai';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { endpointId } from '../../core/index.ts';
import { startGateway, type RunningGateway } from '../../gateway/gateway.ts';
import { startEmulator, type RunningEmulator } from '../../simulator/emulator/emulator.ts';
import { hello, KEYS, stackConfig, type UpstreamSpec, servedEndpoint } from '../gateway/harness.ts';
import { adminCall, freshDatabase, freshPgliteDir, PG_SKIP, PG_URL, weightPath } from './harness.ts';

type StoreBlock = Record<string, unknown> | undefined;

const UPSTREAMS: UpstreamSpec[] = [{ weight: 1 }, { weight: 1 }];
const RT = 'org/runtime-model';
const enc = encodeURIComponent;

function scenario(kind: 'pglite' | 'postgres', makeStore: () => Promise<StoreBlock>): void {
  let emus: RunningEmulator[] = [];
  let spare: RunningEmulator;
  let store: StoreBlock;
  let gw: RunningGateway | null = null;
  let ids: string[] = [];
  const start = async (): Promise<RunningGateway> =>
    startGateway({ config: stackConfig(UPSTREAMS, emus, { store, store_poll_ms: 200 }), host: '127.0.0.1', port: 0, adminPort: 0, seed: 5, logger: pino({ level: 'silent' }) });
  const call = (method: string, path: string, opts: Parameters<typeof adminCall>[3] = {}) => adminCall(gw!.url, method, path, opts);
  const servedBy = async (model: string): Promise<string | null> => {
    const client = new OpenAI({ baseURL: `${gw!.url}/v1`, apiKey: KEYS.admin, maxRetries: 0, timeout: 10_000 });
    const { response } = await client.chat.completions.create({ model, messages: hello, max_tokens: 1 }).withResponse();
    return servedEndpoint(gw!, response);
  };
  const bad = async (method: string, path: string, body: unknown, status: number, code: string, param: string | null, pattern?: RegExp) => {
    const r = await call(method, path, { body });
    expect(r.status, `${method} ${path} ${JSON.stringify(body)}: ${JSON.stringify(r.body)}`).toBe(status);
    expect(r.body.error.code).toBe(code);
    expect(r.body.error.param).toBe(param);
    if (pattern) expect(r.body.error.message).toMatch(pattern);
    return r;
  };
  const rtId = (e: RunningEmulator) => endpointId(RT, 'openai_compat', e.baseUrl);

  beforeAll(async () => {
    emus = await Promise.all(UPSTREAMS.map((u) => startEmulator({ ...u, faults: { latency_scale: 0.02 } })));
    spare = await startEmulator({ faults: { latency_scale: 0.02 } });
    ids = emus.map((e) => endpointId('demo', 'openai_compat', e.baseUrl));
    store = await makeStore();
    gw = await start();
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all([...emus, spare].map((e) => e?.close()));
  });

  it(`${kind}: GET provider-routes lists the YAML routes by model, with route ids and source yaml`, async () => {
    const all = await call('GET', '/admin/routing/provider-routes');
    expect(all.status).toBe(200);
    const demo = all.body.models.find((m: { model_id: string }) => m.model_id === 'demo');
    expect(demo).toMatchObject({ source: 'yaml', aliases: ['demo-alias'], router: 'fixed', version: 0 });
    expect(demo.routes.map((r: { route_id: string; endpoint_id: string; source: string }) => [r.route_id, r.endpoint_id, r.source])).toEqual(ids.map((id) => [id, id, 'yaml']));
    const one = await call('GET', '/admin/routing/provider-routes/demo-alias');
    expect([one.status, one.body.model.model_id]).toEqual([200, 'demo']);
    await bad('GET', '/admin/routing/provider-routes/nope', undefined, 404, 'model_not_found', 'model_id');
    expect((await call('GET', '/admin/routing/offload-routes')).body.policies).toEqual([]);
  });

  it(`${kind}: a runtime model (id with a /) serves the request right after its POST`, async () => {
    const r = await call('POST', '/admin/routing/provider-route-models', { body: { model_id: RT, aliases: ['rt'], route: { route_id: 'first', base_url: spare.baseUrl } } });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    expect(r.body).toMatchObject({ model_id: RT, route_id: 'first', endpoint_id: rtId(spare) });
    expect(r.etag).toBe('"1"');
    expect(await servedBy(RT)).toBe(rtId(spare));
    expect(await servedBy('rt')).toBe(rtId(spare));
    const view = (await call('GET', `/admin/routing/provider-routes/${RT}`)).body.model; // the / unencoded
    expect(view).toMatchObject({ model_id: RT, source: 'runtime', version: 1 });
    expect(view.routes).toEqual([expect.objectContaining({ route_id: 'first', endpoint_id: rtId(spare), source: 'runtime', effective_weight: 1, version: 1, updated_by: 'admin' })]);
    expect((await call('GET', `/admin/routing/provider-routes/${enc(RT)}`)).body.model.model_id).toBe(RT);
    // Refusals: a name in use (id or alias), a reserved name, bad fields.
    await bad('POST', '/admin/routing/provider-route-models', { model_id: RT, route: { base_url: spare.baseUrl } }, 409, 'model_exists', 'model_id');
    await bad('POST', '/admin/routing/provider-route-models', { model_id: 'fresh', aliases: ['demo-alias'], route: { base_url: spare.baseUrl } }, 409, 'model_exists', 'aliases.0', /alias/);
    await bad('POST', '/admin/routing/provider-route-models', { model_id: 'auto-fast', route: { base_url: spare.baseUrl } }, 400, 'invalid_request', 'model_id', /reserved for auto/);
    await bad('POST', '/admin/routing/provider-route-models', { model_id: 'fresh' }, 400, 'invalid_request', 'route', /'route' is required; send the first route/);
    await bad('POST', '/admin/routing/provider-route-models', { model_id: 'fresh', route: { base_url: 'localhost:8000' } }, 400, 'invalid_request', 'route.base_url', /use an http:\/\/ or https:\/\/ base_url/);
    await bad('POST', '/admin/routing/provider-route-models', { model_id: 'fresh', route: { base_url: spare.baseUrl, colour: 'red' } }, 400, 'invalid_request', 'route.colour', /Unknown field 'route.colour'.*allowed: route_id, kind/);
    await bad('POST', '/admin/routing/provider-route-models', { model_id: 'fresh', route: { base_url: spare.baseUrl, weight: -1 } }, 400, 'invalid_request', 'route.weight', /too small: must be ≥ 0/);
    await bad('POST', '/admin/routing/provider-route-models', { model_id: 'fresh', route: { base_url: spare.baseUrl, quota: { limit: 1, window_sec: 60 } } }, 400, 'invalid_request', 'route.quota', /provider_type: quota/);
    await bad('POST', '/admin/routing/provider-route-models', { model_id: 'fresh', router: 'fastest', route: { base_url: spare.baseUrl } }, 400, 'configuration_refused', null, /unknown router 'fastest'/);
    await bad('POST', '/admin/routing/provider-route-models', { model_id: 'fresh', route: { route_id: 'a/b', base_url: spare.baseUrl } }, 400, 'invalid_request', 'route.route_id', /must not contain \//);
    expect(gw!.core.model('fresh')).toBeUndefined();
  });

  it(`${kind}: routes added, edited and deleted on a model; YAML routes are not theirs to edit`, async () => {
    const cand = `/admin/routing/provider-route-candidates/${enc(RT)}`;
    const add = await call('POST', cand, { body: { route_id: 'second', base_url: emus[1]!.baseUrl, weight: 3 } });
    expect(add.status, JSON.stringify(add.body)).toBe(201);
    expect(add.body.endpoint_id).toBe(rtId(emus[1]!));
    expect(gw!.core.model(RT)!.routes.map((r) => [r.endpointId, r.effectiveWeight])).toEqual([
      [rtId(spare), 1],
      [rtId(emus[1]!), 3],
    ]);
    await bad('POST', cand, { route_id: 'second', base_url: emus[0]!.baseUrl }, 409, 'route_exists', 'route_id');
    await bad('POST', cand, { route_id: 'third', base_url: spare.baseUrl }, 409, 'endpoint_exists', 'base_url', /first/);
    await bad('POST', cand, { route_id: 'third' }, 400, 'invalid_request', 'base_url', /'base_url' is required; send an absolute/);
    await bad('POST', '/admin/routing/provider-route-candidates/nope', { base_url: spare.baseUrl }, 404, 'model_not_found', 'model_id');
    // PATCH a runtime route: drain the first one and the next request goes to the second.
    const patch = await call('PATCH', `${cand}/first`, { body: { weight: 0 }, ifMatch: '"1"' });
    expect([patch.status, patch.etag]).toEqual([200, '"2"']);
    expect(await servedBy(RT)).toBe(rtId(emus[1]!));
    const stale = await call('PATCH', `${cand}/first`, { body: { weight: 2 }, ifMatch: '"1"' });
    expect([stale.status, stale.body.error.code, stale.body.current_version]).toEqual([412, 'precondition_failed', 2]);
    expect((await call('PATCH', `${cand}/first`, { body: { weight: 2, version: 1 } })).status).toBe(409);
    await bad('PATCH', `${cand}/first`, {}, 400, 'invalid_request', null, /no fields to change; send at least one of/);
    await bad('PATCH', `${cand}/first`, { base_url: emus[1]!.baseUrl }, 409, 'endpoint_exists', 'base_url');
    await bad('PATCH', `${cand}/nope`, { weight: 1 }, 404, 'route_not_found', 'route_id', /first, second/);
    await bad('PATCH', `/admin/routing/provider-route-candidates/demo/${enc(ids[0]!)}`, { weight: 1 }, 409, 'not_runtime_route', 'route_id', /PUT \/admin\/routing\/provider-routes/);
    await bad('DELETE', `/admin/routing/provider-route-candidates/demo/${enc(ids[0]!)}`, undefined, 409, 'not_runtime_route', 'route_id');
    expect((await call('PATCH', `${cand}/first`, { body: { weight: 1 } })).status).toBe(200);
    // A runtime route on a YAML model, addressed by its endpoint id, then deleted.
    const onDemo = await call('POST', '/admin/routing/provider-route-candidates/demo', { body: { base_url: spare.baseUrl, weight: 0 } });
    const spareDemo = endpointId('demo', 'openai_compat', spare.baseUrl);
    expect([onDemo.status, onDemo.body.route_id]).toEqual([201, spareDemo]);
    expect(gw!.core.model('demo')!.routes.map((r) => r.endpointId)).toEqual([...ids, spareDemo]);
    const del = await call('DELETE', `/admin/routing/provider-route-candidates/demo/${enc(spareDemo)}`);
    expect([del.status, del.body.deleted, del.body.model_removed]).toEqual([200, true, false]);
    expect(gw!.core.model('demo')!.routes.map((r) => r.endpointId)).toEqual(ids);
  });

  it(`${kind}: a YAML route re-pointed keeps its route id and gets the new endpoint id; DELETE restores it`, async () => {
    const path = `/admin/routing/provider-routes/demo/${enc(ids[1]!)}`;
    const put = await call('PUT', path, { body: { base_url: spare.baseUrl } });
    const moved = endpointId('demo', 'openai_compat', spare.baseUrl);
    expect([put.status, put.body.route_id, put.body.endpoint_id], JSON.stringify(put.body)).toEqual([200, ids[1], moved]);
    expect(gw!.core.model('demo')!.routes.map((r) => [r.endpointId, r.baseUrl])).toEqual([
      [ids[0], emus[0]!.baseUrl],
      [moved, spare.baseUrl],
    ]);
    const view = (await call('GET', '/admin/routing/provider-routes/demo')).body.model.routes[1];
    expect(view).toMatchObject({ route_id: ids[1], endpoint_id: moved, source: 'override', version: 1, yaml: { base_url: emus[1]!.baseUrl, endpoint_id: ids[1] } });
    // Addressed by the endpoint id it has now, too; a base_url another route derives is refused.
    await bad('PUT', `/admin/routing/provider-routes/demo/${enc(moved)}`, { base_url: emus[0]!.baseUrl }, 409, 'endpoint_exists', 'base_url');
    await bad('PUT', path, { base_url: 'ftp://x' }, 400, 'invalid_request', 'base_url', /use an http:\/\/ or https:\/\/ base_url/);
    await bad('PUT', path, { wieght: 2 }, 400, 'invalid_request', 'wieght', /did you mean 'weight'/);
    await bad('PUT', `/admin/routing/provider-routes/${enc(RT)}/first`, { base_url: spare.baseUrl }, 409, 'runtime_route', 'route_id', /PATCH/);
    await bad('PUT', '/admin/routing/provider-routes/demo/nope', { base_url: spare.baseUrl }, 404, 'route_not_found', 'route_id');
    const restore = await call('DELETE', path, { ifMatch: '"1"' });
    expect([restore.status, restore.etag, restore.body.endpoint_id]).toEqual([200, '"2"', ids[1]]);
    expect(gw!.core.model('demo')!.routes.map((r) => r.endpointId)).toEqual(ids);
    await bad('DELETE', path, undefined, 404, 'override_not_found', 'route_id');
  });

  it(`${kind}: offload policies: set, listed with active / inactive_reason, every refusal, cleared`, async () => {
    const off = '/admin/routing/offload-routes/demo';
    const put = await call('PUT', off, { body: { route_id: ids[1], wait_sec: 2, engine_queue_limit: 1 } });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    expect(put.body.policy).toMatchObject({ model_id: 'demo', source: 'override', route_id: ids[1], endpoint_id: ids[1], wait_sec: 2, engine_queue_limit: 1, max_input_tokens: null, active: true, inactive_reason: null, version: 1 });
    expect(gw!.core.model('demo')!.offload).toMatchObject({ endpointId: ids[1], waitMs: 2000, engineQueueLimit: 1, active: true });
    // The offload route takes no ordinary traffic while another route can serve.
    for (let i = 0; i < 4; i++) expect(await servedBy('demo')).toBe(ids[0]);
    // Re-pointing the offload route keeps the policy on it (by route id).
    expect((await call('PUT', `/admin/routing/provider-routes/demo/${enc(ids[1]!)}`, { body: { base_url: spare.baseUrl } })).status).toBe(200);
    const moved = endpointId('demo', 'openai_compat', spare.baseUrl);
    expect((await call('GET', '/admin/routing/offload-routes')).body.policies).toEqual([expect.objectContaining({ model_id: 'demo', route_id: ids[1], endpoint_id: moved, active: true })]);
    expect((await call('DELETE', `/admin/routing/provider-routes/demo/${enc(ids[1]!)}`)).status).toBe(200);
    // A weight of 0 on the offload route makes the policy inactive (listed with the reason).
    expect((await call('PUT', weightPath('demo', ids[1]!), { body: { weight: 0 } })).status).toBe(200);
    expect((await call('GET', off)).body.policy).toMatchObject({ active: false, inactive_reason: 'route_weight_zero' });
    expect((await call('DELETE', weightPath('demo', ids[1]!))).status).toBe(200);
    expect((await call('GET', off)).body.policy).toMatchObject({ active: true, inactive_reason: null });
    // Refusals.
    await bad('PUT', off, { route_id: ids[1], wait_sec: 0 }, 400, 'invalid_request', 'wait_sec', /> 0.*send the wait in seconds/);
    await bad('PUT', off, { route_id: ids[1], wait_sec: -3 }, 400, 'invalid_request', 'wait_sec');
    await bad('PUT', off, { route_id: '   ', wait_sec: 2 }, 400, 'invalid_request', 'route_id', /whitespace/);
    await bad('PUT', off, { wait_sec: 2 }, 400, 'invalid_request', 'route_id', /is required/);
    await bad('PUT', off, { route_id: 'nope', wait_sec: 2 }, 404, 'route_not_found', 'route_id');
    await bad('PUT', off, { route_id: ids[1], wait_sec: 2, engine_queue_limit: 0 }, 400, 'invalid_request', 'engine_queue_limit');
    await bad('PUT', off, { route_id: ids[1], wait_sec: 2, max_input_tokens: 1.5 }, 400, 'invalid_request', 'max_input_tokens');
    await bad('PUT', '/admin/routing/offload-routes/nope', { route_id: 'x', wait_sec: 2 }, 404, 'model_not_found', 'model_id');
    const stale = await call('PUT', off, { body: { route_id: ids[1], wait_sec: 3, version: 0 } });
    expect([stale.status, stale.body.error.code]).toEqual([409, 'version_conflict']);
    // Switching a model with a policy to RouteWise is refused; RouteWise models refuse a policy.
    await bad('PATCH', '/admin/routing/provider-route-strategies/demo', { router: 'routewise' }, 409, 'offload_policy_set', 'router', /DELETE \/admin\/routing\/offload-routes\/demo/);
    const sw = await call('PATCH', `/admin/routing/provider-route-strategies/${enc(RT)}`, { body: { router: 'routewise' } });
    expect([sw.status, sw.body.router], JSON.stringify(sw.body)).toEqual([200, 'routewise']);
    expect(gw!.core.model(RT)!.strategy).toBe('routewise');
    expect((await call('GET', `/admin/routing/provider-routes/${enc(RT)}`)).body.model).toMatchObject({ router: 'routewise', router_source: 'override', strategy_version: 1 });
    await bad('PUT', `/admin/routing/offload-routes/${enc(RT)}`, { route_id: 'second', wait_sec: 2 }, 409, 'routewise_model', 'model_id');
    await bad('PATCH', `/admin/routing/provider-route-strategies/${enc(RT)}`, { router: 'fastest' }, 400, 'configuration_refused', 'router', /unknown router 'fastest'; known routers: .*routewise/);
    await bad('PATCH', `/admin/routing/provider-route-strategies/${enc(RT)}`, { router: '' }, 400, 'invalid_request', 'router', /blank/);
    expect((await call('PATCH', `/admin/routing/provider-route-strategies/${enc(RT)}`, { body: { router: 'fixed' }, ifMatch: '"1"' })).status).toBe(200);
    // hybrid_composition: true has no behaviour in the seeds: refused like any bad router_params.
    await bad('POST', '/admin/routing/provider-route-models', { model_id: 'hybrid', router: 'fixed', router_params: { hybrid_composition: true }, route: { base_url: spare.baseUrl } }, 400, 'configuration_refused', null, /seeds do not specify what hybrid composition does.*remove hybrid_composition/);
    const hybrid = await call('POST', '/admin/routing/provider-route-models', { body: { model_id: 'hybrid', router: 'fixed', router_params: { hybrid_composition: false }, route: { base_url: spare.baseUrl } } });
    expect(hybrid.status, JSON.stringify(hybrid.body)).toBe(201);
    await bad('PATCH', '/admin/routing/provider-route-strategies/nope', { router: 'fixed' }, 404, 'model_not_found', 'model_id');
    await bad('PUT', off, { route_id: ids[1], wait_sec: 2, colour: 'red' }, 400, 'invalid_request', 'colour', /allowed: route_id, wait_sec/);
    // A policy on a model's only route is kept but inactive.
    const otherId = endpointId('other', 'openai_compat', emus[0]!.baseUrl);
    const only = await call('PUT', '/admin/routing/offload-routes/other', { body: { route_id: otherId, wait_sec: 1 } });
    expect([only.status, only.body.policy?.active, only.body.policy?.inactive_reason]).toEqual([200, false, 'only_route']);
    expect((await call('DELETE', '/admin/routing/offload-routes/other', { ifMatch: '"1"' })).status).toBe(200);
    // Clearing.
    const clear = await call('DELETE', off);
    expect([clear.status, clear.body.cleared, clear.body.policy]).toEqual([200, true, null]);
    expect(gw!.core.model('demo')!.offload).toBeUndefined();
    await bad('DELETE', off, undefined, 404, 'offload_not_found', 'model_id', /has none/);
  });

  it(`${kind}: a route that is its model's offload route cannot be deleted (409 with the reason); a runtime model goes with its last route`, async () => {
    const off = `/admin/routing/offload-routes/${enc(RT)}`;
    expect((await call('PUT', off, { body: { route_id: 'second', wait_sec: 1, max_input_tokens: 4096 } })).status).toBe(200);
    const cand = `/admin/routing/provider-route-candidates/${enc(RT)}`;
    await bad('DELETE', `${cand}/second`, undefined, 409, 'offload_route', 'route_id', /offload route of model 'org\/runtime-model'.*DELETE \/admin\/routing\/offload-routes/);
    expect(await servedBy(RT)).toBe(rtId(spare)); // the other route serves; the offload route waits
    expect((await call('DELETE', off)).status).toBe(200);
    expect((await call('DELETE', `${cand}/second`)).status).toBe(200);
    const last = await call('DELETE', `${cand}/first`);
    expect([last.status, last.body.model_removed]).toEqual([200, true]);
    expect(gw!.core.model(RT)).toBeUndefined();
    await bad('GET', `/admin/routing/provider-routes/${enc(RT)}`, undefined, 404, 'model_not_found', 'model_id');
    // The id is free again: the model comes back with a fresh route.
    const again = await call('POST', '/admin/routing/provider-route-models', { body: { model_id: RT, route: { route_id: 'first', base_url: spare.baseUrl } } });
    expect([again.status, again.etag]).toEqual([201, '"3"']); // the model record's version goes on
    expect(await servedBy(RT)).toBe(rtId(spare));
  });

  it(`${kind}: every change is audited with the records before and after, api keys masked`, async () => {
    const r = await call('POST', '/admin/routing/provider-route-candidates/hybrid', { body: { route_id: 'keyed', base_url: 'https://api.example.com/v1', api_key: 'sk-secret-value' } });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    expect(JSON.stringify(r.body)).not.toContain('sk-secret-value');
    const view = (await call('GET', '/admin/routing/provider-routes/hybrid')).body.model.routes.find((x: { route_id: string }) => x.route_id === 'keyed');
    expect(view).toMatchObject({ api_key_set: true, endpoint_id: 'hybrid:example-api' });
    expect(JSON.stringify(view)).not.toContain('sk-secret');
    const { body } = await call('GET', '/admin/audit?limit=500');
    const entries = body.entries as Array<{ method: string; path: string; status: number; caller_id: string; before: any; after: any }>;
    expect(JSON.stringify(entries)).not.toContain('sk-secret-value');
    const creations = entries.filter((e) => e.method === 'POST' && e.path === '/admin/routing/provider-route-models' && e.status === 201);
    const [again, first] = [creations[0]!, creations.at(-1)!]; // newest first
    expect(first.caller_id).toBe('admin');
    expect(first.before).toEqual([null, null]);
    expect(first.after.map((x: { kind: string; version: number }) => [x.kind, x.version])).toEqual([['model', 1], ['route', 1]]);
    // The re-created model: its removed records before (value null), revived after.
    expect(again.before.map((x: { value: unknown; version: number }) => [x.value, x.version])).toEqual([[null, 2], [null, 4]]); // route: created, patched twice, deleted
    const refused = entries.find((e) => e.status === 409 && e.path.endsWith('/second') && e.method === 'DELETE')!;
    expect(refused).toMatchObject({ before: null, after: null });
    const offSet = entries.find((e) => e.method === 'PUT' && e.path === '/admin/routing/offload-routes/demo' && e.status === 200)!;
    expect(offSet.after[0]).toMatchObject({ kind: 'offload', model_id: 'demo', value: { route_id: ids[1], wait_sec: 2, engine_queue_limit: 1 } });
    await call('DELETE', `/admin/routing/provider-route-candidates/hybrid/keyed`);
  });

  it(`${kind}: a restart keeps runtime models, routes and policies, and they serve at once`, async () => {
    expect((await call('POST', `/admin/routing/provider-route-candidates/${enc(RT)}`, { body: { route_id: 'second', base_url: emus[0]!.baseUrl } })).status).toBe(201);
    expect((await call('PUT', `/admin/routing/offload-routes/${enc(RT)}`, { body: { route_id: 'second', wait_sec: 4 } })).status).toBe(200);
    await gw!.close();
    gw = await start();
    expect(gw.core.model(RT)!.routes.map((r) => r.endpointId)).toEqual([rtId(spare), rtId(emus[0]!)]);
    expect(gw.core.model(RT)!.offload).toMatchObject({ endpointId: rtId(emus[0]!), waitMs: 4000, active: true });
    expect(await servedBy(RT)).toBe(rtId(spare));
    expect((await call('GET', '/admin/routing/provider-routes')).body.ignored).toEqual([]);
  });

  it.runIf(kind === 'postgres')(`${kind}: a replica on the same store picks up a runtime route and serves it`, async () => {
    const b = await start();
    try {
      const add = await call('POST', '/admin/routing/provider-route-models', { body: { model_id: 'replicated', route: { base_url: spare.baseUrl } } });
      expect(add.status).toBe(201);
      const until = performance.now() + 5_000;
      while (!b.core.model('replicated') && performance.now() < until) await new Promise((r) => setTimeout(r, 50));
      const client = new OpenAI({ baseURL: `${b.url}/v1`, apiKey: KEYS.admin, maxRetries: 0, timeout: 10_000 });
      const { response } = await client.chat.completions.create({ model: 'replicated', messages: hello, max_tokens: 1 }).withResponse();
      expect(await servedEndpoint(b, response)).toBe(endpointId('replicated', 'openai_compat', spare.baseUrl));
    } finally {
      await b.close();
    }
  });
}

describe('runtime routing admin, PGlite store', () => {
  scenario('pglite', async () => ({ kind: 'pglite', dir: freshPgliteDir() }));
});

describe.skipIf(!PG_URL)(`runtime routing admin, PostgreSQL store${PG_SKIP ? ` (skipped: ${PG_SKIP})` : ''}`, () => {
  scenario('postgres', async () => ({ kind: 'postgres', url: await freshDatabase() }));
});

describe('runtime routing admin, no store', () => {
  it('a runtime model serves in this process at once', async () => {
    const emu = await startEmulator({ faults: { latency_scale: 0.02 } });
    const gw = await startGateway({ config: stackConfig([{}], [emu]), host: '127.0.0.1', port: 0, seed: 1, logger: pino({ level: 'silent' }) });
    try {
      const r = await adminCall(gw.url, 'POST', '/admin/routing/provider-route-models', { body: { model_id: 'mem', route: { base_url: emu.baseUrl } } });
      expect(r.status).toBe(201);
      const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: KEYS.admin, maxRetries: 0, timeout: 10_000 });
      const { response } = await client.chat.completions.create({ model: 'mem', messages: hello, max_tokens: 1 }).withResponse();
      expect(await servedEndpoint(gw, response)).toBe(endpointId('mem', 'openai_compat', emu.baseUrl));
    } finally {
      await gw.close();
      await emu.close();
    }
  });
});
