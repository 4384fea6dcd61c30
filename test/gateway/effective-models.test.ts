// The YAML registry with routing records laid over it (gateway/admin/effective-models.ts): route
// ids, sources, re-points, offload policies by route id, records that no longer fit listed as
// ignored, and the registry's own checks; and the admin calls' refusal on a gateway that cannot
// keep a change consistent.
import { describe, expect, it } from 'vitest';
import { parseModelsConfig } from '../../core/index.ts';
import { composeModels, recordKey, unusableRecords } from '../../gateway/admin/effective-models.ts';
import { OffloadAdmin } from '../../gateway/admin/offload-admin.ts';
import { RouteAdmin } from '../../gateway/admin/route-admin.ts';
import type { RoutingAdminDeps } from '../../gateway/admin/routing-admin-kit.ts';
import { MemoryOverlayRepo } from '../../gateway/store/overlay-repo.ts';
import type { RoutingRecord } from '../../gateway/store/routing-records.ts';

const yaml = parseModelsConfig({
  models: [
    { id: 'a', route: [{ base_url: 'http://127.0.0.1:8001/v1' }, { base_url: 'http://127.0.0.1:8002/v1' }], offload: { route: 'a:local-8002', wait_sec: 3 } },
    { id: 'one', route: [{ base_url: 'http://127.0.0.1:8009/v1' }] },
    { id: 'multi', routing: { targets: [{ model: 'one' }] } },
  ],
});

let seq = 0;
const rec = (kind: RoutingRecord['kind'], modelId: string, key: string, value: unknown): RoutingRecord => ({ kind, modelId, key, value, seq: ++seq, version: 1, updatedBy: 't', updatedAt: '' });
const route = (port: number) => ({ kind: 'openai_compat', weight: 1, base_url: `http://127.0.0.1:${port}/v1`, input_modalities: ['text'] });

describe('composeModels', () => {
  it('without records is the YAML itself, every route source yaml with its endpoint id as route id', () => {
    const eff = composeModels(yaml, []);
    expect(eff.config).toBe(yaml);
    expect(eff.models.get('a')!.routes.map((r) => [r.routeId, r.source])).toEqual([
      ['a:local-8001', 'yaml'],
      ['a:local-8002', 'yaml'],
    ]);
    expect(eff.models.has('multi')).toBe(false); // no routes of its own
    expect(eff.names.get('multi')).toBe('multi');
    expect(eff.models.get('a')!.offload).toMatchObject({ source: 'yaml', routeId: 'a:local-8002' });
  });

  it('a re-pointed YAML offload route keeps the policy: it follows the route id to the new endpoint id', () => {
    const eff = composeModels(yaml, [rec('repoint', 'a', 'a:local-8002', { base_url: 'http://127.0.0.1:8003/v1' })]);
    const a = eff.config.models.find((m) => m.id === 'a')!;
    expect(a.route.map((r) => r.base_url)).toEqual(['http://127.0.0.1:8001/v1', 'http://127.0.0.1:8003/v1']);
    expect(a.offload).toMatchObject({ route: 'a:local-8003', wait_sec: 3 });
    expect(eff.models.get('a')!.routes[1]).toMatchObject({ routeId: 'a:local-8002', endpointId: 'a:local-8003', source: 'override' });
  });

  it('runtime models, routes, router switches and offload overrides, in record order', () => {
    const eff = composeModels(yaml, [
      rec('model', 'x/y', '', { aliases: ['xy'], published: true, router_params: {} }),
      rec('route', 'x/y', 'r2', route(8102)),
      rec('route', 'x/y', 'r1', route(8101)),
      rec('route', 'a', 'extra', route(8004)),
      rec('strategy', 'a', '', { router: 'least_busy' }),
      rec('offload', 'a', '', { route_id: 'extra', wait_sec: 1, max_input_tokens: 100 }),
    ]);
    expect(eff.config.models.find((m) => m.id === 'x/y')!.route.map((r) => r.base_url)).toEqual(['http://127.0.0.1:8102/v1', 'http://127.0.0.1:8101/v1']);
    const a = eff.config.models.find((m) => m.id === 'a')!;
    expect([a.router, a.offload]).toEqual(['least_busy', { route: 'a:local-8004', wait_sec: 1, max_input_tokens: 100 }]);
    expect(eff.names.get('xy')).toBe('x/y');
    expect(eff.ignored).toEqual([]);
  });

  it('records that no longer fit are left out and listed with the reason', () => {
    const eff = composeModels(yaml, [
      rec('model', 'a', '', { aliases: [], published: true, router_params: {} }), // the YAML took the id
      rec('route', 'gone', 'r', route(8100)),
      rec('repoint', 'a', 'a:local-8999', { base_url: 'http://127.0.0.1:8005/v1' }),
      rec('route', 'a', 'dup', route(8001)), // derives a:local-8001 again
      rec('repoint', 'a', 'a:local-8002', { base_url: 'http://127.0.0.1:8001/v1' }), // so does this
      rec('route', 'a', 'removed', null),
    ]);
    expect(eff.ignored.map((x) => [x.kind, x.modelId, x.key])).toEqual([
      ['model', 'a', ''],
      ['repoint', 'a', 'a:local-8999'],
      ['route', 'gone', 'r'],
      ['route', 'a', 'dup'],
      ['repoint', 'a', 'a:local-8002'],
    ]);
    expect(eff.config.models.find((m) => m.id === 'a')!.route.map((r) => r.base_url)).toEqual(['http://127.0.0.1:8001/v1', 'http://127.0.0.1:8002/v1']);
  });

  it("a second route on a multi-target model's one-route target fails the registry's checks", () => {
    expect(() => composeModels(yaml, [rec('route', 'one', 'r', route(8010))])).toThrow(/'one' has 2 routes; a target must be a direct model with exactly one route/);
  });
});

describe('unusableRecords', () => {
  // A trial that refuses any route with kind 'bogus', with the field, as the gateway's build does.
  const trial = (records: readonly RoutingRecord[]): void => {
    for (const m of composeModels(yaml, records).config.models) {
      if (m.route.some((r) => r.kind === 'bogus')) throw Object.assign(new Error(`model '${m.id}': route kind 'bogus' has no gateway adapter`), { field: 'kind' });
    }
  };
  it('refuses nothing, in one trial, when every record builds together', () => {
    let trials = 0;
    const records = [rec('route', 'a', 'r', route(8010))];
    expect(unusableRecords(records, (r) => (trials++, trial(r)))).toEqual({ refused: new Map(), error: null });
    expect(trials).toBe(1);
  });
  it('leaves out exactly the records that do not build, with the reason and field; removed records and the rest stay', () => {
    const bad = rec('route', 'a', 'bad', { ...route(8011), kind: 'bogus' });
    const good = rec('route', 'a', 'good', route(8012));
    const gone = { ...rec('route', 'a', 'gone', null) };
    const out = unusableRecords([bad, gone, good], trial);
    expect([...out.refused]).toEqual([[recordKey(bad), { reason: "model 'a': route kind 'bogus' has no gateway adapter", field: 'kind' }]]);
    const eff = composeModels(yaml, [bad, gone, good], out.refused);
    expect(eff.models.get('a')!.routes.map((r) => r.routeId)).toEqual(['a:local-8001', 'a:local-8002', 'good']);
    expect(eff.ignored).toEqual([{ kind: 'route', modelId: 'a', key: 'bad', reason: "cannot be applied: model 'a': route kind 'bogus' has no gateway adapter" }]);
  });
  it('answers the error, refusing no record, when the configuration fails without any', () => {
    const out = unusableRecords([rec('route', 'a', 'r', route(8013))], () => {
      throw new Error('the YAML itself');
    });
    expect([out.refused.size, out.error?.message]).toEqual([0, 'the YAML itself']);
  });
});

describe('weight overrides a routing batch clears', () => {
  it('only set ones, in the batch that succeeds (in-memory repo)', async () => {
    const repo = new MemoryOverlayRepo();
    await repo.writeWeight('a', 'a:local-8001', 0, null, 't');
    await repo.writeWeight('a', 'a:local-8002', null, null, 't');
    const refused = await repo.writeRouting([{ kind: 'route', modelId: 'a', key: 'x', value: route(8020), expect: 3 }], 't', [{ modelId: 'a', endpointId: 'a:local-8001' }]);
    expect(refused.ok).toBe(false);
    expect((await repo.load()).weights.find((w) => w.endpointId === 'a:local-8001')!.weight).toBe(0);
    const r = await repo.writeRouting([{ kind: 'route', modelId: 'a', key: 'x', value: route(8020), expect: null }], 't', [
      { modelId: 'a', endpointId: 'a:local-8001' },
      { modelId: 'a', endpointId: 'a:local-8002' },
    ]);
    expect(r.ok && r.weights.map((w) => [w.before.weight, w.after.weight, w.after.version])).toEqual([[0, null, 2]]);
  });
});

describe('runtime routing calls on a gateway that cannot keep a change consistent', () => {
  it('answer 409 store_required for every change and still read', async () => {
    const deps: RoutingAdminDeps = {
      repo: new MemoryOverlayRepo(),
      core: () => {
        throw new Error('not needed');
      },
      overlay: () => ({ weights: [], providers: [], routing: [], routewise: [], settings: [] }),
      yaml: () => yaml,
      assess: () => ({ refused: new Map(), error: null }),
      apply: () => {},
      generation: () => 1,
      writesRefused: 'two workers, no store',
    };
    const routes = new RouteAdmin(deps);
    const offload = new OffloadAdmin(deps);
    const caller = { id: 'admin', admin: true } as never;
    const call = (method: string, path: string) => ({ method, path, query: new URLSearchParams(), ifMatch: '', body: '{}', caller, remoteAddr: '127.0.0.1' });
    for (const [m, p] of [
      ['POST', '/admin/routing/provider-route-models'],
      ['POST', '/admin/routing/provider-route-candidates/a'],
      ['PATCH', '/admin/routing/provider-route-candidates/a/r'],
      ['DELETE', '/admin/routing/provider-route-candidates/a/r'],
      ['PUT', '/admin/routing/provider-routes/a/a:local-8001'],
      ['DELETE', '/admin/routing/provider-routes/a/a:local-8001'],
      ['PATCH', '/admin/routing/provider-route-strategies/a'],
    ] as const) {
      const r = await routes.route(call(m, p))!;
      expect([r.answer.status, (r.answer.body as { error: { code: string } }).error.code], `${m} ${p}`).toEqual([409, 'store_required']);
    }
    for (const m of ['PUT', 'DELETE']) expect((await offload.route(call(m, '/admin/routing/offload-routes/a'))!).answer.status).toBe(409);
    expect(routes.route(call('GET', '/admin/routing/nothing'))).toBeNull();
    expect(offload.route(call('POST', '/admin/routing/offload-routes/a'))).toBeNull();
  });
});
