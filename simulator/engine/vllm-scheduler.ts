/**
 * The scheduler of the vLLM replica model, after vLLM V1's `Scheduler`
 * (vllm/v1/core/sched/scheduler.py: `schedule()`, `update_from_output()`, `_preempt_request`;
 * design in https://docs.vllm.ai/en/latest/design/ — "chunked prefill"):
 *  - a step has a token budget `maxNumBatchedTokens` shared by decode tokens and prefill chunks;
 *  - running requests first, in admission order: a decode gets 1 token, an unfinished prefill gets
 *    min(remaining, budget) tokens (chunked prefill);
 *  - when the KV pool cannot hold a running request's new tokens, evictable prefix-cache blocks go
 *    first, then the most recently admitted running request is preempted (recompute: its blocks are
 *    freed, its progress is lost, it goes back to the head of the waiting queue; on readmission it
 *    prefills prompt + tokens generated so far, less what the prefix cache still holds of them —
 *    with caching on, vLLM keeps a preempted request's blocks hashed in the free queue);
 *  - then, only if nothing was preempted this step, waiting requests are admitted FCFS while
 *    running < maxNumSeqs, budget remains, and the KV pool can hold the first chunk; the first that
 *    does not fit stops admission (head-of-line, as in vLLM).
 * KV blocks come from `vllm-kv-cache-manager.ts`. The replica (`vllm-replica.ts`) extends this
 * class with the `EngineModel` face and decode-step coalescing.
 */
import type { EngineEvent } from './engine-model.ts';
import type { BatchShape, StepTimeModel } from './step-time.ts';
import type { CachedEntry } from './vllm-block-pool.ts';
import { type KvRequest, VllmKvCacheManager } from './vllm-kv-cache-manager.ts';

/** Request state (`VllmRequest.where`): gone — finished or aborted (vLLM `RequestStatus.FINISHED_*`, vllm/v1/request.py). */
export const NONE = 0;
/** In the waiting queue (vLLM `RequestStatus.WAITING` / `PREEMPTED`, vllm/v1/request.py). */
export const WAITING = 1;
/** In the running batch (vLLM `RequestStatus.RUNNING`, vllm/v1/request.py). */
export const RUNNING = 2;

/** Mutable per-request state (vLLM `Request`, vllm/v1/request.py); one object per request, nothing allocated per token or step. */
export interface VllmRequest extends KvRequest {
  readonly id: number;
  /** Prompt tokens (≥ 1: an empty prompt is treated as one token, vLLM needs at least one). */
  readonly input: number;
  readonly output: number;
  where: number;
  /** Output tokens produced so far. The sequence is input + generated tokens long. */
  generated: number;
  /**
   * Prefix-cache hit of the first admission (tokens; -1 before it). As vLLM's `num_cached_tokens`,
   * a readmission after preemption does not change it: hits on the request's own recomputed blocks
   * are not prompt reuse and are not billed as cached.
   */
  cachedTokens: number;
  firstEmitted: boolean;
  /** Whether this admission's prompt hash blocks were inserted into the cache. */
  inserted: boolean;
  /** Tokens scheduled in the step in flight (0 if none). */
  stepTokens: number;
}

/**
 * Scheduler limits and KV geometry, validated by the replica; the meanings are those of
 * `VllmReplicaOptions` (vLLM `SchedulerConfig` and `CacheConfig`, vllm/config/).
 */
export interface VllmSchedulerConfig {
  stepTime: StepTimeModel;
  maxNumSeqs: number;
  maxNumBatchedTokens: number;
  kvBlocks: number;
  blockTokens: number;
  hashBlockTokens: number;
  /** Max evictable prefix-cache entries (Infinity: unlimited, 0: caching off). */
  prefixCacheBlocks: number;
  coalesceDecodeSteps: boolean;
}

/**
 * Queues, per-step scheduling and step completion of a vLLM replica (vLLM `Scheduler`,
 * vllm/v1/core/sched/scheduler.py; module doc). Subclasses supply `tryCoalesce`, called after a step without preemption is scheduled.
 */
export abstract class VllmScheduler {
  /** Max requests in the running batch (vLLM `max_num_seqs`). */
  readonly maxNumSeqs: number;
  /** Token budget of one step (vLLM `max_num_batched_tokens`). */
  readonly maxNumBatchedTokens: number;
  protected readonly stepTime: StepTimeModel;
  /** KV blocks and the prefix cache. */
  protected readonly kv: VllmKvCacheManager;
  protected readonly coalesce: boolean;

  protected readonly byId = new Map<number, VllmRequest>();
  /** FCFS queue: live entries are waiting[wHead..]; the slots before wHead are dead (null). */
  protected waiting: (VllmRequest | null)[] = [];
  protected wHead = 0;
  /** Running batch in admission order (the tail is the preemption victim). */
  protected readonly running: VllmRequest[] = [];
  /** Σ backlogOf over the requests (tokens). */
  protected backlog = 0;
  /** End of the step in flight (virtual ms), NaN when idle (a double field: no boxing per step). */
  protected stepEnd = NaN;
  /** Prefix entries the queue head pinned in this step's failed admission attempt (0 when none was made). */
  protected headPins = 0;
  /** Shape of the step in flight. */
  protected readonly shape: BatchShape = { prefillTokens: 0, prefillSeqs: 0, prefillAttnPairs: 0, decodeSeqs: 0, decodeContextTokens: 0 };

  protected lookupTokens = 0;
  protected hitTokens = 0;
  protected nPreemptions = 0;
  protected nSteps = 0;

  /** Empty queues and an empty KV pool sized by `c`. */
  constructor(c: VllmSchedulerConfig) {
    this.stepTime = c.stepTime;
    this.maxNumSeqs = c.maxNumSeqs;
    this.maxNumBatchedTokens = c.maxNumBatchedTokens;
    this.kv = new VllmKvCacheManager(c.kvBlocks, c.blockTokens, c.hashBlockTokens, c.prefixCacheBlocks);
    this.coalesce = c.coalesceDecodeSteps;
  }

  /** Turn the step just scheduled into a coalesced decode run when nothing can change it (vllm-replica.ts). */
  protected abstract tryCoalesce(nowMs: number): void;

  /** Append a new request to the waiting queue (vLLM `add_request`). */
  protected addRequest(r: VllmRequest): void {
    this.byId.set(r.id, r);
    this.waiting.push(r);
    this.backlog += this.backlogOf(r);
  }

  /**
   * Schedule the next step at `nowMs` (vLLM `schedule()`: running first, then admissions).
   * @returns its end (ms) or null (idle).
   * @throws Error when requests are pending but none could be scheduled (a model bug).
   */
  protected startStep(nowMs: number): number | null {
    const s = this.shape;
    s.prefillTokens = 0;
    s.prefillSeqs = 0;
    s.prefillAttnPairs = 0;
    s.decodeSeqs = 0;
    s.decodeContextTokens = 0;
    const kv = this.kv;
    let budget = this.maxNumBatchedTokens;
    let preempted = false;
    this.headPins = 0;
    const running = this.running;
    for (let i = 0; i < running.length && budget > 0; i++) {
      const r = running[i]!;
      const n = Math.min(r.input + r.generated - r.computed, budget);
      const need = kv.blocksNeeded(r, n);
      let selfPreempted = false;
      while (need > 0 && !kv.pool.ensureFree(need)) {
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
        // A readmitted (preempted) request looks up its whole sequence so far.
        const hit = kv.getComputedBlocks(r, r.input + r.generated);
        r.computed = hit;
        const n = Math.min(r.input + r.generated - r.computed, budget);
        const need = kv.blocksNeeded(r, n);
        if (!kv.pool.ensureFree(need)) {
          this.headPins = r.pins.length;
          kv.unpin(r);
          r.computed = 0;
          this.backlog += this.backlogOf(r);
          break;
        }
        if (r.cachedTokens < 0) r.cachedTokens = Math.min(hit, r.input);
        r.inserted = false;
        // Prompt-token statistics: a readmission's hits beyond its prompt are not prompt reuse.
        this.lookupTokens += r.input;
        this.hitTokens += Math.min(hit, r.input);
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
   * Advance every request of the step (or coalesced run of `k` decode steps) just ended at
   * `nowMs` and emit `first_token` / `finished` in batch order (vLLM `update_from_output`);
   * finished requests leave the batch.
   */
  protected updateFromOutput(k: number, nowMs: number, emit: (e: EngineEvent) => void): void {
    const running = this.running;
    const kv = this.kv;
    let anyDone = false;
    if (k > 1) {
      // A coalesced run of k decode steps: every request in it decoded k tokens.
      for (let i = 0; i < running.length; i++) {
        const r = running[i]!;
        if (r.stepTokens === 0) continue;
        r.stepTokens = 0;
        r.computed += k;
        r.generated += k;
        kv.syncPrivate(r);
        if (r.generated >= r.output) {
          emit({ kind: 'finished', attemptId: r.id, atMs: nowMs });
          this.finish(r);
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
        if (!r.inserted && kv.cacheEnabled) {
          r.inserted = true;
          kv.cacheBlocks(r);
        }
        r.generated++;
        if (!r.firstEmitted) {
          r.firstEmitted = true;
          emit({ kind: 'first_token', attemptId: r.id, atMs: nowMs, cachedTokens: r.cachedTokens });
        }
        if (r.generated >= r.output) {
          emit({ kind: 'finished', attemptId: r.id, atMs: nowMs });
          this.finish(r);
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
  }

  /** Remove `r` from its queue or the batch, freeing its KV (vLLM `finish_requests` on an abort). */
  protected removeRequest(r: VllmRequest): void {
    this.backlog -= this.backlogOf(r);
    if (r.where === WAITING) {
      const i = this.waiting.indexOf(r, this.wHead);
      this.waiting.splice(i, 1);
    } else {
      this.kv.free(r);
      this.running.splice(this.running.indexOf(r), 1);
    }
    r.stepTokens = 0;
    r.where = NONE;
    this.byId.delete(r.id);
  }

  /** Prompt tokens (and, after preemption, generated ones) still to prefill; 0 while decoding. */
  protected backlogOf(r: VllmRequest): number {
    const pending = r.input + r.generated - r.computed;
    return r.generated > 0 && pending <= 1 ? 0 : pending;
  }

  /**
   * Check the queues and every request's KV accounting; O(requests).
   * @returns each cache entry's pin count over the requests (for the pool's check).
   */
  protected checkRequests(fail: (msg: string) => never): Map<CachedEntry, number> {
    if (this.backlog < 0) fail(`negative backlog ${this.backlog}`);
    if (this.running.length > this.maxNumSeqs) fail(`running ${this.running.length} > maxNumSeqs ${this.maxNumSeqs}`);
    const kv = this.kv;
    const seen = new Set<number>();
    const refs = new Map<CachedEntry, number>();
    let priv = 0;
    let backlog = 0;
    const check = (r: VllmRequest, where: number): void => {
      if (seen.has(r.id)) fail(`request ${r.id} in two places`);
      seen.add(r.id);
      if (r.where !== where || this.byId.get(r.id) !== r) fail(`request ${r.id} location mismatch`);
      if (r.computed < 0 || r.generated < 0 || r.privateBlocks < 0 || r.stepTokens < 0) fail(`request ${r.id} negative count`);
      if (r.computed + r.stepTokens > r.input + r.generated) fail(`request ${r.id} computes past its sequence`);
      if (r.generated >= Math.max(1, r.output)) fail(`request ${r.id} should have finished`);
      if (r.firstEmitted !== (r.generated > 0)) fail(`request ${r.id} first_token state`);
      const pinnedTok = r.pins.length * kv.hashBlockTokens;
      if (r.privateBlocks !== kv.blocksFor(Math.max(0, r.computed + r.stepTokens - pinnedTok))) {
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
    if (priv !== kv.pool.privateTotal) fail(`private total ${kv.pool.privateTotal} != Σ ${priv}`);
    if (backlog !== this.backlog) fail(`backlog ${this.backlog} != Σ ${backlog}`);
    if (Number.isNaN(this.stepEnd) && (this.running.length > 0 || this.waiting.length > this.wHead)) fail('work but no step');
    return refs;
  }

  /** Put `n` tokens of `r` into the step's batch, allocating `need` more private blocks. */
  private schedule(r: VllmRequest, n: number, need: number): void {
    r.stepTokens = n;
    this.kv.allocate(r, need);
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

  /**
   * Recompute preemption (vLLM `_preempt_request`): release the request's KV (with prefix caching
   * on, its computed blocks stay cached until evicted, `VllmKvCacheManager.freePreempted`), drop
   * its progress, requeue it at the head. Outputs already emitted stay emitted.
   */
  private preempt(r: VllmRequest): void {
    this.backlog -= this.backlogOf(r);
    this.kv.freePreempted(r);
    r.computed = 0;
    r.stepTokens = 0;
    r.inserted = false;
    r.where = WAITING;
    if (this.wHead > 0) this.waiting[--this.wHead] = r;
    else this.waiting.unshift(r);
    this.backlog += this.backlogOf(r);
    this.nPreemptions++;
  }

  /** A finished request gives back its KV and leaves the replica (it stays in `running` until compaction). */
  private finish(r: VllmRequest): void {
    this.kv.free(r);
    r.where = NONE;
    this.byId.delete(r.id);
  }

  private compactWaiting(): void {
    if (this.wHead > 1024 && this.wHead * 2 > this.waiting.length) {
      this.waiting = this.waiting.slice(this.wHead);
      this.wHead = 0;
    }
  }
}
