/**
 * A closed-loop benchmark client driving one simulated replica, as the load generators behind the
 * validation data do it (genai-perf `--concurrency C --request-count N --warmup-request-count W`,
 * SGLang `bench_serving --max-concurrency C --num-prompts N`): C clients each send a request, wait
 * for its last token, and immediately send the next, until W + N requests have been sent; all C
 * first requests leave at t = 0. Every request has the same input and output length and a random
 * synthetic prompt that shares no prefix with a different prompt; by default every request sends a
 * prompt of its own (no prefix-cache hits), and `prompts` can make a client resend a dataset entry
 * as perf_analyzer does (see `ClosedLoopSpec.prompts`).
 *
 * Client-to-engine latency. A request reaches the engine `arrivalDelayMs` after the client sent it
 * (HTTP, tokenisation, queueing in the API server), drawn per request uniformly from
 * [0, `maxArrivalDelayMs`] with a seeded stream (`deriveRng(seed, 'closed-loop/arrival-delay')`);
 * TTFT is measured from the send, as a client measures it. The spread matters: with none, the C
 * clients stay locked in cohorts that arrive, prefill and finish together forever (a deterministic
 * artefact — real clients drift apart within a few rounds); a few milliseconds of spread lets them
 * desynchronise as they do on real hardware.
 *
 * A request that reaches the engine while a step is running joins at the next step boundary; one
 * that arrives exactly at a step's end joins the step after (the engine has already scheduled it).
 */
import { deriveRng } from '../../core/rng.ts';
import { type ApiServerTerm, firstTokenDelayMs, NO_API_SERVER, streamDelayMs } from './api-server.ts';
import type { EngineEvent, EngineModel } from './engine-model.ts';

/** Parameters of one closed-loop run. Counts are positive integers. */
export interface ClosedLoopSpec {
  concurrency: number;
  inputTokens: number;
  outputTokens: number;
  /** Requests measured after the warm-up. */
  measuredRequests: number;
  /** Requests sent first and excluded from the statistics (≥ 0). */
  warmupRequests: number;
  /**
   * true: the warm-up is a separate phase that drains before measurement starts, so the measured
   * phase opens with a burst of `concurrency` requests (genai-perf/perf_analyzer); false: the
   * measured requests continue the warm-up's closed loop. Default false.
   */
  drainWarmup?: boolean;
  /** Upper bound of the uniform client-to-engine delay, ms (≥ 0). Default 0. */
  maxArrivalDelayMs?: number;
  /**
   * Prompts as prefix-cache content. Absent: requests carry no hash ids (no prefix reuse at all).
   * Present: each request carries the hash ids of the dataset entry it sends, `blockTokens` tokens
   * per id (the replica's `hashBlockTokens`), so a replica with prefix caching sees an entry sent
   * twice as a hit. `reuse: 'none'` gives every request its own entry; `'per-client-phase'` is
   * perf_analyzer's data order (`ConcurrencyWorker`: worker c of C sends entries c, c + C,
   * c + 2C, … of the input data, its step counter starting at c; `LoadManager::WaitForWarmupAndCleanup`
   * discards the workers and their configs after the warm-up, so the measured phase starts again
   * at entry c): client c's k-th request of a phase sends entry c + k·C, and with a drained warm-up of
   * W requests the measured phase's first W requests resend the warm-up's entries.
   */
  prompts?: { blockTokens: number; reuse: 'none' | 'per-client-phase' };
  /** Seed of the arrival-delay stream. Default 1. */
  seed?: number;
  /**
   * Spread of the clients' first sends, ms (≥ 0): client c of C sends its first request at
   * c × startSpreadMs / C instead of all at t = 0 (a harness that ramps its clients up), and
   * likewise the opening burst of a measured phase after a drained warm-up. Default 0.
   */
  startSpreadMs?: number;
  /**
   * Client cohorts G (integer ≥ 1): client c of C joins cohort g = ⌊c·G/C⌋ and starts at
   * g × startSpreadMs / G, so the members of a cohort send together; likewise the opening burst of
   * a measured phase after a drained warm-up. At or above C (the default) every client starts on
   * its own (c × startSpreadMs / C).
   */
  startCohorts?: number;
  /**
   * API-server delivery delay (`api-server.ts`): each token reaches the client this much after the
   * engine produced it, so TTFT and E2E include it and a client sends its next request only when
   * its last token was delivered. Default none.
   */
  apiServer?: ApiServerTerm;
}

/** Per-request outcome of a closed-loop run (measured requests only, in send order). Times in ms. */
export interface ClosedLoopResult {
  /** Time to first token per measured request. */
  ttftMs: Float64Array;
  /** (E2E − TTFT) / (outputTokens − 1) per measured request (NaN when outputTokens ≤ 1). */
  tpotMs: Float64Array;
  /** Virtual time when the last request finished. */
  durationMs: number;
  /** completeStep calls (engine steps, or coalesced runs of steps). */
  steps: number;
}

/**
 * Run the closed loop on `replica` (a fresh, idle replica) to completion.
 * @throws Error on a bad spec (naming the field), a rejected request (the prompt cannot fit the KV
 *   cache), or a replica that stops while requests are outstanding.
 */
export function runClosedLoop(replica: EngineModel, spec: ClosedLoopSpec): ClosedLoopResult {
  for (const k of ['concurrency', 'inputTokens', 'outputTokens', 'measuredRequests'] as const) {
    if (!Number.isInteger(spec[k]) || spec[k] < 1) throw new Error(`closed loop: ${k} must be a positive integer, got ${spec[k]}`);
  }
  if (!Number.isInteger(spec.warmupRequests) || spec.warmupRequests < 0) throw new Error(`closed loop: warmupRequests must be an integer ≥ 0, got ${spec.warmupRequests}`);
  const maxDelay = spec.maxArrivalDelayMs ?? 0;
  if (!(maxDelay >= 0)) throw new Error(`closed loop: maxArrivalDelayMs must be ≥ 0, got ${maxDelay}`);
  const rng = deriveRng(spec.seed ?? 1, 'closed-loop/arrival-delay');
  const total = spec.warmupRequests + spec.measuredRequests;
  const sentAt = new Float64Array(total);
  const firstAt = new Float64Array(total).fill(NaN);
  const doneAt = new Float64Array(total).fill(NaN);
  // Requests on their way to the engine: (arrival time, id), kept sorted by time then id.
  const inFlight: { t: number; id: number }[] = [];
  // Client of each request, and requests each client has sent in the current phase.
  const clientOf = new Int32Array(total);
  const phaseCount = new Int32Array(spec.concurrency);
  let sent = 0;
  let finished = 0;
  let stepEnd: number | null = null;
  let steps = 0;
  let rejected: number | null = null;
  const newlyFinished: number[] = [];
  const emit = (e: EngineEvent): void => {
    if (e.kind === 'first_token') firstAt[e.attemptId] = e.atMs;
    else if (e.kind === 'finished') {
      doneAt[e.attemptId] = e.atMs;
      finished++;
      newlyFinished.push(e.attemptId);
    } else rejected = e.attemptId;
  };
  const send = (t: number, client: number): void => {
    const id = sent++;
    sentAt[id] = t;
    clientOf[id] = client;
    entryOf[id] = prompts?.reuse === 'per-client-phase' ? client + phaseCount[client]! * spec.concurrency : id;
    phaseCount[client]!++;
    const at = t + (maxDelay > 0 ? rng.float() * maxDelay : 0);
    let i = inFlight.length;
    while (i > 0 && inFlight[i - 1]!.t > at) i--;
    inFlight.splice(i, 0, { t: at, id });
  };
  const arrive = (a: { t: number; id: number }): void => {
    // A coalesced run in flight is cut at the first step boundary ≥ the arrival (exact, see EngineModel.interrupt).
    const cut = replica.interrupt?.(a.t) ?? null;
    if (cut !== null) stepEnd = cut;
    const end = replica.enqueue({ attemptId: a.id, inputTokens: spec.inputTokens, outputTokens: spec.outputTokens, hashIds: hashIdsOf(entryOf[a.id]!) }, a.t, emit);
    if (rejected !== null) throw new Error(`closed loop: request ${rejected} rejected (context_too_long): ${spec.inputTokens} + ${spec.outputTokens} tokens do not fit the KV cache`);
    if (end !== null) stepEnd = end;
  };
  const drain = spec.drainWarmup === true && spec.warmupRequests > 0;
  const prompts = spec.prompts;
  if (prompts !== undefined && !(Number.isInteger(prompts.blockTokens) && prompts.blockTokens >= 1)) {
    throw new Error(`closed loop: prompts.blockTokens must be a positive integer, got ${prompts.blockTokens}`);
  }
  // Dataset entry of each request; an entry's hash ids are entry × blocks + 1 … entry × blocks + blocks.
  const entryOf = new Int32Array(total);
  const blocksPerPrompt = prompts === undefined ? 0 : Math.floor(spec.inputTokens / prompts.blockTokens);
  const hashIdsOf = (entry: number): number[] | null =>
    prompts === undefined ? null : Array.from({ length: blocksPerPrompt }, (_, k) => entry * blocksPerPrompt + k + 1);
  // Requests that may be sent before the current phase ends.
  let sendLimit = drain ? spec.warmupRequests : total;
  const spread = spec.startSpreadMs ?? 0;
  if (!(spread >= 0)) throw new Error(`closed loop: startSpreadMs must be ≥ 0, got ${spread}`);
  if (spec.startCohorts !== undefined && !(Number.isInteger(spec.startCohorts) && spec.startCohorts >= 1)) {
    throw new Error(`closed loop: startCohorts must be an integer ≥ 1, got ${spec.startCohorts}`);
  }
  const cohorts = Math.min(spec.startCohorts ?? spec.concurrency, spec.concurrency);
  // Client c belongs to cohort ⌊c·G/C⌋, which starts at that index × spread / G.
  const startOffsetMs = (c: number): number => (Math.floor((c * cohorts) / spec.concurrency) * spread) / cohorts;
  const api = spec.apiServer ?? NO_API_SERVER;
  const deliveryMs = firstTokenDelayMs(api, spec.inputTokens) + streamDelayMs(api, spec.outputTokens);
  // Sends due later (ramped first sends; clients waiting for their last token's delivery), ascending by time.
  const dueSends: { t: number; client: number }[] = [];
  const sendAt = (t: number, client: number): void => {
    let i = dueSends.length;
    while (i > 0 && dueSends[i - 1]!.t > t) i--;
    dueSends.splice(i, 0, { t, client });
  };
  const firstSends = Math.min(spec.concurrency, sendLimit);
  for (let c = 0; c < firstSends; c++) {
    const t = startOffsetMs(c);
    if (t === 0) send(0, c);
    else sendAt(t, c);
  }
  while (finished < total) {
    const due = dueSends[0];
    if (due !== undefined && (stepEnd === null || due.t < stepEnd) && (inFlight[0] === undefined || due.t <= inFlight[0].t)) {
      dueSends.shift();
      send(due.t, due.client);
      continue;
    }
    const next = inFlight[0];
    if (next !== undefined && (stepEnd === null || next.t < stepEnd)) {
      inFlight.shift();
      arrive(next);
      continue;
    }
    if (stepEnd === null) throw new Error(`closed loop: replica idle with ${total - finished} requests outstanding`);
    const t: number = stepEnd;
    newlyFinished.length = 0;
    stepEnd = replica.completeStep(t, emit);
    steps++;
    for (let i = 0; i < newlyFinished.length && sent + dueSends.length < sendLimit; i++) {
      const client = clientOf[newlyFinished[i]!]!;
      if (deliveryMs > 0) sendAt(t + deliveryMs, client);
      else send(t, client);
    }
    if (finished === sendLimit && sendLimit < total) {
      // Warm-up drained: the measured phase starts with a burst of `concurrency` requests.
      sendLimit = total;
      phaseCount.fill(0);
      const t0 = t + deliveryMs;
      for (let c = 0; c < spec.concurrency && sent + dueSends.length < total; c++) {
        const at = t0 + startOffsetMs(c);
        if (at > t) sendAt(at, c);
        else send(t, c);
      }
    }
  }
  const n = spec.measuredRequests;
  const ttftMs = new Float64Array(n);
  const tpotMs = new Float64Array(n);
  let last = 0;
  for (let i = 0; i < n; i++) {
    const id = spec.warmupRequests + i;
    const firstDeliveredAt = firstAt[id]! + firstTokenDelayMs(api, spec.inputTokens);
    const lastDeliveredAt = doneAt[id]! + deliveryMs;
    ttftMs[i] = firstDeliveredAt - sentAt[id]!;
    tpotMs[i] = spec.outputTokens > 1 ? (lastDeliveredAt - firstDeliveredAt) / (spec.outputTokens - 1) : NaN;
  }
  for (let i = 0; i < total; i++) last = Math.max(last, doneAt[i]! + deliveryMs);
  return { ttftMs, tpotMs, durationMs: last, steps };
}

/** Arithmetic mean of the finite entries (NaN when there are none). */
export function meanOf(xs: Float64Array): number {
  let s = 0;
  let n = 0;
  for (const x of xs) {
    if (Number.isFinite(x)) {
      s += x;
      n++;
    }
  }
  return n ? s / n : NaN;
}
