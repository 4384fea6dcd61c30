/**
 * Shapes of the dashboard's JSON API, shared by the server (`notebooks-web/server/`) and the
 * browser app (`notebooks-web/app/`). Types only: nothing here runs. Times are milliseconds of
 * virtual time from the start of the run unless a name says otherwise; rates are fractions 0..1;
 * money is US dollars.
 *
 * Every route is `GET`; errors come back as {@link ApiErrorBody} with status 400 (malformed
 * path or parameters), 404 (unknown results file, experiment, run, request or route), 405 (any
 * method but GET/HEAD), 503 (a results file that cannot be opened now, e.g. being written) or 500.
 */

/** Body of every error response. */
export interface ApiErrorBody {
  error: {
    /** Stable code: `bad_request` | `not_found` | `method_not_allowed` | `internal` | `unavailable`. */
    code: string;
    message: string;
  };
}

/** One experiment of one results file, as listed by `GET /api/experiments`. */
export interface ExperimentSummary {
  /** Name of the results file in the catalog (file name without `.duckdb`). */
  db: string;
  experimentId: string;
  name: string;
  tracePath: string;
  /** First line of the trace's source note. */
  traceSource: string;
  /** ISO-8601 wall-clock start. */
  startedAt: string;
  seed: number;
  runs: number;
  /** Distinct run strategies (labels), sorted. */
  strategies: string[];
  /** Distinct `git rev-parse HEAD` values of the runs, sorted. */
  gitRevisions: string[];
}

/** A results file that could not be read, listed instead of failing the whole list. */
export interface CatalogProblem {
  db: string;
  message: string;
}

/** `GET /api/experiments`. */
export interface ExperimentsResponse {
  experiments: ExperimentSummary[];
  problems: CatalogProblem[];
}

/** One run of an experiment. */
export interface RunInfo {
  runId: string;
  strategy: string;
  /** Run label (`runs.label`; the strategy in files written before labels existed). */
  label: string;
  /** Swept values other than label and seed (`runs.pair_key`; '' when absent). */
  pairKey: string;
  /** `runs.params_json`, parsed (an object; `{}` when the JSON is not an object). */
  params: Record<string, unknown>;
  seed: number;
  gitRevision: string;
  wallSeconds: number;
}

/** `GET /api/experiments/:db/:experimentId`. */
export interface ExperimentDetail {
  experiment: ExperimentSummary;
  /** The experiment file as stored in `experiments.config_json` (null when not valid JSON). */
  config: unknown;
  runs: RunInfo[];
  /** Endpoint ids seen in the experiment's requests or time series, sorted. */
  endpoints: string[];
  /** The experiment's own SLOs (from `summary`, else the config), ms; null when unknown. */
  sloTtftMs: number | null;
  sloTpotMs: number | null;
  /** Whether the file holds a usable `comparisons` table (see `ComparisonsResponse`). */
  hasComparisons: boolean;
}

/** p50 / p90 / p99 of one latency over a run's `ok` requests, ms; null without data. */
export interface Percentiles {
  p50: number | null;
  p90: number | null;
  p99: number | null;
}

/** Per-run figures of `GET …/metrics`. */
export interface RunMetrics {
  runId: string;
  strategy: string;
  requests: number;
  okRequests: number;
  /** Requests whose status is not `ok`, over all requests. */
  failureRate: number;
  /** Requests with at least one fallback attempt, over all requests. */
  fallbackRate: number;
  /** Requests with an offload reason, over all requests. */
  offloadRate: number;
  /** Σ requests.cost_usd (token cost of hosted attempts), USD. */
  costUsd: number;
  /**
   * Cost per 1,000 requests, USD: `summary.cost_per_1k_requests_usd` (tokens + fixed fees + GPU
   * hours) when the file has it, else 1000 × costUsd / requests.
   */
  costPer1kRequestsUsd: number;
  /** Where costPer1kRequestsUsd came from. */
  costSource: 'summary' | 'requests';
  /** Goodput at the SLO of the response: ok with TTFT ≤ SLO and (TPOT null or ≤ SLO), over all. */
  goodput: number;
  /** Completed requests per virtual second (from `summary`; null when it has no row). */
  throughputRps: number | null;
  ttft: Percentiles;
  tpot: Percentiles;
  e2e: Percentiles;
}

/** `GET …/metrics?slo_ttft_ms=&slo_tpot_ms=`. */
export interface MetricsResponse {
  sloTtftMs: number;
  sloTpotMs: number;
  runs: RunMetrics[];
}

/** Latency metrics the CDF and drill-down routes accept. */
export type LatencyMetric = 'ttft' | 'tpot' | 'e2e' | 'queue_wait';

/** One run's empirical CDF: `[valueMs, probability]` pairs, probability ascending 0..1. */
export interface CdfSeries {
  runId: string;
  strategy: string;
  /** Number of values the CDF was computed from (ok requests with a value). */
  n: number;
  points: [number, number][];
}

/** `GET …/cdf?metric=&points=`: quantiles computed in SQL, never the raw rows. */
export interface CdfResponse {
  metric: LatencyMetric;
  runs: CdfSeries[];
}

/**
 * One stored paired comparison (`switchyard compare`): a candidate run label against a baseline
 * label on one summary metric, within one pair group (the cells that differ only in label and
 * seed), over the seeds both have. `diffMean = candidateMean − baselineMean`, and
 * `[ciLow, ciHigh]` is the bootstrap interval of that difference at `confidence`.
 */
export interface ComparisonRow {
  /** Baseline run label. */
  baseline: string;
  /** Candidate run label. */
  candidate: string;
  /** Swept values shared by the paired cells (`scenario=outage,replicas=2`), '' when none. */
  pairKey: string;
  /** A `summary` column, e.g. `ttft_p99_ms`, `goodput`, `cost_per_1k_requests_usd`. */
  metric: string;
  /** Which direction is better, when stored. */
  better: 'lower' | 'higher' | null;
  /** Seeds paired. */
  seeds: number | null;
  baselineMean: number | null;
  candidateMean: number | null;
  diffMean: number | null;
  /** diffMean / |baselineMean|; null when not stored or the baseline is 0. */
  diffRel: number | null;
  /** Interval of diffMean; null with fewer than 2 seeds. */
  ciLow: number | null;
  ciHigh: number | null;
  /** Confidence level of the interval, e.g. 0.95. */
  confidence: number | null;
  /** The interval excludes 0. */
  significant: boolean | null;
  /** Significant and in the better direction for the candidate. */
  candidateBetter: boolean | null;
}

/** `GET …/comparisons`: `available` false (with the reason) when the file has no usable rows. */
export interface ComparisonsResponse {
  available: boolean;
  reason: string | null;
  rows: ComparisonRow[];
}

/** One time-series bucket of one endpoint: the maximum of each gauge over the bucket. */
export interface EndpointPoint {
  atMs: number;
  running: number;
  waiting: number;
  /** KV-cache usage fraction, 0..1. */
  kvUsage: number;
  prefillBacklogTokens: number;
  /** Tokens of the engine step in flight (maximum over the bucket). */
  batchTokens: number;
  /** Preemptions (vLLM) or retractions (SGLang) during the bucket (increase of the cumulative count). */
  preemptions: number;
  /** Engine steps during the bucket (increase of the cumulative count). */
  steps: number;
}

/** One request-rate bucket: arrivals and failed requests per virtual second. */
export interface RatePoint {
  atMs: number;
  arrivalsPerSec: number;
  failuresPerSec: number;
}

/** A breaker transition (`events.kind = 'breaker'`). */
export interface BreakerEvent {
  atMs: number;
  endpointId: string;
  from: string;
  to: string;
  reason: string | null;
}

/** A fault-window edge (`events.kind = 'fault'`). */
export interface FaultEdge {
  atMs: number;
  endpointId: string;
  phase: 'start' | 'end';
  status: number | null;
}

/** `GET …/runs/:runId/timeline?from_ms=&to_ms=&max_points=`. */
export interface TimelineResponse {
  runId: string;
  /** The window the series cover (the requested one, clamped to the run). */
  fromMs: number;
  toMs: number;
  /** The whole run: first to last sample, arrival or completion. */
  runStartMs: number;
  runEndMs: number;
  /** Width of one bucket, ms (≥ 1000). */
  bucketMs: number;
  endpoints: string[];
  series: { endpointId: string; points: EndpointPoint[] }[];
  rate: RatePoint[];
  /** Every breaker transition and fault edge of the run (not only the window). */
  breakers: BreakerEvent[];
  faults: FaultEdge[];
}

/** One request as listed by the drill-down. */
export interface RequestListRow {
  requestId: string;
  sessionId: string | null;
  arrivalMs: number;
  endpointId: string | null;
  status: string;
  queueWaitMs: number | null;
  ttftMs: number | null;
  tpotMs: number | null;
  e2eMs: number | null;
  inputTokens: number;
  outputTokens: number;
  cachedTokens: number;
  fallbacks: number;
  offloadReason: string | null;
  costUsd: number;
}

/** Columns the drill-down can sort by. */
export type RequestSortKey =
  | 'arrival_ms'
  | 'ttft_ms'
  | 'tpot_ms'
  | 'e2e_ms'
  | 'queue_wait_ms'
  | 'input_tokens'
  | 'output_tokens'
  | 'fallbacks'
  | 'cost_usd'
  | 'status'
  | 'endpoint_id'
  | 'request_id';

/** `GET …/runs/:runId/requests?status=&endpoint=&metric=&min_ms=&max_ms=&sort=&order=&limit=&offset=`. */
export interface RequestsPage {
  /** Rows matching the filters (before limit/offset). */
  total: number;
  offset: number;
  limit: number;
  rows: RequestListRow[];
  /** Facets over the whole run, for the filter controls. */
  statuses: string[];
  endpoints: string[];
}

/** One dispatch of a request. */
export interface AttemptInfo {
  attemptId: number;
  endpointId: string;
  startMs: number;
  endMs: number;
  outcome: string;
  status: number | null;
}

/** `GET …/runs/:runId/requests/:requestId`. */
export interface RequestDetail {
  request: RequestListRow;
  attempts: AttemptInfo[];
}

/** One evaluated run of a capacity-planner probe (`plan_points`): where it ran and how it did. */
export interface PlanPoint {
  question: string;
  config: string;
  label: string;
  rateScale: number;
  replicas: number;
  seed: number;
  runId: string;
  goodput: number;
  ttftMs: number | null;
  tpotMs: number | null;
  /** The run held the SLO. */
  holds: boolean;
  costPerHourUsd: number;
  costPer1kRequestsUsd: number;
  /** The probe's verdict over its seeds (`holds`, `fails`, `undecided`). */
  probeVerdict: string;
}

/** One answer of the planner (`plans`): the value with its interval, per question and configuration. */
export interface PlanAnswer {
  question: string;
  config: string;
  label: string;
  status: string;
  answer: number | null;
  low: number | null;
  high: number | null;
  unit: string;
  confidence: number;
  costPerHourUsd: number | null;
  costPer1kRequestsUsd: number | null;
  rank: number | null;
}

/** `GET …/plans`: a planner's points and answers; `available: false` when the file has no plan tables. */
export interface PlansResponse {
  available: boolean;
  points: PlanPoint[];
  answers: PlanAnswer[];
}
