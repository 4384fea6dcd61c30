// Learned state across configuration generations (`RoutingCoreOptions.carryFrom`): what the
// models rebuild — cooldowns, RouteWise latency profiles and quota spend, multi-target rate-limit
// buckets — is taken over for every endpoint whose id is unchanged, whatever else changed (an
// overlay weight override, a reload with a model added); an endpoint whose settings changed, or
// that is new, starts fresh.
import { describe, expect, it } from 'vitest';
import { parseModelsConfig, RoutingCore, type Outcome, type RouteOverlay } from '../../core/index.ts';
import type { RouteWisePlanner } from '../../core/strategies/routewise/routewise.ts';

const reset: Outcome = { kind: 'transport', cause: 'reset' };

/** Direct models `a`, `b` (cooldown), `c`; alias `g` over them (b rate-limited); RouteWise model `rw` (api + quota plan). */
function config(extra: { planLimit?: number; cooldownSec?: number; more?: boolean } = {}) {
  const cooldown = { enabled: true, duration_sec: extra.cooldownSec ?? 60, consecutive_failures: 1 };
  return parseModelsConfig({
    models: [
      { id: 'a', route: [{ base_url: 'sim://a' }], cooldown },
      { id: 'b', route: [{ base_url: 'sim://b' }], cooldown },
      { id: 'c', route: [{ base_url: 'sim://c1' }, { base_url: 'sim://c2' }] },
      { id: 'g', routing: { targets: [{ model: 'a' }, { model: 'b', rate_limit: { requests_per_minute: 60, burst: 2 } }] } },
      {
        id: 'rw',
        router: 'routewise',
        router_params: { envelope_min_samples: 1 },
        route: [
          { base_url: 'sim://api', pricing: { input_usd_per_1m: 0.3, output_usd_per_1m: 1.2 } },
          { base_url: 'sim://plan', provider_type: 'quota', quota: { limit: extra.planLimit ?? 4, window_sec: 3600 } },
        ],
      },
      ...(extra.more ? [{ id: 'd', route: [{ base_url: 'sim://d' }] }] : []),
    ],
  });
}

const rwOf = (core: RoutingCore) => core.model('rw')!.planner as RouteWisePlanner;
const bucketOf = (core: RoutingCore) => core.model('g')!.multiTarget!.targets[1]!.rateLimit!;

/** A first generation that has learnt something of every kind by t = 1 000 ms. */
function learned(): RoutingCore {
  const core = new RoutingCore(config());
  core.cooldowns.record('a:a', reset, 1_000); // a cools down until 61 000
  const rw = rwOf(core);
  for (const ttft of [300, 500, 700]) rw.profile('rw:api')!.recordSuccess(ttft, 900);
  rw.profile('rw:plan')!.recordFailure(950);
  for (let i = 0; i < 3; i++) rw.ledger.commit(rw.ledger.reserve('rw:plan', 0, 1_000)!, 1_000); // 3 of 4 spent
  rw.envelope.observe(1e-3, 1_000);
  bucketOf(core).tryTake(1_000);
  bucketOf(core).tryTake(1_000); // bucket empty
  return core;
}

describe('learned state across generations', () => {
  const changes: Array<[string, () => { config: ReturnType<typeof config>; overlay?: RouteOverlay }]> = [
    ['an unrelated admin change (a weight override on another model)', () => ({ config: config(), overlay: { weightOverrides: new Map([['c:c1', 0]]) } })],
    ['a reload that adds a model', () => ({ config: config({ more: true }) })],
  ];
  for (const [what, next] of changes) {
    it(`${what}: a running cooldown, RouteWise profiles and quota spend, and a rate-limit bucket carry over`, () => {
      const prev = learned();
      const n = next();
      const core = new RoutingCore(n.config, { carryFrom: prev, ...(n.overlay && { overlay: n.overlay }) });
      const t = 2_000;
      expect(core.cooldowns.status('a:a', t)).toMatchObject({ state: 'cooldown', reason: 'transport_error', untilMs: 61_000 });
      expect(core.cooldowns.active('a:a', 61_000)).toBe(false);
      expect(core.cooldowns.status('b:b', t).state).toBe('healthy');
      const rw = rwOf(core);
      const before = rwOf(prev);
      expect(rw.profile('rw:api')!.counts(t)).toEqual({ successes: 3, failures: 0, censored: 0 });
      expect(rw.profile('rw:api')!.meanMs(t)).toBe(before.profile('rw:api')!.meanMs(t));
      expect(rw.profile('rw:plan')!.counts(t)).toEqual({ successes: 0, failures: 1, censored: 0 });
      expect(rw.ledger.quotaUsedFraction('rw:plan', t)).toBe(3 / 4);
      expect(rw.envelope.envelope(t)).toEqual(before.envelope.envelope(t));
      expect(bucketOf(core).available(t)).toBe(true); // one token refilled in the second since
      expect(bucketOf(core).tryTake(t)).toBe(true);
      expect(bucketOf(core).available(t)).toBe(false);
      core.invariants();
      // The new generation's profiles keep learning; it is the same profile the old planner feeds.
      rw.profile('rw:api')!.recordSuccess(900, t);
      expect(before.profile('rw:api')!.counts(t).successes).toBe(4);
    });
  }

  it('state of an endpoint whose own settings changed starts fresh; the rest still carries', () => {
    const prev = learned();
    // The plan's quota limit and the cooldown's duration change: its spend and a's cooldown reset.
    const core = new RoutingCore(config({ planLimit: 10, cooldownSec: 30 }), { carryFrom: prev });
    expect(rwOf(core).ledger.quotaUsedFraction('rw:plan', 2_000)).toBe(0);
    expect(rwOf(core).profile('rw:api')!.counts(2_000).successes).toBe(3); // profiles do not depend on the quota
    // A cooldown that was running keeps its end (it is a fact about the endpoint, not the policy).
    expect(core.cooldowns.status('a:a', 2_000)).toMatchObject({ state: 'cooldown', untilMs: 61_000 });
    core.invariants();
  });

  it('without carryFrom nothing is shared', () => {
    learned();
    const core = new RoutingCore(config());
    expect(core.cooldowns.status('a:a', 2_000).state).toBe('healthy');
    expect(rwOf(core).profile('rw:api')!.counts(2_000).successes).toBe(0);
    expect(rwOf(core).ledger.quotaUsedFraction('rw:plan', 2_000)).toBe(0);
  });
});
