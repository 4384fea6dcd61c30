// The contract check of strategy modules (core/strategies/strategy-module.ts): what a module must
// export, its params (plain description or zod) refusing unknown keys, the planner it builds,
// and the registry's unavailable strategies leaving out only the models that use them.
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  BUILTIN_STRATEGIES,
  fileStrategyName,
  paramsSchemaFromShape,
  parseModelsConfig,
  RoutingCore,
  StrategyModules,
  StrategyRegistry,
  strategyFromModule,
  withoutUnavailableModels,
} from '../../../core/index.ts';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

/** The shipped example module, imported as a driver would (a plain .mjs file, no types). */
const example: unknown = await import(pathToFileURL(join(import.meta.dirname, '../../../examples/strategies/cheapest-first.mjs')).href);

const BUILTINS = new Set(BUILTIN_STRATEGIES.map((d) => d.name));
const pick0 = () => ({ candidate: 0, reason: 'first' });
const ok = { name: 'mine', create: () => ({ pick: pick0 }) };

describe('strategyFromModule', () => {
  it('accepts named exports and a default export alike', () => {
    expect(strategyFromModule(ok, '/m.mjs', BUILTINS).definition.name).toBe('mine');
    expect(strategyFromModule({ default: ok }, '/m.mjs', BUILTINS).definition.name).toBe('mine');
  });

  it.each([
    [{ create: ok.create }, "strategy module /m.mjs: export 'name' is missing or not a string (got undefined)"],
    [{ name: 'Has Space', create: ok.create }, "export 'name' is 'Has Space'; a router name is lower-case letters"],
    [{ name: 'least_cost', create: ok.create }, "export 'name' is 'least_cost', which is already registered"],
    [{ name: 'mine' }, "export 'create' is missing or not a function (got undefined)"],
    [{ name: 'mine', create: (_a: unknown, _b: unknown, _c: unknown, _d: unknown) => ({}) }, "export 'create' takes 4 parameters; the contract is create(params, routes, context?)"],
    [{ ...ok, paramsSchema: { parse: () => ({}) } }, "export 'paramsSchema' is not a zod schema (no safeParse)"],
    [{ ...ok, params: { k: { type: 'float' } } }, "export 'params' is invalid: params.k: type:"],
    [{ ...ok, params: { k: { type: 'integer', default: 1.5 } } }, "export 'params' is invalid: params.k.default:"],
    [{ ...ok, params: {}, paramsSchema: z.object({}) }, "exports both 'params' and 'paramsSchema'; keep one"],
    [{ ...ok, workerSafe: 'yes' }, "export 'workerSafe' is not a boolean (got string)"],
  ])('refuses a module breaking the contract, naming the export (%#)', (ns, message) => {
    expect(() => strategyFromModule(ns, '/m.mjs', BUILTINS)).toThrow(message);
  });

  it('names the module path when its create() throws', () => {
    const throwing = { name: 'mine', create: () => { throw new Error('no price table'); } };
    const { definition } = strategyFromModule(throwing, '/srv/strategies/mine.mjs', BUILTINS);
    expect(() => definition.create({}, [])).toThrow('strategy module /srv/strategies/mine.mjs: create() threw: no price table');
    const throwsString = { name: 'mine', create: () => { throw 'bare'; } };
    expect(() => strategyFromModule(throwsString, '/m.mjs', BUILTINS).definition.create({}, [])).toThrow('strategy module /m.mjs: create() threw: bare');
  });

  it('checks the planner create() returns: pick, and the arity of its hooks', () => {
    const build = (planner: unknown) => strategyFromModule({ name: 'mine', create: () => planner }, '/m.mjs', BUILTINS).definition.create({}, []);
    expect(() => build(null)).toThrow('strategy module /m.mjs: create() returned null, not a planner object with pick()');
    expect(() => build({})).toThrow('create() returned a planner without a pick(candidates, request, nowMs, rng) function');
    expect(() => build({ pick: pick0, observe: 3 })).toThrow('planner.observe is number, not a function');
    expect(() => build({ pick: pick0, carryFrom: (_a: unknown, _b: unknown) => {} })).toThrow('planner.carryFrom takes 2 parameters; at most 1');
    expect(build({ pick: pick0 }).pick([{ endpointId: 'm:a', weight: 1, routeIndex: 0 }], {} as never, 0, {} as never)).toEqual({ candidate: 0, reason: 'first' });
  });

  it('checks every answer: pick names a candidate, order is a permutation; flags and methods are kept', () => {
    class Learner {
      readonly readsEndpointStats = true;
      seen = 0;
      pick() {
        return { candidate: 5, reason: 'x' };
      }
      order() {
        return { order: [0, 0], reason: 'x' };
      }
      observe() {
        this.seen++;
      }
    }
    const inner = new Learner();
    const planner = strategyFromModule({ name: 'mine', create: () => inner }, '/m.mjs', BUILTINS).definition.create({}, []);
    const two = [{ endpointId: 'm:a', weight: 1, routeIndex: 0 }, { endpointId: 'm:b', weight: 1, routeIndex: 1 }];
    expect(() => planner.pick(two, {} as never, 0, {} as never)).toThrow('strategy module /m.mjs: pick returned candidate 5 for 2 candidate(s); return { candidate: <index 0..1>, reason }');
    expect(() => planner.order!(two, {} as never, 0, {} as never)).toThrow('strategy module /m.mjs: order returned [0,0], not a permutation of the 2 candidate indices');
    expect(planner.readsEndpointStats).toBe(true);
    planner.observe!('m:a', { kind: 'ok' } as never, 0);
    expect(inner.seen).toBe(1);
  });
});

describe('params of a module strategy', () => {
  it('a plain description becomes a strict schema with defaults, bounds and enums', () => {
    const s = paramsSchemaFromShape({ on: { type: 'boolean', default: true }, n: { type: 'integer', minimum: 1, maximum: 9 }, mode: { type: 'string', enum: ['a', 'b'] } });
    expect(s.parse({})).toEqual({ on: true });
    expect(s.parse({ n: 3, mode: 'b' })).toEqual({ on: true, n: 3, mode: 'b' });
    expect(s.safeParse({ n: 0 }).success).toBe(false);
    expect(s.safeParse({ mode: 'c' }).success).toBe(false);
    expect(s.safeParse({ other: 1 }).success).toBe(false);
  });

  it('an unknown key is refused by the registry as for a built-in, with the nearest allowed key', () => {
    const r = new StrategyRegistry([...BUILTIN_STRATEGIES, strategyFromModule(example, '/x/cheapest-first.mjs', BUILTINS).definition]);
    expect(r.paramsProblem('cheapest-first', { unpriced_frist: true })).toBe(
      "router_params for 'cheapest-first' are invalid: unknown key(s) 'unpriced_frist' (did you mean 'unpriced_first'?); allowed keys: unpriced_first — remove it or fix the spelling",
    );
    expect(r.paramsProblem('cheapest-first', { unpriced_first: true })).toBeNull();
  });

  it('a zod paramsSchema is used as given', () => {
    const def = strategyFromModule({ ...ok, paramsSchema: z.object({ k: z.number().default(2) }).strict() }, '/m.mjs', BUILTINS).definition;
    const r = new StrategyRegistry([...BUILTIN_STRATEGIES, def]);
    expect(r.paramsProblem('mine', { k: 1 })).toBeNull();
    expect(r.paramsProblem('mine', { j: 1 })).toContain("unknown key(s) 'j'");
  });
});

describe('the example module (examples/strategies/cheapest-first.mjs)', () => {
  const def = strategyFromModule(example, '/x/cheapest-first.mjs', BUILTINS).definition;
  const routes = [
    { endpointId: 'm:c', configuredWeight: 1, costUsdPer1kTokens: 0.02 },
    { endpointId: 'm:a', configuredWeight: 1, costUsdPer1kTokens: null },
    { endpointId: 'm:b', configuredWeight: 1, costUsdPer1kTokens: 0.02 },
    { endpointId: 'm:d', configuredWeight: 1, costUsdPer1kTokens: 0.01 },
  ];
  const candidates = routes.map((r, i) => ({ endpointId: r.endpointId, weight: 1, routeIndex: i }));
  const order = (params: Record<string, unknown>) => def.create(def.paramsSchema.parse(params), routes).order!(candidates, {} as never, 0, {} as never).order;

  it('orders cheapest first, equal prices by endpoint id, unpriced last or first', () => {
    expect(order({})).toEqual([3, 2, 0, 1]);
    expect(order({ unpriced_first: true })).toEqual([1, 3, 2, 0]);
  });

  it('routes a core model: pick is the first of the order', () => {
    const core = new RoutingCore(
      parseModelsConfig({ models: [{ id: 'm', router: 'cheapest-first', route: [{ base_url: 'sim://dear', pricing: { input_usd_per_1m: 5 } }, { base_url: 'sim://cheap', pricing: { input_usd_per_1m: 1 } }] }] }),
      { registry: new StrategyRegistry([...BUILTIN_STRATEGIES, def]) },
    );
    const m = core.model('m')!;
    expect(m.strategy).toBe('cheapest-first');
    const pick = m.planner.pick(m.candidates, {} as never, 0, {} as never);
    expect(m.candidates[pick.candidate]!.endpointId).toContain('cheap');
    expect(m.candidates[pick.candidate]!.endpointId).not.toContain('dear');
  });
});

describe('unavailable strategies', () => {
  const config = parseModelsConfig({
    models: [
      { id: 'a', router: 'gone', route: [{ base_url: 'sim://a' }] },
      { id: 'b', route: [{ base_url: 'sim://b' }] },
      { id: 'c', router: 'typo', route: [{ base_url: 'sim://c' }] },
      { id: 'mt', routing: { strategy: 'failover', targets: [{ model: 'b' }, { model: 'a' }] }, route: [] },
    ],
  });

  it('leave out only the models routed by a failed module (and aliases over them); other models build', () => {
    const r = new StrategyRegistry();
    r.markUnavailable(fileStrategyName('/x/gone.mjs'), 'strategy module /x/gone.mjs: cannot be imported: not found');
    const { config: kept, unavailable } = withoutUnavailableModels(config, r);
    expect(kept.models.map((m) => m.id)).toEqual(['b']);
    expect(unavailable).toEqual([
      { index: 0, id: 'a', field: 'router', reason: "router 'gone' is unavailable: strategy module /x/gone.mjs: cannot be imported: not found" },
      { index: 2, id: 'c', field: 'router', reason: expect.stringContaining("unknown router 'typo'; known routers: ") },
      { index: 3, id: 'mt', field: 'routing.targets.1.model', reason: "target 'a' is not loaded (model 'a' is unavailable)" },
    ]);
    expect(unavailable[1]!.reason).toContain('strategy module(s) that failed to load: strategy module /x/gone.mjs: cannot be imported: not found');
    expect(new RoutingCore(kept, { registry: r }).allModels().map((m) => m.id)).toEqual(['b']);
  });

  it('without a failed module an unknown router stays a configuration error', () => {
    const { unavailable } = withoutUnavailableModels(config, new StrategyRegistry());
    expect(unavailable).toEqual([]);
    expect(() => new RoutingCore(config)).toThrow("models[0] (id 'a'): unknown router 'gone'");
  });

  it('StrategyModules: a failing import is a record, not a rejection; a clash between two modules is refused', async () => {
    const files: Record<string, unknown> = { '/x/one.mjs': ok, '/x/two.mjs': { ...ok } };
    const mods = new StrategyModules(async (p) => {
      if (!(p in files)) throw new Error(`Cannot find module '${p}'`);
      return files[p];
    });
    const records = await mods.load(['/x/one.mjs', '/x/two.mjs', '/x/three.mjs'], [...BUILTINS]);
    expect(records).toEqual([
      { path: '/x/one.mjs', name: 'mine', error: null, workerSafe: false },
      { path: '/x/two.mjs', name: 'two', error: "strategy module /x/two.mjs: export 'name' is 'mine', which is already registered (a built-in or another module); choose another name", workerSafe: false },
      { path: '/x/three.mjs', name: 'three', error: "strategy module /x/three.mjs: cannot be imported: Cannot find module '/x/three.mjs'", workerSafe: false },
    ]);
    const registry = mods.registry(records, BUILTIN_STRATEGIES);
    expect(registry.names()).toContain('mine');
    expect(registry.unavailableReason('three')).toBe(`router 'three' is unavailable: ${records[2]!.error}`);
    expect(() => new StrategyModules(async () => ({})).registry(records, BUILTIN_STRATEGIES)).toThrow('strategy module /x/one.mjs was not loaded in this thread');
  });
});
