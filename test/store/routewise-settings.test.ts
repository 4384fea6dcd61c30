// RouteWise settings at run time against a real gateway on 127.0.0.1, without a store, with an
// embedded PGlite store and with the run's PostgreSQL server: per-model overrides (aliases resolve to the
// canonical model), the fallback layer, precedence override > router_params > fallback > default,
// every validation error, optimistic concurrency, the audit log, and settings kept across a restart.
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RouteWiseParams } from '../../core/strategies/routewise/params.ts';
import { startGateway, type RunningGateway } from '../../gateway/gateway.ts';
import { startEmulator, type RunningEmulator } from '../../simulator/emulator/emulator.ts';
import { adminCall, freshDatabase, freshPgliteDir, PG_SKIP, PG_URL } from './harness.ts';
import { rwConfig } from './harness-rw.ts';

const key = (k: string, model = 'rw') => `/admin/routewise/model-settings/${encodeURIComponent(k)}?model_id=${encodeURIComponent(model)}`;

function scenario(kind: 'memory' | 'pglite' | 'postgres', makeStore: () => Promise<Record<string, unknown> | undefined>): void {
  let emus: RunningEmulator[] = [];
  let store: Record<string, unknown> | undefined;
  let gw: RunningGateway;
  const start = () => startGateway({ config: rwConfig(emus, { ...(store && { store }), store_poll_ms: 60_000 }), host: '127.0.0.1', port: 0, adminPort: 0, seed: 5, logger: pino({ level: 'silent' }) });
  const params = (): RouteWiseParams => (gw.core.model('rw')!.planner as unknown as { params: RouteWiseParams }).params;
  const call = (method: string, path: string, opts: Parameters<typeof adminCall>[3] = {}) => adminCall(gw.url, method, path, opts);

  beforeAll(async () => {
    emus = await Promise.all([0, 1].map(() => startEmulator({ faults: { latency_scale: 0.02 } })));
    store = await makeStore();
    gw = await start();
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all(emus.map((e) => e.close()));
  });

  it(`${kind}: GET lists every key with its value and source; an alias reads its canonical model`, async () => {
    const r = await call('GET', '/admin/routewise/model-settings?model_id=rw-alias');
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ model_id: 'rw', strategy: 'routewise', in_effect: true });
    expect(r.body.settings.slo_ms).toEqual({ value: 2000, source: 'router_params', override: null, version: 0 });
    expect(r.body.settings.budget_alpha).toEqual({ value: 0.75, source: 'default', override: null, version: 0 });
    expect(r.body.settings.stateful_providers_single_worker_only).toBeUndefined(); // start-only
    const one = await call('GET', key('hedge', 'rw-alias'));
    expect([one.status, one.etag, one.body.value, one.body.source]).toEqual([200, '"0"', 'off', 'default']);
    const fb = await call('GET', '/admin/routewise/settings');
    expect(fb.body.settings).toEqual({});
    expect(fb.body.defaults).toMatchObject({ slo_ms: 3000, budget_alpha: 0.75, cold_start: 'explore' });
  });

  it(`${kind}: PATCH through an alias overrides the canonical model's key and applies a new generation`, async () => {
    const before = (await call('GET', '/admin/routing')).body.generation;
    const r = await call('PATCH', key('slo_ms', 'rw-alias'), { body: { value: 1500 } });
    expect(r.status).toBe(200);
    expect(r.etag).toBe('"1"');
    expect(r.body).toMatchObject({ model_id: 'rw', key: 'slo_ms', requested_as: 'rw-alias', generation: before + 1, record: { modelId: 'rw', key: 'slo_ms', value: 1500, version: 1, updatedBy: 'admin' } });
    expect(params().slo_ms).toBe(1500);
    const view = await call('GET', key('slo_ms'));
    expect(view.body).toMatchObject({ value: 1500, source: 'override', version: 1, override: { value: 1500, version: 1, updated_by: 'admin' } });
    expect(view.etag).toBe('"1"');
    // The same set of values through either name.
    expect((await call('GET', key('slo_ms', 'rw-alias'))).body.override.value).toBe(1500);
  });

  it(`${kind}: the fallback layer fills keys no override or router_params sets; DELETE restores the inherited value`, async () => {
    const p = await call('PATCH', '/admin/routewise/settings', { body: { slo_ms: 999, budget_alpha: 0.3, cold_start: 'require_observations' } });
    expect(p.status).toBe(200);
    expect(p.body.changed).toEqual(['slo_ms', 'budget_alpha', 'cold_start']);
    expect(p.body.settings.budget_alpha).toMatchObject({ value: 0.3, version: 1, updated_by: 'admin' });
    expect([params().slo_ms, params().budget_alpha, params().cold_start]).toEqual([1500, 0.3, 'require_observations']);
    const del = await call('DELETE', key('slo_ms'), { ifMatch: '"1"' });
    expect([del.status, del.etag]).toEqual([200, '"2"']);
    expect(params().slo_ms).toBe(2000); // router_params wins over the fallback
    expect((await call('GET', key('slo_ms'))).body).toMatchObject({ value: 2000, source: 'router_params', override: null, version: 2 });
    expect((await call('GET', key('budget_alpha'))).body).toMatchObject({ value: 0.3, source: 'fallback' });
    const again = await call('DELETE', key('slo_ms'));
    expect([again.status, again.body.error.code]).toEqual([404, 'override_not_found']);
    // A merge patch: null removes a fallback key; removing one not set changes nothing.
    const rm = await call('PATCH', '/admin/routewise/settings', { body: { cold_start: null, hedge: null } });
    expect([rm.status, rm.body.changed]).toEqual([200, ['cold_start']]);
    expect(params().cold_start).toBe('explore');
    const noop = await call('PATCH', '/admin/routewise/settings', { body: { hedge: null } });
    expect(noop.body.changed).toEqual([]);
  });

  it(`${kind}: a model on another router keeps its settings for later; they do not touch its planner`, async () => {
    const g = await call('GET', '/admin/routewise/model-settings?model_id=plain');
    expect(g.body).toMatchObject({ model_id: 'plain', strategy: 'fixed', in_effect: false });
    expect(g.body.settings.budget_alpha.source).toBe('fallback');
    const p = await call('PATCH', key('min_samples', 'plain'), { body: { value: 2, version: 0 } });
    expect(p.status).toBe(200);
    expect(gw.core.model('plain')!.strategy).toBe('fixed');
  });

  it(`${kind}: every path, query and body is checked (400 naming the field, 404 for unknown names)`, async () => {
    const bad = async (method: string, path: string, body: unknown, param: string | null, pattern: RegExp, extra: { raw?: string; ifMatch?: string } = {}) => {
      const r = await call(method, path, { body, ...extra });
      expect(r.status, `${method} ${path} ${JSON.stringify(body)}`).toBe(400);
      expect(r.body.error.param).toBe(param);
      expect(r.body.error.message).toMatch(pattern);
    };
    await bad('GET', '/admin/routewise/model-settings', undefined, 'model_id', /'model_id' is required/);
    await bad('PATCH', '/admin/routewise/model-settings/slo_ms', { value: 1 }, 'model_id', /query parameter/);
    await bad('PATCH', key('slo'), { value: 1 }, 'key', /Unknown RouteWise setting 'slo' \(did you mean 'slo_ms'\?\)/);
    await bad('PATCH', key('quota_limit'), { value: 1 }, 'key', /resource limit.*route\[\]\.quota/);
    await bad('PATCH', key('stateful_providers_single_worker_only'), { value: false }, 'key', /cannot be tuned at run time/);
    await bad('GET', key('nope'), undefined, 'key', /Unknown RouteWise setting/);
    await bad('PATCH', key('slo_ms'), { value: -5 }, 'value', /'value' is invalid for 'slo_ms'.*default 3000/);
    await bad('PATCH', key('hedge'), { value: 'always' }, 'value', /'value' is invalid for 'hedge'/);
    await bad('PATCH', key('min_samples'), { value: 1.5 }, 'value', /invalid for 'min_samples'/);
    await bad('PATCH', key('slo_ms'), {}, 'value', /'value' is required/);
    await bad('PATCH', key('slo_ms'), { value: 1, colour: 'red' }, 'colour', /Unknown field 'colour'/);
    await bad('PATCH', key('slo_ms'), undefined, null, /not valid JSON/, { raw: '{nope' });
    await bad('PATCH', key('slo_ms'), { value: 1 }, 'If-Match', /not a record version/, { ifMatch: 'soon' });
    await bad('DELETE', key('slo_ms'), { version: -1 }, 'version', /'version' is invalid/);
    // A rule between keys: the low quantile must stay below the high one (0.9 by default).
    await bad('PATCH', key('envelope_low_quantile'), { value: 0.95 }, null, /model 'rw'.*envelope_low_quantile: must be below envelope_high_quantile/);
    await bad('PATCH', '/admin/routewise/settings', { envelope_high_quantile: 0.05 }, null, /model 'rw'/);
    await bad('PATCH', '/admin/routewise/settings', {}, null, /names no setting/);
    await bad('PATCH', '/admin/routewise/settings', [1], null, /JSON object of settings/);
    await bad('PATCH', '/admin/routewise/settings', undefined, null, /not valid JSON/, { raw: '[' });
    await bad('PATCH', '/admin/routewise/settings', { budget_alfa: 0.5 }, 'budget_alfa', /did you mean 'budget_alpha'/);
    await bad('PATCH', '/admin/routewise/settings', { budget_alpha: 2 }, 'budget_alpha', /invalid for 'budget_alpha'/);
    await bad('PATCH', '/admin/routewise/settings', { concurrency: 3 }, 'concurrency', /route\[\]\.concurrency/);
    for (const m of ['nope', 'rw/unknown']) {
      const r = await call('PATCH', key('slo_ms', m), { body: { value: 1 } });
      expect([r.status, r.body.error.code, r.body.error.param]).toEqual([404, 'model_not_found', 'model_id']);
    }
    expect((await call('PUT', key('slo_ms'), { body: { value: 1 } })).status).toBe(404);
    expect((await call('POST', '/admin/routewise/settings', { body: { slo_ms: 1 } })).status).toBe(404);
    // Nothing above changed anything.
    expect([params().slo_ms, params().envelope_low_quantile, params().envelope_high_quantile]).toEqual([2000, 0.1, 0.9]);
  });

  it(`${kind}: a stale If-Match gets 412, a stale version 409, and neither changes anything`, async () => {
    const set = await call('PATCH', key('hedge_delta_ms'), { body: { value: 7 } });
    expect(set.etag).toBe('"1"');
    const stale = await call('PATCH', key('hedge_delta_ms'), { body: { value: 9 }, ifMatch: '"0"' });
    expect([stale.status, stale.body.error.code, stale.body.current_version]).toEqual([412, 'precondition_failed', 1]);
    const conflict = await call('PATCH', key('hedge_delta_ms'), { body: { value: 9, version: 0 } });
    expect([conflict.status, conflict.body.error.code]).toEqual([409, 'version_conflict']);
    const delStale = await call('DELETE', key('hedge_delta_ms'), { body: { version: 0 } });
    expect(delStale.status).toBe(409);
    expect(params().hedge_delta_ms).toBe(7);
    expect((await call('PATCH', key('hedge_delta_ms'), { body: { value: 9 }, ifMatch: set.etag! })).status).toBe(200);
    expect(params().hedge_delta_ms).toBe(9);
  });

  it(`${kind}: two writes valid alone but not together: one is stored, the other refused`, async () => {
    // low 0.5 < high 0.9 (default), and high 0.3 > low 0.1 (default); together low ≥ high.
    const [lo, hi] = await Promise.all([call('PATCH', key('envelope_low_quantile'), { body: { value: 0.5 } }), call('PATCH', key('envelope_high_quantile'), { body: { value: 0.3 } })]);
    expect([lo.status, hi.status].sort()).toEqual([200, 400]);
    const p = params();
    expect(p.envelope_low_quantile < p.envelope_high_quantile).toBe(true);
    const undo = lo.status === 200 ? 'envelope_low_quantile' : 'envelope_high_quantile';
    expect((await call('DELETE', key(undo))).status).toBe(200);
  });

  it(`${kind}: the audit log has each change with the records before and after`, async () => {
    const { body } = await adminCall(gw.adminUrl!, 'GET', '/admin/audit?limit=500');
    const entries = body.entries as Array<{ method: string; path: string; status: number; before: any; after: any }>;
    const patches = entries.filter((e) => e.method === 'PATCH' && e.status === 200 && e.path.startsWith('/admin/routewise/model-settings/slo_ms'));
    expect(patches).toEqual([expect.objectContaining({ before: null, after: expect.objectContaining({ value: 1500, version: 1 }) })]);
    const fb = entries.filter((e) => e.path === '/admin/routewise/settings' && e.method === 'PATCH' && e.status === 200);
    expect(fb.at(-1)).toMatchObject({ before: [], after: [{ key: 'slo_ms', value: 999 }, { key: 'budget_alpha', value: 0.3 }, { key: 'cold_start', value: 'require_observations' }] });
    expect(entries.some((e) => e.status === 412 && e.path.includes('hedge_delta_ms'))).toBe(true);
  });

  it.skipIf(kind === 'memory')(`${kind}: a restart keeps every setting`, async () => {
    await gw.close();
    gw = await start();
    expect([params().slo_ms, params().budget_alpha, params().hedge_delta_ms, params().cold_start]).toEqual([2000, 0.3, 9, 'explore']);
    expect((await call('GET', key('min_samples', 'plain'))).body).toMatchObject({ value: 2, source: 'override' });
  });
}

describe('RouteWise settings, no store (this process only)', () => {
  scenario('memory', async () => undefined);
});

describe('RouteWise settings, PGlite store', () => {
  scenario('pglite', async () => ({ kind: 'pglite', dir: freshPgliteDir() }));
});

describe.skipIf(!PG_URL)(`RouteWise settings, PostgreSQL store${PG_SKIP ? ` (skipped: ${PG_SKIP})` : ''}`, () => {
  scenario('postgres', async () => ({ kind: 'postgres', url: await freshDatabase() }));
});
