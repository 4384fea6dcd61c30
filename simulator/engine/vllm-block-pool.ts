/**
 * The KV block pool of the vLLM replica model, as vLLM's `BlockPool`
 * (vllm/v1/core/block_pool.py) keeps it: `kvBlocks` blocks, some owned privately by running
 * requests (their tokens beyond a cached prefix), the rest free or holding prefix-cache entries.
 * A cache entry covers one trace hash block (`blocksPerEntry` KV blocks); it is pinned (refcount >
 * 0) while running requests use it and evictable (refcount 0, LRU order) otherwise — vLLM's "free
 * but still cached" blocks, evicted LRU-first when free blocks run out. `maxEvictable` caps the
 * evictable entries kept (0 disables caching).
 *
 * The pool only counts; which request owns what is the replica's (`vllm-replica.ts`).
 */

/** One cached hash block. `ref` = number of running requests' pins on it. */
export interface CacheEntry {
  readonly hash: number;
  ref: number;
}

/** Block accounting and the prefix cache of one vLLM replica. Counts are in KV blocks unless named. */
export class VllmBlockPool {
  readonly kvBlocks: number;
  /** KV blocks per cache entry (hash block). */
  readonly blocksPerEntry: number;
  /** Most evictable entries kept (Infinity: unbounded). */
  readonly maxEvictable: number;
  /** Every cache entry by hash, pinned or evictable. */
  readonly cache = new Map<number, CacheEntry>();
  /** Unreferenced entries; Map iteration order = LRU first. */
  readonly evictable = new Map<number, CacheEntry>();
  /** Blocks owned privately by running requests. */
  privateTotal = 0;

  constructor(kvBlocks: number, blocksPerEntry: number, maxEvictable: number) {
    this.kvBlocks = kvBlocks;
    this.blocksPerEntry = blocksPerEntry;
    this.maxEvictable = maxEvictable;
  }

  /** Blocks neither private nor holding a cache entry (evictable entries are not free). */
  freeBlocks(): number {
    return this.kvBlocks - this.privateTotal - this.blocksPerEntry * this.cache.size;
  }

  /** Blocks in use by running requests: private plus pinned entries. */
  usedBlocks(): number {
    return this.privateTotal + this.blocksPerEntry * (this.cache.size - this.evictable.size);
  }

  /**
   * Make `need` blocks free by evicting LRU unreferenced entries. Evicts nothing and returns false
   * when even evicting all of them would not suffice (vLLM counts evictable blocks as free).
   */
  ensureFree(need: number): boolean {
    if (this.freeBlocks() + this.blocksPerEntry * this.evictable.size < need) return false;
    while (this.freeBlocks() < need) this.evictLru();
    return true;
  }

  /** Drop the least recently used evictable entry (the caller checked there is one). */
  evictLru(): void {
    const h = this.evictable.keys().next().value as number;
    this.evictable.delete(h);
    this.cache.delete(h);
  }

  /** Pin the longest cached prefix of `ids[0..full)` onto `pins` (appending); stops at the first miss. */
  pinCachedPrefix(ids: readonly number[], full: number, pins: CacheEntry[]): void {
    for (let k = 0; k < full; k++) {
      const e = this.cache.get(ids[k]!);
      if (e === undefined) break;
      if (e.ref++ === 0) this.evictable.delete(e.hash);
      pins.push(e);
    }
  }

  /** Turn `ids[pins.length..full)` into pinned entries (sharing any that appeared meanwhile), appending to `pins`. */
  insertAndPin(ids: readonly number[], full: number, pins: CacheEntry[]): void {
    for (let k = pins.length; k < full; k++) {
      const h = ids[k]!;
      let e = this.cache.get(h);
      if (e === undefined) {
        e = { hash: h, ref: 1 };
        this.cache.set(h, e);
      } else if (e.ref++ === 0) {
        // Same content computed twice (it was cached after our lookup): share the existing copy.
        this.evictable.delete(h);
      }
      pins.push(e);
    }
  }

  /** Drop `pins` (tail first, so a request's tail blocks are evicted first, as vLLM frees them), then trim to `maxEvictable`. */
  unpin(pins: CacheEntry[]): void {
    for (let k = pins.length - 1; k >= 0; k--) {
      const e = pins[k]!;
      if (--e.ref === 0) this.evictable.set(e.hash, e);
    }
    pins.length = 0;
    while (this.evictable.size > this.maxEvictable) this.evictLru();
  }

  /**
   * Check the pool against the pins the replica's requests hold (`refs`: entry → pin count) and
   * its Σ of private blocks. @throws Error (via `fail`) on any mismatch.
   */
  invariants(refs: ReadonlyMap<CacheEntry, number>, privateSum: number, fail: (msg: string) => never): void {
    if (this.privateTotal < 0) fail(`negative private total ${this.privateTotal}`);
    if (this.privateTotal + this.blocksPerEntry * this.cache.size > this.kvBlocks) {
      fail(`KV over budget: private ${this.privateTotal} + cached ${this.blocksPerEntry * this.cache.size} > ${this.kvBlocks}`);
    }
    if (this.evictable.size > this.maxEvictable) fail(`evictable ${this.evictable.size} > cap ${this.maxEvictable}`);
    if (privateSum !== this.privateTotal) fail(`private total ${this.privateTotal} != Σ ${privateSum}`);
    for (const [h, e] of this.cache) {
      if (e.hash !== h) fail(`cache key ${h} holds entry ${e.hash}`);
      if (e.ref < 0) fail(`entry ${h} refcount ${e.ref} < 0`);
      if (e.ref !== (refs.get(e) ?? 0)) fail(`entry ${h} refcount ${e.ref} != pins ${refs.get(e) ?? 0}`);
      if ((e.ref === 0) !== this.evictable.has(h)) fail(`entry ${h} evictable state`);
    }
    for (const e of refs.keys()) if (this.cache.get(e.hash) !== e) fail(`pinned entry ${e.hash} not in cache`);
    for (const h of this.evictable.keys()) if (!this.cache.has(h)) fail(`evictable ${h} not in cache`);
  }
}
