/**
 * The KV token pool of the SGLang replica model, as SGLang's `TokenToKVPoolAllocator` and
 * `RadixCache` (`mem_cache/`) keep it: `kvTokens` slots, each either free, held privately by a
 * request (prompt and output tokens not in the tree), or held by the radix tree (cached prompt
 * prefixes, locked while a request uses them). Allocation evicts unlocked tree leaves, least
 * recently used first, when too few slots are free. The scheduler (`sglang-scheduler.ts`) decides
 * what to allocate; this file only keeps the accounting.
 */
import { RadixCache, type RadixNode } from './radix-cache.ts';

/** What the pool tracks of a request: its prompt, cache keys and the tokens it holds. */
export interface PoolHolder {
  readonly input: number;
  readonly hashIds: readonly number[] | null;
  /** Deepest locked radix node (null = none) and the tokens its path covers. */
  node: RadixNode | null;
  nodeTokens: number;
  /** Tokens held privately (not in the tree). */
  privateTokens: number;
}

/** The token pool and its radix prefix cache (module doc). */
export class SglangKvPool {
  /** Slots in the pool (tokens). */
  readonly kvTokens: number;
  /** Tokens per radix-tree hash block. */
  readonly hashBlockTokens: number;
  /** The prefix cache. */
  readonly radix: RadixCache;
  /** Σ privateTokens over the holders (tokens). */
  privateTotal = 0;

  /** A pool of `kvTokens` slots with an empty radix tree of `hashBlockTokens`-token edges (the caller validates both). */
  constructor(kvTokens: number, hashBlockTokens: number) {
    this.kvTokens = kvTokens;
    this.hashBlockTokens = hashBlockTokens;
    this.radix = new RadixCache(hashBlockTokens);
  }

  /** Tokens neither held by a request nor by the radix tree. */
  freeTokens(): number {
    return this.kvTokens - this.privateTotal - this.radix.totalTokens;
  }

  /**
   * Make `n` tokens free, evicting unlocked cached prefixes (LRU leaves) as needed.
   * @throws Error when eviction cannot free enough (the scheduler reserves before allocating).
   */
  allocate(n: number): void {
    const short = n - this.freeTokens();
    if (short > 0) this.radix.evict(short);
    if (this.freeTokens() < n) throw new Error(`SglangReplica: KV pool exhausted allocating ${n} tokens (free ${this.freeTokens()})`);
  }

  /** The deepest cached node matching `r`'s prompt, leaving at least its last token to compute; null when none. */
  lookup(r: PoolHolder): RadixNode | null {
    if (r.hashIds === null) return null;
    const maxBlocks = Math.floor((r.input - 1) / this.hashBlockTokens);
    if (maxBlocks <= 0) return null;
    const node = this.radix.match(r.hashIds, maxBlocks);
    return node.depth > 0 ? node : null;
  }

  /** After a prompt is in KV: insert its full hash blocks into the tree and move their tokens there. */
  insertPrompt(r: PoolHolder): void {
    const ids = r.hashIds;
    if (ids === null) return;
    const blocks = Math.min(ids.length, Math.floor(r.input / this.hashBlockTokens));
    const covered = blocks * this.hashBlockTokens;
    if (covered <= r.nodeTokens) return;
    // Tokens this request holds privately for those blocks move to the tree (or are dropped when
    // another request inserted the same blocks meanwhile); free them first so the tree can take them.
    const moved = covered - r.nodeTokens;
    r.privateTokens -= moved;
    this.privateTotal -= moved;
    const node = this.radix.insert(ids, blocks);
    this.radix.lock(node);
    if (r.node !== null) this.radix.unlock(r.node);
    r.node = node;
    r.nodeTokens = covered;
  }

  /** Give back everything `r` holds: unlock its tree path and free its private tokens. */
  release(r: PoolHolder): void {
    if (r.node !== null) {
      this.radix.unlock(r.node);
      r.node = null;
    }
    r.nodeTokens = 0;
    this.privateTotal -= r.privateTokens;
    r.privateTokens = 0;
  }
}
