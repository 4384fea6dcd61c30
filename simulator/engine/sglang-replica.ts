/**
 * An SGLang-like replica (SGLang 0.5): one `EngineModel` step = one scheduler iteration + one
 * forward pass whose duration comes from a `StepTimeModel`. The model is split as SGLang splits
 * its runtime:
 *  - `sglang-scheduler.ts` — `Scheduler` (`python/sglang/srt/managers/scheduler.py`):
 *    prefill-first batches, the `PrefillAdder` budgets, new-token-ratio reservation, retraction;
 *  - `sglang-schedule-policy.ts` — `schedule_policy.py`: `fcfs` / `lpm` order, reservation clip,
 *    retraction order;
 *  - `sglang-kv-pool.ts` and `radix-cache.ts` — `TokenToKVPoolAllocator` and `RadixCache`
 *    (`mem_cache/`): the token pool and the radix prefix cache;
 *  - this file — the `EngineModel` face and decode-step coalescing.
 *
 * KV cache: a pool of `kvTokens` tokens (page size 1) shared by the radix prefix cache
 * (`radix-cache.ts`, at trace hash-block granularity) and the requests' private tokens. A request
 * locks its matched prefix while it runs; after its prompt is prefilled the prompt's full hash
 * blocks are inserted into the tree (SGLang `cache_unfinished_req`); when it finishes its lock is
 * released and the prompt stays cached until evicted (LRU leaves first). The tree reports its
 * changes as KV events, by trace hash id, when a driver subscribes (`setKvEventSink`).
 *
 * Step coalescing (opt-in, `coalesceDecodeSteps`) works as in `VllmReplica` (`decode-run.ts`): a
 * decode batch that nothing can change for k steps (no waiting or chunked request, no finish
 * before step k, free tokens for all k) is one run; loops must call `interrupt` before an enqueue
 * or cancel.
 *
 * Deterministic, no clock: times are the virtual ms handed in by the loop.
 */
import type { KvEvent } from '../../core/index.ts';
import type { EngineEvent, EngineLoad, EngineModel, EngineRequest } from './engine-model.ts';
import { DecodeRun, MAX_COALESCED_STEPS, stepsUntilFirstFinish } from './decode-run.ts';
import { CHUNKED, NONE, PREFILLING, RUNNING, SglangScheduler, type SglangRequest, WAITING } from './sglang-scheduler.ts';
import type { StepTimeModel } from './step-time.ts';

/** SGLang's `CLIP_MAX_NEW_TOKENS_ESTIMATION` (`sglang-schedule-policy.ts`). */
export { CLIP_MAX_NEW_TOKENS } from './sglang-schedule-policy.ts';

/** Constructor options of `SglangReplica`. Counts are positive integers. */
export interface SglangReplicaOptions {
  /** Step-time model. Required. */
  stepTime: StepTimeModel;
  /** KV pool size in tokens (SGLang `max_total_num_tokens`). Required. */
  kvTokens: number;
  /** Max tokens of one request per prefill batch (`--chunked-prefill-size`). Default 8,192. */
  chunkedPrefillSize?: number;
  /** Max new tokens of one prefill batch (`--max-prefill-tokens`). Default 16,384. */
  maxPrefillTokens?: number;
  /** Max requests running (`--max-running-requests`). Default 1,024. */
  maxRunningRequests?: number;
  /** Waiting-queue order (`--schedule-policy`). Default `fcfs`. */
  schedulePolicy?: 'fcfs' | 'lpm';
  /** Run decodes inside prefill batches (`--enable-mixed-chunk`). Default false. */
  enableMixedChunk?: boolean;
  /** Tokens per trace hash id (one radix edge). Default 512. */
  hashBlockTokens?: number;
  /** Radix prefix caching on (default) or off (`--disable-radix-cache`). */
  radixCache?: boolean;
  /** Initial / minimum new-token ratio and decay steps (SGLang defaults 0.7 / 0.1 / 600). */
  initNewTokenRatio?: number;
  minNewTokenRatio?: number;
  newTokenRatioDecaySteps?: number;
  /** Step coalescing for loops that call `interrupt` (see `EngineModel.interrupt`). Default false. */
  coalesceDecodeSteps?: boolean;
}

/** Longest coalesced run, in steps (`decode-run.ts`). */
export { MAX_COALESCED_STEPS };

/**
 * An SGLang-like serving replica (scheduling and KV semantics in `sglang-scheduler.ts` and the
 * module doc), mirroring SGLang's scheduler loop driven by virtual time. Events as for
 * `VllmReplica`: `first_token` at the end of the step that computes a request's last prompt
 * token, `finished` at the end of the step producing its last output token, `rejected`
 * (`context_too_long`) at enqueue when prompt + output tokens do not fit strictly inside the whole
 * pool (prompt + output ≥ `kvTokens`: admission could never reserve them, see `enqueue`).
 */
export class SglangReplica extends SglangScheduler implements EngineModel {
  /** The coalesced decode run in flight (`steps` = 1: an ordinary step). */
  private readonly run = new DecodeRun();

  /** @throws Error when a count is not a positive integer or a ratio is outside (0, 1]. */
  constructor(opts: SglangReplicaOptions) {
    const kvTokens = posInt('kvTokens', opts.kvTokens);
    const chunkedPrefillSize = posInt('chunkedPrefillSize', opts.chunkedPrefillSize ?? 8192);
    const maxPrefillTokens = posInt('maxPrefillTokens', opts.maxPrefillTokens ?? 16384);
    const maxRunningRequests = posInt('maxRunningRequests', opts.maxRunningRequests ?? 1024);
    const schedulePolicy = opts.schedulePolicy ?? 'fcfs';
    if (schedulePolicy !== 'fcfs' && schedulePolicy !== 'lpm') {
      throw new Error(`SglangReplica: schedulePolicy must be 'fcfs' or 'lpm', got '${String(schedulePolicy)}'`);
    }
    const hashBlockTokens = posInt('hashBlockTokens', opts.hashBlockTokens ?? 512);
    const initNewTokenRatio = ratio('initNewTokenRatio', opts.initNewTokenRatio ?? 0.7);
    const minNewTokenRatio = ratio('minNewTokenRatio', opts.minNewTokenRatio ?? 0.1);
    const decaySteps = posInt('newTokenRatioDecaySteps', opts.newTokenRatioDecaySteps ?? 600);
    super({
      stepTime: opts.stepTime,
      kvTokens,
      chunkedPrefillSize,
      maxPrefillTokens,
      maxRunningRequests,
      schedulePolicy,
      enableMixedChunk: opts.enableMixedChunk ?? false,
      hashBlockTokens,
      radixCache: opts.radixCache ?? true,
      initNewTokenRatio,
      minNewTokenRatio,
      newTokenRatioDecay: Math.max(0, initNewTokenRatio - minNewTokenRatio) / decaySteps,
      coalesceDecodeSteps: opts.coalesceDecodeSteps ?? false,
    });
  }

  /**
   * Queue `req` at `nowMs`. If the replica is idle a step starts now and its end time is returned;
   * otherwise null. A request that can never be admitted (prompt + output ≥ `kvTokens`) is emitted as
   * `rejected` and null is returned.
   * @throws Error on a duplicate attemptId or token counts that are not integers ≥ 0.
   */
  enqueue(req: EngineRequest, nowMs: number, emit: (e: EngineEvent) => void): number | null {
    if (this.byId.has(req.attemptId)) throw new Error(`SglangReplica.enqueue: attempt ${req.attemptId} already here`);
    if (!Number.isInteger(req.inputTokens) || req.inputTokens < 0 || !Number.isInteger(req.outputTokens) || req.outputTokens < 0) {
      throw new Error(`SglangReplica.enqueue: attempt ${req.attemptId}: token counts must be integers ≥ 0`);
    }
    const input = Math.max(1, req.inputTokens);
    // Admission (PrefillAdder NO_TOKEN) needs prompt + output reservation < free + evictable, even
    // on an empty pool and after a retraction (prompt + generated + remaining output ≤ prompt +
    // output); a request failing that on an empty pool would wait forever. SGLang never sees one:
    // it aborts prompts ≥ max_req_input_len and clips max_new_tokens to
    // max_req_len − prompt − 1 (max_req_len = pool − 1), so prompt + max_new_tokens < pool. The
    // trace fixes the output length, so such a request is rejected instead.
    if (input + req.outputTokens >= this.kvTokens) {
      emit({ kind: 'rejected', attemptId: req.attemptId, atMs: nowMs, reason: 'context_too_long' });
      return null;
    }
    const r: SglangRequest = {
      id: req.attemptId,
      input,
      output: req.outputTokens,
      hashIds: req.hashIds,
      seq: this.seqNo++,
      where: WAITING,
      computed: 0,
      generated: 0,
      cachedTokens: 0,
      firstEmitted: false,
      node: null,
      nodeTokens: 0,
      privateTokens: 0,
      stepTokens: 0,
      matchTokens: 0,
    };
    this.byId.set(r.id, r);
    this.waiting.push(r);
    if (!Number.isNaN(this.stepEnd)) return null;
    return this.startStep(nowMs);
  }

  /**
   * End the step in flight at `nowMs`, emit its events, and schedule the next step.
   * @returns the next step's end time (ms), or null when idle.
   * @throws Error when no step is running or `nowMs` is not its end time.
   */
  completeStep(nowMs: number, emit: (e: EngineEvent) => void): number | null {
    if (Number.isNaN(this.stepEnd)) throw new Error('SglangReplica.completeStep: no step is running');
    if (nowMs !== this.stepEnd) throw new Error(`SglangReplica.completeStep: step ends at ${this.stepEnd}, called at ${nowMs}`);
    this.stepEnd = NaN;
    this.updateFromOutput(this.run.take(), nowMs, emit);
    return this.startStep(nowMs);
  }

  /** Drop a request wherever it is, freeing its KV and lock; no event. Unknown ids are ignored. */
  cancel(attemptId: number): void {
    const r = this.byId.get(attemptId);
    if (r) this.removeRequest(r);
  }

  /**
   * Current load: running counts the chunked request too; kvUsage = (private + locked tree tokens)
   * / pool (evictable cached prefixes count as free); prefillBacklogTokens = prompt tokens of
   * waiting requests and the chunked request's remainder (O(waiting)).
   */
  load(): EngineLoad {
    let backlog = 0;
    for (const r of this.waiting) backlog += r.input + r.generated;
    const c = this.chunked;
    if (c) backlog += c.input + c.generated - c.computed - c.stepTokens;
    return {
      running: this.running.length + (c ? 1 : 0),
      waiting: this.waiting.length,
      kvUsage: (this.pool.privateTotal + this.pool.radix.lockedTokens) / this.kvTokens,
      prefillBacklogTokens: backlog,
      batchTokens: Number.isNaN(this.stepEnd) ? 0 : this.shape.prefillTokens + this.shape.decodeSeqs,
      steps: this.nSteps,
      preemptions: this.nRetractions,
    };
  }

  /** Cumulative prompt tokens looked up and served from the radix cache (per admission). */
  prefixCacheStats(): { lookupTokens: number; hitTokens: number } {
    return { lookupTokens: this.lookupTokens, hitTokens: this.hitTokens };
  }

  /** Cumulative retractions (decode-time KV exhaustion). */
  get retractions(): number {
    return this.nRetractions;
  }

  /** Cumulative steps started. */
  get steps(): number {
    return this.nSteps;
  }

  /** Cumulative prefill (extend) batches among the steps. */
  get prefillSteps(): number {
    return this.nPrefillSteps;
  }

  /** Current new-token ratio (0..1). */
  get currentNewTokenRatio(): number {
    return this.newTokenRatio;
  }

  /** Tokens held by the radix tree (cached prefixes, locked or not). */
  cachedTokens(): number {
    return this.pool.radix.totalTokens;
  }

  /** Distinct trace hash ids the radix tree holds (what its KV events have left stored); O(tree). */
  cachedHashes(): Set<number> {
    return this.pool.radix.cachedHashes();
  }

  /**
   * Sends the radix cache's KV events to `sink` (null: none): `stored` when a prefilled prompt's
   * hash blocks enter the tree, `removed` when eviction drops them, `cleared` on `flushCache`
   * (`radix-cache.ts` has the hash mapping). With the radix cache off nothing is ever sent.
   */
  setKvEventSink(sink: ((e: KvEvent) => void) | null): void {
    this.pool.radix.setKvEventSink(sink);
  }

  /**
   * Empty the radix cache (SGLang `flush_cache`), which SGLang does only when no request is
   * queued or running. Returns false, changing nothing, when one is.
   */
  flushCache(): boolean {
    if (this.byId.size > 0) return false;
    this.pool.radix.reset();
    return true;
  }

  /**
   * Check internal consistency; O(requests + tree).
   * @throws Error on negative counts, KV over the pool, a request misfiled, private totals out of
   *   sync, more running than allowed, or a radix-tree inconsistency.
   */
  invariants(): void {
    const fail = (m: string): never => {
      throw new Error(`SglangReplica invariant: ${m}`);
    };
    if (this.pool.privateTotal < 0) fail(`private total ${this.pool.privateTotal} < 0`);
    if (this.pool.privateTotal + this.pool.radix.totalTokens > this.kvTokens) fail(`KV over the pool: ${this.pool.privateTotal} + ${this.pool.radix.totalTokens} > ${this.kvTokens}`);
    if (this.running.length > this.maxRunningRequests) fail(`running ${this.running.length} > ${this.maxRunningRequests}`);
    const seen = new Set<number>();
    let priv = 0;
    const check = (r: SglangRequest, where: number) => {
      if (seen.has(r.id)) fail(`request ${r.id} in two places`);
      seen.add(r.id);
      if (r.where !== where || this.byId.get(r.id) !== r) fail(`request ${r.id} misfiled`);
      if (r.computed < 0 || r.privateTokens < 0 || r.stepTokens < 0) fail(`request ${r.id} negative count`);
      if (r.computed + r.stepTokens > r.input + r.generated) fail(`request ${r.id} computes past its sequence`);
      if (r.privateTokens !== r.computed + r.stepTokens - r.nodeTokens) fail(`request ${r.id} private ${r.privateTokens} mismatch`);
      if (r.generated >= Math.max(1, r.output)) fail(`request ${r.id} should have finished`);
      priv += r.privateTokens;
    };
    for (const r of this.waiting) {
      check(r, WAITING);
      if (r.node !== null || r.privateTokens !== 0) fail(`waiting request ${r.id} holds KV`);
    }
    for (const r of this.running) check(r, RUNNING);
    if (this.chunked) check(this.chunked, CHUNKED);
    for (let i = 0; i < this.stepPrefillN; i++) {
      const r = this.stepPrefill[i]!;
      if (r.where === PREFILLING && !seen.has(r.id)) check(r, PREFILLING);
    }
    if (seen.size !== this.byId.size) fail(`byId has ${this.byId.size}, queues ${seen.size}`);
    if (priv !== this.pool.privateTotal) fail(`private total ${this.pool.privateTotal} != Σ ${priv}`);
    this.pool.radix.invariants();
    if (Number.isNaN(this.stepEnd) && (this.running.length > 0 || this.waiting.length > 0 || this.chunked)) fail('work but no step');
  }

  /**
   * Advance every request of the step (or coalesced run of `k` decode steps) just ended at
   * `nowMs` and emit `first_token` / `finished` (SGLang `process_batch_result_prefill` and
   * `process_batch_result_decode`, managers/scheduler_output_processor_mixin.py): finished
   * prefills join the running batch, finished requests leave it.
   */
  private updateFromOutput(k: number, nowMs: number, emit: (e: EngineEvent) => void): void {
    const pre = this.stepPrefill;
    const nPre = this.stepPrefillN;
    this.stepPrefillN = 0;
    // Decode members are the running requests with a token scheduled (read before prefill
    // completions join the running list with none).
    const run = this.running;
    const nRun = run.length;
    for (let i = 0; i < nPre; i++) {
      const r = pre[i]!;
      pre[i] = null;
      if (r.where === NONE || r.stepTokens === 0) continue;
      r.computed += r.stepTokens;
      r.stepTokens = 0;
      if (r.computed < r.input + r.generated) continue; // still chunked
      if (this.chunked === r) this.chunked = null;
      if (this.cacheOn) this.pool.insertPrompt(r);
      r.generated++;
      if (!r.firstEmitted) {
        r.firstEmitted = true;
        emit({ kind: 'first_token', attemptId: r.id, atMs: nowMs, cachedTokens: r.cachedTokens });
      }
      if (r.generated >= r.output) this.finish(r, nowMs, emit);
      else {
        r.where = RUNNING;
        this.running.push(r);
      }
    }
    let anyDone = false;
    if (k > 1) {
      // A coalesced run: k − 1 more decode steps than the one scheduled, each decaying the ratio.
      this.nSteps += k - 1;
      this.newTokenRatio = Math.max(this.newTokenRatio - (k - 1) * this.ratioDecay, this.minRatio);
    }
    for (let i = 0; i < nRun; i++) {
      const r = run[i]!;
      if (r.where !== RUNNING || r.stepTokens === 0) continue;
      r.computed += k;
      r.stepTokens = 0;
      r.generated += k;
      if (k > 1) {
        r.privateTokens += k - 1;
        this.pool.privateTotal += k - 1;
      }
      if (r.generated >= r.output) {
        this.finish(r, nowMs, emit);
        anyDone = true;
      }
    }
    if (anyDone) {
      let w = 0;
      for (let i = 0; i < run.length; i++) if (run[i]!.where === RUNNING) run[w++] = run[i]!;
      run.length = w;
    }
  }

  /**
   * Cut a coalesced run at its first step boundary ≥ `nowMs` (see `EngineModel.interrupt`).
   * @returns the new end of the step in flight, or null when nothing changed.
   */
  interrupt(nowMs: number): number | null {
    if (Number.isNaN(this.stepEnd)) return null;
    const end = this.run.cut(nowMs);
    if (end === null) return null;
    this.stepEnd = end;
    return end;
  }

  /**
   * Turn the decode step just scheduled into a run of k steps when nothing can change the batch
   * before the k-th: nothing waits, no chunked prefill, no request finishes before step k, and
   * free tokens (not counting evictable ones, so nothing is evicted) cover all k steps.
   */
  protected tryCoalesce(nowMs: number): void {
    if (this.waiting.length > 0 || this.chunked !== null) return;
    const k = stepsUntilFirstFinish(this.running);
    if (k <= 1 || (k - 1) * this.running.length > this.freeTokens()) return;
    this.stepEnd = this.run.start(this.stepTime, this.shape, nowMs, k);
  }
}

function posInt(name: string, v: number): number {
  if (!Number.isInteger(v) || v <= 0) throw new Error(`SglangReplica: ${name} must be a positive integer, got ${v}`);
  return v;
}

function ratio(name: string, v: number): number {
  if (!(v > 0 && v <= 1)) throw new Error(`SglangReplica: ${name} must be in (0, 1], got ${v}`);
  return v;
}
