import { describe, expect, it } from 'vitest';
import { ModelsConfigSchema, RoutingCore } from '../../../core/index.ts';

const config = ModelsConfigSchema.parse({
  routing: { default_router: 'fixed', local_weight_share: 1 },
  models: [
    {
      id: 'm',
      route: [
        { kind: 'openai_compat', base_url: 'http://127.0.0.1:9001/v1', weight: 2, provider: 'a' },
        { kind: 'openai_compat', base_url: 'https://remote.example/v1', weight: 3, provider: 'b', local: false },
      ],
    },
  ],
});

describe('route overlay', () => {
  it('applies overrides and disabled providers with their reasons', () => {
    const plain = new RoutingCore(config);
    const [a, b] = plain.model('m')!.routes;
    expect(b!.exclusionReasons).toEqual(['routing_yaml']);
    const core = new RoutingCore(config, { overlay: { weightOverrides: new Map([[a!.endpointId, 0]]), disabledProviders: new Set(['b']), ignoreLocalWeightShare: true } });
    const [oa, ob] = core.model('m')!.routes;
    expect([oa!.effectiveWeight, oa!.exclusionReasons]).toEqual([0, ['weight_override']]);
    expect([ob!.effectiveWeight, ob!.exclusionReasons]).toEqual([0, ['provider_disabled']]);
    expect(core.model('m')!.candidates.map((c) => c.weight)).toEqual([0, 0]);
  });

  it("routing.yaml's split applies only without a store and only when the effective default router is fixed", () => {
    const weights = (core: RoutingCore) => core.model('m')!.routes.map((r) => [r.effectiveWeight, r.exclusionReasons]);
    // fixed, no store: the remote group's share is 0 ⇒ routing_yaml.
    expect(weights(new RoutingCore(config))).toEqual([
      [1, []],
      [0, ['routing_yaml']],
    ]);
    // fixed, with a store: configured weights.
    expect(weights(new RoutingCore(config, { overlay: { ignoreLocalWeightShare: true } }))).toEqual([
      [2, []],
      [3, []],
    ]);
    // Another default router, no store: configured weights, for a model that names its own router too.
    const rr = ModelsConfigSchema.parse({ ...config, routing: { default_router: 'round_robin', local_weight_share: 1 }, models: [...config.models, { ...config.models[0]!, id: 'own', router: 'fixed' }] });
    const core = new RoutingCore(rr);
    expect(weights(core)).toEqual([
      [2, []],
      [3, []],
    ]);
    expect(core.model('own')!.routes.map((r) => r.effectiveWeight)).toEqual([2, 3]);
    expect(core.routeExclusions()).toEqual([]);
  });

  it('a successor core shares the learned state of its predecessor', () => {
    const first = new RoutingCore(config);
    const id = first.model('m')!.routes[0]!.endpointId;
    first.health.markDegraded(id, 1);
    expect(first.health.snapshotOf(id, 10).state).toBe('open');
    const next = new RoutingCore(config, { carryFrom: first, overlay: { weightOverrides: new Map([[id, 1]]) } });
    expect(next.health.snapshotOf(id, 10).state).toBe('open');
    const fresh = new RoutingCore(config, { carryFrom: first, health: { failureThreshold: 9 } });
    expect(fresh.health.snapshotOf(id, 10).state).toBe('closed');
  });
});
