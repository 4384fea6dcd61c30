/**
 * Rows of the results database (one DuckDB file per experiment). Column names in DuckDB are the
 * snake_case forms of these fields; times are milliseconds of virtual time unless named
 * otherwise. Tables that no feature fills yet still exist, so later features add rows, not schema.
 */

/** `experiments`: one row per experiment file run. */
export interface ExperimentRow {
  experimentId: string;
  name: string;
  /** Path of the trace the experiment replayed. */
  tracePath: string;
  /** Trace source line from its metadata. */
  traceSource: string;
  /** ISO-8601 wall-clock time the experiment started (driver-side, never from core). */
  startedAt: string;
  /** The experiment file, as validated JSON. */
  configJson: string;
  seed: number;
}

/** `runs`: one row per (strategy, params, seed) replay. */
export interface RunRow {
  runId: string;
  experimentId: string;
  strategy: string;
  /** Strategy parameters as JSON. */
  paramsJson: string;
  seed: number;
  nodeVersion: string;
  /** `git rev-parse HEAD` of the checkout, or `unknown`. */
  gitRevision: string;
  /** Wall-clock seconds the replay took. */
  wallSeconds: number;
}

/** `requests`: one row per trace request per run. Null where a phase never happened. */
export interface RequestRow {
  runId: string;
  requestId: string;
  sessionId: string | null;
  callerId: string | null;
  arrivalMs: number;
  /** Endpoint that served (or last failed) the request; null if never dispatched. */
  endpointId: string | null;
  /** Time spent waiting in the replica's queue before its prefill began, ms. */
  queueWaitMs: number | null;
  ttftMs: number | null;
  /** Time per output token after the first: (e2e − ttft) / (outputTokens − 1), ms. */
  tpotMs: number | null;
  e2eMs: number | null;
  inputTokens: number;
  outputTokens: number;
  /** Prompt tokens served from the prefix cache. */
  cachedTokens: number;
  /** `ok` or an error code. */
  status: string;
  costUsd: number;
  /** Number of fallback attempts after the first. */
  fallbacks: number;
  /** `queue_wait` | `engine_wait` | `last_resort`, or null. */
  offloadReason: string | null;
}

/** `attempts`: one row per dispatch of a request to an endpoint. */
export interface AttemptRow {
  runId: string;
  requestId: string;
  attemptId: number;
  endpointId: string;
  startMs: number;
  endMs: number;
  /** Outcome kind: `ok`, `http_status`, `transport`, `first_token_timeout`, … */
  outcome: string;
  /** HTTP status when the outcome carried one, else null. */
  status: number | null;
}

/** `endpoint_timeseries`: per-endpoint load sampled at a fixed virtual interval. */
export interface EndpointSampleRow {
  runId: string;
  endpointId: string;
  atMs: number;
  running: number;
  waiting: number;
  /** KV-cache usage fraction, 0..1. */
  kvUsage: number;
  prefillBacklogTokens: number;
}

/** `events`: breaker transitions, fault windows, offloads — anything discrete worth plotting. */
export interface EventRow {
  runId: string;
  atMs: number;
  /** e.g. `breaker`, `fault`, `offload`. */
  kind: string;
  endpointId: string | null;
  /** Free-form detail as JSON (e.g. `{"from":"closed","to":"open"}`). */
  detailJson: string;
}

/**
 * `summary`: one row per run, computed in SQL from `requests`. Latencies in ms over requests
 * with status `ok`; throughput in requests and output tokens per virtual second; goodput is
 * the fraction of all requests that succeeded within both SLOs.
 */
export interface SummaryRow {
  runId: string;
  strategy: string;
  requests: number;
  okRequests: number;
  ttftP50Ms: number | null;
  ttftP90Ms: number | null;
  ttftP99Ms: number | null;
  tpotP50Ms: number | null;
  tpotP90Ms: number | null;
  tpotP99Ms: number | null;
  e2eP50Ms: number | null;
  e2eP90Ms: number | null;
  e2eP99Ms: number | null;
  throughputRps: number;
  outputTokensPerSec: number;
  /** Cached prompt tokens / prompt tokens, 0..1. */
  prefixCacheHitRate: number;
  sloTtftMs: number;
  sloTpotMs: number;
  /** Fraction of requests with status ok, TTFT ≤ sloTtftMs and TPOT ≤ sloTpotMs, 0..1. */
  goodput: number;
}
