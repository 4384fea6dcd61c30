import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type CachedEntry, VllmBlockPool } from '../../../simulator/engine/vllm-block-pool.ts';
import { type KvRequest, VllmKvCacheManager } from '../../../simulator/engine/vllm-kv-cache-manager.ts';

const fail = (msg: string): never => {
  throw new Error(msg);
};

function refsOf(reqs: readonly KvRequest[]): Map<CachedEntry, number> {
  const refs = new Map<CachedEntry, number>();
  for (const r of reqs) for (const e of r.pins) refs.set(e, (refs.get(e) ?? 0) + 1);
  return refs;
}

let nextId = 0;
function request(input: number, hashIds: number[] | null): KvRequest {
  return { id: nextId++, input, hashIds, computed: 0, pins: [], privateBlocks: 0 };
}

describe('VllmBlockPool', () => {
  it('evicts unreferenced entries least recently freed first, and only when no block is free', () => {
    const pool = new VllmBlockPool(10, 2, Infinity);
    const pins = [pool.cacheOrTouch(1), pool.cacheOrTouch(2), pool.cacheOrTouch(3)];
    expect(pool.freeBlocks()).toBe(4);
    pool.unpinAll(pins); // freed tail first: 3, 2, 1 (so 3 is evicted first)
    expect([...pool.evictable.keys()]).toEqual([3, 2, 1]);
    expect(pool.usedBlocks()).toBe(0);
    expect(pool.ensureFree(4)).toBe(true);
    expect(pool.cache.size).toBe(3); // enough free blocks: nothing evicted
    expect(pool.ensureFree(7)).toBe(true);
    expect([...pool.cache.keys()]).toEqual([1]); // 3 and then 2 went first
    expect(pool.ensureFree(11)).toBe(false); // more than the pool: nothing evicted
    expect(pool.cache.size).toBe(1);
    pool.invariants(new Map(), fail);
  });

  it('touch pins a cached entry and takes it off the eviction list; the cap trims the oldest', () => {
    const pool = new VllmBlockPool(100, 1, 2);
    const a = [pool.cacheOrTouch(1), pool.cacheOrTouch(2), pool.cacheOrTouch(3)];
    pool.unpinAll(a); // 3 unreferenced entries, cap 2: entry 3 (freed first) goes
    expect([...pool.cache.keys()].sort()).toEqual([1, 2]);
    const e = pool.touch(2)!;
    expect(e.ref).toBe(1);
    expect(pool.evictable.has(2)).toBe(false);
    expect(pool.touch(3)).toBeUndefined();
    pool.invariants(new Map([[e, 1]]), fail);
  });
});

describe('VllmKvCacheManager', () => {
  it('a prompt cached by one request is a prefix hit for the next, leaving its last token to compute', () => {
    const kv = new VllmKvCacheManager(1000, 16, 64, Infinity);
    const a = request(200, [7, 8, 9, 10]); // 3 full hash blocks (192 tokens)
    expect(kv.getComputedBlocks(a)).toBe(0);
    const need = kv.blocksNeeded(a, 200);
    expect(need).toBe(13);
    expect(kv.pool.ensureFree(need)).toBe(true);
    kv.allocate(a, need);
    a.computed = 200;
    kv.cacheBlocks(a);
    expect(a.pins.length).toBe(3);
    expect(a.privateBlocks).toBe(1); // 8 tokens beyond the 192 cached
    const b = request(192, [7, 8, 9]);
    expect(kv.getComputedBlocks(b)).toBe(191);
    expect(b.pins.length).toBe(3);
    kv.pool.invariants(refsOf([a, b]), fail);
    kv.free(a);
    kv.free(b);
    expect(kv.pool.usedBlocks()).toBe(0);
    expect(kv.pool.freeBlocks()).toBe(1000 - 3 * 4);
    kv.pool.invariants(new Map(), fail);
  });

  it('keeps its accounting under random admissions, caching and frees (fast-check)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ input: fc.integer({ min: 1, max: 300 }), prefix: fc.integer({ min: 0, max: 3 }), free: fc.boolean() }), { maxLength: 60 }),
        fc.integer({ min: 0, max: 5 }),
        (ops, cap) => {
          const kv = new VllmKvCacheManager(120, 16, 32, cap);
          const live: KvRequest[] = [];
          for (const [i, op] of ops.entries()) {
            const ids = Array.from({ length: Math.ceil(op.input / 32) }, (_, k) => (k < op.prefix ? k : 1000 * (i + 1) + k));
            const r = request(op.input, ids);
            r.computed = kv.getComputedBlocks(r);
            const need = kv.blocksNeeded(r, op.input - r.computed);
            if (!kv.pool.ensureFree(need)) kv.unpin(r);
            else {
              kv.allocate(r, need);
              r.computed = op.input;
              if (kv.cacheEnabled) kv.cacheBlocks(r);
              live.push(r);
            }
            if (op.free && live.length > 0) kv.free(live.shift()!);
            kv.pool.invariants(refsOf(live), fail);
            let priv = 0;
            for (const q of live) {
              priv += q.privateBlocks;
              expect(q.privateBlocks).toBe(kv.blocksFor(Math.max(0, q.computed - q.pins.length * 32)));
            }
            expect(kv.pool.privateTotal).toBe(priv);
          }
        },
      ),
      { numRuns: 100 },
    );
  });
  it('evicts in the same order as a plain least-recently-freed list, over any sequence of pins, unpins and evictions', () => {
    // Model: evictable hashes in an array, oldest first (freed entries appended, touched ones removed).
    const op = fc.oneof(
      fc.record({ kind: fc.constant('pin' as const), hashes: fc.array(fc.integer({ min: 0, max: 40 }), { maxLength: 6 }) }),
      fc.record({ kind: fc.constant('unpin' as const), which: fc.nat() }),
      fc.record({ kind: fc.constant('free' as const), need: fc.integer({ min: 0, max: 90 }) }),
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 300 }), fc.integer({ min: 1, max: 12 }), (ops, cap) => {
        const pool = new VllmBlockPool(80, 2, cap);
        const removed: number[] = [];
        pool.kvEvents = (e) => {
          if (e.kind === 'removed') removed.push(...e.hashes);
        };
        const model: number[] = [];
        const modelRemoved: number[] = [];
        const held: CachedEntry[][] = [];
        for (const o of ops) {
          if (o.kind === 'pin') {
            const pins: CachedEntry[] = [];
            for (const h of new Set(o.hashes)) {
              if (pool.freeBlocks() < 2 && !pool.cache.has(h)) continue;
              const at = model.indexOf(h);
              if (at >= 0) model.splice(at, 1);
              pins.push(pool.cacheOrTouch(h));
            }
            held.push(pins);
          } else if (o.kind === 'unpin' && held.length > 0) {
            const pins = held.splice(o.which % held.length, 1)[0]!;
            for (let k = pins.length - 1; k >= 0; k--) if (pins[k]!.ref === 1) model.push(pins[k]!.hash);
            pool.unpinAll(pins);
            while (model.length > cap) modelRemoved.push(model.shift()!);
          } else if (o.kind === 'free') {
            const free = pool.freeBlocks();
            if (pool.ensureFree(o.need)) for (let f = free; f < o.need; f += 2) modelRemoved.push(model.shift()!);
          }
          expect([...pool.evictable.keys()]).toEqual(model);
        }
        expect(removed).toEqual(modelRemoved);
        const refs = new Map<CachedEntry, number>();
        for (const pins of held) for (const e of pins) refs.set(e, (refs.get(e) ?? 0) + 1);
        pool.invariants(refs, fail);
      }),
    );
  });
});
