/**
 * What engines say about themselves, for the cache-aware strategies: a load report (requests
 * waiting and running, fraction of KV-cache blocks in use — the numbers vLLM and SGLang export
 * as `num_requests_waiting`, `num_requests_running` and `kv_cache_usage_perc`) and KV events
 * (blocks stored into, or removed from, an engine's prefix cache — vLLM's `BlockStored` /
 * `BlockRemoved` / `AllBlocksCleared` events that llm-d's precise scorer and Dynamo's KvIndexer
 * consume). Drivers push them in: the simulator from its engine models, the gateway from what an
 * upstream reports. An endpoint that never reported reads as `null` / not reporting, and the
 * strategies then fall back to what the core itself knows (in-flight counts, routed prefixes).
 *
 * The block set of an endpoint is exactly what its events left there; the engine bounds it (an
 * engine evicts and says so), so it has no cap of its own. No clock: a load report carries the
 * driver's `nowMs` for the record only.
 */

/** One load report of an engine. `kvUsage` is a fraction in [0, 1]; counts are integers ≥ 0. */
export interface EngineLoad {
  readonly waiting: number;
  readonly running: number;
  readonly kvUsage: number;
  /** Driver time of the report, ms. */
  readonly atMs: number;
}

/** A change to an engine's prefix cache, by block hash (the trace schema's `hash_ids`). */
export type KvEvent =
  | { readonly kind: 'stored'; readonly hashes: readonly number[] }
  | { readonly kind: 'removed'; readonly hashes: readonly number[] }
  | { readonly kind: 'cleared' };

/** What planners read. */
export interface EngineSignalsView {
  /** The latest load report of `endpointId`, or null before the first. */
  load(endpointId: string): EngineLoad | null;
  /** True once `endpointId` has sent at least one KV event. */
  reportsKvEvents(endpointId: string): boolean;
  /** Leading blocks of `hashes` present in `endpointId`'s cache per its KV events (0 when none). */
  cachedPrefixBlocks(endpointId: string, hashes: readonly number[]): number;
}

/** The engine-reported signals of every endpoint. Deterministic; reads no clock. */
export class EngineSignals implements EngineSignalsView {
  private readonly loads = new Map<string, EngineLoad>();
  private readonly blocks = new Map<string, Set<number>>();

  load(endpointId: string): EngineLoad | null {
    return this.loads.get(endpointId) ?? null;
  }

  reportsKvEvents(endpointId: string): boolean {
    return this.blocks.has(endpointId);
  }

  cachedPrefixBlocks(endpointId: string, hashes: readonly number[]): number {
    const set = this.blocks.get(endpointId);
    if (set === undefined) return 0;
    let k = 0;
    while (k < hashes.length && set.has(hashes[k]!)) k++;
    return k;
  }

  /**
   * Records a load report. `kvUsage` outside [0, 1] is clamped (engines report 0–100 % but a
   * rounding overshoot should not score below zero); negative counts are bugs.
   * @throws RangeError when `waiting` or `running` is negative or not an integer.
   */
  reportLoad(endpointId: string, load: { waiting: number; running: number; kvUsage: number }, nowMs: number): void {
    for (const n of [load.waiting, load.running]) if (!Number.isSafeInteger(n) || n < 0) throw new RangeError(`engine load of '${endpointId}': count ${n} is not an integer ≥ 0`);
    const kv = Number.isFinite(load.kvUsage) ? Math.min(1, Math.max(0, load.kvUsage)) : 0;
    this.loads.set(endpointId, { waiting: load.waiting, running: load.running, kvUsage: kv, atMs: nowMs });
  }

  /** Applies one KV event of `endpointId`'s engine. */
  applyKvEvent(endpointId: string, event: KvEvent): void {
    let set = this.blocks.get(endpointId);
    if (set === undefined) {
      set = new Set();
      this.blocks.set(endpointId, set);
    }
    if (event.kind === 'cleared') set.clear();
    else if (event.kind === 'stored') for (const h of event.hashes) set.add(h);
    else for (const h of event.hashes) set.delete(h);
  }

  /** Blocks `endpointId`'s KV events say it holds. */
  cachedBlockCount(endpointId: string): number {
    return this.blocks.get(endpointId)?.size ?? 0;
  }

  /** @throws Error when a stored KV usage is outside [0, 1]. */
  invariants(): void {
    for (const [id, l] of this.loads) if (!(l.kvUsage >= 0 && l.kvUsage <= 1)) throw new Error(`engine signals '${id}': kvUsage ${l.kvUsage}`);
  }
}
