// The endpoint-family candidate stage: a route serves the families its `endpoints:` lists (else
// its kind's default), and a request made on a family goes only to routes serving it, for
// per-model routers and multi-target models alike.
import { describe, expect, it } from 'vitest';
import { RoutingCore, parseModelsConfig } from '../../../core/index.ts';
import { routesServing } from '../../../core/request/candidates/endpoint-family.ts';
import { ok, req, runOne, seeded } from '../harness.ts';
import { drive, mreq } from '../multi-target/mt-harness.ts';

const chatOnly = { base_url: 'sim://chat', endpoints: ['chat'] };
const anyFamily = { base_url: 'sim://any' };

function routerCore(routes: Array<Record<string, unknown>>): RoutingCore {
  return new RoutingCore(parseModelsConfig({ models: [{ id: 'm', router: 'round_robin', route: routes }] }));
}

describe('endpoint family stage', () => {
  it('a router model sends embedding requests past a chat-only route, chat to either', () => {
    const core = routerCore([chatOnly, anyFamily]);
    const rng = seeded(1);
    const seen = (endpoint: 'chat' | 'embedding') => {
      const ids = new Set<string>();
      for (let i = 0; i < 40; i++) ids.add(runOne(core, i, rng, () => ok, req({ endpoint })).done.metadata.endpointId!);
      return ids;
    };
    expect(seen('embedding')).toEqual(new Set(['m:any']));
    expect(seen('chat')).toEqual(new Set(['m:any', 'm:chat']));
  });

  it('a router model whose routes do not serve the endpoint answers 400 naming model and endpoint', () => {
    const r = runOne(routerCore([chatOnly]), 0, seeded(1), () => ok, req({ endpoint: 'embedding' }));
    expect(r.error).toMatchObject({ status: 400, code: 'endpoint_not_served' });
    expect(r.error!.message).toContain("model 'm'");
    expect(r.error!.message).toContain('embedding');
  });

  it('a multi-target model skips targets whose route does not serve the endpoint; none ⇒ 400', () => {
    const models = (second: Record<string, unknown>) =>
      parseModelsConfig({
        models: [
          { id: 'c', route: [chatOnly] },
          { id: 'e', route: [second] },
          { id: 'g', routing: { targets: [{ model: 'c' }, { model: 'e' }] } },
        ],
      });
    const served = drive(new RoutingCore(models(anyFamily)), mreq({ endpoint: 'embedding' }), 0, seeded(1), () => ok);
    expect(served.done.metadata.servedBy).toBe('e');
    expect(served.dispatched.every((id) => id.startsWith('e:'))).toBe(true);
    const none = drive(new RoutingCore(models({ base_url: 'sim://c2', endpoints: ['chat', 'completion'] })), mreq({ endpoint: 'embedding' }), 0, seeded(1), () => ok);
    expect(none.error).toMatchObject({ status: 400, code: 'endpoint_not_served' });
    expect(none.error!.message).toContain("model 'g'");
    expect(none.error!.message).toContain('embedding');
  });

  it('a request naming no family passes every route, and the stage allocates nothing when all pass', () => {
    const routes = [{ endpoints: ['chat' as const] }, { endpoints: ['chat' as const, 'embedding' as const] }];
    expect(routesServing(routes, null)).toBe(routes);
    expect(routesServing(routes, 'chat')).toBe(routes);
    expect(routesServing(routes, 'embedding')).toEqual([routes[1]]);
    const r = runOne(routerCore([chatOnly]), 0, seeded(1), () => ok, req());
    expect(r.error).toBeUndefined();
  });

  it("an absent endpoints: list takes the driver's default for the kind, else serves every family", () => {
    const config = parseModelsConfig({ models: [{ id: 'm', route: [{ base_url: 'sim://a' }, { kind: 'other', base_url: 'sim://b' }] }] });
    const routes = (core: RoutingCore) => core.model('m')!.routes.map((r) => r.endpoints);
    expect(routes(new RoutingCore(config))).toEqual([null, null]);
    const defaultEndpoints = (kind: string) => (kind === 'openai_compat' ? ['chat', 'rerank'] : undefined);
    expect(routes(new RoutingCore(config, { defaultEndpoints }))).toEqual([['chat', 'rerank'], null]);
    const only = new RoutingCore(parseModelsConfig({ models: [{ id: 'm', route: [{ base_url: 'sim://a' }] }] }), { defaultEndpoints });
    expect(runOne(only, 0, seeded(1), () => ok, req({ endpoint: 'rerank' })).error).toBeUndefined();
    expect(runOne(only, 0, seeded(1), () => ok, req({ endpoint: 'embedding' })).error).toMatchObject({ code: 'endpoint_not_served' });
  });

  it('family ids are open data: any well-formed id is kept; an empty list or a malformed id is refused', () => {
    expect(parseModelsConfig({ models: [{ id: 'm', route: [{ base_url: 'sim://a', endpoints: ['images', 'messages'] }] }] }).models[0]!.route[0]!.endpoints).toEqual(['images', 'messages']);
    expect(() => parseModelsConfig({ models: [{ id: 'm', route: [{ base_url: 'sim://a', endpoints: [] }] }] })).toThrow(/endpoints/);
    expect(() => parseModelsConfig({ models: [{ id: 'm', route: [{ base_url: 'sim://a', endpoints: ['Chat Completions'] }] }] })).toThrow(/endpoints/);
  });
});
