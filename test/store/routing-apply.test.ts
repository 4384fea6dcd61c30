// A routing change the gateway could not apply is refused before it is written (a 400 naming
// the field, nothing stored), and a stored record that cannot be applied (written before these
// checks, or by another gateway version) is left out and listed under `ignored` at start and
// at reload instead of stopping the gateway or blocking other writes. Once with PGlite, once
// with the run's PostgreSQL server. A change committed that the gateway then fails to apply
// says so (500 apply_failed, audited with the records), never that nothing was changed. A route
// that goes away takes the weight override of its endpoint id with it.
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { endpointId, parseModelsConfig, RoutingCore } from '../../core/index.ts';
import { AdminApi } from '../../gateway/admin/admin-api.ts';
import { RouteAdmin } from '../../gateway/admin/route-admin.ts';
import type { RoutingAdminDeps } from '../../gateway/admin/routing-admin-kit.ts';
import { startGateway, type RunningGateway } from '../../gateway/gateway.ts';
import { SqlOverlayRepo } from '../../gateway/store/overlay-repo.ts';
import { openStore, type StoreConfig } from '../../gateway/store/sql-store.ts';
import { startEmulator, type RunningEmulator } from '../../simulator/emulator/emulator.ts';
import { stackConfig, type UpstreamSpec } from '../gateway/harness.ts';
import { adminCall, freshDatabase, freshPgliteDir, PG_SKIP, PG_URL, weightPath } from './harness.ts';

const UPSTREAMS: UpstreamSpec[] = [{ weight: 1 }, { weight: 1 }];
const MODELS = '/admin/routing/provider-route-models';
const CAND = '/admin/routing/provider-route-candidates';

function scenario(kind: 'pglite' | 'postgres', makeStore: () => Promise<Record<string, unknown>>): void {
  let emus: RunningEmulator[] = [];
  let store: Record<string, unknown>;
  let gw: RunningGateway | null = null;
  let ids: string[] = [];
  const start = (): Promise<RunningGateway> => startGateway({ config: stackConfig(UPSTREAMS, emus, { store, store_poll_ms: 200 }), host: '127.0.0.1', port: 0, adminPort: 0, seed: 3, logger: pino({ level: 'silent' }) });
  const call = (method: string, path: string, opts: Parameters<typeof adminCall>[3] = {}) => adminCall(gw!.url, method, path, opts);
  const storeConfig = (): StoreConfig => (kind === 'pglite' ? { kind: 'pglite', dir: store.dir as string } : { kind: 'postgres', url: store.url as string, pool_size: 1, connect_timeout_ms: 5000 });
  /** Writes routing records straight into the store, past every check of the admin API. */
  const writeRaw = async (writes: Parameters<SqlOverlayRepo['writeRouting']>[0]): Promise<void> => {
    const db = await openStore(storeConfig());
    try {
      const r = await new SqlOverlayRepo(db).writeRouting(writes, 'raw');
      expect(r.ok).toBe(true);
    } finally {
      await db.close();
    }
  };
  const storedRouting = async () => {
    const db = kind === 'postgres' ? await openStore(storeConfig()) : null;
    try {
      return db ? (await new SqlOverlayRepo(db).load()).routing : null;
    } finally {
      await db?.close();
    }
  };

  beforeAll(async () => {
    emus = await Promise.all(UPSTREAMS.map((u) => startEmulator({ ...u, faults: { latency_scale: 0.02 } })));
    ids = emus.map((e) => endpointId('demo', 'openai_compat', e.baseUrl));
    store = await makeStore();
    gw = await start();
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all(emus.map((e) => e.close()));
  });

  it(`${kind}: a route kind without an adapter is a 400 naming the field, and nothing is written`, async () => {
    const gen = (await call('GET', '/admin/routing/provider-routes')).body.generation;
    const r = await call('POST', MODELS, { body: { model_id: 'x2', route: { route_id: 'a', base_url: emus[0]!.baseUrl, kind: 'bogus' } } });
    expect([r.status, r.body.error?.code, r.body.error?.param], JSON.stringify(r.body)).toEqual([400, 'invalid_request', 'route.kind']);
    expect(r.body.error.message).toMatch(/route kind 'bogus' has no gateway adapter; use one of: openai_compat/);
    const list = (await call('GET', '/admin/routing/provider-routes')).body;
    expect([list.generation, list.models.some((m: { model_id: string }) => m.model_id === 'x2'), list.ignored]).toEqual([gen, false, []]);
    const stored = await storedRouting();
    if (stored) expect(stored.filter((x) => x.modelId === 'x2')).toEqual([]);
    // PATCH of a runtime route to such a kind, and endpoints its kind cannot serve: refused the same way.
    expect((await call('POST', MODELS, { body: { model_id: 'ok2', route: { route_id: 'a', base_url: emus[0]!.baseUrl } } })).status).toBe(201);
    const p = await call('PATCH', `${CAND}/ok2/a`, { body: { kind: 'bogus2' } });
    expect([p.status, p.body.error?.code, p.body.error?.param], JSON.stringify(p.body)).toEqual([400, 'invalid_request', 'kind']);
    const e = await call('POST', `${CAND}/ok2`, { body: { route_id: 'b', base_url: emus[1]!.baseUrl, endpoints: ['nosuch'] } });
    expect([e.status, e.body.error?.code, e.body.error?.param], JSON.stringify(e.body)).toEqual([400, 'invalid_request', 'endpoints']);
    const view = (await call('GET', '/admin/routing/provider-routes/ok2')).body.model;
    expect(view.routes.map((x: { route_id: string; kind: string; version: number }) => [x.route_id, x.kind, x.version])).toEqual([['a', 'openai_compat', 1]]);
    // Every other write still goes through.
    const w = await call('PUT', weightPath('demo', ids[0]!), { body: { weight: 1 } });
    expect(w.status, JSON.stringify(w.body)).toBe(200);
  });

  it(`${kind}: a stored record that cannot be applied is ignored with its reason at start; writes go on and it can be deleted`, async () => {
    await gw!.close();
    gw = null;
    const rtEnd = endpointId('ok2', 'bogus', emus[1]!.baseUrl);
    await writeRaw([
      { kind: 'model', modelId: 'bad', key: '', value: { aliases: [], published: true, router_params: {} }, expect: 'absent' },
      { kind: 'route', modelId: 'bad', key: 'a', value: { kind: 'bogus', base_url: 'http://127.0.0.1:9301/v1', weight: 1, local: true, input_modalities: ['text'] }, expect: 'absent' },
      { kind: 'route', modelId: 'ok2', key: 'b', value: { kind: 'bogus', base_url: emus[1]!.baseUrl, weight: 1, local: true, input_modalities: ['text'] }, expect: 'absent' },
    ]);
    gw = await start(); // listens: the records are left out
    const list = (await call('GET', '/admin/routing/provider-routes')).body;
    expect(list.ignored).toEqual([
      expect.objectContaining({ kind: 'route', model_id: 'bad', key: 'a', reason: expect.stringMatching(/^cannot be applied: model 'bad' route 0 .*route kind 'bogus' has no gateway adapter/) }),
      expect.objectContaining({ kind: 'route', model_id: 'ok2', key: 'b', reason: expect.stringMatching(/^cannot be applied: .*route kind 'bogus' has no gateway adapter/) }),
    ]);
    // The model itself applies (without routes: it answers no route until one is added).
    expect(list.models.find((m: { model_id: string }) => m.model_id === 'bad')).toMatchObject({ source: 'runtime', routes: [] });
    expect(gw.core.model('ok2')!.routes.map((r) => r.endpointId)).toEqual([endpointId('ok2', 'openai_compat', emus[0]!.baseUrl)]);
    expect(gw.core.model('ok2')!.routes.some((r) => r.endpointId === rtEnd)).toBe(false);
    // Other writes are not blocked by them.
    expect((await call('PUT', weightPath('demo', ids[1]!), { body: { weight: 2 } })).status).toBe(200);
    const add = await call('POST', `${CAND}/ok2`, { body: { route_id: 'c', base_url: emus[1]!.baseUrl } });
    expect(add.status, JSON.stringify(add.body)).toBe(201);
    expect(gw.core.model('ok2')!.routes).toHaveLength(2);
    // The ignored route can be deleted.
    const del = await call('DELETE', `${CAND}/ok2/b`);
    expect([del.status, del.body.deleted], JSON.stringify(del.body)).toEqual([200, true]);
    expect((await call('GET', '/admin/routing/provider-routes')).body.ignored.map((x: { model_id: string; key: string }) => [x.model_id, x.key])).toEqual([['bad', 'a']]);
    expect((await call('DELETE', `${CAND}/bad/a`)).status).toBe(200);
    expect((await call('GET', '/admin/routing/provider-routes')).body.ignored).toEqual([]);
  });

  it(`${kind}: a route deleted, re-pointed or restored clears the weight override of the endpoint id it leaves; a new route never inherits one`, async () => {
    const ov = (e: RunningEmulator) => endpointId('ov', 'openai_compat', e.baseUrl);
    expect((await call('POST', MODELS, { body: { model_id: 'ov', route: { route_id: 'a', base_url: emus[0]!.baseUrl } } })).status).toBe(201);
    expect((await call('POST', `${CAND}/ov`, { body: { route_id: 'b', base_url: emus[1]!.baseUrl } })).status).toBe(201);
    expect((await call('PUT', weightPath('ov', ov(emus[1]!)), { body: { weight: 0 } })).status).toBe(200);
    const del = await call('DELETE', `${CAND}/ov/b`);
    expect([del.status, del.body.weights_cleared], JSON.stringify(del.body)).toEqual([200, [{ model_id: 'ov', endpoint_id: ov(emus[1]!), weight_before: 0, version: 2 }]]);
    const c = await call('POST', `${CAND}/ov`, { body: { route_id: 'c', base_url: emus[1]!.baseUrl, weight: 5 } });
    expect([c.status, c.body.weights_cleared]).toEqual([201, undefined]);
    const view = (await call('GET', '/admin/routing/provider-routes/ov')).body.model.routes.find((r: { route_id: string }) => r.route_id === 'c');
    expect([view.effective_weight, view.exclusion_reasons]).toEqual([5, []]);
    // PATCH to another base URL leaves the old endpoint id: its override goes too.
    expect((await call('PUT', weightPath('ov', ov(emus[1]!)), { body: { weight: 0 } })).status).toBe(200);
    const moved = await call('PATCH', `${CAND}/ov/c`, { body: { base_url: 'http://127.0.0.1:9309/v1' } });
    expect(moved.body.weights_cleared?.map((w: { endpoint_id: string }) => w.endpoint_id)).toEqual([ov(emus[1]!)]);
    expect((await call('PATCH', `${CAND}/ov/c`, { body: { base_url: emus[1]!.baseUrl } })).status).toBe(200);
    expect(gw!.core.model('ov')!.routes.map((r) => r.effectiveWeight)).toEqual([1, 5]);
    // A YAML route re-pointed, then restored: the override of the endpoint id it leaves is cleared each time.
    const path = `/admin/routing/provider-routes/demo/${encodeURIComponent(ids[1]!)}`;
    expect((await call('PUT', weightPath('demo', ids[1]!), { body: { weight: 0 } })).status).toBe(200);
    const put = await call('PUT', path, { body: { base_url: 'http://127.0.0.1:9308/v1' } });
    expect([put.status, put.body.weights_cleared?.map((w: { endpoint_id: string }) => w.endpoint_id)]).toEqual([200, [ids[1]]]);
    const moved2 = endpointId('demo', 'openai_compat', 'http://127.0.0.1:9308/v1');
    expect((await call('PUT', weightPath('demo', moved2), { body: { weight: 0 } })).status).toBe(200);
    const restore = await call('DELETE', path);
    expect([restore.status, restore.body.weights_cleared?.map((w: { endpoint_id: string }) => w.endpoint_id)]).toEqual([200, [moved2]]);
    expect(gw!.core.model('demo')!.routes.map((r) => [r.endpointId, r.effectiveWeight])).toEqual([[ids[0], 1], [ids[1], 1]]);
    // Audited beside the route record, before and after.
    const entry = (await call('GET', '/admin/audit?limit=50')).body.entries.find((e: { method: string; path: string }) => e.method === 'DELETE' && e.path === `${CAND}/ov/b`);
    expect(entry.before.map((x: { kind: string; value: unknown }) => [x.kind, x.value === null ? null : x.kind === 'weight' ? x.value : 'route'])).toEqual([['route', 'route'], ['weight', 0]]);
    expect(entry.after.map((x: { kind: string; value: unknown; version: number }) => [x.kind, x.value, x.version])).toEqual([['route', null, 2], ['weight', null, 2]]);
  });

  it.runIf(kind === 'postgres')(`${kind}: a record that cannot be applied, written by another writer, is ignored at reload and the gateway keeps applying`, async () => {
    await writeRaw([{ kind: 'route', modelId: 'ok2', key: 'd', value: { kind: 'bogus3', base_url: 'http://127.0.0.1:9309/v1', weight: 1, local: true, input_modalities: ['text'] }, expect: 'absent' }]);
    const until = performance.now() + 5_000;
    const seen = async () => (await call('GET', '/admin/routing/provider-routes')).body.ignored.some((x: { key: string }) => x.key === 'd');
    while (!(await seen()) && performance.now() < until) await new Promise((r) => setTimeout(r, 50));
    expect(await seen()).toBe(true);
    expect((await call('PUT', weightPath('demo', ids[1]!), { body: { weight: 3 } })).status).toBe(200);
    expect(gw!.core.model('demo')!.routes[1]!.effectiveWeight).toBe(3);
  });

  it(`${kind}: a route added on an endpoint id that an override left by a route the YAML dropped names clears that override`, async () => {
    expect((await call('PUT', weightPath('demo', ids[1]!), { body: { weight: 0 } })).status).toBe(200);
    gw!.reload(stackConfig(UPSTREAMS.slice(0, 1), emus.slice(0, 1), { store, store_poll_ms: 200 })); // the override stays, unused
    const add = await call('POST', `${CAND}/demo`, { body: { route_id: 'back', base_url: emus[1]!.baseUrl } });
    expect([add.status, add.body.endpoint_id, add.body.weights_cleared?.map((w: { endpoint_id: string }) => w.endpoint_id)], JSON.stringify(add.body)).toEqual([201, ids[1], [ids[1]]]);
    expect(gw!.core.model('demo')!.routes.map((r) => [r.endpointId, r.effectiveWeight])).toEqual([[ids[0], 1], [ids[1], 1]]);
    expect((await call('DELETE', `${CAND}/demo/back`)).status).toBe(200);
    gw!.reload(stackConfig(UPSTREAMS, emus, { store, store_poll_ms: 200 }));
  });
}

describe('routing changes that cannot apply, PGlite store', () => {
  scenario('pglite', async () => ({ kind: 'pglite', dir: freshPgliteDir() }));
});

describe.skipIf(!PG_URL)(`routing changes that cannot apply, PostgreSQL store${PG_SKIP ? ` (skipped: ${PG_SKIP})` : ''}`, () => {
  scenario('postgres', async () => ({ kind: 'postgres', url: await freshDatabase() }));
});

/** The admin API over a real store with an `apply` that fails after every commit. */
function savedNotApplied(kind: 'pglite' | 'postgres', makeStore: () => Promise<StoreConfig>): void {
  it(`${kind}: a change committed but not applied answers 500 apply_failed saying it was saved, audited with the records`, async () => {
    const db = await openStore(await makeStore());
    try {
      const repo = new SqlOverlayRepo(db);
      const yaml = parseModelsConfig({ models: [{ id: 'demo', route: [{ base_url: 'http://127.0.0.1:9301/v1' }] }] });
      const core = new RoutingCore(yaml, {});
      let overlay = await repo.load();
      const deps: RoutingAdminDeps = {
        repo,
        core: () => core,
        overlay: () => overlay,
        yaml: () => yaml,
        assess: () => ({ refused: new Map(), error: null }),
        apply: () => {
          throw new Error('refused by the core');
        },
        generation: () => 1,
        writesRefused: null,
      };
      const api = new AdminApi({ repo, core: () => core, overlay: () => overlay, apply: deps.apply, generation: () => 1, persistent: true, writesRefused: null, log: pino({ level: 'silent' }), modules: [new RouteAdmin(deps)] });
      const caller = { id: 'admin', admin: true, allowed: null };
      const call = (method: string, path: string, body: unknown) => api.handle({ method, path, query: new URLSearchParams(), ifMatch: '', body: JSON.stringify(body), caller, remoteAddr: '127.0.0.1' });
      const ep = endpointId('demo', 'openai_compat', 'http://127.0.0.1:9301/v1');
      const w = await call('PUT', weightPath('demo', ep), { weight: 1 });
      expect([w.status, (w.body as any).error.code, w.etag]).toEqual([500, 'apply_failed', '"1"']);
      expect((w.body as any).error.message).toMatch(/^The change was saved in the store, but this gateway could not apply it \(refused by the core\)/);
      expect((w.body as any).record).toMatchObject({ endpointId: ep, weight: 1, version: 1 });
      const m = await call('POST', MODELS, { model_id: 'x3', route: { base_url: 'http://127.0.0.1:9302/v1' } });
      expect([m.status, (m.body as any).error.code, (m.body as any).records.map((x: { kind: string }) => x.kind)]).toEqual([500, 'apply_failed', ['model', 'route']]);
      overlay = await repo.load();
      expect(overlay.weights.map((x) => [x.endpointId, x.weight])).toEqual([[ep, 1]]);
      const audit = await repo.listAudit(10);
      expect(audit.map((e) => [e.method, e.status, e.after !== null])).toEqual([
        ['POST', 500, true],
        ['PUT', 500, true],
      ]);
    } finally {
      await db.close();
    }
  });
}

describe('a change saved but not applied, PGlite store', () => {
  savedNotApplied('pglite', async () => ({ kind: 'pglite', dir: freshPgliteDir() }));
});

describe.skipIf(!PG_URL)('a change saved but not applied, PostgreSQL store', () => {
  savedNotApplied('postgres', async () => ({ kind: 'postgres', url: await freshDatabase(), pool_size: 2, connect_timeout_ms: 5000 }));
});
