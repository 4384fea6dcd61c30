import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { RadixCache } from '../../../simulator/engine/radix-cache.ts';
import { EngineSignals, type KvEvent } from '../../../core/index.ts';

describe('RadixCache', () => {
  it('matches the longest cached prefix, block by block', () => {
    const c = new RadixCache(512);
    c.insert([1, 2, 3, 4], 4);
    expect(c.match([1, 2, 9], 3).depth).toBe(2);
    expect(c.match([1, 2, 3, 4, 5], 5).depth).toBe(4);
    expect(c.match([1, 2, 3, 4], 2).depth).toBe(2); // capped by maxBlocks
    expect(c.match([7], 1).depth).toBe(0);
    expect(c.totalTokens).toBe(4 * 512);
    c.invariants();
  });

  it('locked paths are never evicted; unlocked leaves go least recently used first', () => {
    const c = new RadixCache(1);
    const a = c.insert([1, 2, 3], 3);
    c.insert([1, 2, 4], 3);
    c.insert([5, 6], 2);
    c.lock(a);
    expect(c.evictableTokens).toBe(3); // 4, 5, 6
    c.match([5, 6], 2); // 5-6 now more recent than 1-2-4
    expect(c.evict(1)).toBe(1);
    expect(c.match([1, 2, 4], 3).depth).toBe(2); // block 4 went first
    expect(c.evict(10)).toBe(2); // then 6 and 5; the locked path 1-2-3 stays
    expect(c.totalTokens).toBe(3);
    c.unlock(a);
    expect(c.evict(10)).toBe(3);
    expect(c.totalTokens).toBe(0);
    c.invariants();
  });

  it('still finds every evictable leaf after its LRU heap was rebuilt (many stale entries)', () => {
    const c = new RadixCache(1);
    const leaf = c.insert([1, 2], 2);
    const other = c.insert([3], 1);
    for (let i = 0; i < 300; i++) {
      c.lock(leaf);
      c.unlock(leaf); // each unlock queues the leaf again: the heap outgrows the tree and is rebuilt
      c.match([3], 1);
    }
    void other;
    expect(c.evict(100)).toBe(3);
    expect(c.totalTokens).toBe(0);
    c.invariants();
  });

  it('keeps its counts consistent under random insert / match / lock / unlock / evict (fast-check)', () => {
    const op = fc.oneof(
      fc.record({ k: fc.constant('insert' as const), ids: fc.array(fc.integer({ min: 0, max: 5 }), { minLength: 1, maxLength: 6 }) }),
      fc.record({ k: fc.constant('lock' as const), ids: fc.array(fc.integer({ min: 0, max: 5 }), { minLength: 1, maxLength: 6 }) }),
      fc.record({ k: fc.constant('unlock' as const), i: fc.nat() }),
      fc.record({ k: fc.constant('evict' as const), n: fc.integer({ min: 1, max: 8 }) }),
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 80 }), (ops) => {
        const c = new RadixCache(16);
        const locked: ReturnType<RadixCache['insert']>[] = [];
        for (const o of ops) {
          if (o.k === 'insert') c.insert(o.ids, o.ids.length);
          else if (o.k === 'lock') {
            const n = c.insert(o.ids, o.ids.length);
            c.lock(n);
            locked.push(n);
          } else if (o.k === 'unlock' && locked.length) c.unlock(locked.splice(o.i % locked.length, 1)[0]!);
          else if (o.k === 'evict') {
            const before = c.totalTokens;
            const freed = c.evict(o.n * 16);
            expect(c.totalTokens).toBe(before - freed);
          }
          c.invariants();
          expect(c.lockedTokens + c.evictableTokens).toBe(c.totalTokens);
          for (const n of locked) expect(n.live).toBe(true);
        }
      }),
      { numRuns: 200 },
    );
  });
});

/** A mirror of one engine's cache as a KV-aware router keeps it: the core's EngineSignals, and the events seen. */
function subscribe(c: RadixCache) {
  const events: KvEvent[] = [];
  const signals = new EngineSignals();
  const stored = new Set<number>();
  c.setKvEventSink((e) => {
    events.push(e);
    signals.applyKvEvent('e', e);
    if (e.kind === 'cleared') stored.clear();
    else if (e.kind === 'stored') for (const h of e.hashes) stored.add(h);
    else for (const h of e.hashes) stored.delete(h);
  });
  return { events, signals, stored };
}

describe('RadixCache KV events', () => {
  it('stored on insert of new blocks, removed on eviction, cleared on reset; the mirror equals the tree', () => {
    const c = new RadixCache(1);
    const m = subscribe(c);
    expect(m.events).toEqual([]); // an empty tree announces nothing
    const a = c.insert([1, 2, 3], 3);
    c.insert([1, 2, 4], 3); // 1 and 2 exist: only 4 is new
    c.insert([1, 2], 2); // nothing new, no event
    expect(m.events).toEqual([
      { kind: 'stored', hashes: [1, 2, 3] },
      { kind: 'stored', hashes: [4] },
    ]);
    c.lock(a);
    expect(c.evict(10)).toBe(1); // only leaf 4 is unlocked
    expect(m.events.at(-1)).toEqual({ kind: 'removed', hashes: [4] });
    expect(m.stored).toEqual(c.cachedHashes());
    expect(m.signals.cachedPrefixBlocks('e', [1, 2, 3, 4])).toBe(3);
    expect(() => c.reset()).toThrow(/locked/);
    c.unlock(a);
    c.reset();
    expect(m.events.at(-1)).toEqual({ kind: 'cleared' });
    expect(c.totalTokens).toBe(0);
    expect(a.live).toBe(false);
    expect(m.signals.cachedBlockCount('e')).toBe(0);
    c.invariants();
  });

  it('a hash on two paths stays stored until its last node goes; a late subscriber hears the current content', () => {
    const c = new RadixCache(1);
    c.insert([7, 8], 2);
    c.insert([8], 1); // hash 8 at depth 1 and at depth 2
    const m = subscribe(c);
    expect(m.events).toHaveLength(1);
    expect(new Set((m.events[0] as { hashes: readonly number[] }).hashes)).toEqual(new Set([7, 8]));
    c.match([7, 8], 2); // /8 is now the least recently used leaf
    expect(c.evict(1)).toBe(1);
    expect(m.events).toHaveLength(1); // 8 is still cached under 7
    expect(c.evict(1)).toBe(1);
    expect(m.events.at(-1)).toEqual({ kind: 'removed', hashes: [8] });
    expect(m.stored).toEqual(new Set([7]));
    c.setKvEventSink(null);
    c.insert([9], 1);
    expect(m.stored.has(9)).toBe(false); // unsubscribed
    c.invariants();
  });

  it('after any sequence of insert / lock / unlock / evict / reset, stored − removed = the cached hashes (fast-check)', () => {
    const ids = fc.array(fc.integer({ min: 0, max: 6 }), { minLength: 1, maxLength: 6 });
    const op = fc.oneof(
      { weight: 4, arbitrary: fc.record({ k: fc.constant('insert' as const), ids }) },
      { weight: 2, arbitrary: fc.record({ k: fc.constant('lock' as const), ids }) },
      { weight: 2, arbitrary: fc.record({ k: fc.constant('unlock' as const), i: fc.nat() }) },
      { weight: 3, arbitrary: fc.record({ k: fc.constant('evict' as const), n: fc.integer({ min: 1, max: 8 }) }) },
      { weight: 1, arbitrary: fc.record({ k: fc.constant('reset' as const) }) },
      { weight: 1, arbitrary: fc.record({ k: fc.constant('resubscribe' as const) }) },
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 80 }), fc.nat(80), (ops, subscribeAt) => {
        const c = new RadixCache(16);
        let m: ReturnType<typeof subscribe> | null = null;
        const locked: ReturnType<RadixCache['insert']>[] = [];
        ops.forEach((o, step) => {
          if (step === subscribeAt || (o.k === 'resubscribe' && m !== null)) m = subscribe(c);
          if (o.k === 'insert') c.insert(o.ids, o.ids.length);
          else if (o.k === 'lock') {
            const n = c.insert(o.ids, o.ids.length);
            c.lock(n);
            locked.push(n);
          } else if (o.k === 'unlock' && locked.length) c.unlock(locked.splice(o.i % locked.length, 1)[0]!);
          else if (o.k === 'evict') c.evict(o.n * 16);
          else if (o.k === 'reset' && locked.length === 0) c.reset();
          c.invariants();
          if (m !== null) {
            const cached = c.cachedHashes();
            expect(m.stored).toEqual(cached);
            expect(m.signals.cachedBlockCount('e')).toBe(cached.size);
            for (const e of m.events) if (e.kind !== 'cleared') expect(e.hashes.length).toBeGreaterThan(0);
          }
        });
      }),
      { numRuns: 300 },
    );
  });
});
