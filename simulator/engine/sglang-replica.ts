/**
 * An SGLang-like replica (SGLang 0.5 `Scheduler`, `python/sglang/srt/managers/scheduler.py` and
 * `schedule_policy.py`): one `EngineModel` step = one scheduler iteration + one forward pass whose
 * duration comes from a `StepTimeModel`.
 *
 * Scheduling (`get_next_batch_to_run`):
 *  - Prefill first. Each iteration first tries to build a prefill ("extend") batch from the
 *    waiting queue (`get_new_batch_prefill`); only when none can be built does the running batch
 *    decode. By default prefill and decode are separate batches, so running requests do not
 *    advance while a prefill batch runs (their inter-token gap grows by the whole prefill);
 *    `enableMixedChunk` (`--enable-mixed-chunk`) instead runs the decodes in the prefill batch.
 *  - The prefill batch is built by a `PrefillAdder`: the partially prefilled ("chunked") request
 *    continues first; waiting requests are then added in policy order (`fcfs`, or `lpm` = longest
 *    prefix match first, which SGLang applies only while at most 128 requests wait) while
 *    · the running batch plus the new ones stay under `maxRunningRequests`,
 *    · the batch's new tokens stay under `maxPrefillTokens` (`--max-prefill-tokens`) and
 *      `chunkedPrefillSize` (`--chunked-prefill-size`); a request that does not fit the remaining
 *      chunk budget is cut to it and becomes the one chunked request, which ends the batch;
 *    · the KV pool (free + evictable tokens) covers the new tokens plus a reservation for future
 *      output: each admitted request reserves min(max_new_tokens, 4,096) tokens, and each running
 *      request min(remaining output, 4,096) × `new_token_ratio` ("new-token ratio reservation").
 *  - `new_token_ratio` starts at 0.7, decays linearly to 0.1 over 600 decode steps, and is reset
 *    to 0.7 when the replica goes idle.
 *  - Before a decode, if the pool cannot give every running request one more token, requests are
 *    retracted (fewest output tokens, then longest prompt, first) until it can; a retracted request
 *    loses its KV and goes back to the end of the waiting queue (recompute), and `new_token_ratio`
 *    is raised to (Σ decoded + 20 · n) / Σ max_new_tokens over the requests kept (at most 1).
 *    If even the last running request cannot get a token (only with mixed chunking, where decodes
 *    grow while a chunked prefill holds its tokens), the chunked request is retracted too; SGLang
 *    asserts there instead.
 *
 * KV cache: a pool of `kvTokens` tokens (page size 1) shared by the radix prefix cache
 * (`radix-cache.ts`, at trace hash-block granularity) and the requests' private tokens. A request
 * locks its matched prefix while it runs; after its prompt is prefilled the prompt's full hash
 * blocks are inserted into the tree (SGLang `cache_unfinished_req`); when it finishes its lock is
 * released and the prompt stays cached until evicted (LRU leaves first).
 *
 * Step coalescing (opt-in, `coalesceDecodeSteps`) works as in `VllmReplica`: a decode batch that
 * nothing can change for k steps (no waiting or chunked request, no finish before step k, free
 * tokens for all k) is one run; loops must call `interrupt` before an enqueue or cancel.
 *
 * Deterministic, no clock: times are the virtual ms handed in by the loop.
 */
import type { EngineEvent, EngineLoad, EngineModel, EngineRequest } from './engine-model.ts';
import type { RadixNode } from './radix-cache.ts';
import { SglangKvPool } from './sglang-kv-pool.ts';
import type { BatchShape, StepTimeModel } from './step-time.ts';
import { DecodeRun, MAX_COALESCED_STEPS, stepsUntilFirstFinish } from './decode-run.ts';

/** SGLang's `CLIP_MAX_NEW_TOKENS_ESTIMATION`: max output tokens reserved per request. */
export const CLIP_MAX_NEW_TOKENS = 4096;

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

const NONE = 0;
const WAITING = 1;
const RUNNING = 2;
const CHUNKED = 3;
/** Admitted into the prefill batch in flight; becomes RUNNING when the step ends. */
const PREFILLING = 4;

interface Req {
  readonly id: number;
  readonly input: number;
  readonly output: number;
  readonly hashIds: readonly number[] | null;
  readonly seq: number;
  where: number;
  /** Tokens whose KV is in the cache (prefix hit included). */
  computed: number;
  generated: number;
  cachedTokens: number;
  firstEmitted: boolean;
  /** Deepest locked radix node (null = none) and the tokens its path covers. */
  node: RadixNode | null;
  nodeTokens: number;
  /** Tokens held privately: computed + stepTokens − nodeTokens. */
  privateTokens: number;
  /** Tokens scheduled in the step in flight (0 if none). */
  stepTokens: number;
  /** Longest-prefix-match length (tokens) computed for `lpm` ordering. */
  matchTokens: number;
}

/**
 * An SGLang-like serving replica (scheduling and KV semantics in the module doc). Events as for
 * `VllmReplica`: `first_token` at the end of the step that computes a request's last prompt token,
 * `finished` at the end of the step producing its last output token, `rejected`
 * (`context_too_long`) at enqueue when prompt + output tokens do not fit strictly inside the whole
 * pool (prompt + output ≥ `kvTokens`: admission could never reserve them, see `enqueue`).
 */
export class SglangReplica implements EngineModel {
  readonly kvTokens: number;
  readonly chunkedPrefillSize: number;
  readonly maxPrefillTokens: number;
  readonly maxRunningRequests: number;
  readonly schedulePolicy: 'fcfs' | 'lpm';
  readonly enableMixedChunk: boolean;
  readonly hashBlockTokens: number;
  private readonly cacheOn: boolean;
  private readonly stepTime: StepTimeModel;
  /** The KV token pool and its radix prefix cache (`sglang-kv-pool.ts`). */
  private readonly pool: SglangKvPool;
  private readonly initRatio: number;
  private readonly minRatio: number;
  private readonly ratioDecay: number;

  private readonly byId = new Map<number, Req>();
  private waiting: Req[] = [];
  private readonly running: Req[] = [];
  private chunked: Req | null = null;
  /** Requests in the step in flight: prefill members, then decode members. */
  /** Prefill members of the step in flight: stepPrefill[0..stepPrefillN). Reused, never shrunk (no allocation per step). */
  private readonly stepPrefill: (Req | null)[] = [];
  private stepPrefillN = 0;
  // Initialised with a double so V8 stores it unboxed (a per-step update allocates nothing).
  private newTokenRatio = 0.5;
  /** End of the step in flight (virtual ms), NaN when idle (a double field: no boxing per step). */
  private stepEnd = NaN;
  private seqNo = 0;
  private readonly coalesce: boolean;
  /** The coalesced decode run in flight (`steps` = 1: an ordinary step). */
  private readonly run = new DecodeRun();
  private readonly shape: BatchShape = { prefillTokens: 0, prefillSeqs: 0, prefillAttnPairs: 0, decodeSeqs: 0, decodeContextTokens: 0 };

  private lookupTokens = 0;
  private hitTokens = 0;
  private nRetractions = 0;
  private nSteps = 0;
  private nPrefillSteps = 0;

  /** @throws Error when a count is not a positive integer or a ratio is outside (0, 1]. */
  constructor(opts: SglangReplicaOptions) {
    this.stepTime = opts.stepTime;
    this.kvTokens = posInt('kvTokens', opts.kvTokens);
    this.chunkedPrefillSize = posInt('chunkedPrefillSize', opts.chunkedPrefillSize ?? 8192);
    this.maxPrefillTokens = posInt('maxPrefillTokens', opts.maxPrefillTokens ?? 16384);
    this.maxRunningRequests = posInt('maxRunningRequests', opts.maxRunningRequests ?? 1024);
    this.schedulePolicy = opts.schedulePolicy ?? 'fcfs';
    if (this.schedulePolicy !== 'fcfs' && this.schedulePolicy !== 'lpm') {
      throw new Error(`SglangReplica: schedulePolicy must be 'fcfs' or 'lpm', got '${String(this.schedulePolicy)}'`);
    }
    this.enableMixedChunk = opts.enableMixedChunk ?? false;
    this.hashBlockTokens = posInt('hashBlockTokens', opts.hashBlockTokens ?? 512);
    this.cacheOn = opts.radixCache ?? true;
    this.pool = new SglangKvPool(this.kvTokens, this.hashBlockTokens);
    this.initRatio = ratio('initNewTokenRatio', opts.initNewTokenRatio ?? 0.7);
    this.minRatio = ratio('minNewTokenRatio', opts.minNewTokenRatio ?? 0.1);
    const decaySteps = posInt('newTokenRatioDecaySteps', opts.newTokenRatioDecaySteps ?? 600);
    this.ratioDecay = Math.max(0, this.initRatio - this.minRatio) / decaySteps;
    this.newTokenRatio = this.initRatio;
    this.coalesce = opts.coalesceDecodeSteps ?? false;
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
    const r: Req = {
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
    const k = this.run.take();
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
    return this.startStep(nowMs);
  }

  /** Drop a request wherever it is, freeing its KV and lock; no event. Unknown ids are ignored. */
  cancel(attemptId: number): void {
    const r = this.byId.get(attemptId);
    if (!r) return;
    if (r.where === WAITING) this.waiting.splice(this.waiting.indexOf(r), 1);
    else if (r.where === RUNNING) this.running.splice(this.running.indexOf(r), 1);
    else if (r.where === CHUNKED && this.chunked === r) this.chunked = null;
    // PREFILLING requests are only referenced by the step in flight, which skips NONE.
    this.pool.release(r);
    r.stepTokens = 0;
    r.where = NONE;
    this.byId.delete(attemptId);
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

  /** Cumulative steps started, and of those prefill (extend) batches. */
  get steps(): number {
    return this.nSteps;
  }

  get prefillSteps(): number {
    return this.nPrefillSteps;
  }

  /** Current new-token ratio (0..1). */
  get currentNewTokenRatio(): number {
    return this.newTokenRatio;
  }

  /** Tokens neither held by a request nor by the radix tree. */
  freeTokens(): number {
    return this.pool.freeTokens();
  }

  /** Tokens held by the radix tree (cached prefixes, locked or not). */
  cachedTokens(): number {
    return this.pool.radix.totalTokens;
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
    const check = (r: Req, where: number) => {
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

  // ---- scheduling ----

  private startStep(nowMs: number): number | null {
    const s = this.shape;
    s.prefillTokens = 0;
    s.prefillSeqs = 0;
    s.prefillAttnPairs = 0;
    s.decodeSeqs = 0;
    s.decodeContextTokens = 0;
    const prefilled = this.buildPrefill();
    if (prefilled) {
      this.nPrefillSteps++;
      if (this.enableMixedChunk) this.scheduleDecodes();
    } else if (this.running.length > 0) {
      const retracted = this.nRetractions;
      this.prepareDecode();
      this.scheduleDecodes();
      if (this.coalesce && retracted === this.nRetractions) {
        this.nSteps++;
        this.stepEnd = nowMs + this.stepTime.stepMs(s);
        this.tryCoalesce(nowMs);
        return this.stepEnd;
      }
    }
    if (s.prefillTokens === 0 && s.decodeSeqs === 0) {
      if (this.running.length > 0 || this.waiting.length > 0 || this.chunked) throw new Error('SglangReplica: work pending but nothing schedulable');
      this.newTokenRatio = this.initRatio;
      return null;
    }
    this.nSteps++;
    this.stepEnd = nowMs + this.stepTime.stepMs(s);
    return this.stepEnd;
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
  private tryCoalesce(nowMs: number): void {
    if (this.waiting.length > 0 || this.chunked !== null) return;
    const k = stepsUntilFirstFinish(this.running);
    if (k <= 1 || (k - 1) * this.running.length > this.freeTokens()) return;
    this.stepEnd = this.run.start(this.stepTime, this.shape, nowMs, k);
  }

  /** SGLang `get_new_batch_prefill` + `PrefillAdder`; returns true when a prefill batch was formed. */
  private buildPrefill(): boolean {
    if (this.waiting.length === 0 && this.chunked === null) return false;
    if (this.running.length >= this.maxRunningRequests && this.chunked === null) return false;
    const mixed = this.enableMixedChunk ? this.running.length : 0;
    const avail = this.freeTokens() + this.pool.radix.evictableTokens;
    let reserve = 0;
    for (const r of this.running) reserve += Math.min(r.output - r.generated, CLIP_MAX_NEW_TOKENS) * this.newTokenRatio;
    let remTotal = avail - mixed - reserve;
    let curRem = avail - mixed;
    let remInput = this.maxPrefillTokens - mixed;
    let remChunk = this.chunkedPrefillSize - mixed;
    let count = 0;
    const c = this.chunked;
    if (c !== null) {
      const left = c.input + c.generated - c.computed;
      // Memory was checked for the whole prompt at admission but not held; decodes may have used it since.
      const n = Math.min(left, Math.max(0, remChunk), Math.max(0, Math.floor(curRem)));
      if (n > 0) {
        this.addToPrefill(c, n);
        count++;
        const truncated = n < left;
        if (!truncated) {
          // Its last chunk: it stops being the chunked request (another may take that role below).
          c.where = PREFILLING;
          this.chunked = null;
        }
        remTotal -= n + (truncated ? 0 : Math.min(c.output - c.generated, CLIP_MAX_NEW_TOKENS));
        curRem -= n;
        remInput -= n;
        remChunk -= n;
      }
    }
    if (c !== null && this.chunked === c) {
      // The chunked request is still incomplete after this batch: nothing else joins.
      return count > 0;
    }
    if (this.schedulePolicy === 'lpm' && this.waiting.length > 1 && this.waiting.length <= 128) this.sortLongestPrefixFirst();
    let taken = 0;
    const w = this.waiting;
    for (let i = 0; i < w.length; i++) {
      if (this.running.length + count >= this.maxRunningRequests) break;
      if (remTotal <= 0 || curRem <= 0 || remInput <= 0 || remChunk <= 0) break;
      const r = w[i]!;
      const hitNode = this.cacheOn ? this.pool.lookup(r) : null;
      const hit = hitNode === null ? 0 : hitNode.depth * this.hashBlockTokens;
      const extend = r.input + r.generated - hit;
      const reserveNew = Math.min(r.output - r.generated, CLIP_MAX_NEW_TOKENS);
      if (extend + reserveNew >= remTotal) break; // NO_TOKEN
      if (extend >= remInput && count > 0) break;
      const n = Math.min(extend, remChunk);
      if (n <= 0) break;
      // Admit: lock the matched prefix, then allocate its first chunk. Locking makes those cached
      // tokens unevictable, so the budget shrinks; recheck (SGLang `_lock_node`).
      if (hitNode !== null && hitNode.depth > 0) {
        const before = this.pool.radix.evictableTokens;
        this.pool.radix.lock(hitNode);
        const lost = before - this.pool.radix.evictableTokens;
        if (extend + reserveNew >= remTotal - lost || n > curRem - lost) {
          this.pool.radix.unlock(hitNode);
          break;
        }
        remTotal -= lost;
        curRem -= lost;
        r.node = hitNode;
        r.nodeTokens = hit;
      }
      r.computed = hit;
      r.cachedTokens = hit;
      this.lookupTokens += r.input;
      this.hitTokens += hit;
      taken++;
      count++;
      this.addToPrefill(r, n);
      if (n < extend) {
        r.where = CHUNKED;
        this.chunked = r;
        remChunk = 0;
        break;
      }
      r.where = PREFILLING;
      remTotal -= n + reserveNew;
      curRem -= n;
      remInput -= n;
      remChunk -= n;
    }
    if (taken > 0) {
      // Admitted requests leave the waiting queue; they are tracked by the step until it ends.
      this.waiting = w.slice(taken);
    }
    return count > 0;
  }

  /** Longest prefix match first (stable: ties keep arrival order). */
  private sortLongestPrefixFirst(): void {
    for (const r of this.waiting) {
      const node = r.hashIds === null ? null : this.pool.radix.match(r.hashIds, Math.floor((r.input - 1) / this.hashBlockTokens));
      r.matchTokens = node === null ? 0 : node.depth * this.hashBlockTokens;
    }
    this.waiting.sort((a, b) => b.matchTokens - a.matchTokens || a.seq - b.seq);
  }

  /** Put `n` prompt tokens of `r` into the prefill batch, allocating them from the pool. */
  private addToPrefill(r: Req, n: number): void {
    this.pool.allocate(n);
    r.stepTokens = n;
    r.privateTokens += n;
    this.pool.privateTotal += n;
    this.stepPrefill[this.stepPrefillN++] = r;
    const s = this.shape;
    s.prefillTokens += n;
    s.prefillSeqs++;
    s.prefillAttnPairs += n * (r.computed + n / 2);
  }

  /** Before a decode batch: retract until every running request can get one more token. */
  private prepareDecode(): void {
    const run = this.running;
    if (this.freeTokens() + this.pool.radix.evictableTokens >= run.length) {
      this.newTokenRatio = Math.max(this.newTokenRatio - this.ratioDecay, this.minRatio);
      return;
    }
    // SGLang `retract_decode`: victims with the fewest outputs, then the longest prompt.
    run.sort((a, b) => b.generated - a.generated || a.input - b.input || a.seq - b.seq);
    while (run.length > 1 && this.freeTokens() + this.pool.radix.evictableTokens < run.length) this.retract(run.pop()!);
    const c = this.chunked;
    if (c !== null && this.freeTokens() + this.pool.radix.evictableTokens < run.length) {
      // Last resort (mixed chunking only: decodes grew while a chunked prefill held its tokens): the
      // last running request still cannot get a token, so the chunked request gives its KV back and
      // is recomputed. SGLang asserts here ("No space left for only one request"); retracting the
      // partial prefill instead keeps the simulation going, and its prompt + output fits the pool
      // (see `enqueue`), so the last running request always can once the chunk is gone.
      this.chunked = null;
      this.retract(c);
    }
    let decoded = 0;
    let maxNew = 0;
    for (const r of run) {
      decoded += r.generated;
      maxNew += r.output;
    }
    this.newTokenRatio = Math.min(1, (decoded + 20 * run.length) / Math.max(1, maxNew));
    run.sort((a, b) => a.seq - b.seq);
  }

  /** Retraction (recompute): drop `v`'s KV and progress (outputs stay emitted), requeue it at the end. */
  private retract(v: Req): void {
    this.pool.release(v);
    v.computed = 0;
    v.where = WAITING;
    this.waiting.push(v);
    this.nRetractions++;
  }

  /** Every running request decodes one token in this step. */
  private scheduleDecodes(): void {
    const run = this.running;
    const s = this.shape;
    for (let i = 0; i < run.length; i++) {
      const r = run[i]!;
      if (r.stepTokens !== 0) continue;
      this.pool.allocate(1);
      r.stepTokens = 1;
      r.privateTokens++;
      this.pool.privateTotal++;
      s.decodeSeqs++;
      s.decodeContextTokens += r.computed + 1;
    }
  }

  private finish(r: Req, nowMs: number, emit: (e: EngineEvent) => void): void {
    emit({ kind: 'finished', attemptId: r.id, atMs: nowMs });
    this.pool.release(r);
    r.where = NONE;
    this.byId.delete(r.id);
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
