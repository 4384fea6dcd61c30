import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { RadixCache } from '../../../simulator/engine/radix-cache.ts';

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
