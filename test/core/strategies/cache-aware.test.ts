// The cache-aware strategies (llm_d, sglang_cache_aware, dynamo_kv): their scoring on worked
// examples from their sources, their planners' choices on small scripted sequences, and
// fast-check bounds on scores and on the prefix structures. The planner contract suites
// (router-contract, multi-target/strategies) cover them through BUILTIN_STRATEGIES.
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import {
  ApproximateTree,
  DynamoKvPlanner,
  EngineSignals,
  EndpointStats,
  LlmDPlanner,
  PrefixBlockIndex,
  SglangCacheAwarePlanner,
  StrategyRegistry,
  dynamoCost,
  isImbalanced,
  kvUtilizationScore,
  prefixCacheScore,
  queueScores,
  type Candidate,
  type Planner,
  type PlannerContext,
} from '../../../core/index.ts';
import { DEFAULT_ROUTING_SETTINGS } from '../../../core/config/routing-settings.ts';
import { PrefillLoad } from '../../../core/prefill/prefill-load.ts';
import { req, seeded } from '../harness.ts';

const registry = new StrategyRegistry();
const cands = (...ids: string[]): Candidate[] => ids.map((id, i) => ({ endpointId: id, weight: 1, routeIndex: i }));
function build(name: string, params: Record<string, unknown> = {}, stats = new EndpointStats(), engines = new EngineSignals()): { planner: Planner; stats: EndpointStats; engines: EngineSignals } {
  const context: PlannerContext = { settings: DEFAULT_ROUTING_SETTINGS, prefill: new PrefillLoad(DEFAULT_ROUTING_SETTINGS), endpoints: stats, engines };
  const planner = registry.create(name, params, [{ endpointId: 'a', configuredWeight: 1 }, { endpointId: 'b', configuredWeight: 1 }], 'test', context);
  return { planner, stats, engines };
}
const choose = (p: Planner, ids: string[], hashes: number[] | null, seed = 1, nowMs = 0) => {
  const c = cands(...ids);
  const pick = p.pick(c, req({ prefixHashes: hashes, inputTokens: (hashes?.length ?? 1) * 512 }), nowMs, seeded(seed));
  return { id: c[pick.candidate]!.endpointId, reason: pick.reason };
};

describe('llm_d scorers (llm-d prefix-cache, queue, kv-cache-utilization)', () => {
  it('worked examples', () => {
    expect(prefixCacheScore(3, 4)).toBe(0.75);
    expect(prefixCacheScore(0, 0)).toBe(0);
    expect(queueScores([0, 2, 4])).toEqual([1, 0.5, 0]);
    expect(queueScores([3, 3])).toEqual([1, 1]);
    expect(kvUtilizationScore(0.3)).toBeCloseTo(0.7, 12);
  });

  it('weights 3 / 2 / 2: a full prefix hit outweighs being the busiest, not also being full', () => {
    const stats = new EndpointStats();
    const engines = new EngineSignals();
    const { planner } = build('llm_d', {}, stats, engines);
    const p = planner as LlmDPlanner;
    // a holds the prefix; a is the busiest (queue score 0): 3·1 + 2·0 + 2·1 = 5 > b's 0 + 2 + 2 = 4.
    p.index.record('a', [1, 2, 3, 4], 0);
    stats.begin('a');
    stats.begin('a');
    const s = p.scores(cands('a', 'b'), req({ prefixHashes: [1, 2, 3, 4] }), 0);
    expect(s.map((x) => x.total)).toEqual([5, 4]);
    expect(choose(p, ['a', 'b'], [1, 2, 3, 4]).id).toBe('a');
    // a's KV cache is also full: 3 + 0 + 0 = 3 < 4 ⇒ b.
    engines.reportLoad('a', { waiting: 2, running: 0, kvUsage: 1 }, 0);
    expect(choose(p, ['a', 'b'], [1, 2, 3, 4]).id).toBe('b');
  });

  it('a session lands where its prefix was routed; the routed blocks are recorded', () => {
    const { planner } = build('llm_d');
    const first = choose(planner, ['a', 'b'], [10, 11, 12], 3).id;
    for (let seed = 0; seed < 20; seed++) expect(choose(planner, ['a', 'b'], [10, 11, 12, 13], seed).id).toBe(first);
  });

  it('scores stay in [0, 1] (fast-check)', () => {
    fc.assert(
      fc.property(fc.nat(1000), fc.nat(1000), fc.array(fc.nat(500), { minLength: 1, maxLength: 8 }), fc.double({ min: -2, max: 3, noNaN: true }), (m, t, queues, kv) => {
        const p = prefixCacheScore(Math.min(m, t), t);
        expect(p).toBeGreaterThanOrEqual(0);
        expect(p).toBeLessThanOrEqual(1);
        for (const q of queueScores(queues)) expect(q >= 0 && q <= 1).toBe(true);
        const k = kvUtilizationScore(kv);
        expect(k >= 0 && k <= 1).toBe(true);
      }),
    );
  });
});

describe('PrefixBlockIndex (routed prefixes, LRU per endpoint)', () => {
  it('matches the leading run only, expires by TTL, drops the oldest beyond capacity', () => {
    const ix = new PrefixBlockIndex({ capacityBlocks: 4, ttlMs: 100 });
    ix.record('a', [1, 2, 3], 0);
    expect(ix.matchedBlocks('a', [1, 2, 9, 3], 50)).toBe(2);
    expect(ix.matchedBlocks('a', [1, 2, 3], 101)).toBe(0); // block 1 expired
    ix.record('b', [1, 2, 3], 0);
    ix.record('b', [7, 8], 1); // 5 > 4: the oldest, block 3 (the tail of the first prefix), goes
    expect(ix.size('b')).toBe(4);
    expect(ix.matchedBlocks('b', [1, 2, 3], 2)).toBe(2);
  });

  it('never holds more than its capacity (fast-check)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 20 }), fc.array(fc.tuple(fc.constantFrom('a', 'b'), fc.array(fc.nat(40), { maxLength: 30 })), { maxLength: 40 }), (cap, ops) => {
        const ix = new PrefixBlockIndex({ capacityBlocks: cap, ttlMs: null });
        ops.forEach(([id, hashes], t) => {
          ix.record(id, hashes, t);
          ix.invariants();
          expect(ix.size(id)).toBeLessThanOrEqual(cap);
        });
      }),
    );
  });

  it('keeps exactly the most recently routed blocks, as a plain LRU list would, with TTL drops in between (fast-check)', () => {
    const op = fc.tuple(fc.constantFrom('a', 'b'), fc.array(fc.nat(30), { maxLength: 12 }), fc.boolean());
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 15 }), fc.array(op, { maxLength: 120 }), (cap, ops) => {
        const ix = new PrefixBlockIndex({ capacityBlocks: cap, ttlMs: 5 });
        const model = new Map<string, Array<[number, number]>>(); // oldest first: [hash, routedAtMs]
        ops.forEach(([id, hashes, probe], t) => {
          const list = model.get(id) ?? [];
          model.set(id, list);
          if (probe) {
            // matchedBlocks drops the first expired block it meets.
            let k = 0;
            for (; k < hashes.length; k++) {
              const at = list.findIndex(([h]) => h === hashes[k]);
              if (at < 0) break;
              if (t - list[at]![1] > 5) {
                list.splice(at, 1);
                break;
              }
            }
            expect(ix.matchedBlocks(id, hashes, t)).toBe(k);
          } else {
            ix.record(id, hashes, t);
            for (let k = hashes.length - 1; k >= 0; k--) {
              const at = list.findIndex(([h]) => h === hashes[k]);
              if (at >= 0) list.splice(at, 1);
              list.push([hashes[k]!, t]);
            }
            while (list.length > cap) list.shift();
          }
          expect(ix.size(id)).toBe(list.length);
          for (const [h, at] of list) expect(ix.matchedBlocks(id, [h], at)).toBe(1);
        });
      }),
    );
  });
});

describe('sglang_cache_aware (sgl-router cache-aware policy)', () => {
  it('imbalance needs both thresholds (defaults abs 64, rel 1.5)', () => {
    expect(isImbalanced([0, 65], 64, 1.5)).toBe(true);
    expect(isImbalanced([100, 140], 64, 1.5)).toBe(false); // 40 ≤ 64
    expect(isImbalanced([10, 80], 64, 1.5)).toBe(true); // 70 > 64 and 80 > 15
    expect(isImbalanced([200, 280], 64, 1.5)).toBe(false); // 80 > 64 but 280 ≤ 300
  });

  it('approximate tree: per-tenant depths, LRU leaf eviction at the bound', () => {
    const t = new ApproximateTree(3);
    t.insert('a', [1, 2, 3]);
    t.insert('b', [1, 2, 9]);
    expect(t.matchDepths([1, 2, 3, 4], ['a', 'b', 'c'])).toEqual([3, 2, 0]);
    t.insert('a', [7, 8]); // a: 5 > 3 ⇒ its two oldest leaves go: 3, then 2
    expect(t.size('a')).toBe(3);
    expect(t.matchDepths([1, 2, 3], ['a', 'b'])).toEqual([1, 2]);
    expect(t.matchDepths([7, 8], ['a'])).toEqual([2]);
    t.invariants();
    t.removeTenant('b');
    expect(t.matchDepths([1, 2, 9], ['a', 'b'])).toEqual([1, 0]);
    t.invariants();
  });

  it('a tree never exceeds its bound and stays consistent (fast-check)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 12 }), fc.array(fc.tuple(fc.constantFrom('a', 'b', 'c'), fc.array(fc.nat(6), { maxLength: 10 })), { maxLength: 40 }), (bound, ops) => {
        const t = new ApproximateTree(bound);
        for (const [tenant, hashes] of ops) {
          // An empty prefix stands for the tenant leaving (its tree rebuilt by later inserts).
          if (hashes.length === 0) t.removeTenant(tenant);
          else t.insert(tenant, hashes);
          t.invariants();
          expect(t.size(tenant)).toBeLessThanOrEqual(bound);
          expect(t.matchDepths(hashes, [tenant])[0]).toBe(Math.min(hashes.length, bound));
        }
      }),
    );
  });

  it('miss ⇒ smallest tree; hit above cache_threshold ⇒ the matching worker; imbalance ⇒ least loaded', () => {
    const { planner, stats } = build('sglang_cache_aware');
    const first = choose(planner, ['a', 'b'], [1, 2, 3, 4], 5);
    expect(first.reason).toBe('sglang_cache_miss');
    const other = first.id === 'a' ? 'b' : 'a';
    // Same session, 4 of 5 blocks match (0.8 > 0.3) ⇒ the same worker.
    expect(choose(planner, ['a', 'b'], [1, 2, 3, 4, 5], 9)).toEqual({ id: first.id, reason: 'sglang_cache_hit' });
    // A new prefix: the other worker's tree is empty (smallest).
    expect(choose(planner, ['a', 'b'], [50, 51], 9)).toEqual({ id: other, reason: 'sglang_cache_miss' });
    // 1 block of 4 matched (0.25 ≤ 0.3) ⇒ a miss, to the smaller tree (other holds 2 blocks, first 5).
    expect(choose(planner, ['a', 'b'], [1, 60, 61, 62], 9)).toEqual({ id: other, reason: 'sglang_cache_miss' });
    // 70 in flight on the matching worker vs 0: imbalanced ⇒ the other one.
    for (let i = 0; i < 70; i++) stats.begin(first.id);
    expect(choose(planner, ['a', 'b'], [1, 2, 3, 4, 5], 9)).toEqual({ id: other, reason: 'sglang_balance' });
  });
});

describe('dynamo_kv (Dynamo KV router cost)', () => {
  it("the docs' three-worker example (weight 1): costs 18, 10, 11 ⇒ worker 2", () => {
    const costs = [dynamoCost(8, 10, 1), dynamoCost(5, 5, 1), dynamoCost(2, 9, 1)];
    expect(costs).toEqual([18, 10, 11]);
    expect(costs.indexOf(Math.min(...costs))).toBe(1);
    expect(dynamoCost(8, 10, 0.5)).toBe(14);
  });

  it('projection: overlap credit from KV events when the engine reports them, else from routed prefixes', () => {
    const { planner, engines } = build('dynamo_kv');
    const p = planner as DynamoKvPlanner;
    engines.applyKvEvent('b', { kind: 'stored', hashes: [1, 2, 3] });
    const [a, b] = p.project(cands('a', 'b'), req({ prefixHashes: [1, 2, 3, 4], inputTokens: 2048 }), 0);
    expect(a).toEqual({ overlapBlocks: 0, prefillBlocks: 4, decodeBlocks: 4, cost: 8 });
    expect(b).toEqual({ overlapBlocks: 3, prefillBlocks: 1, decodeBlocks: 4, cost: 5 });
    expect(choose(p, ['a', 'b'], [1, 2, 3, 4]).id).toBe('b');
    // a reports no KV events: what was routed there counts (approximation mode).
    p.index.record('a', [1, 2, 3, 4], 0);
    expect(p.project(cands('a'), req({ prefixHashes: [1, 2, 3, 4] }), 1)[0]!.overlapBlocks).toBe(4);
    // ...until the TTL (120 s) passes.
    expect(p.project(cands('a'), req({ prefixHashes: [1, 2, 3, 4] }), 120_002)[0]!.overlapBlocks).toBe(0);
    // Removed blocks stop counting.
    engines.applyKvEvent('b', { kind: 'removed', hashes: [2] });
    expect(engines.cachedPrefixBlocks('b', [1, 2, 3])).toBe(1);
  });

  it('load cost: a busy worker loses its overlap credit once its active blocks exceed it', () => {
    const { planner, stats } = build('dynamo_kv');
    const first = choose(planner, ['a', 'b'], [1, 2, 3, 4], 2).id;
    const other = first === 'a' ? 'b' : 'a';
    expect(choose(planner, ['a', 'b'], [1, 2, 3, 4], 7).id).toBe(first); // 4 blocks of credit
    // first now has 2 recorded requests of 4 blocks; 2 in flight ⇒ 8 active blocks > 4 credit.
    stats.begin(first);
    stats.begin(first);
    expect(choose(planner, ['a', 'b'], [1, 2, 3, 4], 7).id).toBe(other);
  });
});

describe('EngineSignals', () => {
  it('clamps KV usage, rejects bad counts, clears on AllBlocksCleared', () => {
    const e = new EngineSignals();
    e.reportLoad('a', { waiting: 1, running: 2, kvUsage: 1.2 }, 5);
    expect(e.load('a')).toEqual({ waiting: 1, running: 2, kvUsage: 1, atMs: 5 });
    expect(() => e.reportLoad('a', { waiting: -1, running: 0, kvUsage: 0 }, 5)).toThrow(RangeError);
    expect(e.reportsKvEvents('a')).toBe(false);
    e.applyKvEvent('a', { kind: 'stored', hashes: [1, 2] });
    e.applyKvEvent('a', { kind: 'cleared' });
    expect(e.reportsKvEvents('a')).toBe(true);
    expect(e.cachedPrefixBlocks('a', [1, 2])).toBe(0);
    e.invariants();
  });
});

describe('carried across configuration generations', () => {
  it('each planner takes over its predecessor of the same strategy', () => {
    for (const name of ['llm_d', 'sglang_cache_aware', 'dynamo_kv']) {
      const { planner: old } = build(name);
      const first = choose(old, ['a', 'b'], [1, 2, 3], 4).id;
      const { planner: next } = build(name);
      next.carryFrom!(old);
      for (let seed = 0; seed < 10; seed++) expect(choose(next, ['a', 'b'], [1, 2, 3], seed).id).toBe(first);
    }
  });
});
