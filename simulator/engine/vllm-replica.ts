/**
 * A vLLM-V1-like replica: continuous batching with chunked prefill, block-granular KV cache,
 * recompute preemption and an LRU prefix cache. One `EngineModel` step = one scheduler iteration
 * + one forward pass whose duration comes from a `StepTimeModel`.
 *
 * Scheduling follows vLLM V1's `Scheduler.schedule()` (vllm/v1/core/sched/scheduler.py; design in
 * https://docs.vllm.ai/en/latest/design/ — "chunked prefill", "automatic prefix caching"):
 *  - a step has a token budget `maxNumBatchedTokens` shared by decode tokens and prefill chunks;
 *  - running requests first, in admission order: a decode gets 1 token, an unfinished prefill gets
 *    min(remaining, budget) tokens (chunked prefill);
 *  - when the KV pool cannot hold a running request's new tokens, evictable prefix-cache blocks go
 *    first, then the most recently admitted running request is preempted (recompute: its blocks are
 *    freed, its progress is lost, it goes back to the head of the waiting queue; on readmission it
 *    prefills prompt + tokens generated so far);
 *  - then, only if nothing was preempted this step, waiting requests are admitted FCFS while
 *    running < maxNumSeqs, budget remains, and the KV pool can hold the first chunk; the first that
 *    does not fit stops admission (head-of-line, as in vLLM).
 *
 * KV accounting — one pool, like vLLM's `BlockPool`: `kvBlocks` blocks of `blockTokens` tokens.
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
 * by step, so times are identical); a loop must call `interrupt` before handing the replica a
 * request or a cancel (see `EngineModel.interrupt`). `load(nowMs)` counts the blocks the run's
 * steps up to `nowMs` hold, as per-step scheduling would; `load()` without a time lags by them.
 *
 * Deterministic, no clock: times are the virtual ms handed in by the loop.
 */
import type { EngineEvent, EngineLoad, EngineModel, EngineRequest } from './engine-model.ts';
import type { BatchShape, StepTimeModel } from './step-time.ts';
import { DecodeRun, MAX_COALESCED_STEPS, stepsUntilFirstFinish } from './decode-run.ts';

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

/** One cached hash block. `ref` = number of running requests' pins on it. */
interface CacheEntry {
  readonly hash: number;
  ref: number;
}

const NONE = 0;
const WAITING = 1;
const RUNNING = 2;

/** Mutable per-request state; one object per request, nothing allocated per token or step. */
interface Req {
  readonly id: number;
  /** Prompt tokens (≥ 1: an empty prompt is treated as one token, vLLM needs at least one). */
  readonly input: number;
  readonly output: number;
  readonly hashIds: readonly number[] | null;
  where: number;
  /** Tokens whose KV is in the cache (prefix hits included). */
  computed: number;
  /** Output tokens produced so far. The sequence is input + generated tokens long. */
  generated: number;
  /** Prefix-cache hit of the latest admission (tokens). */
  cachedTokens: number;
  firstEmitted: boolean;
  /** Whether this admission's prompt hash blocks were inserted into the cache. */
  inserted: boolean;
  /** Pinned prefix entries, in prompt order; they cover pins.length × hashBlockTokens tokens. */
  pins: CacheEntry[];
  /** KV blocks owned privately: blocksFor(computed + stepTokens − pinned tokens). */
  privateBlocks: number;
  /** Tokens scheduled in the step in flight (0 if none). */
  stepTokens: number;
}

/**
 * A vLLM-V1-like serving replica (see the module doc for the scheduling and KV semantics).
 * Events: `first_token` at the end of the step that computes a request's last prompt token (that
 * step samples the first output token), with the tokens served from the prefix cache; `finished`
 * at the end of the step producing the last output token (the same step as `first_token` when
 * outputTokens ≤ 1; `first_token` is emitted first); `rejected` (`context_too_long`) at enqueue
 * when prompt + output − 1 tokens need more KV blocks than the whole pool (vLLM refuses requests
 * beyond `max_model_len`; otherwise such a request would preempt itself forever).
 */
export class VllmReplica implements EngineModel {
  readonly maxNumSeqs: number;
  readonly maxNumBatchedTokens: number;
  readonly kvBlocks: number;
  readonly blockTokens: number;
  readonly hashBlockTokens: number;
  readonly prefixCacheBlocks: number;
  private readonly stepTime: StepTimeModel;
  /** KV blocks per hash block. */
  private readonly bph: number;
  private readonly cacheEnabled: boolean;

  private readonly byId = new Map<number, Req>();
  /** FCFS queue: live entries are waiting[wHead..]; the slots before wHead are dead (null). */
  private waiting: (Req | null)[] = [];
  private wHead = 0;
  /** Running batch in admission order (the tail is the preemption victim). */
  private readonly running: Req[] = [];

  private readonly cache = new Map<number, CacheEntry>();
  /** Unreferenced entries; Map iteration order = LRU first. */
  private readonly evictable = new Map<number, CacheEntry>();
  private privateTotal = 0;
  private backlog = 0;
  /** End of the step in flight (virtual ms), NaN when idle (a double field: no boxing per step). */
  private stepEnd = NaN;
  private readonly coalesce: boolean;
  /** The coalesced decode run in flight (`steps` = 1: an ordinary step). */
  private readonly run = new DecodeRun();
  /** `settleRunEvictions`, bound once (passed to every cut without allocating). */
  private readonly settle = (steps: number): void => this.settleRunEvictions(steps);
  /** Free blocks when the coalesced run in flight started (after its first step's allocations). */
  private runFree0 = 0;
  /** Cache entries the run in flight has evicted so far (to make room for its decodes). */
  private runEvicted = 0;
  /** Prefix entries the queue head pinned in this step's failed admission attempt (0 when none was made). */
  private headPins = 0;
  private readonly shape: BatchShape = { prefillTokens: 0, prefillSeqs: 0, prefillAttnPairs: 0, decodeSeqs: 0, decodeContextTokens: 0 };

  private lookupTokens = 0;
  private hitTokens = 0;
  private nPreemptions = 0;
  private nSteps = 0;

  /** @throws Error when an option is not a positive integer (prefixCacheBlocks: ≥ 0) or hashBlockTokens is not a multiple of blockTokens. */
  constructor(opts: VllmReplicaOptions) {
    this.stepTime = opts.stepTime;
    this.maxNumSeqs = posInt('maxNumSeqs', opts.maxNumSeqs ?? 256);
    this.maxNumBatchedTokens = posInt('maxNumBatchedTokens', opts.maxNumBatchedTokens ?? 8192);
    this.kvBlocks = posInt('kvBlocks', opts.kvBlocks ?? DEFAULT_KV_BLOCKS_LLAMA2_70B_TP4_H100);
    this.blockTokens = posInt('blockTokens', opts.blockTokens ?? 16);
    this.hashBlockTokens = posInt('hashBlockTokens', opts.hashBlockTokens ?? 512);
    if (this.hashBlockTokens % this.blockTokens !== 0) {
      throw new Error(`VllmReplica: hashBlockTokens (${this.hashBlockTokens}) must be a multiple of blockTokens (${this.blockTokens})`);
    }
    const cap = opts.prefixCacheBlocks ?? Infinity;
    if (!(cap >= 0) || (Number.isFinite(cap) && !Number.isInteger(cap))) {
      throw new Error(`VllmReplica: prefixCacheBlocks must be an integer ≥ 0 or Infinity, got ${cap}`);
    }
    this.prefixCacheBlocks = cap;
    this.cacheEnabled = cap > 0;
    this.coalesce = opts.coalesceDecodeSteps ?? false;
    this.bph = this.hashBlockTokens / this.blockTokens;
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
    if (this.blocksFor(input + Math.max(1, req.outputTokens) - 1) > this.kvBlocks) {
      emit({ kind: 'rejected', attemptId: req.attemptId, atMs: nowMs, reason: 'context_too_long' });
      return null;
    }
    const r: Req = {
      id: req.attemptId,
      input,
      output: req.outputTokens,
      hashIds: req.hashIds,
      where: WAITING,
      computed: 0,
      generated: 0,
      cachedTokens: 0,
      firstEmitted: false,
      inserted: false,
      pins: [],
      privateBlocks: 0,
      stepTokens: 0,
    };
    this.byId.set(r.id, r);
    this.waiting.push(r);
    this.backlog += input;
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
    const running = this.running;
    let anyDone = false;
    const k = this.run.take();
    if (k > 1) {
      // A coalesced run of k decode steps: every request in it decoded k tokens.
      this.settleRunEvictions(k);
      this.nSteps += k - 1;
      for (let i = 0; i < running.length; i++) {
        const r = running[i]!;
        if (r.stepTokens === 0) continue;
        r.stepTokens = 0;
        r.computed += k;
        r.generated += k;
        const priv = this.blocksFor(Math.max(0, r.computed - r.pins.length * this.hashBlockTokens));
        this.privateTotal += priv - r.privateBlocks;
        r.privateBlocks = priv;
        if (r.generated >= r.output) {
          emit({ kind: 'finished', attemptId: r.id, atMs: nowMs });
          this.release(r);
          r.where = NONE;
          this.byId.delete(r.id);
          anyDone = true;
        }
      }
    }
    for (let i = 0; k === 1 && i < running.length; i++) {
      const r = running[i]!;
      const n = r.stepTokens;
      if (n === 0) continue;
      r.stepTokens = 0;
      this.backlog -= this.backlogOf(r);
      r.computed += n;
      if (r.computed === r.input + r.generated) {
        // The whole sequence is in KV: this step sampled one token.
        if (!r.inserted && this.cacheEnabled) this.insertPrompt(r);
        r.generated++;
        if (!r.firstEmitted) {
          r.firstEmitted = true;
          emit({ kind: 'first_token', attemptId: r.id, atMs: nowMs, cachedTokens: r.cachedTokens });
        }
        if (r.generated >= r.output) {
          emit({ kind: 'finished', attemptId: r.id, atMs: nowMs });
          this.release(r);
          r.where = NONE;
          this.byId.delete(r.id);
          anyDone = true;
          continue;
        }
      }
      this.backlog += this.backlogOf(r);
    }
    if (anyDone) {
      let w = 0;
      for (let i = 0; i < running.length; i++) {
        const r = running[i]!;
        if (r.where === RUNNING) running[w++] = r;
      }
      running.length = w;
    }
    return this.startStep(nowMs);
  }

  /** Drop a request from the queue or the batch, freeing its KV blocks and pins; no event. Unknown ids are ignored. A step in flight keeps its end time. */
  cancel(attemptId: number): void {
    const r = this.byId.get(attemptId);
    if (!r) return;
    this.backlog -= this.backlogOf(r);
    if (r.where === WAITING) {
      const i = this.waiting.indexOf(r, this.wHead);
      this.waiting.splice(i, 1);
    } else {
      this.release(r);
      this.running.splice(this.running.indexOf(r), 1);
    }
    r.stepTokens = 0;
    r.where = NONE;
    this.byId.delete(attemptId);
  }

  /**
   * Current load. kvUsage = (private blocks + blocks of pinned cache entries) / kvBlocks; evictable
   * cache entries count as free, as in vLLM's usage metric. prefillBacklogTokens: waiting requests
   * count their whole prompt (+ generated tokens if preempted; the cache is looked up only at
   * admission), running ones their uncomputed prompt tokens.
   */
  load(nowMs?: number): EngineLoad {
    let priv = this.privateTotal;
    let steps = this.nSteps;
    if (nowMs !== undefined && this.run.steps > 1 && !Number.isNaN(this.stepEnd)) {
      // Inside a coalesced run: count what per-step scheduling would have by now.
      const through = this.run.stepsThrough(nowMs);
      priv += this.runBlocksThrough(through);
      steps += through - 1;
    }
    return {
      running: this.running.length,
      waiting: this.waiting.length - this.wHead,
      kvUsage: (priv + this.bph * (this.cache.size - this.evictable.size)) / this.kvBlocks,
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
    return this.kvBlocks - this.privateTotal - this.bph * this.cache.size;
  }

  /** Number of prefix-cache entries (pinned + evictable), in hash blocks. */
  cachedHashBlocks(): number {
    return this.cache.size;
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
    if (this.privateTotal < 0 || this.backlog < 0) fail(`negative totals private=${this.privateTotal} backlog=${this.backlog}`);
    if (this.running.length > this.maxNumSeqs) fail(`running ${this.running.length} > maxNumSeqs ${this.maxNumSeqs}`);
    if (this.privateTotal + this.bph * this.cache.size > this.kvBlocks) {
      fail(`KV over budget: private ${this.privateTotal} + cached ${this.bph * this.cache.size} > ${this.kvBlocks}`);
    }
    if (this.evictable.size > this.prefixCacheBlocks) fail(`evictable ${this.evictable.size} > cap ${this.prefixCacheBlocks}`);
    const seen = new Set<number>();
    const refs = new Map<CacheEntry, number>();
    let priv = 0;
    let backlog = 0;
    const check = (r: Req, where: number): void => {
      if (seen.has(r.id)) fail(`request ${r.id} in two places`);
      seen.add(r.id);
      if (r.where !== where || this.byId.get(r.id) !== r) fail(`request ${r.id} location mismatch`);
      if (r.computed < 0 || r.generated < 0 || r.privateBlocks < 0 || r.stepTokens < 0) fail(`request ${r.id} negative count`);
      if (r.computed + r.stepTokens > r.input + r.generated) fail(`request ${r.id} computes past its sequence`);
      if (r.generated >= Math.max(1, r.output)) fail(`request ${r.id} should have finished`);
      if (r.firstEmitted !== (r.generated > 0)) fail(`request ${r.id} first_token state`);
      const pinnedTok = r.pins.length * this.hashBlockTokens;
      if (r.privateBlocks !== this.blocksFor(Math.max(0, r.computed + r.stepTokens - pinnedTok))) {
        fail(`request ${r.id} private blocks ${r.privateBlocks} mismatch`);
      }
      for (const e of r.pins) refs.set(e, (refs.get(e) ?? 0) + 1);
      priv += r.privateBlocks;
      backlog += this.backlogOf(r);
    };
    for (let i = 0; i < this.wHead; i++) if (this.waiting[i] !== null) fail('live slot before the queue head');
    for (let i = this.wHead; i < this.waiting.length; i++) {
      const r = this.waiting[i];
      if (!r) fail('hole in the waiting queue');
      else {
        check(r, WAITING);
        if (r.pins.length || r.privateBlocks || r.computed || r.stepTokens) fail(`waiting request ${r.id} holds KV`);
      }
    }
    for (const r of this.running) check(r, RUNNING);
    if (seen.size !== this.byId.size) fail(`byId has ${this.byId.size} requests, queues ${seen.size}`);
    if (priv !== this.privateTotal) fail(`private total ${this.privateTotal} != Σ ${priv}`);
    if (backlog !== this.backlog) fail(`backlog ${this.backlog} != Σ ${backlog}`);
    for (const [h, e] of this.cache) {
      if (e.hash !== h) fail(`cache key ${h} holds entry ${e.hash}`);
      if (e.ref < 0) fail(`entry ${h} refcount ${e.ref} < 0`);
      if (e.ref !== (refs.get(e) ?? 0)) fail(`entry ${h} refcount ${e.ref} != pins ${refs.get(e) ?? 0}`);
      if ((e.ref === 0) !== this.evictable.has(h)) fail(`entry ${h} evictable state`);
    }
    for (const e of refs.keys()) if (this.cache.get(e.hash) !== e) fail(`pinned entry ${e.hash} not in cache`);
    for (const h of this.evictable.keys()) if (!this.cache.has(h)) fail(`evictable ${h} not in cache`);
    if (Number.isNaN(this.stepEnd) && (this.running.length > 0 || this.waiting.length > this.wHead)) fail('work but no step');
  }

  // ---- scheduling ----

  /** Schedule the next step at `nowMs` (vLLM V1 order: running first, then admissions). Returns its end or null (idle). */
  private startStep(nowMs: number): number | null {
    const s = this.shape;
    s.prefillTokens = 0;
    s.prefillSeqs = 0;
    s.prefillAttnPairs = 0;
    s.decodeSeqs = 0;
    s.decodeContextTokens = 0;
    let budget = this.maxNumBatchedTokens;
    let preempted = false;
    this.headPins = 0;
    const running = this.running;
    for (let i = 0; i < running.length && budget > 0; i++) {
      const r = running[i]!;
      const n = Math.min(r.input + r.generated - r.computed, budget);
      const need = this.blocksFor(Math.max(0, r.computed + n - r.pins.length * this.hashBlockTokens)) - r.privateBlocks;
      let selfPreempted = false;
      while (need > 0 && !this.ensureFree(need)) {
        const victim = running.pop()!;
        this.preempt(victim);
        preempted = true;
        if (victim === r) {
          selfPreempted = true;
          break;
        }
      }
      if (selfPreempted) break;
      this.schedule(r, n, need);
      budget -= n;
    }
    // vLLM admits nothing in a step that had to preempt (memory is tight).
    if (!preempted) {
      while (this.wHead < this.waiting.length && running.length < this.maxNumSeqs && budget > 0) {
        const r = this.waiting[this.wHead]!;
        this.backlog -= this.backlogOf(r);
        const hit = this.lookupAndPin(r);
        r.computed = hit;
        const n = Math.min(r.input + r.generated - r.computed, budget);
        const need = this.blocksFor(Math.max(0, r.computed + n - r.pins.length * this.hashBlockTokens));
        if (!this.ensureFree(need)) {
          this.headPins = r.pins.length;
          this.unpin(r);
          r.computed = 0;
          this.backlog += this.backlogOf(r);
          break;
        }
        r.cachedTokens = hit;
        r.inserted = false;
        this.lookupTokens += r.input;
        this.hitTokens += hit;
        this.waiting[this.wHead++] = null;
        r.where = RUNNING;
        running.push(r);
        this.backlog += this.backlogOf(r);
        this.schedule(r, n, need);
        budget -= n;
      }
      this.compactWaiting();
    }
    if (s.prefillTokens === 0 && s.decodeSeqs === 0) {
      if (running.length > 0 || this.wHead < this.waiting.length) throw new Error('VllmReplica: work pending but nothing schedulable');
      return null;
    }
    this.nSteps++;
    this.stepEnd = nowMs + this.stepTime.stepMs(s);
    if (this.coalesce && !preempted) this.tryCoalesce(nowMs);
    return this.stepEnd;
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
  private tryCoalesce(nowMs: number): void {
    const s = this.shape;
    const running = this.running;
    if (s.prefillTokens !== 0 || s.decodeSeqs !== running.length) return;
    const k = stepsUntilFirstFinish(running);
    if (k <= 1) return;
    let extra = 0;
    for (let i = 0; i < running.length; i++) {
      const r = running[i]!;
      extra += this.blocksFor(Math.max(0, r.computed + k - r.pins.length * this.hashBlockTokens)) - r.privateBlocks;
    }
    const free = this.freeBlocks();
    if (extra > free) {
      // The run evicts LRU cache entries as its decodes cross block boundaries, as per-step
      // scheduling would (`settleRunEvictions`); never the queue head's prefix, which its failed
      // admission moved to the recent end (so the head's lookup and need stay as they are).
      const evictions = Math.ceil((extra - free) / this.bph);
      if (evictions > this.evictable.size - this.headPins) return;
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
    if (this.evictable.size === 0) return;
    const allocated = this.runBlocksThrough(steps);
    const due = allocated > this.runFree0 ? Math.ceil((allocated - this.runFree0) / this.bph) : 0;
    for (; this.runEvicted < due; this.runEvicted++) this.evictLru();
  }

  /** Blocks the run in flight allocates in its steps 2..`steps` (the first step's are allocated). */
  private runBlocksThrough(steps: number): number {
    let allocated = 0;
    const running = this.running;
    for (let i = 0; i < running.length; i++) {
      const r = running[i]!;
      if (r.stepTokens === 0) continue;
      allocated += this.blocksFor(Math.max(0, r.computed + steps - r.pins.length * this.hashBlockTokens)) - r.privateBlocks;
    }
    return allocated;
  }

  /** Put `n` tokens of `r` into the step's batch, allocating `need` more private blocks. */
  private schedule(r: Req, n: number, need: number): void {
    r.stepTokens = n;
    if (need > 0) {
      r.privateBlocks += need;
      this.privateTotal += need;
    }
    const s = this.shape;
    if (r.generated > 0 && n === 1 && r.computed + 1 === r.input + r.generated) {
      s.decodeSeqs++;
      s.decodeContextTokens += r.computed + 1;
    } else {
      s.prefillTokens += n;
      s.prefillSeqs++;
      s.prefillAttnPairs += n * (r.computed + n / 2);
    }
  }

  /** Recompute preemption: drop all KV and progress, requeue at the head. Outputs already emitted stay emitted. */
  private preempt(r: Req): void {
    this.backlog -= this.backlogOf(r);
    this.release(r);
    r.computed = 0;
    r.stepTokens = 0;
    r.inserted = false;
    r.where = WAITING;
    if (this.wHead > 0) this.waiting[--this.wHead] = r;
    else this.waiting.unshift(r);
    this.backlog += this.backlogOf(r);
    this.nPreemptions++;
  }

  /** Prompt tokens (and, after preemption, generated ones) still to prefill; 0 while decoding. */
  private backlogOf(r: Req): number {
    const pending = r.input + r.generated - r.computed;
    return r.generated > 0 && pending <= 1 ? 0 : pending;
  }

  private blocksFor(tokens: number): number {
    return Math.ceil(tokens / this.blockTokens);
  }

  /**
   * Make `need` blocks free by evicting LRU unreferenced cache entries. Evicts nothing and returns
   * false when even evicting all of them would not suffice (vLLM counts evictable blocks as free).
   */
  private ensureFree(need: number): boolean {
    if (this.freeBlocks() + this.bph * this.evictable.size < need) return false;
    while (this.freeBlocks() < need) this.evictLru();
    return true;
  }

  private evictLru(): void {
    const h = this.evictable.keys().next().value as number;
    this.evictable.delete(h);
    this.cache.delete(h);
  }

  /**
   * Longest cached prefix of the prompt's full hash blocks; pins those entries.
   * @returns cached tokens = min(input − 1, matched × hashBlockTokens) (≥ 1 token is always computed).
   */
  private lookupAndPin(r: Req): number {
    const ids = r.hashIds;
    if (!this.cacheEnabled || ids === null) return 0;
    const full = Math.min(ids.length, Math.floor(r.input / this.hashBlockTokens));
    for (let k = 0; k < full; k++) {
      const e = this.cache.get(ids[k]!);
      if (e === undefined) break;
      if (e.ref++ === 0) this.evictable.delete(e.hash);
      r.pins.push(e);
    }
    return Math.min(r.input - 1, r.pins.length * this.hashBlockTokens);
  }

  /** After the prompt is in KV: turn the request's full prompt hash blocks into (pinned) cache entries. */
  private insertPrompt(r: Req): void {
    r.inserted = true;
    const ids = r.hashIds;
    if (ids === null) return;
    const full = Math.min(ids.length, Math.floor(r.input / this.hashBlockTokens));
    if (r.pins.length >= full) return;
    for (let k = r.pins.length; k < full; k++) {
      const h = ids[k]!;
      let e = this.cache.get(h);
      if (e === undefined) {
        e = { hash: h, ref: 1 };
        this.cache.set(h, e);
      } else if (e.ref++ === 0) {
        // Same content computed twice (it was cached after our lookup): share the existing copy.
        this.evictable.delete(h);
      }
      r.pins.push(e);
    }
    // The covered tokens' blocks move from private to the pinned entries (net zero or a saving).
    const priv = this.blocksFor(Math.max(0, r.computed - r.pins.length * this.hashBlockTokens));
    this.privateTotal += priv - r.privateBlocks;
    r.privateBlocks = priv;
  }

  /** Drop the request's pins (tail first, so its tail blocks are evicted first, as vLLM frees them). */
  private unpin(r: Req): void {
    const pins = r.pins;
    for (let k = pins.length - 1; k >= 0; k--) {
      const e = pins[k]!;
      if (--e.ref === 0) this.evictable.set(e.hash, e);
    }
    pins.length = 0;
    while (this.evictable.size > this.prefixCacheBlocks) this.evictLru();
  }

  private release(r: Req): void {
    this.unpin(r);
    this.privateTotal -= r.privateBlocks;
    r.privateBlocks = 0;
  }

  private compactWaiting(): void {
    if (this.wHead > 1024 && this.wHead * 2 > this.waiting.length) {
      this.waiting = this.waiting.slice(this.wHead);
      this.wHead = 0;
    }
  }
}

function posInt(name: string, v: number): number {
  if (!Number.isInteger(v) || v <= 0) throw new Error(`VllmReplica: ${name} must be a positive integer, got ${v}`);
  return v;
}
