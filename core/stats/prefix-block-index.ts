/**
 * Which prefix blocks each endpoint is believed to hold, learnt from what was routed there
 * rather than from the engine: after a request with block hashes `h[0..n)` is sent to an
 * endpoint, that endpoint has computed (and, with prefix caching, keeps) those blocks. This is
 * llm-d's "estimated" prefix-cache indexer (`prefix-cache-scorer`, an LRU of block hashes per
 * server, `lruCapacityPerServer`) and Dynamo's KV router without KV events (`--no-kv-events`:
 * blocks inferred from routing decisions, forgotten after `--router-ttl-secs`).
 *
 * Per endpoint: a `Map` from block hash to the time it was last routed, in least-recently-used
 * order (a `Map` iterates in insertion order; a touch deletes and re-inserts). The map never
 * holds more than `capacityBlocks` entries: an insert beyond it drops the oldest. With a TTL, an
 * entry older than `ttlMs` reads as absent and is dropped when met. No clock: callers pass `nowMs`.
 */

/** Options of a `PrefixBlockIndex`. */
export interface PrefixBlockIndexOptions {
  /** Most block hashes remembered per endpoint, integer ≥ 1. */
  readonly capacityBlocks: number;
  /** Entries older than this many ms read as absent; null = never expire. */
  readonly ttlMs: number | null;
}

/** Per-endpoint LRU sets of routed block hashes. Deterministic; reads no clock. */
export class PrefixBlockIndex {
  private readonly byEndpoint = new Map<string, Map<number, number>>();
  /**
   * Per endpoint, one iterator over its map, kept while the map lives, from which `record` drops
   * the oldest entries. Every entry it has passed is gone (deleted before it got there, or dropped
   * by `record` when returned) and entries are only added at the end, so its next entry is the
   * map's first, as a fresh `keys().next()` would give — without walking V8's hash table from the
   * start over the slot of every entry deleted since the table was last rebuilt. Advanced only
   * while the map is over capacity (so non-empty), it never finishes.
   */
  private readonly oldest = new Map<string, MapIterator<number>>();

  /** @throws RangeError when `capacityBlocks` is not an integer ≥ 1 or `ttlMs` is not > 0. */
  constructor(readonly options: PrefixBlockIndexOptions) {
    if (!Number.isSafeInteger(options.capacityBlocks) || options.capacityBlocks < 1) throw new RangeError(`prefix index capacity must be an integer ≥ 1, got ${options.capacityBlocks}`);
    if (options.ttlMs !== null && !(options.ttlMs > 0)) throw new RangeError(`prefix index TTL must be > 0 ms or null, got ${options.ttlMs}`);
  }

  /**
   * How many leading blocks of `hashes` (at most `maxBlocks`) `endpointId` is believed to hold at
   * `nowMs`: the length of the longest run `hashes[0..k)` that are all present and unexpired.
   * Read-only apart from dropping expired entries it meets.
   */
  matchedBlocks(endpointId: string, hashes: readonly number[], nowMs: number, maxBlocks = hashes.length): number {
    const set = this.byEndpoint.get(endpointId);
    if (set === undefined) return 0;
    const n = Math.min(maxBlocks, hashes.length);
    const ttl = this.options.ttlMs;
    let k = 0;
    while (k < n) {
      const at = set.get(hashes[k]!);
      if (at === undefined) break;
      if (ttl !== null && nowMs - at > ttl) {
        set.delete(hashes[k]!);
        break;
      }
      k++;
    }
    return k;
  }

  /**
   * Records that `hashes[0..min(maxBlocks, length))` were routed to `endpointId` at `nowMs`:
   * each becomes the most recently used, and the oldest entries beyond capacity are dropped.
   * Later blocks are touched last so that, when the bound bites, a prefix's tail goes before its head.
   */
  record(endpointId: string, hashes: readonly number[], nowMs: number, maxBlocks = hashes.length): void {
    const n = Math.min(maxBlocks, hashes.length);
    if (n === 0) return;
    let set = this.byEndpoint.get(endpointId);
    if (set === undefined) {
      set = new Map();
      this.byEndpoint.set(endpointId, set);
      this.oldest.set(endpointId, set.keys());
    }
    for (let k = n - 1; k >= 0; k--) {
      const h = hashes[k]!;
      set.delete(h);
      set.set(h, nowMs);
    }
    if (set.size > this.options.capacityBlocks) {
      const oldest = this.oldest.get(endpointId)!;
      while (set.size > this.options.capacityBlocks) set.delete(oldest.next().value!);
    }
  }

  /** Block hashes remembered for `endpointId` (expired ones not yet dropped included). */
  size(endpointId: string): number {
    return this.byEndpoint.get(endpointId)?.size ?? 0;
  }

  /** Forgets every endpoint not in `keep` (routes removed by a new configuration). */
  retain(keep: ReadonlySet<string>): void {
    for (const id of [...this.byEndpoint.keys()]) {
      if (!keep.has(id)) {
        this.byEndpoint.delete(id);
        this.oldest.delete(id);
      }
    }
  }

  /** @throws Error when an endpoint holds more than `capacityBlocks` hashes. */
  invariants(): void {
    for (const [id, set] of this.byEndpoint) {
      if (set.size > this.options.capacityBlocks) throw new Error(`prefix index '${id}': ${set.size} blocks > capacity ${this.options.capacityBlocks}`);
    }
  }
}
