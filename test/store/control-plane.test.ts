// The control plane against a real gateway on 127.0.0.1, once with an embedded PGlite store and
// once with the run's PostgreSQL 15 server: admin keys on both listeners, weight overrides that
// drain a route under load, provider labels, optimistic concurrency (412 / 409), the audit log,
// learned state kept across an admin change and a reload, overrides kept across a restart,
// validation errors, and /health/deep's providers map.
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../../gateway/gateway.ts';
import { startEmulator, type RunningEmulator } from '../../simulator/emulator/emulator.ts';
import { endpointId } from '../../core/index.ts';
import { hello, KEYS, stackConfig, type UpstreamSpec, servedEndpoint } from '../gateway/harness.ts';
import OpenAI from 'openai';
import { hashKey } from '../../gateway/callers.ts';
import { adminCall, freshDatabase, freshPgliteDir, PG_SKIP, PG_URL, weightPath } from './harness.ts';

type StoreBlock = Record<string, unknown>;

const UPSTREAMS: UpstreamSpec[] = [{ weight: 1 }, { weight: 1 }];

function scenario(kind: 'pglite' | 'postgres', makeStore: () => Promise<StoreBlock>): void {
  let emus: RunningEmulator[] = [];
  let store: StoreBlock;
  let gw: RunningGateway | null = null;
  let ids: string[] = [];
  const gatewayBlock = () => ({ store, store_poll_ms: 200, health: { failure_threshold: 1, cooldown_sec: 600 } });
  const start = async (): Promise<RunningGateway> =>
    startGateway({ config: stackConfig(UPSTREAMS, emus, gatewayBlock()), host: '127.0.0.1', port: 0, adminPort: 0, seed: 3, logger: pino({ level: 'silent' }) });
  const client = (key: string = KEYS.admin) => new OpenAI({ baseURL: `${gw!.url}/v1`, apiKey: key, maxRetries: 0, timeout: 10_000 });
  const servedBy = async (): Promise<string | null> => {
    const { response } = await client().chat.completions.create({ model: 'demo', messages: hello, max_tokens: 1 }).withResponse();
    return servedEndpoint(gw!, response);
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

  it(`${kind}: admin routes refuse a missing or wrong key on both listeners`, async () => {
    for (const base of [gw!.url, gw!.adminUrl!]) {
      for (const [method, path] of [['GET', '/admin/routing'], ['PUT', weightPath('demo', ids[0]!)], ['GET', '/admin/audit'], ['GET', '/health/deep'], ['GET', '/metrics']] as const) {
        expect((await adminCall(base, method, path, { key: null, body: { weight: 1 } })).status, `${base} ${method} ${path} no key`).toBe(401);
        expect((await adminCall(base, method, path, { key: 'sk-wrong', body: { weight: 1 } })).status, `${method} ${path} wrong key`).toBe(401);
        expect((await adminCall(base, method, path, { key: KEYS.user, body: { weight: 1 } })).status, `${method} ${path} user key`).toBe(base === gw!.url ? 404 : 403);
      }
    }
    const r = await adminCall(gw!.adminUrl!, 'GET', '/admin/routing');
    expect(r.status).toBe(200);
    expect(r.body.persistent).toBe(true);
    expect(r.body.models.find((m: { id: string }) => m.id === 'demo').routes.map((x: { endpoint_id: string }) => x.endpoint_id)).toEqual(ids);
  });

  it(`${kind}: a weight override of 0 drains a route under load with no failed request`, async () => {
    let stop = false;
    let failed = 0;
    const servedAfter: string[] = [];
    let drainedAt = Infinity;
    const worker = async () => {
      while (!stop) {
        const t0 = performance.now();
        try {
          const by = await servedBy();
          if (t0 > drainedAt) servedAfter.push(by ?? 'none');
        } catch {
          failed++;
        }
      }
    };
    const load = Promise.all([worker(), worker(), worker(), worker()]);
    await new Promise((r) => setTimeout(r, 300));
    const put = await adminCall(gw!.url, 'PUT', weightPath('demo', ids[0]!), { body: { weight: 0 } });
    expect(put.status).toBe(200);
    expect(put.etag).toBe('"1"');
    drainedAt = performance.now();
    await new Promise((r) => setTimeout(r, 500));
    stop = true;
    await load;
    expect(failed).toBe(0);
    expect(servedAfter.length).toBeGreaterThan(5);
    expect(new Set(servedAfter)).toEqual(new Set([ids[1]]));
    const deep = (await adminCall(gw!.url, 'GET', '/health/deep')).body;
    expect(deep.status).toBe('ok'); // a drained route is a decision, not a fault
    expect(deep.providers[ids[0]!]).toMatchObject({ state: 'closed', excluded_from_models: ['demo'], exclusion_reasons: ['weight_override'] });
    expect(deep.route_exclusions).toEqual([expect.objectContaining({ modelId: 'demo', endpointId: ids[0], configuredWeight: 1, effectiveWeight: 0, reasons: ['weight_override'] })]);
    expect(deep.store).toMatchObject({ kind, status: 'ok' });
  });

  it(`${kind}: a stale If-Match gets 412, a stale version field 409, and neither changes anything`, async () => {
    const stale = await adminCall(gw!.url, 'PUT', weightPath('demo', ids[0]!), { body: { weight: 5 }, ifMatch: '"0"' });
    expect(stale.status).toBe(412);
    expect(stale.body).toMatchObject({ current_version: 1, error: { code: 'precondition_failed', param: 'If-Match' } });
    const conflict = await adminCall(gw!.url, 'PUT', weightPath('demo', ids[0]!), { body: { weight: 5, version: 0 } });
    expect(conflict.status).toBe(409);
    expect(conflict.body.error.code).toBe('version_conflict');
    const ok = await adminCall(gw!.url, 'PUT', weightPath('demo', ids[0]!), { body: { weight: 0 }, ifMatch: '"1"' });
    expect([ok.status, ok.etag]).toEqual([200, '"2"']);
    const view = (await adminCall(gw!.url, 'GET', '/admin/routing')).body;
    expect(view.models.find((m: { id: string }) => m.id === 'demo').routes[0].weight_override).toMatchObject({ weight: 0, version: 2, updated_by: 'admin' });
  });

  it(`${kind}: every admin body and path is checked (400 naming the field, 404 for unknown names)`, async () => {
    const path = weightPath('demo', ids[1]!);
    const bad = async (body: unknown, param: string | null, pattern: RegExp, extra: { raw?: string; ifMatch?: string } = {}) => {
      const r = await adminCall(gw!.url, 'PUT', path, { body, ...extra });
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.error.param).toBe(param);
      expect(r.body.error.message).toMatch(pattern);
    };
    await bad({ weight: -1 }, 'weight', /'weight' is invalid: too small: must be ≥ 0.*0 to 1000000/);
    await bad({ weight: 'heavy' }, 'weight', /'weight' is invalid/);
    await bad({}, 'weight', /'weight' is required/);
    await bad({ weight: 1, colour: 'red' }, 'colour', /Unknown field 'colour'/);
    await bad({ weight: 1, version: 1.5 }, 'version', /'version' is invalid/);
    await bad(undefined, null, /not valid JSON/, { raw: '{nope' });
    await bad({ weight: 1 }, 'If-Match', /not a record version/, { ifMatch: 'yesterday' });
    const prov = await adminCall(gw!.url, 'PUT', '/admin/routing/providers/local-1', { body: { disabled: 'yes' } });
    expect(prov.status).toBe(404); // no such label (checked before the body)
    const audit = await adminCall(gw!.url, 'GET', '/admin/audit?limit=0');
    expect([audit.status, audit.body.error.param]).toEqual([400, 'limit']);
    expect((await adminCall(gw!.url, 'PUT', weightPath('nope', ids[0]!), { body: { weight: 1 } })).body.error.code).toBe('model_not_found');
    const noRoute = await adminCall(gw!.url, 'PUT', weightPath('demo', 'demo:local-1'), { body: { weight: 1 } });
    expect([noRoute.status, noRoute.body.error.code]).toEqual([404, 'endpoint_not_found']);
    expect((await adminCall(gw!.url, 'DELETE', path)).status).toBe(404); // no override to clear
    expect((await adminCall(gw!.url, 'GET', '/admin/nothing-here')).status).toBe(404);
  });

  it(`${kind}: a breaker opened before an unrelated change is still open after it, and after a reload`, async () => {
    // `other` routes to upstream 0 only; make it fail once (failure_threshold 1) to open its breaker.
    const otherId = endpointId('other', 'openai_compat', emus[0]!.baseUrl);
    gw!.core.health.markDegraded(otherId, performance.now());
    expect(gw!.core.health.snapshotOf(otherId, performance.now()).state).toBe('open');
    const before = (await adminCall(gw!.url, 'GET', '/admin/routing')).body.generation;
    const put = await adminCall(gw!.url, 'PUT', weightPath('demo', ids[1]!), { body: { weight: 3 } });
    expect(put.status).toBe(200);
    expect(put.body.generation).toBe(before + 1);
    expect(gw!.core.health.snapshotOf(otherId, performance.now()).state).toBe('open');
    // A SIGHUP-style reload that changes an unrelated weight keeps it too, and keeps the overrides.
    gw!.reload(stackConfig([{ weight: 1 }, { weight: 2 }], emus, gatewayBlock()));
    expect(gw!.core.health.snapshotOf(otherId, performance.now()).state).toBe('open');
    const demo = gw!.core.model('demo')!;
    expect(demo.routes.map((r) => [r.configuredWeight, r.effectiveWeight])).toEqual([
      [1, 0],
      [2, 3],
    ]);
    // routing.yaml giving local routes a share of 0 would zero every route here (all are local)
    // under the fixed default router without a store; with a store the split does not apply.
    const base = stackConfig([{ weight: 1 }, { weight: 2 }], emus, gatewayBlock());
    gw!.reload({ ...base, models: { ...base.models, routing: { ...base.models.routing, default_router: 'fixed', local_weight_share: 0 } } });
    expect(gw!.core.model('other')!.routes.map((r) => [r.effectiveWeight, r.exclusionReasons])).toEqual([[1, []]]);
    expect(gw!.core.routeExclusions().flatMap((x) => x.reasons)).not.toContain('routing_yaml');
    gw!.reload(base);
  });

  it(`${kind}: a provider label disabled zeroes its routes; enabling restores them`, async () => {
    const providers = (await adminCall(gw!.url, 'GET', '/admin/routing/providers')).body.providers as Array<{ provider: string; endpoints: string[]; version: number }>;
    const label = providers.find((p) => p.endpoints.includes(ids[1]!))!.provider;
    const off = await adminCall(gw!.url, 'PUT', `/admin/routing/providers/${encodeURIComponent(label)}`, { body: { disabled: true, version: 0 } });
    expect(off.status).toBe(200);
    const r1 = gw!.core.model('demo')!.routes[1]!;
    expect([r1.effectiveWeight, r1.exclusionReasons]).toEqual([0, ['weight_override', 'provider_disabled']]);
    const on = await adminCall(gw!.url, 'PUT', `/admin/routing/providers/${encodeURIComponent(label)}`, { body: { disabled: false }, ifMatch: off.etag! });
    expect(on.status).toBe(200);
    expect(gw!.core.model('demo')!.routes[1]!.effectiveWeight).toBe(3);
  });

  it(`${kind}: the audit log lists who changed what, with the records before and after`, async () => {
    const { body } = await adminCall(gw!.adminUrl!, 'GET', '/admin/audit?limit=500');
    const puts = (body.entries as Array<{ method: string; path: string; status: number; caller_id: string; before: any; after: any }>).filter((e) => e.method === 'PUT' && e.status === 200 && e.path.includes(encodeURIComponent(ids[0]!)));
    expect(puts.length).toBe(2);
    expect(puts[0]).toMatchObject({ caller_id: 'admin', before: { weight: 0, version: 1 }, after: { weight: 0, version: 2 } });
    expect(puts[1]).toMatchObject({ before: null, after: { weight: 0, version: 1 } });
    expect(body.entries.some((e: { status: number }) => e.status === 412)).toBe(true);
    // The refusals of the first test are there too, with who and where (60 itemised a minute at most).
    const refused = (body.entries as Array<{ caller_id: string; remote_addr: string; status: number; path: string }>).filter((e) => e.status === 401 && e.path === '/admin/audit');
    expect(new Set(refused.map((e) => e.caller_id))).toEqual(new Set(['anonymous', `key:${hashKey('sk-wrong').slice(0, 12)}`]));
    for (const e of refused) expect(e.remote_addr).toMatch(/127\.0\.0\.1|7f00:1/);
  });

  it(`${kind}: a restart keeps every override`, async () => {
    await gw!.close();
    gw = await start();
    const demo = gw.core.model('demo')!;
    expect(demo.routes.map((r) => [r.effectiveWeight, r.exclusionReasons])).toEqual([
      [0, ['weight_override']],
      [3, ['weight_override']],
    ]);
    expect(await servedBy()).toBe(ids[1]);
    const del = await adminCall(gw.url, 'DELETE', weightPath('demo', ids[0]!), { ifMatch: '"2"' });
    expect([del.status, del.etag]).toEqual([200, '"3"']);
    expect(gw.core.model('demo')!.routes[0]!.exclusionReasons).toEqual([]);
  });
}

describe('control plane, PGlite store', () => {
  scenario('pglite', async () => ({ kind: 'pglite', dir: freshPgliteDir() }));
});

describe.skipIf(!PG_URL)(`control plane, PostgreSQL store${PG_SKIP ? ` (skipped: ${PG_SKIP})` : ''}`, () => {
  scenario('postgres', async () => ({ kind: 'postgres', url: await freshDatabase() }));
});
