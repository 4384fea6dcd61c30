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

/** `runs`: one row per sweep cell (run label × swept parameters × seed). */
export interface RunRow {
  /** `<label>[-<swept values>]-seed<k>`, unique and stable across re-runs of the same experiment. */
  runId: string;
  experimentId: string;
  /** Strategy name (`fixed`, `round_robin`, …). */
  strategy: string;
  /**
   * The cell's parameters as one flat JSON object: `label`, `strategy`, `router_params` (object),
   * `seed`, and each swept axis by name (`scenario`, `replicas`, `rate_scale`, or its dotted path).
   */
  paramsJson: string;
  seed: number;
  nodeVersion: string;
  /** `git rev-parse HEAD` of the checkout, or `unknown`. */
  gitRevision: string;
  /** Wall-clock seconds the replay took. */
  wallSeconds: number;
  /** Run label (strategy name unless the experiment gave one); what `compare --baseline` names. */
  label: string;
  /**
   * The swept values except label and seed, e.g. `scenario=outage,replicas=2` (empty when nothing
   * but runs and seeds is swept): cells with equal pair keys and seeds are paired in comparisons.
   */
  pairKey: string;
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
  /**
   * Time the request's attempts waited in the gateway for an outbound slot or an engine-hold
   * place (the core's `acquire_slot` until its `dispatch`), summed over attempts and tries, ms;
   * null when no attempt was queued.
   */
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
  /** Whether the client streamed (from the trace or the experiment's stream ratio). */
  stream: boolean;
  /** Client tries (1 = no client retry). */
  tries: number;
  /** The gateway replica (0-based, `gateway_replicas:`) that served the request's last try; 0 with one gateway. */
  gatewayReplica: number;
}

/** `attempts`: one row per dispatch of a request to an endpoint, over all client tries. */
export interface AttemptRow {
  runId: string;
  requestId: string;
  /** 1-based, unique within the request across its client tries. */
  attemptId: number;
  endpointId: string;
  startMs: number;
  endMs: number;
  /** Outcome kind: `ok`, `http_status`, `transport`, `first_token_timeout`, … */
  outcome: string;
  /** HTTP status when the outcome carried one, else null. */
  status: number | null;
  /** Client try the attempt belongs to, 0-based. */
  clientTry: number;
  /** Retry-After the endpoint sent (429 / 503), ms; null when none. */
  retryAfterMs: number | null;
  /**
   * Detail of a failure: transport cause (`reset`, `refused`, `timeout`), the provider limit that
   * answered 429 (`rpm`, `tpm`, `concurrency`, `quota`), or the HTTP error class; null on success.
   */
  cause: string | null;
  /** Token cost of this attempt, USD (hosted attempts that produced tokens; 0 for local replicas). */
  costUsd: number;
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
  /** Tokens of the engine step in flight at the sample (0 for hosted providers and idle engines). */
  batchTokens: number;
  /** Engine steps so far, cumulative (0 for hosted providers). */
  steps: number;
  /** Preemptions (vLLM) or retractions (SGLang) so far, cumulative (0 for hosted providers). */
  preemptions: number;
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
  /** Fraction of requests with status ok, 0..1 (1 = nothing lost). */
  successRate: number;
  /** Requests that did not end ok (errors, timeouts, abandonment). */
  failedRequests: number;
  /** Requests that ended with `upstream_rate_limited` (429). */
  rateLimitedRequests: number;
  /** Requests the client gave up on (`client_timeout`, `client_abandoned`). */
  clientGoneRequests: number;
  /** Requests the client tried more than once. */
  retriedRequests: number;
  /** Requests with at least one fallback attempt in their last try. */
  fallbackRequests: number;
  /** Σ token costs of hosted attempts, USD. */
  tokenCostUsd: number;
  /** Subscription fees over the run, USD. */
  fixedCostUsd: number;
  /** GPU-hours of the local replicas over the run. */
  gpuHours: number;
  /** gpuHours × $/GPU-hour, USD. */
  gpuCostUsd: number;
  /** tokenCostUsd + fixedCostUsd + gpuCostUsd. */
  totalCostUsd: number;
  /** totalCostUsd per 1,000 requests (all requests, ok or not), USD. */
  costPer1kRequestsUsd: number;
  /** Virtual duration of the run, ms (throughput denominator). */
  durationMs: number;
}

/**
 * `comparisons`: one row per (baseline, candidate, pair group, metric) of a paired comparison.
 * Differences are candidate − baseline per seed; the interval is a percentile bootstrap of their
 * mean over seeds.
 */
export interface ComparisonRow {
  experimentId: string;
  /** Baseline run label. */
  baseline: string;
  /** Candidate run label. */
  candidate: string;
  /** The cells' pair key (swept values except label and seed; '' when none). */
  pairKey: string;
  /** Metric name (a `summary` column). */
  metric: string;
  /** `lower` or `higher`: which direction is better. */
  better: string;
  /** Seeds present for both runs (the pairs). */
  seeds: number;
  baselineMean: number;
  candidateMean: number;
  /** Mean of candidate − baseline over the paired seeds. */
  diffMean: number;
  /** diffMean / |baselineMean|; null when the baseline mean is 0. */
  diffRel: number | null;
  /** Bootstrap interval of diffMean; null with fewer than 2 pairs. */
  ciLow: number | null;
  ciHigh: number | null;
  /** Confidence level of the interval, e.g. 0.95. */
  confidence: number;
  resamples: number;
  /** The interval excludes 0. */
  significant: boolean;
  /** Significant and in the better direction for the candidate. */
  candidateBetter: boolean;
}
