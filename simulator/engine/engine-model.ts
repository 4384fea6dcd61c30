/**
 * The seam between the discrete-event loop and a model of one serving replica.
 *
 * The loop owns time. A replica is passive: it is handed requests, and when it is busy it has
 * exactly one step (iteration) in progress whose end time it reports. The loop schedules an
 * event at that time and calls `completeStep`, which applies the step's effects (tokens
 * produced, requests finished), reports them to the sink, and starts the next step.
 * This mirrors how vLLM's and SGLang's schedulers run: one batched forward pass per iteration.
 */
import type { KvEvent } from '../../core/index.ts';

/** A request as a replica sees it. Token counts are integers ≥ 0. */
export interface EngineRequest {
  /** Simulation-wide attempt id (unique per dispatch, not per trace request). */
  readonly attemptId: number;
  readonly inputTokens: number;
  readonly outputTokens: number;
  /** Prefix block hash ids in prompt order, each covering `hashBlockTokens` tokens; null if unknown. */
  readonly hashIds: readonly number[] | null;
}

/** What a completed step reports, in order. Times are virtual ms. */
export type EngineEvent =
  /** The first output token was produced (end of the request's prefill). */
  | { kind: 'first_token'; attemptId: number; atMs: number; cachedTokens: number }
  /** All output tokens produced; the request left the replica. */
  | { kind: 'finished'; attemptId: number; atMs: number }
  /** The replica refused the request (it can never fit, e.g. prompt larger than the KV cache). */
  | { kind: 'rejected'; attemptId: number; atMs: number; reason: 'context_too_long' };

/** Point-in-time load of a replica, for routing hints and the `endpoint_timeseries` table. */
export interface EngineLoad {
  /** Requests in the running batch. */
  running: number;
  /** Requests queued, not yet scheduled. */
  waiting: number;
  /** Fraction of KV-cache blocks in use by running requests, 0..1. */
  kvUsage: number;
  /** Prompt tokens admitted or queued that still need prefill (uncached), tokens. */
  prefillBacklogTokens: number;
  /** Tokens (prefill chunks + decodes) of the step in flight; 0 when idle. */
  batchTokens: number;
  /** Steps completed or started so far (cumulative; inside a coalesced run, as per-step scheduling would count them when `load` is given the time). */
  steps: number;
  /** Preemptions (vLLM recompute) or retractions (SGLang) so far (cumulative). */
  preemptions: number;
}

/** One simulated replica. Implementations are deterministic: no clock, no randomness. */
export interface EngineModel {
  /** Accept a request at `nowMs`. Returns the end time of a step it started, or null if a step was already running. */
  enqueue(req: EngineRequest, nowMs: number, emit: (e: EngineEvent) => void): number | null;
  /**
   * End the running step at `nowMs` (the time this replica last returned), emit its events,
   * and start the next step. Returns the next step's end time, or null when the replica is idle.
   * @throws Error when no step is running or `nowMs` is not that step's end time.
   */
  completeStep(nowMs: number, emit: (e: EngineEvent) => void): number | null;
  /** Drop a request wherever it is (queue or batch), freeing its KV blocks. No event is emitted. */
  cancel(attemptId: number): void;
  /**
   * Current load; with `nowMs` (the engine's clock, inside the step in flight) a coalesced run's
   * blocks are counted up to the step in flight, as per-step scheduling would hold them.
   */
  load(nowMs?: number): EngineLoad;
  /** Cumulative prefix-cache statistics: prompt tokens looked up and tokens found cached. */
  prefixCacheStats(): { lookupTokens: number; hitTokens: number };
  /** Throws when an internal invariant is broken (negative counts, KV over budget, …). */
  invariants(): void;
  /**
   * Optional, step coalescing. A replica built with coalescing on may answer `enqueue`/`completeStep`
   * with the end of a *run* of decode steps whose batch composition cannot change on its own (no
   * request finishes before the run's last step, nothing is waiting, KV blocks suffice). A loop that
   * hands such a replica a request or a cancel while a run is in flight must first call
   * `interrupt(nowMs)`: the run is cut at its first step boundary ≥ `nowMs`, and that boundary is
   * returned (the loop's scheduled step event becomes stale and is replaced by one at the returned
   * time); null means nothing changed. Per-step and coalesced simulation then give identical times.
   * Replicas built without coalescing may omit this or always return null.
   */
  interrupt?(nowMs: number): number | null;
  /**
   * Optional: send the replica's prefix-cache changes (blocks stored and removed, by trace hash
   * id) to `sink`, or stop with null. Replicas that do not model KV events omit it.
   */
  setKvEventSink?(sink: ((e: KvEvent) => void) | null): void;
}
