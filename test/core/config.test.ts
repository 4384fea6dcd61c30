// Configuration model: endpoint ids, route exclusions and their notices, the local/remote split,
// aliases sharing one router, and field-naming errors.
import { describe, expect, it } from 'vitest';
import { RoutingCore, endpointId, parseModelsConfig } from '../../core/index.ts';
import { routeNotices } from '../../core/config/route-notices.ts';
import { dispatchOf, req, seeded } from './harness.ts';

describe('endpoint ids ({model}:{location}, seed 000)', () => {
  it.each([
    ['openai_compat', 'http://localhost:8000/v1', 'm:local-8000'],
    ['openai_compat', 'http://127.0.0.1:9001/v1', 'm:local-9001'],
    ['openai_compat', 'http://[::1]:7000/v1', 'm:local-7000'],
    ['openai_compat', 'https://api.minimax.io/v1', 'm:minimax-api'],
    ['openai_compat', 'https://api.openai.com/v1', 'm:openai-api'],
    ['anthropic', 'https://api.anthropic.com', 'm:anthropic-api'],
    ['openai_compat', 'sim://replica-3', 'm:replica-3'],
  ])('%s %s ⇒ %s', (kind, url, id) => {
    expect(endpointId('m', kind, url)).toBe(id);
  });
  it('a relative base_url is refused with the fix', () => {
    expect(() => endpointId('m', 'openai_compat', 'localhost:8000')).toThrow(/base_url.*absolute http\(s\) URL/);
  });
});

function core(routes: Array<Record<string, unknown>>, routing: Record<string, unknown> = {}) {
  return new RoutingCore(parseModelsConfig({ models: [{ id: 'm', aliases: ['a1', 'a2'], router: 'round_robin', route: routes }], routing }));
}

describe('route exclusions', () => {
  it('configured_zero is reported with configured and effective weight', () => {
    const c = core([{ base_url: 'sim://x', weight: 0 }, { base_url: 'sim://y' }]);
    expect(c.routeExclusions()).toEqual([{ modelId: 'm', endpointId: 'm:x', baseUrl: 'sim://x', configuredWeight: 0, effectiveWeight: 0, reasons: ['configured_zero'] }]);
    expect(routeNotices(c.routeExclusions())[0]).toMatchObject({ level: 'info', event: 'route_weight_zeroed' });
  });

  it('local/remote split rescales each group to its share; share 0 zeroes locals with routing_yaml', () => {
    const routes = [
      { base_url: 'http://127.0.0.1:8000/v1', weight: 3 },
      { base_url: 'http://127.0.0.1:8001/v1', weight: 1 },
      { base_url: 'https://api.example.com/v1', weight: 5 },
    ];
    const split = core(routes, { local_weight_share: 0.8 }).model('m')!.routes.map((r) => r.effectiveWeight);
    expect(split[0]).toBeCloseTo(0.6);
    expect(split[1]).toBeCloseTo(0.2);
    expect(split[2]).toBeCloseTo(0.2);
    const zero = core(routes, { local_weight_share: 0 });
    expect(zero.routeExclusions().map((x) => [x.endpointId, x.reasons])).toEqual([
      ['m:local-8000', ['routing_yaml']],
      ['m:local-8001', ['routing_yaml']],
    ]);
    expect(routeNotices(zero.routeExclusions()).every((n) => n.level === 'warn' && n.event === 'route_weight_zeroed')).toBe(true);
    const override = core(routes, { local_weight_share: 0.5 });
    expect(routeNotices(override.routeExclusions())).toEqual([]); // weights changed but none zeroed: no exclusion rows
  });

  it('`local: false` makes a loopback route count as remote', () => {
    const c = core([{ base_url: 'http://127.0.0.1:8000/v1' }, { base_url: 'http://127.0.0.1:8001/v1', local: false }]);
    expect(c.model('m')!.routes.map((r) => r.local)).toEqual([true, false]);
  });
});

describe('aliases', () => {
  it('share their model’s router instance (round robin continues across names)', () => {
    const c = core([{ base_url: 'sim://x' }, { base_url: 'sim://y' }]);
    const seq = ['m', 'a1', 'a2', 'm'].map((model) => dispatchOf(c.start(req({ model }), 0, seeded(1)).actions)!.endpointId);
    expect(seq).toEqual(['m:x', 'm:y', 'm:x', 'm:y']);
  });
  it('a name used twice is refused', () => {
    expect(() => new RoutingCore(parseModelsConfig({ models: [{ id: 'm', route: [{ base_url: 'sim://x' }] }, { id: 'n', aliases: ['m'], route: [{ base_url: 'sim://y' }] }] }))).toThrow(/'m' is used twice/);
  });
});

describe('config errors name the field', () => {
  it('unknown keys and bad values', () => {
    expect(() => parseModelsConfig({ models: [{ id: 'm', route: [{ base_url: 'sim://x', wieght: 2 }] }] }, 'models.yaml')).toThrow(/models\.yaml is invalid:[\s\S]*models\.0\.route\.0/);
    expect(() => parseModelsConfig({ models: [{ id: 'm', route: [{ base_url: 'sim://x', weight: -1 }] }] })).toThrow(/models\.0\.route\.0\.weight/);
    expect(() => parseModelsConfig({ models: [] })).toThrow(/models/);
  });
  it('two routes with the same endpoint id are refused', () => {
    expect(() => core([{ base_url: 'http://127.0.0.1:8000/v1' }, { base_url: 'http://localhost:8000/v2' }])).toThrow(/route\[1\].*m:local-8000/);
  });
});
