/**
 * Per-run figures of the comparison and sweep pages, computed in SQL from `requests`: goodput
 * at an SLO the client chooses (bound as parameters), cost per 1k requests, fallback / offload /
 * failure rates, latency percentiles, and latency CDFs reduced to a few hundred quantiles so a
 * 12k-request run ships ~200 points, not 12k rows.
 */
import type { CdfResponse, LatencyMetric, MetricsResponse, Percentiles, RunMetrics } from '../shared/api-types.ts';
import { doubleListParam, doubleParam, textParam, type ReadOnlyDb } from './read-only-db.ts';

/** Column of each latency metric. Fixed strings: the client picks a key, never a column. */
export const LATENCY_COLUMNS: { readonly [M in LatencyMetric]: string } = {
  ttft: 'ttft_ms',
  tpot: 'tpot_ms',
  e2e: 'e2e_ms',
  queue_wait: 'queue_wait_ms',
};

/** Latency metric keys, for parameter validation. */
export const LATENCY_METRICS = Object.keys(LATENCY_COLUMNS) as LatencyMetric[];

/**
 * Probabilities at which a CDF is sampled: about half the points evenly over [0, 0.9] and the
 * rest log-spaced over the tail up to 0.9999, then 1 — an even grid of 200 would give the
 * p99-p100 tail, which is where strategies differ, two points. Strictly increasing, within
 * [0, 1], first 0 and last 1, at most `points` values.
 * @throws RangeError unless `points` is an integer ≥ 10.
 */
export function cdfProbabilities(points: number): number[] {
  if (!Number.isInteger(points) || points < 10) throw new RangeError(`points must be an integer ≥ 10, got ${points}`);
  const body = Math.floor(points / 2);
  const tail = points - body - 1;
  const out: number[] = [];
  // Rounded to 1e-6 so the JSON carries 0.81, not 0.8099999999999999.
  const round = (p: number) => Math.round(p * 1e6) / 1e6;
  for (let i = 0; i < body; i++) out.push(round((0.9 * i) / body));
  // 1 − 0.1·10^(−3k/(tail−1)): 0.9 … 0.9999.
  for (let k = 0; k < tail; k++) out.push(round(1 - 0.1 * 10 ** ((-3 * k) / Math.max(1, tail - 1))));
  out.push(1);
  return out.filter((p, i) => i === 0 || p > out[i - 1]!);
}

function percentiles(q: (number | null)[] | null): Percentiles {
  return { p50: q?.[0] ?? null, p90: q?.[1] ?? null, p99: q?.[2] ?? null };
}

interface MetricsSqlRow {
  run_id: string;
  strategy: string;
  requests: number;
  ok_requests: number;
  failure_rate: number | null;
  fallback_rate: number | null;
  offload_rate: number | null;
  cost_usd: number | null;
  goodput: number | null;
  throughput_rps: number | null;
  summary_cost_per_1k: number | null;
  ttft_q: (number | null)[] | null;
  tpot_q: (number | null)[] | null;
  e2e_q: (number | null)[] | null;
}

/**
 * Figures of every run of an experiment, in run order. Rates are over all requests of the run;
 * percentiles over `ok` requests (as in `summary`); goodput counts ok requests with
 * `ttft_ms ≤ sloTtftMs` and (`tpot_ms` null or `≤ sloTpotMs`), as the simulator's summary does.
 * A run without requests has zero counts and rates and null percentiles.
 */
export async function runMetrics(
  db: ReadOnlyDb,
  experimentId: string,
  sloTtftMs: number,
  sloTpotMs: number,
): Promise<MetricsResponse> {
  // The cost accounting (tokens + fees + GPU hours) lands in `summary`; older files lack it.
  const hasSummaryCost = ((await db.tables()).get('summary') ?? []).includes('cost_per_1k_requests_usd');
  const rows = await db.query<MetricsSqlRow>(
    `WITH rs AS (SELECT run_id, strategy, rowid AS ord FROM runs WHERE experiment_id = $exp),
     agg AS (
       SELECT run_id,
         count(*) AS requests,
         count(*) FILTER (WHERE status = 'ok') AS ok_requests,
         count(*) FILTER (WHERE status <> 'ok')::DOUBLE / count(*) AS failure_rate,
         count(*) FILTER (WHERE fallbacks > 0)::DOUBLE / count(*) AS fallback_rate,
         count(*) FILTER (WHERE offload_reason IS NOT NULL)::DOUBLE / count(*) AS offload_rate,
         sum(cost_usd) AS cost_usd,
         count(*) FILTER (WHERE status = 'ok' AND ttft_ms <= $slo_ttft
                          AND (tpot_ms IS NULL OR tpot_ms <= $slo_tpot))::DOUBLE / count(*) AS goodput,
         quantile_cont(ttft_ms, [0.5, 0.9, 0.99]) FILTER (WHERE status = 'ok') AS ttft_q,
         quantile_cont(tpot_ms, [0.5, 0.9, 0.99]) FILTER (WHERE status = 'ok') AS tpot_q,
         quantile_cont(e2e_ms, [0.5, 0.9, 0.99]) FILTER (WHERE status = 'ok') AS e2e_q
       FROM requests WHERE run_id IN (SELECT run_id FROM rs) GROUP BY run_id)
     SELECT rs.run_id, rs.strategy, coalesce(agg.requests, 0) AS requests,
       coalesce(agg.ok_requests, 0) AS ok_requests, agg.failure_rate, agg.fallback_rate,
       agg.offload_rate, agg.cost_usd, agg.goodput, s.throughput_rps,
       ${hasSummaryCost ? 's.cost_per_1k_requests_usd' : 'CAST(NULL AS DOUBLE)'} AS summary_cost_per_1k,
       agg.ttft_q, agg.tpot_q, agg.e2e_q
     FROM rs LEFT JOIN agg ON agg.run_id = rs.run_id
       LEFT JOIN summary s ON s.run_id = rs.run_id
     ORDER BY rs.ord`,
    { exp: textParam(experimentId), slo_ttft: doubleParam(sloTtftMs), slo_tpot: doubleParam(sloTpotMs) },
  );
  const runs: RunMetrics[] = rows.map((r) => {
    const cost = r.cost_usd ?? 0;
    return {
      runId: r.run_id,
      strategy: r.strategy,
      requests: r.requests,
      okRequests: r.ok_requests,
      failureRate: r.failure_rate ?? 0,
      fallbackRate: r.fallback_rate ?? 0,
      offloadRate: r.offload_rate ?? 0,
      costUsd: cost,
      costPer1kRequestsUsd: r.summary_cost_per_1k ?? (r.requests > 0 ? (1000 * cost) / r.requests : 0),
      costSource: r.summary_cost_per_1k !== null ? 'summary' : 'requests',
      goodput: r.goodput ?? 0,
      throughputRps: r.throughput_rps,
      ttft: percentiles(r.ttft_q),
      tpot: percentiles(r.tpot_q),
      e2e: percentiles(r.e2e_q),
    };
  });
  return { sloTtftMs, sloTpotMs, runs };
}

/**
 * CDF of one latency per run over `ok` requests with a value: `quantile_cont` at
 * {@link cdfProbabilities}(points), as `[valueMs, probability]` pairs. Runs without such values
 * get an empty list. Zero values are kept (a log axis starts the line at their share).
 */
export async function latencyCdf(
  db: ReadOnlyDb,
  experimentId: string,
  metric: LatencyMetric,
  points: number,
): Promise<CdfResponse> {
  const probs = cdfProbabilities(points);
  const col = LATENCY_COLUMNS[metric];
  const rows = await db.query<{ run_id: string; strategy: string; n: number; q: (number | null)[] | null }>(
    `WITH rs AS (SELECT run_id, strategy, rowid AS ord FROM runs WHERE experiment_id = $exp),
     agg AS (
       SELECT run_id, count(${col}) AS n, quantile_cont(${col}, $probs) AS q
       FROM requests
       WHERE run_id IN (SELECT run_id FROM rs) AND status = 'ok' AND ${col} IS NOT NULL
       GROUP BY run_id)
     SELECT rs.run_id, rs.strategy, coalesce(agg.n, 0) AS n, agg.q
     FROM rs LEFT JOIN agg ON agg.run_id = rs.run_id ORDER BY rs.ord`,
    { exp: textParam(experimentId), probs: doubleListParam(probs) },
  );
  return {
    metric,
    runs: rows.map((r) => ({
      runId: r.run_id,
      strategy: r.strategy,
      n: r.n,
      points: r.q === null || r.n === 0 ? [] : probs.map((p, i) => [r.q![i] ?? 0, p] as [number, number]),
    })),
  };
}
