/**
 * A vLLM-V1-like replica: continuous batching with chunked prefill, block-granular KV cache,
 * recompute preemption and an LRU prefix cache. One `EngineModel` step = one scheduler iteration
 * + one forward pass whose duration comes from a `StepTimeModel`. The model is split as vLLM V1
 * splits the engine core:
 *  - `vllm-scheduler.ts` — `Scheduler` (vllm/v1/core/sched/scheduler.py): token budget, running
 *    first then waiting FCFS, chunked prefill, preemption;
 *  - `vllm-kv-cache-manager.ts` — `KVCacheManager` (vllm/v1/core/kv_cache_manager.py): prefix
 *    lookup, slot allocation, caching and freeing;
 *  - `vllm-block-pool.ts` — `BlockPool` (vllm/v1/core/block_pool.py): block counts, cached
 *    entries with ref counts, LRU eviction;
 *  - this file — the `EngineModel` face (vLLM's `EngineCore.step` driven by virtual time) and
 *    decode-step coalescing.
 *
 * KV accounting — one pool, like vLLM's: `kvBlocks` blocks of `blockTokens` tokens.
 * Prefix-cache entries are at trace hash-block granularity (`hashBlockTokens`, a multiple of
 * `blockTokens`, so one entry = hashBlockTokens/blockTokens KV blocks). An entry lives in the pool:
 * pinned (refcount > 0) while running requests use it, evictable (refcount 0, LRU order) otherwise —
 * exactly vLLM's "free but still cached" blocks. A running request owns private blocks for its
 * tokens beyond its pinned prefix. Why one pool: it is what vLLM does, so cache hits and memory
 * pressure interact as in the real engine (a cold cache costs nothing; a busy replica evicts it).
 * `prefixCacheBlocks` optionally caps the number of evictable entries kept (0 disables caching).
 *
 * Step coalescing (opt-in, `coalesceDecodeSteps`): when every running request is decoding, no
 * request finishes before step k, and free blocks plus evictions that per-step scheduling would
 * make cover k more tokens each (requests may wait when their admission cannot succeed within the
 * run; see `tryCoalesce`), the k steps are returned as one run (their durations still summed step
 * by step, so times are identical; `decode-run.ts`); a loop must call `interrupt` before handing the replica a
 * request or a cancel (see `EngineModel.interrupt`). `load(nowMs)` counts the blocks the run's
 * steps up to `nowMs` hold, as per-step scheduling would; `load()` without a time lags by them.
 *
 * Deterministic, no clock: times are the virtual ms handed in by the loop.
 */
import type { KvEvent } from '../../core/index.ts';
import type { EngineEvent, EngineLoad, EngineModel, EngineRequest } from './engine-model.ts';
import type { StepTimeModel } from './step-time.ts';
import { DecodeRun, MAX_COALESCED_STEPS, stepsUntilFirstFinish } from './decode-run.ts';
import { VllmScheduler, type VllmRequest, WAITING } from './vllm-scheduler.ts';

/** Llama-2-70B KV bytes per token: 2 (K,V) × 80 layers × 8 KV heads × 128 head dim × 2 bytes (fp16). */
export const LLAMA2_70B_KV_BYTES_PER_TOKEN = 2 * 80 * 8 * 128 * 2;

/**
 * Default KV-cache size for Llama-2-70B on 4×H100-80GB (TP 4) with 16-token blocks, in blocks:
 * floor((4 × 80 GiB × 0.9 gpu_memory_utilization − 70e9 params × 2 bytes) / (327,680 B/token × 16)).
 * = 32,279 blocks ≈ 516k tokens. Activation/CUDA-graph memory is ignored (a few GiB; vLLM's
 * profiling run would subtract it), so this is a slight overestimate.
 */
export const DEFAULT_KV_BLOCKS_LLAMA2_70B_TP4_H100 = Math.floor(
  (4 * 80 * 2 ** 30 * 0.9 - 70e9 * 2) / (LLAMA2_70B_KV_BYTES_PER_TOKEN * 16),
);

/** Constructor options of `VllmReplica`. Counts are positive integers. */
export interface VllmReplicaOptions {
  /** Step-time model (e.g. from `loadStepTimeProfile`). Required. */
  stepTime: StepTimeModel;
  /** Max requests in the running batch (vLLM `max_num_seqs`). Default 256. */
  maxNumSeqs?: number;
  /** Token budget of one step, decode + prefill tokens (vLLM `max_num_batched_tokens`). Default 8192. */
  maxNumBatchedTokens?: number;
  /** Total KV-cache blocks. Default `DEFAULT_KV_BLOCKS_LLAMA2_70B_TP4_H100` (32,279). */
  kvBlocks?: number;
  /** Tokens per KV block (vLLM `block_size`). Default 16. */
  blockTokens?: number;
  /** Tokens per trace hash id (prefix-cache entry); a multiple of `blockTokens`. Default 512. */
  hashBlockTokens?: number;
  /**
   * Max evictable (unreferenced) prefix-cache entries kept, in hash blocks. Default: unlimited
   * (bounded only by free KV, like vLLM). 0 disables prefix caching (no hits, nothing inserted).
   */
  prefixCacheBlocks?: number;
  /**
   * Step coalescing (see `EngineModel.interrupt`): advance a pure-decode batch many steps per
   * event while nothing can change it. Only for loops that call `interrupt`. Default false.
   */
  coalesceDecodeSteps?: boolean;
}

/** Longest coalesced run, in steps (`decode-run.ts`). */
export { MAX_COALESCED_STEPS };

/**
 * A vLLM-V1-like serving replica (see the module doc and `vllm-scheduler.ts` for the scheduling
 * and KV semantics). Events: `first_token` at the end of the step that computes a request's last
 * prompt token (that step samples the first output token), with the tokens served from the prefix
 * cache; `finished` at the end of the step producing the last output token (the same step as
 * `first_token` when outputTokens ≤ 1; `first_token` is emitted first); `rejected`
 * (`context_too_long`) at enqueue when prompt + output − 1 tokens need more KV blocks than the
 * whole pool (vLLM refuses requests beyond `max_model_len`; otherwise such a request would
 * preempt itself forever). Mirrors vLLM's `EngineCore` (vllm/v1/engine/core.py) over its `Scheduler`.
 */
export class VllmReplica extends VllmScheduler implements EngineModel {
  readonly kvBlocks: number;
  readonly blockTokens: number;
  readonly hashBlockTokens: number;
  readonly prefixCacheBlocks: number;
  /** KV blocks per hash block. */
  private readonly bph: number;

  /** The coalesced decode run in flight (`steps` = 1: an ordinary step). */
  private readonly run = new DecodeRun();
  /** `settleRunEvictions`, bound once (passed to every cut without allocating). */
  private readonly settle = (steps: number): void => this.settleRunEvictions(steps);
  /** Free blocks when the coalesced run in flight started (after its first step's allocations). */
  private runFree0 = 0;
  /** Cache entries the run in flight has evicted so far (to make room for its decodes). */
  private runEvicted = 0;

  /** @throws Error when an option is not a positive integer (prefixCacheBlocks: ≥ 0) or hashBlockTokens is not a multiple of blockTokens. */
  constructor(opts: VllmReplicaOptions) {
    const maxNumSeqs = posInt('maxNumSeqs', opts.maxNumSeqs ?? 256);
    const maxNumBatchedTokens = posInt('maxNumBatchedTokens', opts.maxNumBatchedTokens ?? 8192);
    const kvBlocks = posInt('kvBlocks', opts.kvBlocks ?? DEFAULT_KV_BLOCKS_LLAMA2_70B_TP4_H100);
    const blockTokens = posInt('blockTokens', opts.blockTokens ?? 16);
    const hashBlockTokens = posInt('hashBlockTokens', opts.hashBlockTokens ?? 512);
    if (hashBlockTokens % blockTokens !== 0) {
      throw new Error(`VllmReplica: hashBlockTokens (${hashBlockTokens}) must be a multiple of blockTokens (${blockTokens})`);
    }
    const cap = opts.prefixCacheBlocks ?? Infinity;
    if (!(cap >= 0) || (Number.isFinite(cap) && !Number.isInteger(cap))) {
      throw new Error(`VllmReplica: prefixCacheBlocks must be an integer ≥ 0 or Infinity, got ${cap}`);
    }
    super({
      stepTime: opts.stepTime,
      maxNumSeqs,
      maxNumBatchedTokens,
      kvBlocks,
      blockTokens,
      hashBlockTokens,
      prefixCacheBlocks: cap,
      coalesceDecodeSteps: opts.coalesceDecodeSteps ?? false,
    });
    this.kvBlocks = kvBlocks;
    this.blockTokens = blockTokens;
    this.hashBlockTokens = hashBlockTokens;
    this.prefixCacheBlocks = cap;
    this.bph = hashBlockTokens / blockTokens;
  }

  /**
   * Queue `req` at `nowMs` (FCFS). If the replica is idle, a step starts now and its end time is
   * returned; otherwise null (it is considered at the next step). A request that can never fit is
   * emitted as `rejected` (atMs = nowMs) and null is returned.
   * @throws Error on a duplicate attemptId or token counts that are not integers ≥ 0.
   */
  enqueue(req: EngineRequest, nowMs: number, emit: (e: EngineEvent) => void): number | null {
    if (this.byId.has(req.attemptId)) throw new Error(`VllmReplica.enqueue: attempt ${req.attemptId} already here`);
    if (!Number.isInteger(req.inputTokens) || req.inputTokens < 0 || !Number.isInteger(req.outputTokens) || req.outputTokens < 0) {
      throw new Error(`VllmReplica.enqueue: attempt ${req.attemptId}: token counts must be integers ≥ 0`);
    }
    const input = Math.max(1, req.inputTokens);
    // Largest KV footprint: the prompt plus all outputs but the last (never fed back).
    if (this.kv.blocksFor(input + Math.max(1, req.outputTokens) - 1) > this.kvBlocks) {
      emit({ kind: 'rejected', attemptId: req.attemptId, atMs: nowMs, reason: 'context_too_long' });
      return null;
    }
    const r: VllmRequest = {
      id: req.attemptId,
      input,
      output: req.outputTokens,
      hashIds: req.hashIds,
      where: WAITING,
      computed: 0,
      generated: 0,
      cachedTokens: -1,
      firstEmitted: false,
      inserted: false,
      pins: [],
      privateBlocks: 0,
      stepTokens: 0,
    };
    this.addRequest(r);
    if (!Number.isNaN(this.stepEnd)) return null;
    return this.startStep(nowMs);
  }

  /**
   * End the step in flight at `nowMs`: advance every scheduled request, emit `first_token` /
   * `finished` (in batch order), then schedule the next step. Returns its end time (ms) or null when idle.
   * @throws Error when no step is running or `nowMs` is not its end time.
   */
  completeStep(nowMs: number, emit: (e: EngineEvent) => void): number | null {
    if (Number.isNaN(this.stepEnd)) throw new Error('VllmReplica.completeStep: no step is running');
    if (nowMs !== this.stepEnd) throw new Error(`VllmReplica.completeStep: step ends at ${this.stepEnd}, called at ${nowMs}`);
    this.stepEnd = NaN;
    const k = this.run.take();
    if (k > 1) {
      this.settleRunEvictions(k);
      this.nSteps += k - 1;
    }
    this.updateFromOutput(k, nowMs, emit);
    return this.startStep(nowMs);
  }

  /** Drop a request from the queue or the batch, freeing its KV blocks and pins; no event. Unknown ids are ignored. A step in flight keeps its end time. */
  cancel(attemptId: number): void {
    const r = this.byId.get(attemptId);
    if (r) this.removeRequest(r);
  }

  /**
   * Current load. kvUsage = (private blocks + blocks of pinned cache entries) / kvBlocks; evictable
   * cache entries count as free, as in vLLM's usage metric. prefillBacklogTokens: waiting requests
   * count their whole prompt (+ generated tokens if preempted; the cache is looked up only at
   * admission), running ones their uncomputed prompt tokens.
   */
  /** Sends the prefix cache's `BlockStored` / `BlockRemoved` events to `sink` (null: none). */
  setKvEventSink(sink: ((e: KvEvent) => void) | null): void {
    this.kv.pool.kvEvents = sink;
  }

  load(nowMs?: number): EngineLoad {
    let used = this.kv.pool.usedBlocks();
    let steps = this.nSteps;
    if (nowMs !== undefined && this.run.steps > 1 && !Number.isNaN(this.stepEnd)) {
      // Inside a coalesced run: count what per-step scheduling would have by now.
      const through = this.run.stepsThrough(nowMs);
      used += this.runBlocksThrough(through);
      steps += through - 1;
    }
    return {
      running: this.running.length,
      waiting: this.waiting.length - this.wHead,
      kvUsage: used / this.kvBlocks,
      prefillBacklogTokens: this.backlog,
      batchTokens: Number.isNaN(this.stepEnd) ? 0 : this.shape.prefillTokens + this.shape.decodeSeqs,
      steps,
      preemptions: this.nPreemptions,
    };
  }

  /** Cumulative prompt tokens looked up and tokens served from the prefix cache, counted per admission (a readmitted preempted request is looked up again). */
  prefixCacheStats(): { lookupTokens: number; hitTokens: number } {
    return { lookupTokens: this.lookupTokens, hitTokens: this.hitTokens };
  }

  /** Cumulative number of preemptions (recompute). */
  get preemptions(): number {
    return this.nPreemptions;
  }

  /** Cumulative number of steps started. */
  get steps(): number {
    return this.nSteps;
  }

  /** KV blocks not owned by a request nor holding a cache entry (evictable entries are not free). */
  freeBlocks(): number {
    return this.kv.pool.freeBlocks();
  }

  /** Number of prefix-cache entries (pinned + evictable), in hash blocks. */
  cachedHashBlocks(): number {
    return this.kv.pool.cache.size;
  }

  /**
   * Check internal consistency; O(requests + cache entries), meant for tests.
   * @throws Error on negative counts, KV over budget, running > maxNumSeqs, a request in two places
   *   or misfiled, refcounts not matching the pins (or < 0), backlog/private totals out of sync.
   */
  invariants(): void {
    const fail = (msg: string): never => {
      throw new Error(`VllmReplica invariant: ${msg}`);
    };
    const refs = this.checkRequests(fail);
    this.kv.pool.invariants(refs, fail);
  }

  /**
   * Cut a coalesced run at its first step boundary ≥ `nowMs` (see `EngineModel.interrupt`).
   * @returns the new end of the step in flight, or null when nothing changed.
   */
  interrupt(nowMs: number): number | null {
    if (Number.isNaN(this.stepEnd)) return null;
    // Per-step scheduling would have made the evictions of every step up to the one in flight.
    const end = this.run.cut(nowMs, this.settle);
    if (end === null) return null;
    this.stepEnd = end;
    return end;
  }

  /**
   * Turn the step just scheduled into a run of k decode steps when nothing can change the batch
   * before the k-th: every running request is decoding, no request finishes before step k, and
   * free KV blocks (not counting evictable ones, so no eviction happens) cover all k.
   *
   * Requests may wait: this step's admission stopped at the queue head (the batch is at
   * `maxNumSeqs`, the token budget is spent, or the head's blocks do not fit in free plus
   * evictable KV), and within the run none of that can change — the batch and its token count are
   * fixed, free blocks only shrink as decodes grow, nothing is released (a finish ends the run, an
   * enqueue or cancel cuts it) and the cache is not written. Each per-step admission attempt
   * would fail the same way; its only effect, pinning and unpinning the head's cached prefix
   * (moving those entries to the recent end of the LRU order), was made by this step and repeating
   * it leaves the order as it is.
   */
  protected tryCoalesce(nowMs: number): void {
    const s = this.shape;
    const running = this.running;
    const kv = this.kv;
    if (s.prefillTokens !== 0 || s.decodeSeqs !== running.length) return;
    const k = stepsUntilFirstFinish(running);
    if (k <= 1) return;
    let extra = 0;
    for (let i = 0; i < running.length; i++) {
      const r = running[i]!;
      extra += kv.blocksNeeded(r, k);
    }
    const free = kv.pool.freeBlocks();
    if (extra > free) {
      // The run evicts LRU cache entries as its decodes cross block boundaries, as per-step
      // scheduling would (`settleRunEvictions`); never the queue head's prefix, which its failed
      // admission moved to the recent end (so the head's lookup and need stay as they are).
      const evictions = Math.ceil((extra - free) / this.bph);
      if (evictions > kv.pool.evictable.size - this.headPins) return;
    }
    this.runFree0 = free;
    this.runEvicted = 0;
    this.stepEnd = this.run.start(this.stepTime, s, nowMs, k);
  }

  /**
   * Evicts what per-step scheduling would have evicted by the end of step `steps` of the run in
   * flight: its decodes allocate a block each time they cross a block boundary, evicting the
   * least recently used entry (`bph` blocks) whenever no block is free, so after A blocks beyond
   * the free ones at the run's start, ⌈(A − free₀)/bph⌉ entries are gone. The first step's
   * blocks were allocated when it was scheduled; `A` counts the blocks of steps 2..`steps`.
   */
  private settleRunEvictions(steps: number): void {
    const pool = this.kv.pool;
    if (pool.evictable.size === 0) return;
    const allocated = this.runBlocksThrough(steps);
    const due = allocated > this.runFree0 ? Math.ceil((allocated - this.runFree0) / this.bph) : 0;
    for (; this.runEvicted < due; this.runEvicted++) pool.evictLru();
  }

  /** Blocks the run in flight allocates in its steps 2..`steps` (the first step's are allocated). */
  private runBlocksThrough(steps: number): number {
    let allocated = 0;
    const kv = this.kv;
    const running = this.running;
    for (let i = 0; i < running.length; i++) {
      const r = running[i]!;
      if (r.stepTokens === 0) continue;
      allocated += kv.blocksNeeded(r, steps);
    }
    return allocated;
  }
}

function posInt(name: string, v: number): number {
  if (!Number.isInteger(v) || v <= 0) throw new Error(`VllmReplica: ${name} must be a positive integer, got ${v}`);
  return v;
}
