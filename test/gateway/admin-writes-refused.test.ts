// The admin API without a store on a gateway of several workers refuses RouteWise and runtime setting writes
// (a change would reach one worker only) but still reads them and still verifies upstreams.
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { parseModelsConfig, RoutingCore } from '../../core/index.ts';
import { AdminApi, type AdminCall } from '../../gateway/admin/admin-api.ts';
import { OffloadAdmin } from '../../gateway/admin/offload-admin.ts';
import { RouteAdmin } from '../../gateway/admin/route-admin.ts';
import type { RoutingAdminDeps } from '../../gateway/admin/routing-admin-kit.ts';
import { MemoryOverlayRepo, type OverlaySnapshot } from '../../gateway/store/overlay-repo.ts';

describe('admin writes refused without a store', () => {
  it('PATCH and DELETE of RouteWise settings get 409 store_required; GETs answer', async () => {
    const core = new RoutingCore(parseModelsConfig({ models: [{ id: 'rw', router: 'routewise', route: [{ base_url: 'sim://a', pricing: { input_usd_per_1m: 1, output_usd_per_1m: 2 } }] }] }));
    const overlay: OverlaySnapshot = { weights: [], providers: [], routing: [], routewise: [], settings: [] };
    let applied = 0;
    const api = new AdminApi({
      repo: new MemoryOverlayRepo(),
      core: () => core,
      overlay: () => overlay,
      apply: () => void applied++,
      generation: () => 1,
      persistent: false,
      writesRefused: 'two workers, no store',
      log: pino({ level: 'silent' }),
      targets: () => new Map(),
    });
    const call = (method: string, path: string, body = '', query = ''): Promise<{ status: number; body: any }> =>
      api.handle({ method, path, query: new URLSearchParams(query), ifMatch: '', body, caller: { id: 'admin', admin: true, allowed: null }, remoteAddr: '127.0.0.1' } satisfies AdminCall) as Promise<{ status: number; body: any }>;
    for (const [method, path, body, query] of [
      ['PATCH', '/admin/routewise/model-settings/slo_ms', '{"value": 1}', 'model_id=rw'],
      ['DELETE', '/admin/routewise/model-settings/slo_ms', '', 'model_id=rw'],
      ['PATCH', '/admin/routewise/settings', '{"slo_ms": 1}', ''],
      ['PUT', '/admin/settings/auto_mode_enabled', '{"value": true}', ''],
      ['DELETE', '/admin/settings/auto_mode_enabled', '', ''],
    ] as const) {
      const r = await call(method, path, body, query);
      expect([r.status, r.body.error.code, r.body.error.message]).toEqual([409, 'store_required', 'two workers, no store']);
    }
    expect((await call('GET', '/admin/routewise/model-settings', '', 'model_id=rw')).status).toBe(200);
    expect((await call('GET', '/admin/routewise/settings')).status).toBe(200);
    expect((await call('GET', '/admin/settings/auto_mode_enabled')).body).toMatchObject({ value: false, source: 'gateway.yaml' });
    // A verification saves nothing, so it is served; this route has no built target here.
    const v = await call('PUT', `/admin/routing/weights-verifications/rw/${encodeURIComponent(core.model('rw')!.routes[0]!.endpointId)}`, '{"weight": 1}');
    expect([v.status, v.body.verified, v.body.results[0].error]).toEqual([200, false, 'no upstream target for this route in the generation in force']);
    expect(applied).toBe(0);
  });

  it('runtime-route and offload writes get 409 store_required; their verification twins answer', async () => {
    const models = parseModelsConfig({ models: [{ id: 'org/m', route: [{ base_url: 'http://127.0.0.1:1/v1' }, { base_url: 'http://127.0.0.1:2/v1' }] }] });
    const core = new RoutingCore(models);
    const overlay: OverlaySnapshot = { weights: [], providers: [], routing: [], routewise: [], settings: [] };
    let applied = 0;
    const deps: RoutingAdminDeps = { repo: new MemoryOverlayRepo(), core: () => core, overlay: () => overlay, yaml: () => models, assess: () => ({ refused: new Map(), error: null }), apply: () => void applied++, generation: () => 1, writesRefused: 'two workers, no store' };
    const api = new AdminApi({ repo: deps.repo, core: () => core, overlay: () => overlay, apply: () => void applied++, generation: () => 1, persistent: false, writesRefused: 'two workers, no store', log: pino({ level: 'silent' }), modules: [new RouteAdmin(deps), new OffloadAdmin(deps)] });
    const call = (method: string, path: string, body: unknown): Promise<{ status: number; body: any }> =>
      api.handle({ method, path, query: new URLSearchParams('timeout_ms=2000'), ifMatch: '', body: JSON.stringify(body), caller: { id: 'admin', admin: true, allowed: null }, remoteAddr: '127.0.0.1' } satisfies AdminCall) as Promise<{ status: number; body: any }>;
    const route = core.model('org/m')!.routes[0]!.endpointId;
    for (const [method, path, body] of [
      ['POST', '/admin/routing/provider-route-models', { model_id: 'org/n', route: { base_url: 'http://127.0.0.1:3/v1' } }],
      ['POST', '/admin/routing/provider-route-candidates/org/m', { base_url: 'http://127.0.0.1:3/v1' }],
      ['PUT', `/admin/routing/provider-routes/org/m/${encodeURIComponent(route)}`, { base_url: 'http://127.0.0.1:3/v1' }],
      ['PUT', '/admin/routing/offload-routes/org/m', { route_id: route, wait_sec: 1 }],
    ] as const) {
      const w = await call(method, path, body);
      expect([w.status, w.body.error.code]).toEqual([409, 'store_required']);
      const twin = path.replace(/^(\/admin\/routing\/[a-z-]+)/, '$1-verifications');
      const v = await call(method, twin, body);
      expect([twin, v.status, v.body.saved, v.body.verified, v.body.results[0].status]).toEqual([twin, 200, false, false, 'failed']);
    }
    expect(applied).toBe(0);
  });
});
