// RouteWise settings laid over router_params (`overlaidRouterParams`, through the core): key by
// key the model's override, then router_params, then the fallback layer, then the default; other
// strategies untouched; and a RouteWise profile kept across a generation that only changes a
// setting that does not redefine it.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { overlaidRouterParams, parseModelsConfig, RoutingCore, type RouteOverlay } from '../../../core/index.ts';
import type { RouteWisePlanner } from '../../../core/strategies/routewise/routewise.ts';

const KEYS = ['slo_ms', 'budget_alpha', 'min_samples'] as const;
const layer = fc.record({ slo_ms: fc.integer({ min: 1, max: 9000 }), budget_alpha: fc.double({ min: 0, max: 1, noNaN: true }), min_samples: fc.integer({ min: 1, max: 50 }) }, { requiredKeys: [] });

describe('overlaidRouterParams', () => {
  it('takes each key from the first layer that sets it: override, router_params, fallback', () => {
    fc.assert(
      fc.property(layer, layer, layer, (own, yaml, fallback) => {
        const overlay: RouteOverlay = { routewise: { perModel: new Map([['m', own]]), fallback } };
        const out = overlaidRouterParams(overlay, 'm', 'routewise', yaml);
        for (const k of KEYS) expect(out[k]).toBe(k in own ? own[k] : k in yaml ? yaml[k] : fallback[k]);
        // Another model sees only router_params and the fallback; another strategy only its own params.
        expect(overlaidRouterParams(overlay, 'n', 'routewise', yaml)).toEqual({ ...fallback, ...yaml });
        expect(overlaidRouterParams(overlay, 'm', 'fixed', yaml)).toEqual(yaml);
      }),
    );
  });

  it('a setting changed in a new generation reaches the planner, which keeps its profiles', () => {
    const config = parseModelsConfig({ models: [{ id: 'rw', router: 'routewise', router_params: { slo_ms: 2000 }, route: [{ base_url: 'sim://a', pricing: { input_usd_per_1m: 1, output_usd_per_1m: 2 } }] }] });
    const first = new RoutingCore(config);
    const p1 = first.model('rw')!.planner as RouteWisePlanner;
    const id = first.model('rw')!.routes[0]!.endpointId;
    p1.profile(id)!.recordSuccess(120, 1_000);
    const overlay: RouteOverlay = { routewise: { perModel: new Map([['rw', { hedge_delta_ms: 9 }]]), fallback: { budget_alpha: 0.1, slo_ms: 5 } } };
    const second = new RoutingCore(config, { overlay, carryFrom: first });
    const p2 = second.model('rw')!.planner as RouteWisePlanner;
    expect([p2.params.slo_ms, p2.params.budget_alpha, p2.params.hedge_delta_ms]).toEqual([2000, 0.1, 9]);
    expect(p2.profile(id)).toBe(p1.profile(id)); // neither key redefines the profile: it is shared
    expect(p2.profile(id)!.observations(1_000)).toBe(1);
    // slo_ms is the profile's grid: a new one starts it afresh.
    const third = new RoutingCore(config, { overlay: { routewise: { perModel: new Map([['rw', { slo_ms: 900 }]]), fallback: {} } }, carryFrom: second });
    expect((third.model('rw')!.planner as RouteWisePlanner).profile(id)!.observations(1_000)).toBe(0);
  });
});
