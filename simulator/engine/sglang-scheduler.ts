/**
 * The scheduler of the SGLang replica model, after SGLang 0.5's `Scheduler`
 * (`python/sglang/srt/managers/scheduler.py`: `get_next_batch_to_run`, `get_new_batch_prefill`,
 * `update_running_batch`, `process_batch_result`) with the ordering and reservation rules of
 * `schedule_policy.py` (`sglang-schedule-policy.ts`):
 *  - Prefill first. Each iteration first tries to build a prefill ("extend") batch from the
 *    waiting queue (`get_new_batch_prefill`); only when none can be built does the running batch
 *    decode. By default prefill and decode are separate batches, so running requests do not
 *    advance while a prefill batch runs (their inter-token gap grows by the whole prefill);
 *    `enableMixedChunk` (`--enable-mixed-chunk`) instead runs the decodes in the prefill batch.
 *  - The prefill batch is built as SGLang's `PrefillAdder` builds it: the partially prefilled
 *    ("chunked") request continues first; waiting requests are then added in policy order
 *    (`fcfs`, or `lpm` = longest prefix match first, which SGLang applies only while at most 128
 *    requests wait) while
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
 * KV tokens come from `sglang-kv-pool.ts`. The replica (`sglang-replica.ts`) extends this class
 * with the `EngineModel` face, the processing of a finished step's results (SGLang keeps that in
 * `scheduler_output_processor_mixin.py`) and decode-step coalescing.
 */
import type { EngineEvent } from './engine-model.ts';
import type { RadixNode } from './radix-cache.ts';
import { SglangKvPool, type PoolHolder } from './sglang-kv-pool.ts';
import { type PolicyRequest, reservedOutputTokens, retractionOrder, sortLongestPrefixFirst, sortsByPrefix } from './sglang-schedule-policy.ts';
import type { BatchShape, StepTimeModel } from './step-time.ts';

/**
 * Request state (`SglangRequest.where`): gone (finished or aborted). SGLang keeps no state field;
 * these name the queue a `Req` sits in (`waiting_queue`, `running_batch`, `chunked_req` in
 * managers/scheduler.py).
 */
export const NONE = 0;
/** In the waiting queue (SGLang `Scheduler.waiting_queue`). */
export const WAITING = 1;
/** In the running (decode) batch (SGLang `Scheduler.running_batch`). */
export const RUNNING = 2;
/** The one partially prefilled request (SGLang `Scheduler.chunked_req`). */
export const CHUNKED = 3;
/** Admitted into the prefill batch in flight (SGLang `Scheduler.cur_batch`); becomes RUNNING when the step ends. */
export const PREFILLING = 4;

/** Mutable per-request state (SGLang `Req`, managers/schedule_batch.py); one object per request, nothing allocated per token or step. */
export interface SglangRequest extends PoolHolder, PolicyRequest {
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
 * Scheduler limits, validated by the replica; the meanings are those of `SglangReplicaOptions`
 * (SGLang `ServerArgs`, python/sglang/srt/server_args.py).
 */
export interface SglangSchedulerConfig {
  stepTime: StepTimeModel;
  kvTokens: number;
  chunkedPrefillSize: number;
  maxPrefillTokens: number;
  maxRunningRequests: number;
  schedulePolicy: 'fcfs' | 'lpm';
  enableMixedChunk: boolean;
  hashBlockTokens: number;
  radixCache: boolean;
  initNewTokenRatio: number;
  minNewTokenRatio: number;
  /** New-token ratio decrement per decode step. */
  newTokenRatioDecay: number;
  coalesceDecodeSteps: boolean;
}

/**
 * Queues, batch building and retraction of an SGLang replica (SGLang `Scheduler`,
 * python/sglang/srt/managers/scheduler.py; module doc). Subclasses supply `tryCoalesce`, called after a decode step without
 * retraction is scheduled when coalescing is on.
 */
export abstract class SglangScheduler {
  /** KV pool size in tokens (SGLang `max_total_num_tokens`). */
  readonly kvTokens: number;
  /** Max tokens of one request per prefill batch (`--chunked-prefill-size`). */
  readonly chunkedPrefillSize: number;
  /** Max new tokens of one prefill batch (`--max-prefill-tokens`). */
  readonly maxPrefillTokens: number;
  /** Max requests running (`--max-running-requests`). */
  readonly maxRunningRequests: number;
  /** Waiting-queue order (`--schedule-policy`). */
  readonly schedulePolicy: 'fcfs' | 'lpm';
  /** Decodes run inside prefill batches (`--enable-mixed-chunk`). */
  readonly enableMixedChunk: boolean;
  /** Tokens per trace hash id (one radix edge). */
  readonly hashBlockTokens: number;
  protected readonly cacheOn: boolean;
  protected readonly stepTime: StepTimeModel;
  /** The KV token pool and its radix prefix cache (`sglang-kv-pool.ts`). */
  protected readonly pool: SglangKvPool;
  protected readonly initRatio: number;
  protected readonly minRatio: number;
  protected readonly ratioDecay: number;
  protected readonly coalesce: boolean;

  protected readonly byId = new Map<number, SglangRequest>();
  protected waiting: SglangRequest[] = [];
  protected readonly running: SglangRequest[] = [];
  protected chunked: SglangRequest | null = null;
  /** Prefill members of the step in flight: stepPrefill[0..stepPrefillN). Reused, never shrunk (no allocation per step). */
  protected readonly stepPrefill: (SglangRequest | null)[] = [];
  protected stepPrefillN = 0;
  // Initialised with a double so V8 stores it unboxed (a per-step update allocates nothing).
  protected newTokenRatio = 0.5;
  /** End of the step in flight (virtual ms), NaN when idle (a double field: no boxing per step). */
  protected stepEnd = NaN;
  protected seqNo = 0;
  /** Shape of the step in flight. */
  protected readonly shape: BatchShape = { prefillTokens: 0, prefillSeqs: 0, prefillAttnPairs: 0, decodeSeqs: 0, decodeContextTokens: 0 };

  protected lookupTokens = 0;
  protected hitTokens = 0;
  protected nRetractions = 0;
  protected nSteps = 0;
  protected nPrefillSteps = 0;

  /** Empty queues and an empty KV pool sized by `c`; the new-token ratio starts at its initial value. */
  constructor(c: SglangSchedulerConfig) {
    this.stepTime = c.stepTime;
    this.kvTokens = c.kvTokens;
    this.chunkedPrefillSize = c.chunkedPrefillSize;
    this.maxPrefillTokens = c.maxPrefillTokens;
    this.maxRunningRequests = c.maxRunningRequests;
    this.schedulePolicy = c.schedulePolicy;
    this.enableMixedChunk = c.enableMixedChunk;
    this.hashBlockTokens = c.hashBlockTokens;
    this.cacheOn = c.radixCache;
    this.pool = new SglangKvPool(c.kvTokens, c.hashBlockTokens);
    this.initRatio = c.initNewTokenRatio;
    this.minRatio = c.minNewTokenRatio;
    this.ratioDecay = c.newTokenRatioDecay;
    this.newTokenRatio = this.initRatio;
    this.coalesce = c.coalesceDecodeSteps;
  }

  /** Turn the decode step just scheduled into a coalesced run when nothing can change it (sglang-replica.ts). */
  protected abstract tryCoalesce(nowMs: number): void;

  /** Tokens neither held by a request nor by the radix tree. */
  freeTokens(): number {
    return this.pool.freeTokens();
  }

  /** Remove `r` wherever it is, freeing its KV and lock (SGLang `abort_request`). */
  protected removeRequest(r: SglangRequest): void {
    if (r.where === WAITING) this.waiting.splice(this.waiting.indexOf(r), 1);
    else if (r.where === RUNNING) this.running.splice(this.running.indexOf(r), 1);
    else if (r.where === CHUNKED && this.chunked === r) this.chunked = null;
    // PREFILLING requests are only referenced by the step in flight, which skips NONE.
    this.pool.release(r);
    r.stepTokens = 0;
    r.where = NONE;
    this.byId.delete(r.id);
  }

  /**
   * Schedule the next step at `nowMs` (SGLang `get_next_batch_to_run`: a prefill batch if one can
   * be built, else a decode of the running batch).
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

  /** SGLang `get_new_batch_prefill` + `PrefillAdder`; returns true when a prefill batch was formed. */
  private buildPrefill(): boolean {
    if (this.waiting.length === 0 && this.chunked === null) return false;
    if (this.running.length >= this.maxRunningRequests && this.chunked === null) return false;
    const mixed = this.enableMixedChunk ? this.running.length : 0;
    const avail = this.freeTokens() + this.pool.radix.evictableTokens;
    let reserve = 0;
    for (const r of this.running) reserve += reservedOutputTokens(r) * this.newTokenRatio;
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
        remTotal -= n + (truncated ? 0 : reservedOutputTokens(c));
        curRem -= n;
        remInput -= n;
        remChunk -= n;
      }
    }
    if (c !== null && this.chunked === c) {
      // The chunked request is still incomplete after this batch: nothing else joins.
      return count > 0;
    }
    if (sortsByPrefix(this.schedulePolicy, this.waiting.length)) sortLongestPrefixFirst(this.waiting, this.pool.radix, this.hashBlockTokens);
    let taken = 0;
    const w = this.waiting;
    for (let i = 0; i < w.length; i++) {
      if (this.running.length + count >= this.maxRunningRequests) break;
      if (remTotal <= 0 || curRem <= 0 || remInput <= 0 || remChunk <= 0) break;
      const r = w[i]!;
      const hitNode = this.cacheOn ? this.pool.lookup(r) : null;
      const hit = hitNode === null ? 0 : hitNode.depth * this.hashBlockTokens;
      const extend = r.input + r.generated - hit;
      const reserveNew = reservedOutputTokens(r);
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

  /** Put `n` prompt tokens of `r` into the prefill batch, allocating them from the pool. */
  private addToPrefill(r: SglangRequest, n: number): void {
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
    run.sort(retractionOrder);
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
  private retract(v: SglangRequest): void {
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

  /** A finished request: emit `finished`, give back its KV and lock (it stays in `running` until compaction). */
  protected finish(r: SglangRequest, nowMs: number, emit: (e: EngineEvent) => void): void {
    emit({ kind: 'finished', attemptId: r.id, atMs: nowMs });
    this.pool.release(r);
    r.where = NONE;
    this.byId.delete(r.id);
  }
}
