/**
 * The KV block pool of the vLLM replica model, as vLLM V1's `BlockPool` keeps it
 * (vllm/v1/core/block_pool.py): `kvBlocks` blocks of `blockTokens` tokens, each free, held
 * privately by a request, or holding a prefix-cache entry. Cache entries are at trace hash-block
 * granularity, so one entry occupies `blocksPerEntry` (= hashBlockTokens / blockTokens) blocks.
 * An entry is pinned while running requests reference it (`ref` > 0, vLLM's `ref_cnt`) and
 * evictable otherwise — vLLM's "free but still cached" blocks, which sit in its
 * `free_block_queue` in LRU order and are evicted (`_maybe_evict_cached_block`) when a new block
 * is needed and no uncached one is free. Only the counts are kept, never block ids: the model
 * needs how many blocks are free, not which.
 */
import type { KvEvent } from '../../core/index.ts';

/** One prefix-cache entry (a hash block of the trace); vLLM's cached `KVCacheBlock` (vllm/v1/core/kv_cache_utils.py), `ref` its `ref_cnt`. */
export interface CachedEntry {
  readonly hash: number;
  ref: number;
}

/**
 * Block counts and the prefix-cache entries of one replica (vLLM `BlockPool`,
 * vllm/v1/core/block_pool.py; module doc).
 * Counts are in KV blocks; the cache maps a trace hash id to its entry.
 */
export class VllmBlockPool {
  /** Blocks in the pool (vLLM `num_gpu_blocks`). */
  readonly kvBlocks: number;
  /** KV blocks one cache entry occupies (hashBlockTokens / blockTokens). */
  readonly blocksPerEntry: number;
  /** Max evictable entries kept (Infinity: bounded by free KV only, as in vLLM). */
  readonly maxEvictable: number;
  /** Every cached entry, pinned or evictable (vLLM `cached_block_hash_to_block`). */
  readonly cache = new Map<number, CachedEntry>();
  /** Unreferenced entries; Map iteration order = least recently used first (vLLM's free queue order). */
  readonly evictable = new Map<number, CachedEntry>();
  /**
   * One iterator over `evictable`, kept for the life of the pool, from which `evictLru` takes the
   * oldest entry. Every entry it has passed is gone (it skipped those deleted before it got there
   * and `evictLru` deletes each one it returns) and entries are only ever added at the end, so its
   * next entry is the map's first, as `evictable.keys().next()` would give. A fresh iterator
   * would walk from the start of V8's hash table over the slots of every entry deleted since the
   * table was last rebuilt (about 1 µs per eviction at this map's size); this one passes each
   * slot once. It is only advanced while the map is non-empty, so it never finishes (a finished
   * iterator would not see later entries).
   */
  private readonly oldest = this.evictable.keys();
  /** Blocks held privately by requests (tokens not covered by a pinned entry). */
  privateTotal = 0;
  /**
   * Receives a KV event for each entry that enters the cache (`stored`) or leaves it (`removed`),
   * as vLLM publishes `BlockStored` / `BlockRemoved` for a KV-aware router; null = nobody listens.
   */
  kvEvents: ((e: KvEvent) => void) | null = null;

  /** An empty pool: `kvBlocks` free blocks, entries of `blocksPerEntry` blocks, at most `maxEvictable` unreferenced entries kept (the caller validates). */
  constructor(kvBlocks: number, blocksPerEntry: number, maxEvictable: number) {
    this.kvBlocks = kvBlocks;
    this.blocksPerEntry = blocksPerEntry;
    this.maxEvictable = maxEvictable;
  }

  /** Blocks neither held by a request nor by a cache entry (evictable entries are not free), vLLM `get_num_free_blocks` minus the cached free ones. */
  freeBlocks(): number {
    return this.kvBlocks - this.privateTotal - this.blocksPerEntry * this.cache.size;
  }

  /** Blocks in use by requests: private ones plus pinned entries (evictable entries count as free, as in vLLM's `get_usage`). */
  usedBlocks(): number {
    return this.privateTotal + this.blocksPerEntry * (this.cache.size - this.evictable.size);
  }

  /**
   * Make `need` blocks free by evicting LRU unreferenced entries, as vLLM's `get_new_blocks` does.
   * Evicts nothing and returns false when even evicting all of them would not suffice (vLLM counts
   * evictable blocks as free).
   */
  ensureFree(need: number): boolean {
    if (this.freeBlocks() + this.blocksPerEntry * this.evictable.size < need) return false;
    while (this.freeBlocks() < need) this.evictLru();
    return true;
  }

  /** Drop the least recently used evictable entry (vLLM `_maybe_evict_cached_block`). The caller ensures one exists. */
  evictLru(): void {
    const h = this.oldest.next().value as number;
    this.evictable.delete(h);
    this.cache.delete(h);
    if (h >= 0) this.kvEvents?.({ kind: 'removed', hashes: [h] });
  }

  /**
   * The entry cached for `hash`, pinned for one more request (vLLM `get_cached_block` + `touch`:
   * ref_cnt + 1, out of the free queue); undefined when not cached.
   */
  touch(hash: number): CachedEntry | undefined {
    const e = this.cache.get(hash);
    if (e !== undefined && e.ref++ === 0) this.evictable.delete(hash);
    return e;
  }

  /**
   * Cache `hash` and pin it for the calling request (vLLM `cache_full_blocks`); when another
   * request cached the same content meanwhile, share that entry instead.
   */
  cacheOrTouch(hash: number): CachedEntry {
    let e = this.cache.get(hash);
    if (e === undefined) {
      e = { hash, ref: 1 };
      this.cache.set(hash, e);
      this.kvEvents?.({ kind: 'stored', hashes: [hash] });
    } else if (e.ref++ === 0) {
      this.evictable.delete(hash);
    }
    return e;
  }

  /**
   * Keep `hash` cached as an unreferenced (evictable) entry at the recent end of the LRU order, as
   * vLLM's `free_blocks` appends a freed, still-hashed block to the free queue: a new entry when it
   * is not cached (the caller has released the blocks it occupies), an evictable one moved to the
   * recent end, a pinned one left as it is. Then trims the evictable entries to `maxEvictable`.
   * Negative hashes (a request's own blocks) are not published as KV events.
   */
  retain(hash: number): void {
    const e = this.cache.get(hash);
    if (e === undefined) {
      const n: CachedEntry = { hash, ref: 0 };
      this.cache.set(hash, n);
      this.evictable.set(hash, n);
      if (hash >= 0) this.kvEvents?.({ kind: 'stored', hashes: [hash] });
    } else if (e.ref === 0) {
      this.evictable.delete(hash);
      this.evictable.set(hash, e);
    }
    while (this.evictable.size > this.maxEvictable) this.evictLru();
  }

  /**
   * Unpin `pins` tail first (vLLM `free_blocks` frees a request's blocks in reverse, so its tail
   * blocks are evicted first), then trim the evictable entries to `maxEvictable`. Empties `pins`.
   */
  unpinAll(pins: CachedEntry[]): void {
    for (let k = pins.length - 1; k >= 0; k--) {
      const e = pins[k]!;
      if (--e.ref === 0) this.evictable.set(e.hash, e);
    }
    pins.length = 0;
    while (this.evictable.size > this.maxEvictable) this.evictLru();
  }

  /**
   * Check the pool's consistency against `refs` (each entry's pin count summed over the requests).
   * @param fail throws with the message.
   */
  invariants(refs: Map<CachedEntry, number>, fail: (msg: string) => never): void {
    if (this.privateTotal < 0) fail(`negative private total ${this.privateTotal}`);
    if (this.privateTotal + this.blocksPerEntry * this.cache.size > this.kvBlocks) {
      fail(`KV over budget: private ${this.privateTotal} + cached ${this.blocksPerEntry * this.cache.size} > ${this.kvBlocks}`);
    }
    if (this.evictable.size > this.maxEvictable) fail(`evictable ${this.evictable.size} > cap ${this.maxEvictable}`);
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
