// Configuration of multi-target models: the routing: block's defaults, and config errors that
// name the model and the field (unknown or nested targets, route counts, statuses, CIDR, strategy).
import { describe, expect, it } from 'vitest';
import { RoutingCore, parseModelsConfig } from '../../../core/index.ts';
import { group, makeMtCore } from './mt-harness.ts';

const direct = (id: string, routes = 1) => ({ id, route: Array.from({ length: routes }, (_, i) => ({ base_url: `sim://${id}-${i}` })) });
const parse = (models: unknown[]) => parseModelsConfig({ models });

describe('multi-target config', () => {
  it('fills the documented defaults', () => {
    const cfg = parse([direct('a'), group('g', ['a'])]);
    const r = cfg.models[1]!.routing!;
    expect(r).toMatchObject({ strategy: 'failover', retry_on_429: false, fallback_on_statuses: [], when_all_unavailable: 'fail', params: {} });
    expect(r.targets[0]).toMatchObject({ model: 'a', weight: 1, priority: 0, tags: [] });
    expect(r.retries).toBeUndefined();
    expect(r.max_fallbacks).toBeUndefined();
  });

  it('targets may name a direct model by id or alias; models keep configuration order', () => {
    const core = new RoutingCore(parse([group('g', ['a-alias', 'b']), { ...direct('a'), aliases: ['a-alias'] }, direct('b')]));
    expect(core.allModels().map((m) => m.id)).toEqual(['g', 'a', 'b']);
    const g = core.model('g')!;
    expect(g.multiTarget!.targets.map((t) => t.model)).toEqual(['a', 'b']);
    expect(g.routes.map((r) => [r.endpointId, r.routeIndex])).toEqual([['a:a-0', 0], ['b:b-0', 1]]);
    expect(core.routeExclusions()).toEqual([]);
  });

  it.each([
    ['an unknown target', [direct('a'), group('g', ['a', 'zz'])], /models\.1\.routing\.targets\.1\.model: model 'g': routing\.targets\[1\]\.model 'zz' is not a model id or alias; direct models: a/],
    ['a nested multi-target target', [direct('a'), group('inner', ['a']), group('g', ['inner'])], /models\.2\.routing\.targets\.0\.model: model 'g'.*'inner' is itself a multi-target model/],
    ['a target with two routes', [direct('a', 2), group('g', ['a'])], /model 'g'.*'a' has 2 routes; a target must be a direct model with exactly one route/],
    ['a repeated target', [direct('a'), group('g', ['a', 'a'])], /model 'g': routing\.targets\[1\]\.model 'a' repeats routing\.targets\[0\]/],
    ['a fallback status outside 400-599', [direct('a'), group('g', ['a'], { fallback_on_statuses: [408, 302] })], /models\.1\.routing\.fallback_on_statuses\.1: model 'g': fallback_on_statuses entries must be HTTP error statuses 400-599, got 302/],
    ['a cooldown trigger status outside 400-599', [{ ...direct('a'), cooldown: { enabled: true, trigger_statuses: [600] } }, group('g', ['a'])], /models\.0\.cooldown\.trigger_statuses\.0: model 'a'.*got 600/],
    ['a bad CIDR', [direct('a'), group('g', [{ model: 'a', allowed_cidrs: ['10.0.0.0/40'] }])], /models\.1\.routing\.targets\.0\.allowed_cidrs\.0: model 'g': routing\.targets\[0\]\.allowed_cidrs: '10\.0\.0\.0\/40' is not a CIDR block/],
    ['routing plus route', [direct('a'), { ...group('g', ['a']), route: [{ base_url: 'sim://x' }] }], /model 'g' has a routing: block.*cannot also have route:/],
    ['cooldown on a multi-target model', [direct('a'), { ...group('g', ['a']), cooldown: { enabled: true } }], /model 'g' is a multi-target model; cooldown: belongs on its target/],
    ['an unknown when_all_unavailable', [direct('a'), group('g', ['a'], { when_all_unavailable: 'maybe' })], /models\.1\.routing\.when_all_unavailable/],
    ['a non-positive weight', [direct('a'), group('g', [{ model: 'a', weight: 0 }])], /models\.1\.routing\.targets\.0\.weight/],
    ['an unknown key', [direct('a'), group('g', ['a'], { max_fallback: 1 })], /models\.1\.routing.*max_fallback/],
  ])('rejects %s, naming the model and field', (_what, models, message) => {
    expect(() => parse(models)).toThrow(message);
  });

  it('an unknown strategy or bad strategy params fail when the core is built, naming the model', () => {
    expect(() => makeMtCore(['a'], [group('g', ['a'], { strategy: 'fastest' })])).toThrow(/models\[1\] \(id 'g'\) routing\.strategy: unknown router 'fastest'/);
    expect(() => makeMtCore(['a'], [group('g', ['a'], { strategy: 'consistent_hash', params: { virtual_nodes: 0 } })])).toThrow(/id 'g'.*virtual_nodes/);
    expect(() => makeMtCore(['a'], [group('g', ['a'], { hash_on: [{ type: 'api_key' }] })])).toThrow(/id 'g'.*routing\.hash_on.*unknown key\(s\) 'hash_on'/);
    expect(() => makeMtCore(['a'], [group('g', ['a'], { strategy: 'consistent_hash', hash_on: [{ type: 'cookie', name: 'sid' }, { type: 'client_ip' }] })])).not.toThrow();
  });

  it('an alias that collides with another model is refused', () => {
    expect(() => new RoutingCore(parse([direct('a'), { ...group('g', ['a']), aliases: ['a'] }]))).toThrow(/'a' is used twice/);
  });
});
