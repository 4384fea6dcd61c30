// The six target orderers: the ordering contract every registered planner passes, and each
// strategy's exact behaviour (seed 003), with fast-check properties for round_robin's exact
// ratio, consistent_hash's minimal remapping and least_busy's ranking.
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { BUILTIN_STRATEGIES, StrategyRegistry, type Candidate, type PlannerContext } from '../../../core/index.ts';
import { planOrder } from '../../../core/strategies/planner.ts';
import { EndpointStats } from '../../../core/stats/endpoint-stats.ts';
import { busyScore } from '../../../core/strategies/least-busy.ts';
import { DEFAULT_ROUTING_SETTINGS } from '../../../core/config/routing-settings.ts';
import { PrefillLoad } from '../../../core/prefill/prefill-load.ts';
import { makeCore, runOne, seeded } from '../harness.ts';
import { drive, ep, group, makeMtCore, mreq, ok, s503 } from './mt-harness.ts';

const registry = new StrategyRegistry();
const contextWith = (stats: EndpointStats): PlannerContext => ({ settings: DEFAULT_ROUTING_SETTINGS, prefill: new PrefillLoad(DEFAULT_ROUTING_SETTINGS), endpoints: stats });
const cands = (n: number, weights?: number[]): Candidate[] => Array.from({ length: n }, (_, i) => ({ endpointId: `m:t${i}`, weight: weights?.[i] ?? 1, routeIndex: i }));
const plannerFor = (name: string, n: number, stats = new EndpointStats(), params: Record<string, unknown> = {}, weights?: number[]) =>
  registry.create(name, params, cands(n, weights).map((c, i) => ({ endpointId: c.endpointId, configuredWeight: c.weight, costUsdPer1kTokens: i % 3 === 2 ? null : (n - i) / 1000 })), 'test', contextWith(stats));

for (const name of BUILTIN_STRATEGIES.map((s) => s.name)) {
  describe(`ordering contract: ${name}`, () => {
    it('orders every candidate exactly once; its first place is what pick chooses from the same state', () => {
      fc.assert(
        fc.property(fc.integer({ min: 1, max: 7 }), fc.integer(), fc.option(fc.string({ minLength: 1 }), { nil: null }), (n, seed, caller) => {
          const request = mreq({ callerId: caller });
          const a = plannerFor(name, n);
          const b = plannerFor(name, n);
          const o = planOrder(a, cands(n), request, 0, seeded(seed));
          expect([...o.order].sort((x, y) => x - y)).toEqual(Array.from({ length: n }, (_, i) => i));
          expect(o.reason).toMatch(/^[a-z_]+$/);
          expect(b.pick(cands(n), request, 0, seeded(seed)).candidate).toBe(o.order[0]);
        }),
        { numRuns: 60 },
      );
    });

    it('as a multi-target strategy: metadata complete, in-flight balanced, same seed ⇒ same decisions', () => {
      const decide = (seed: number) => {
        const core = makeMtCore(['a', 'b', 'c', 'd'], [group('g', [{ model: 'a', weight: 3 }, 'b', { model: 'c', priority: -1 }, 'd'], { strategy: name })]);
        const rng = seeded(seed);
        return Array.from({ length: 60 }, (_, i) => {
          const r = drive(core, mreq({ callerId: `c${i % 7}` }), i * 10, rng, (id, k) => (id === ep('b') || (id === ep('a') && k === 0 && i % 3 === 0) ? s503 : ok));
          expect(r.done.metadata).toMatchObject({ modelId: 'g', strategy: name, status: 'ok' });
          expect(r.done.metadata.servedBy).not.toBe('c'); // the lower tier is never needed here
          for (const e of ['a', 'b', 'c', 'd']) expect(core.endpointStats.inFlight(ep(e))).toBe(0);
          core.invariants();
          return r.dispatched.join(',');
        });
      };
      expect(decide(5)).toEqual(decide(5));
    });
  });
}

describe('failover', () => {
  it('tries targets in declaration order', () => {
    const core = makeMtCore(['a', 'b', 'c'], [group('g', ['c', 'a', 'b'], { retries: 0 })]);
    expect(drive(core, mreq(), 0, seeded(1), () => s503).dispatched).toEqual([ep('c'), ep('a'), ep('b')]);
  });
});

describe('round_robin (smooth weighted)', () => {
  it('equal weights rotate in declaration order', () => {
    const core = makeMtCore(['a', 'b', 'c'], [group('g', ['a', 'b', 'c'], { strategy: 'round_robin' })]);
    const seq = Array.from({ length: 6 }, (_, i) => drive(core, mreq(), i, seeded(1), () => ok).done.metadata.servedBy);
    expect(seq.join('')).toBe('abcabc');
  });
  it('over k·Σw requests each target serves exactly k·w (fast-check)', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 1, max: 5 }), { minLength: 1, maxLength: 5 }), fc.integer({ min: 1, max: 4 }), (weights, k) => {
        const ids = weights.map((_, i) => `t${i}`);
        const core = makeMtCore(ids, [group('g', ids.map((id, i) => ({ model: id, weight: weights[i] })), { strategy: 'round_robin' })]);
        const total = weights.reduce((a, b) => a + b, 0);
        const counts = new Map<string, number>();
        for (let i = 0; i < k * total; i++) {
          const who = drive(core, mreq(), i, seeded(1), () => ok).done.metadata.servedBy!;
          counts.set(who, (counts.get(who) ?? 0) + 1);
        }
        ids.forEach((id, i) => expect(counts.get(id)).toBe(k * weights[i]!));
      }),
      { numRuns: 60 },
    );
  });
  it('after a failure the rest follow in declaration order; a tier used only on failover does not advance', () => {
    const core = makeMtCore(['a', 'b', 'c', 'x', 'y'], [group('g', ['a', 'b', 'c', { model: 'x', priority: -1 }, { model: 'y', priority: -1 }], { strategy: 'round_robin', retries: 0 })]);
    expect(drive(core, mreq(), 0, seeded(1), (id) => (id === ep('a') ? s503 : ok)).dispatched).toEqual([ep('a'), ep('b')]);
    expect(drive(core, mreq(), 0, seeded(1), () => ok).dispatched).toEqual([ep('b')]);
    expect(drive(core, mreq(), 0, seeded(1), (id) => (id.length === 3 && 'abc'.includes(id[0]!) ? s503 : ok)).dispatched).toEqual([ep('c'), ep('a'), ep('b'), ep('x')]);
    expect(drive(core, mreq(), 0, seeded(1), (id) => ('abc'.includes(id[0]!) ? s503 : ok)).dispatched.slice(-1)).toEqual([ep('y')]);
  });
});

describe('consistent_hash', () => {
  const n4 = ['t0', 't1', 't2', 't3'];
  const hashCore = (names = n4, routing: Record<string, unknown> = {}, weights?: number[]) =>
    makeMtCore(names, [group('g', names.map((id, i) => ({ model: id, weight: weights?.[i] ?? 1 })), { strategy: 'consistent_hash', ...routing })]);

  it('a key stays on its target while the eligible set is unchanged', () => {
    const core = hashCore();
    const first = Array.from({ length: 50 }, (_, i) => drive(core, mreq({ callerId: `k${i}` }), 0, seeded(i), () => ok).done.metadata.servedBy);
    const again = Array.from({ length: 50 }, (_, i) => drive(core, mreq({ callerId: `k${i}` }), 9, seeded(i + 99), () => ok).done.metadata.servedBy);
    expect(again).toEqual(first);
    expect(new Set(first).size).toBe(4);
  });

  it('when one of n equal targets leaves, only its keys move, at most 1/n + ε of them (fast-check)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 2, max: 8 }), fc.nat(), fc.uniqueArray(fc.string({ minLength: 1, maxLength: 12 }), { minLength: 400, maxLength: 400 }), (n, leaveSeed, keys) => {
        const planner = plannerFor('consistent_hash', n);
        const all = cands(n);
        const leave = leaveSeed % n;
        const rest = all.filter((_, i) => i !== leave);
        let moved = 0;
        for (const key of keys) {
          const r = mreq({ headers: { 'x-switchyard-routing-key': key } });
          const before = all[planner.pick(all, r, 0, seeded(0)).candidate]!.endpointId;
          const after = rest[planner.pick(rest, r, 0, seeded(0)).candidate]!.endpointId;
          if (before !== after) {
            moved++;
            expect(before).toBe(all[leave]!.endpointId);
          }
        }
        // ε: the ring's share error with 160 points per target (≤ 0.03 for n ≤ 10, measured) plus 4σ of sampling 400 keys.
        expect(moved / keys.length).toBeLessThanOrEqual(1 / n + 0.03 + 4 * Math.sqrt(1 / n / keys.length));
      }),
      { numRuns: 40 },
    );
  });

  it("a failing target's keys fail over to their ring successor in the same tier, not to another tier", () => {
    const core = makeMtCore(['a1', 'a2', 'a3', 'b1'], [group('g', ['a1', 'a2', 'a3', { model: 'b1', priority: -1 }], { strategy: 'consistent_hash', retries: 0 })]);
    for (let i = 0; i < 60; i++) {
      const key = `s${i}`;
      const owner = drive(core, mreq({ callerId: key }), 0, seeded(1), () => ok).dispatched[0]!;
      const r = drive(core, mreq({ callerId: key }), 0, seeded(1), (id) => (id === owner ? s503 : ok));
      expect(r.dispatched[0]).toBe(owner);
      expect(r.done.metadata.servedBy).toMatch(/^a/);
    }
  });

  it('weights set the approximate share of keys (95/5 canary)', () => {
    const core = hashCore(['stable', 'canary'], {}, [95, 5]);
    let canary = 0;
    for (let i = 0; i < 2_000; i++) if (drive(core, mreq({ callerId: `user-${i}` }), 0, seeded(1), () => ok).done.metadata.servedBy === 'canary') canary++;
    expect(canary / 2_000).toBeGreaterThan(0.02);
    expect(canary / 2_000).toBeLessThan(0.09);
  });

  it('hash_on: the first non-empty source wins; default is the routing-key header, then the API key', () => {
    const planner = plannerFor('consistent_hash', 8, new EndpointStats(), { hash_on: [{ type: 'cookie', name: 'sid' }, { type: 'header', name: 'X-Session-Id' }, { type: 'client_ip' }] });
    const c = cands(8);
    const pick = (over: Parameters<typeof mreq>[0]) => planner.pick(c, mreq(over), 0, seeded(1));
    expect(pick({ cookies: { sid: 'abc' }, headers: { 'x-session-id': 'zzz' } })).toEqual(pick({ cookies: { sid: 'abc' } }));
    expect(pick({ headers: { 'x-session-id': 'abc' } }).candidate).toBe(pick({ clientIp: 'abc' }).candidate);
    expect(pick({ clientIp: '10.0.0.1' }).reason).toBe('hash');
    const def = plannerFor('consistent_hash', 8);
    const byHeader = def.pick(c, mreq({ headers: { 'x-switchyard-routing-key': 'k1' }, callerId: 'other' }), 0, seeded(1));
    expect(byHeader.candidate).toBe(def.pick(c, mreq({ callerId: 'k1' }), 0, seeded(2)).candidate);
    const none = def.pick(c, mreq({ callerId: null }), 0, seeded(3));
    expect(none.reason).toBe('hash_random');
  });

  it('routing.hash_on reaches the planner of a multi-target model', () => {
    const core = hashCore(n4, { hash_on: [{ type: 'header', name: 'x-session-id' }] });
    const a = drive(core, mreq({ headers: { 'x-session-id': 'S' }, callerId: 'one' }), 0, seeded(1), () => ok).done.metadata.servedBy;
    const b = drive(core, mreq({ headers: { 'x-session-id': 'S' }, callerId: 'two' }), 0, seeded(2), () => ok).done.metadata.servedBy;
    expect(a).toBe(b);
    expect(drive(core, mreq({ headers: { 'x-session-id': 'S' } }), 0, seeded(2), () => ok).done.metadata.reason).toBe('hash');
  });
});

describe('least_cost', () => {
  it('cheapest input+output price first, unpriced last, ties in declaration order', () => {
    const core = makeMtCore([{ id: 'pricey', price: [5, 15] }, 'free-ish', { id: 'cheap', price: [0.1, 0.4] }, { id: 'cheap2', price: [0.4, 0.1] }], [group('g', ['pricey', 'free-ish', 'cheap', 'cheap2'], { strategy: 'least_cost', retries: 0 })]);
    expect(drive(core, mreq(), 0, seeded(1), () => s503).dispatched).toEqual([ep('cheap'), ep('cheap2'), ep('pricey'), ep('free-ish')]);
    expect(drive(core, mreq(), 0, seeded(1), () => ok).done.metadata.reason).toBe('least_cost');
  });
});

describe('least_latency', () => {
  it('measures every target first, then prefers the lowest recent latency (TTFT for streams)', () => {
    const core = makeMtCore(['slow', 'fast', 'mid'], [group('g', ['slow', 'fast', 'mid'], { strategy: 'least_latency' })]);
    const ttft: Record<string, number> = { [ep('slow')]: 900, [ep('fast')]: 100, [ep('mid')]: 400 };
    const run = (now: number) => {
      const { life, actions } = core.start(mreq({ stream: true }), now, seeded(1));
      const d = actions.find((a) => a.kind === 'dispatch') as Extract<(typeof actions)[number], { kind: 'dispatch' }>;
      life.step({ kind: 'first_token', attemptId: d.attemptId }, now + ttft[d.endpointId]!);
      const out = life.step({ kind: 'finished', attemptId: d.attemptId, usage: { inputTokens: 1, outputTokens: 1, cachedTokens: 0 } }, now + 5_000);
      return (out.find((a) => a.kind === 'done') as Extract<(typeof out)[number], { kind: 'done' }>).metadata;
    };
    const probes = [run(0), run(10_000), run(20_000)];
    // Unmeasured targets tie; the seeded draw picks among them, each is probed once.
    expect(probes.map((m) => m.reason)).toEqual(['unmeasured', 'unmeasured', 'unmeasured']);
    expect(probes.map((m) => m.servedBy).sort()).toEqual(['fast', 'mid', 'slow']);
    expect(core.endpointStats.latencyMs(ep('fast'))).toBe(100);
    expect(run(30_000)).toMatchObject({ servedBy: 'fast', reason: 'least_latency' });
  });

  it('an unmeasured target already being measured ranks after the measured ones', () => {
    const stats = new EndpointStats();
    stats.sample('m:t0', 500);
    const p = plannerFor('least_latency', 3, stats);
    const first = p.order!(cands(3), mreq(), 0, seeded(1)).order;
    expect([...first.slice(0, 2)].sort()).toEqual([1, 2]); // the two unmeasured tie
    expect(first[2]).toBe(0);
    stats.begin('m:t1');
    expect(p.order!(cands(3), mreq(), 0, seeded(1)).order).toEqual([2, 0, 1]);
  });
});

describe('least_busy', () => {
  it('never picks a target with a strictly higher score when a lower one is admissible (fast-check)', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.integer({ min: 0, max: 20 }), fc.double({ min: 0.1, max: 10, noNaN: true })), { minLength: 1, maxLength: 8 }), (rows) => {
        const stats = new EndpointStats();
        const c = cands(rows.length, rows.map((r) => r[1]));
        rows.forEach(([inflight], i) => {
          for (let k = 0; k < inflight; k++) stats.begin(c[i]!.endpointId);
        });
        const p = plannerFor('least_busy', rows.length, stats, {}, rows.map((r) => r[1]));
        const picked = p.pick(c, mreq(), 0, seeded(1)).candidate;
        const score = (i: number) => busyScore(rows[i]![0], rows[i]![1]);
        for (let i = 0; i < rows.length; i++) expect(score(picked)).toBeLessThanOrEqual(score(i));
        const order = p.order!(c, mreq(), 0, seeded(1)).order;
        for (let i = 1; i < order.length; i++) expect(score(order[i - 1]!)).toBeLessThanOrEqual(score(order[i]!));
      }),
    );
  });

  it('spreads concurrent requests by weighted in-flight count, counting every live attempt', () => {
    const core = makeMtCore(['a', 'b'], [group('g', [{ model: 'a', weight: 2 }, 'b'], { strategy: 'least_busy' })]);
    const inflight = { [ep('a')]: 0, [ep('b')]: 0 };
    const weight = { [ep('a')]: 2, [ep('b')]: 1 };
    const score = (id: string) => (1 + inflight[id]!) / weight[id]!;
    for (let i = 0; i < 6; i++) {
      const id = (core.start(mreq(), i, seeded(i)).actions[0] as { endpointId: string }).endpointId;
      // Never a strictly busier target; ties (a 1 vs b 1, a 2 vs b 2) go either way by the draw.
      expect(score(id)).toBeLessThanOrEqual(Math.min(score(ep('a')), score(ep('b'))));
      inflight[id]!++;
    }
    expect(core.endpointStats.inFlight(ep('a')) + core.endpointStats.inFlight(ep('b'))).toBe(6);
  });

  it('breaks ties by the seeded draw: idle targets share first picks, the same seed picks the same', () => {
    const picks = new Map<string, number>();
    for (let seed = 0; seed < 200; seed++) {
      const core = makeMtCore(['a', 'b', 'c'], [group('g', ['a', 'b', 'c'], { strategy: 'least_busy' })]);
      const id = (core.start(mreq(), 0, seeded(seed)).actions[0] as { endpointId: string }).endpointId;
      const again = makeMtCore(['a', 'b', 'c'], [group('g', ['a', 'b', 'c'], { strategy: 'least_busy' })]);
      expect((again.start(mreq(), 0, seeded(seed)).actions[0] as { endpointId: string }).endpointId).toBe(id);
      picks.set(id, (picks.get(id) ?? 0) + 1);
    }
    // About a third each (binomial, n = 200: 3 sd ≈ 20).
    for (const id of [ep('a'), ep('b'), ep('c')]) expect(picks.get(id)).toBeGreaterThan(40);
  });

  it('as a router: over a model’s own routes it learns in-flight counts through the core', () => {
    const core = makeCore([{ name: 'a' }, { name: 'b' }], 'least_busy');
    const first = core.start(mreq({ model: 'm' }), 0, seeded(1));
    const second = core.start(mreq({ model: 'm' }), 1, seeded(1));
    const id = (x: typeof first) => (x.actions.find((a) => a.kind === 'dispatch') as { endpointId: string }).endpointId;
    expect([id(first), id(second)].sort()).toEqual(['m:a', 'm:b']); // an idle tie, then the other
    expect(core.endpointStats.inFlight('m:a')).toBe(1);
    first.life.step({ kind: 'client_gone' }, 2);
    second.life.step({ kind: 'client_gone' }, 2);
    expect(core.endpointStats.inFlight('m:a') + core.endpointStats.inFlight('m:b')).toBe(0);
    expect(['m:a', 'm:b']).toContain(runOne(core, 3, seeded(1), () => ok).done.metadata.endpointId);
    first.life.invariants();
  });
});
