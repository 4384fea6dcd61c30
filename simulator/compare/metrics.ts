/**
 * The run-level metrics a paired comparison reports: `summary` columns, each with the direction
 * that counts as better and a unit for printing.
 */

/** One comparable metric: a `summary` column. */
export interface MetricDef {
  /** `summary` column name. */
  readonly column: string;
  readonly better: 'lower' | 'higher';
  /** `ms`, `usd`, `fraction`, `count`, `rps` or `hours`. */
  readonly unit: 'ms' | 'usd' | 'fraction' | 'count' | 'rps' | 'hours';
}

/** Every metric `compare` knows, by name (= column). */
export const METRICS = {
  success_rate: { column: 'success_rate', better: 'higher', unit: 'fraction' },
  goodput: { column: 'goodput', better: 'higher', unit: 'fraction' },
  ttft_p50_ms: { column: 'ttft_p50_ms', better: 'lower', unit: 'ms' },
  ttft_p90_ms: { column: 'ttft_p90_ms', better: 'lower', unit: 'ms' },
  ttft_p99_ms: { column: 'ttft_p99_ms', better: 'lower', unit: 'ms' },
  tpot_p50_ms: { column: 'tpot_p50_ms', better: 'lower', unit: 'ms' },
  e2e_p50_ms: { column: 'e2e_p50_ms', better: 'lower', unit: 'ms' },
  e2e_p99_ms: { column: 'e2e_p99_ms', better: 'lower', unit: 'ms' },
  throughput_rps: { column: 'throughput_rps', better: 'higher', unit: 'rps' },
  prefix_cache_hit_rate: { column: 'prefix_cache_hit_rate', better: 'higher', unit: 'fraction' },
  failed_requests: { column: 'failed_requests', better: 'lower', unit: 'count' },
  rate_limited_requests: { column: 'rate_limited_requests', better: 'lower', unit: 'count' },
  client_gone_requests: { column: 'client_gone_requests', better: 'lower', unit: 'count' },
  retried_requests: { column: 'retried_requests', better: 'lower', unit: 'count' },
  fallback_requests: { column: 'fallback_requests', better: 'lower', unit: 'count' },
  token_cost_usd: { column: 'token_cost_usd', better: 'lower', unit: 'usd' },
  gpu_hours: { column: 'gpu_hours', better: 'lower', unit: 'hours' },
  total_cost_usd: { column: 'total_cost_usd', better: 'lower', unit: 'usd' },
  cost_per_1k_requests_usd: { column: 'cost_per_1k_requests_usd', better: 'lower', unit: 'usd' },
} as const satisfies Record<string, MetricDef>;

/** A metric name. */
export type MetricName = keyof typeof METRICS;

/** Metric names, for schemas and help text. */
export const METRIC_NAMES = Object.keys(METRICS) as [MetricName, ...MetricName[]];

/** What `compare` reports when no metrics are named. */
export const DEFAULT_METRICS: readonly MetricName[] = [
  'success_rate',
  'goodput',
  'ttft_p50_ms',
  'ttft_p99_ms',
  'e2e_p50_ms',
  'e2e_p99_ms',
  'total_cost_usd',
  'cost_per_1k_requests_usd',
];
