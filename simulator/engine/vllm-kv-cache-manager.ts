/**
 * The KV cache manager of the vLLM replica model, after vLLM V1's `KVCacheManager`
 * (vllm/v1/core/kv_cache_manager.py) over its `BlockPool` (`vllm-block-pool.ts`): the prefix
 * lookup at admission (`get_computed_blocks`: the longest chain of cached hash blocks the
 * prompt starts with — a trace hash id already names the chain up to its block, as vLLM's
 * parent-chained block hashes do), the blocks a request needs for the tokens of a step
 * (`allocate_slots`), caching a prefilled prompt's full hash blocks (`cache_blocks`) and freeing
 * a request (`free`). A request holds pinned entries for its cached prefix and private blocks for
 * the rest of its sequence; the scheduler (`vllm-scheduler.ts`) decides when each call is made.
 */
import type { CachedEntry } from './vllm-block-pool.ts';
import { VllmBlockPool } from './vllm-block-pool.ts';

/** What the manager keeps of a request (the vLLM `Request` fields, vllm/v1/request.py, that `KVCacheManager` reads). */
export interface KvRequest {
  /** Request id, unique on the replica (names the request's own cache entries, {@link ownEntryHash}). */
  readonly id: number;
  /** Prompt tokens. */
  readonly input: number;
  /** Trace hash ids of the prompt's hash blocks (null: no prefix sharing). */
  readonly hashIds: readonly number[] | null;
  /** Tokens whose KV is in the cache (prefix hits included). */
  computed: number;
  /** Pinned prefix entries, in prompt order; they cover pins.length × hashBlockTokens tokens. */
  pins: CachedEntry[];
  /** KV blocks owned privately (tokens beyond the pinned prefix). */
  privateBlocks: number;
}

/**
 * Cache key of hash block `k` of request `id`'s own sequence: blocks whose content no other
 * request shares (its output tokens, and its prompt when the prompt carries no trace hash ids).
 * Negative, so it never equals a trace hash id (those are ≥ 0); such entries are not published as
 * KV events (a KV-aware router only matches trace hashes).
 */
export function ownEntryHash(id: number, k: number): number {
  return -(id * 65_536 + k + 1);
}

/** Prefix lookup, slot allocation and freeing on one `VllmBlockPool` (vLLM `KVCacheManager`, vllm/v1/core/kv_cache_manager.py; module doc). */
export class VllmKvCacheManager {
  /** The block pool (counts and cache entries). */
  readonly pool: VllmBlockPool;
  /** Tokens per KV block (vLLM `block_size`). */
  readonly blockTokens: number;
  /** Tokens per trace hash id (one cache entry). */
  readonly hashBlockTokens: number;
  /** False when the evictable cap is 0: no lookups, nothing cached (vLLM `enable_prefix_caching` off). */
  readonly cacheEnabled: boolean;

  /**
   * @param kvBlocks pool size in blocks; `hashBlockTokens` is a multiple of `blockTokens` (the
   *   caller validates); `maxEvictable` caps the unreferenced entries kept (0 disables caching).
   */
  constructor(kvBlocks: number, blockTokens: number, hashBlockTokens: number, maxEvictable: number) {
    this.blockTokens = blockTokens;
    this.hashBlockTokens = hashBlockTokens;
    this.cacheEnabled = maxEvictable > 0;
    this.pool = new VllmBlockPool(kvBlocks, hashBlockTokens / blockTokens, maxEvictable);
  }

  /** Blocks that hold `tokens` tokens (vLLM `cdiv(num_tokens, block_size)`). */
  blocksFor(tokens: number): number {
    return Math.ceil(tokens / this.blockTokens);
  }

  /**
   * Blocks `r` must add so that `tokens` more tokens beyond `r.computed` are in KV (≤ 0 when its
   * blocks already cover them): vLLM `allocate_slots`' count of new blocks.
   */
  blocksNeeded(r: KvRequest, tokens: number): number {
    return this.blocksFor(Math.max(0, r.computed + tokens - r.pins.length * this.hashBlockTokens)) - r.privateBlocks;
  }

  /** Give `r` `need` more private blocks (the caller made them free with `pool.ensureFree`). */
  allocate(r: KvRequest, need: number): void {
    if (need > 0) {
      r.privateBlocks += need;
      this.pool.privateTotal += need;
    }
  }

  /** Set `r`'s private blocks to what `r.computed` tokens beyond its pinned prefix take. */
  syncPrivate(r: KvRequest): void {
    const priv = this.blocksFor(Math.max(0, r.computed - r.pins.length * this.hashBlockTokens));
    this.pool.privateTotal += priv - r.privateBlocks;
    r.privateBlocks = priv;
  }

  /**
   * Longest cached prefix of the request's sequence (`seqTokens` = prompt + tokens generated so
   * far) in full hash blocks; pins those entries (vLLM `get_computed_blocks`, which likewise leaves
   * the last token to compute: at most `num_tokens − 1` tokens hit). Block k is the trace hash id
   * `hashIds[k]` while it lies in the prompt's full hash blocks, else the request's own entry
   * ({@link ownEntryHash}) — present only if this request was preempted and its blocks were not
   * yet evicted ({@link freePreempted}).
   * @returns cached tokens = min(seqTokens − 1, matched × hashBlockTokens).
   */
  getComputedBlocks(r: KvRequest, seqTokens: number = r.input): number {
    if (!this.cacheEnabled) return 0;
    const ids = r.hashIds;
    const promptFull = this.promptEntries(r);
    const full = Math.floor(seqTokens / this.hashBlockTokens);
    for (let k = 0; k < full; k++) {
      const e = this.pool.touch(k < promptFull ? ids![k]! : ownEntryHash(r.id, k));
      if (e === undefined) break;
      r.pins.push(e);
    }
    return Math.min(seqTokens - 1, r.pins.length * this.hashBlockTokens);
  }

  /** Full hash blocks of `r`'s prompt that carry trace hash ids. */
  private promptEntries(r: KvRequest): number {
    return r.hashIds === null ? 0 : Math.min(r.hashIds.length, Math.floor(r.input / this.hashBlockTokens));
  }

  /**
   * After the prompt is in KV: turn its full hash blocks into pinned cache entries (vLLM
   * `cache_blocks`); the covered tokens' blocks move from private to the entries (net zero or a
   * saving, when another request cached the same content meanwhile and its copy is shared).
   */
  cacheBlocks(r: KvRequest): void {
    const ids = r.hashIds;
    if (ids === null) return;
    const full = Math.min(ids.length, Math.floor(r.input / this.hashBlockTokens));
    if (r.pins.length >= full) return;
    for (let k = r.pins.length; k < full; k++) r.pins.push(this.pool.cacheOrTouch(ids[k]!));
    this.syncPrivate(r);
  }

  /** Drop `r`'s pins, tail first (its private blocks stay). */
  unpin(r: KvRequest): void {
    this.pool.unpinAll(r.pins);
  }

  /**
   * Free a preempted request (vLLM `Scheduler._preempt_request` → `KVCacheManager.free`). With
   * prefix caching on, vLLM hashes every full block of a request as it is computed — output tokens
   * included (`Request.block_hashes` grows with the sequence; `allocate_slots` caches the full
   * blocks up to the computed tokens) — and `free` returns the blocks to the free queue in reverse
   * order, still hashed ("so that the tail blocks are evicted first",
   * vllm/v1/core/kv_cache_manager.py; `BlockPool.free_blocks`). They stay cached until an
   * allocation takes them from the free queue, so the request's readmission (`get_computed_blocks`)
   * hits whatever of its sequence is left and recomputes only the rest. Here: the computed
   * sequence's full hash blocks beyond the pinned prefix become evictable entries, tail first,
   * then the pins are released tail first; the partial hash block at the end is freed (a
   * simplification: vLLM would keep its full 16-token blocks too). With caching off everything is freed.
   */
  freePreempted(r: KvRequest): void {
    const full = Math.floor(r.computed / this.hashBlockTokens);
    const pinned = r.pins.length;
    this.pool.privateTotal -= r.privateBlocks;
    r.privateBlocks = 0;
    if (this.cacheEnabled) {
      const ids = r.hashIds;
      const promptFull = this.promptEntries(r);
      for (let k = full - 1; k >= pinned; k--) this.pool.retain(k < promptFull ? ids![k]! : ownEntryHash(r.id, k));
    }
    this.pool.unpinAll(r.pins);
  }

  /** Free everything `r` holds: its pins and its private blocks (vLLM `KVCacheManager.free`). */
  free(r: KvRequest): void {
    this.pool.unpinAll(r.pins);
    this.pool.privateTotal -= r.privateBlocks;
    r.privateBlocks = 0;
  }
}
