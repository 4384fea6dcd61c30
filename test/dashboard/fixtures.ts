// Hand-made results databases for the dashboard tests. Their DDL is written here rather than
// taken from simulator/results/schema.ts on purpose: `sweep` has the columns sweeps, cost
// accounting and `switchyard compare` add (runs.label / pair_key, summary cost, comparisons);
// `legacy` has only the columns of the first results schema. The dashboard must read both.
// The plan fixture is written through the simulator's own store and plan tables.
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { addPlan, addPlanPoints, createPlanTables, type PlanPointRow } from '../../simulator/plan/plan-tables.ts';
import { ResultsStore } from '../../simulator/results/results-store.ts';

/** Experiment id of the sweep fixture. */
export const SWEEP_EXP = 'exp-sweep';
/** Experiment id of the legacy fixture. */
export const LEGACY_EXP = 'exp-legacy';

/** Axes of the sweep fixture. */
export const SWEEP = { labels: ['fixed', 'p2c'], waitS: [0.5, 1, 2], queueLimit: [4, 8], seeds: [1, 2], requestsPerRun: 60 } as const;

/** Runs of the sweep fixture (labels × wait × queue limit × seeds). */
export const SWEEP_RUNS = SWEEP.labels.length * SWEEP.waitS.length * SWEEP.queueLimit.length * SWEEP.seeds.length;

const BASE_DDL = (extraRuns: string, extraSummary: string) => `
CREATE TABLE experiments (experiment_id VARCHAR PRIMARY KEY, name VARCHAR NOT NULL, trace_path VARCHAR NOT NULL,
  trace_source VARCHAR NOT NULL, started_at VARCHAR NOT NULL, config_json VARCHAR NOT NULL, seed BIGINT NOT NULL);
CREATE TABLE runs (run_id VARCHAR PRIMARY KEY, experiment_id VARCHAR NOT NULL, strategy VARCHAR NOT NULL,
  params_json VARCHAR NOT NULL, seed BIGINT NOT NULL, node_version VARCHAR NOT NULL, git_revision VARCHAR NOT NULL,
  wall_seconds DOUBLE NOT NULL${extraRuns});
CREATE TABLE requests (run_id VARCHAR NOT NULL, request_id VARCHAR NOT NULL, session_id VARCHAR, caller_id VARCHAR,
  arrival_ms DOUBLE NOT NULL, endpoint_id VARCHAR, queue_wait_ms DOUBLE, ttft_ms DOUBLE, tpot_ms DOUBLE, e2e_ms DOUBLE,
  input_tokens INTEGER NOT NULL, output_tokens INTEGER NOT NULL, cached_tokens INTEGER NOT NULL, status VARCHAR NOT NULL,
  cost_usd DOUBLE NOT NULL, fallbacks INTEGER NOT NULL, offload_reason VARCHAR);
CREATE TABLE attempts (run_id VARCHAR NOT NULL, request_id VARCHAR NOT NULL, attempt_id INTEGER NOT NULL,
  endpoint_id VARCHAR NOT NULL, start_ms DOUBLE NOT NULL, end_ms DOUBLE NOT NULL, outcome VARCHAR NOT NULL, status INTEGER);
CREATE TABLE endpoint_timeseries (run_id VARCHAR NOT NULL, endpoint_id VARCHAR NOT NULL, at_ms DOUBLE NOT NULL,
  running INTEGER NOT NULL, waiting INTEGER NOT NULL, kv_usage DOUBLE NOT NULL, prefill_backlog_tokens BIGINT NOT NULL${extraRuns ? ', batch_tokens INTEGER NOT NULL, steps BIGINT NOT NULL, preemptions BIGINT NOT NULL' : ''});
CREATE TABLE events (run_id VARCHAR NOT NULL, at_ms DOUBLE NOT NULL, kind VARCHAR NOT NULL, endpoint_id VARCHAR,
  detail_json VARCHAR NOT NULL);
CREATE TABLE summary (run_id VARCHAR PRIMARY KEY, strategy VARCHAR NOT NULL, requests BIGINT NOT NULL,
  ok_requests BIGINT NOT NULL, ttft_p50_ms DOUBLE, ttft_p90_ms DOUBLE, ttft_p99_ms DOUBLE, tpot_p50_ms DOUBLE,
  tpot_p90_ms DOUBLE, tpot_p99_ms DOUBLE, e2e_p50_ms DOUBLE, e2e_p90_ms DOUBLE, e2e_p99_ms DOUBLE,
  throughput_rps DOUBLE NOT NULL, output_tokens_per_sec DOUBLE NOT NULL, prefix_cache_hit_rate DOUBLE NOT NULL,
  slo_ttft_ms DOUBLE NOT NULL, slo_tpot_ms DOUBLE NOT NULL, goodput DOUBLE NOT NULL${extraSummary});
`;

// Requests of every run, from the run's parameters: p2c and shorter waits are faster, so the
// heatmap has a gradient and the comparison a direction. Every 20th request fails, every 15th
// falls back, every 25th is offloaded.
const REQUESTS_SQL = (perRun: number, labelCol: 'label' | 'strategy', fast: string) => `
INSERT INTO requests
SELECT r.run_id, CAST(i AS VARCHAR), 'session-' || (i % 7), 'caller-' || (i % 3), i * 1000.0,
  'm:replica-' || (i % 2),
  CASE WHEN i % 4 = 0 THEN 0 ELSE (i % 9) * 10.0 END,
  CASE WHEN i % 20 = 7 THEN NULL ELSE ttft END,
  CASE WHEN i % 20 = 7 THEN NULL ELSE 20.0 + i % 7 END,
  CASE WHEN i % 20 = 7 THEN NULL ELSE ttft + (20.0 + i % 7) * (10 + i % 13) END,
  1000 + i * 10, 11 + i % 13, (i % 3) * 256,
  CASE WHEN i % 20 = 7 THEN 'upstream_error' ELSE 'ok' END,
  CASE WHEN r.label = '${fast}' THEN 0.002 ELSE 0.001 END,
  CASE WHEN i % 15 = 3 THEN 1 ELSE 0 END,
  CASE WHEN i % 25 = 4 THEN 'queue_wait' ELSE NULL END
FROM (
  SELECT run_id, ${labelCol} AS label, seed,
    coalesce(TRY_CAST(json_extract(params_json, '$.wait_s') AS DOUBLE), 1) AS wait_s,
    coalesce(TRY_CAST(json_extract(params_json, '$.queue_limit') AS DOUBLE), 4) AS queue_limit
  FROM runs) r,
  range(${perRun}) t(i),
  LATERAL (SELECT (100 + 400 * r.wait_s * (CASE WHEN r.label = '${fast}' THEN 0.7 ELSE 1 END) * r.queue_limit / 4
                   + (i * 37 % 100) * 5 + r.seed * 3)::DOUBLE AS ttft) x;
`;

const COMMON_SQL = (counters: boolean) => `
INSERT INTO attempts
SELECT run_id, request_id, 1, CASE WHEN fallbacks > 0 THEN 'm:replica-' || ((CAST(request_id AS INTEGER) + 1) % 2) ELSE endpoint_id END,
  arrival_ms, arrival_ms + CASE WHEN fallbacks > 0 THEN 40 ELSE coalesce(e2e_ms, 25) END,
  CASE WHEN fallbacks > 0 OR status <> 'ok' THEN 'http_status' ELSE 'ok' END,
  CASE WHEN fallbacks > 0 OR status <> 'ok' THEN 503 ELSE NULL END
FROM requests;
INSERT INTO attempts
SELECT run_id, request_id, 2, endpoint_id, arrival_ms + 40, arrival_ms + 40 + coalesce(e2e_ms, 25), 'ok', NULL
FROM requests WHERE fallbacks > 0;
INSERT INTO endpoint_timeseries
SELECT r.run_id, 'm:replica-' || e, i * 1000.0, 2 + (i + e) % 5, (i * 3 + e) % 7, 0.25 + ((i * 7 + e * 3) % 60) / 100.0, i * 120 + e * 50
${counters ? ', i * 64 + e, i * 10, i / 20' : ''}
FROM runs r, range(2) s(e), range(61) t(i);
INSERT INTO events SELECT run_id, 18000, 'fault', 'm:replica-1', '{"phase":"start","status":503}' FROM runs;
INSERT INTO events SELECT run_id, 20000, 'breaker', 'm:replica-1', '{"from":"closed","to":"open","reason":"consecutive_failures"}' FROM runs;
INSERT INTO events SELECT run_id, 29000, 'fault', 'm:replica-1', '{"phase":"end","status":503}' FROM runs;
INSERT INTO events SELECT run_id, 30000, 'breaker', 'm:replica-1', '{"from":"open","to":"half_open","reason":"probe_started"}' FROM runs;
INSERT INTO events SELECT run_id, 31000, 'breaker', 'm:replica-1', '{"from":"half_open","to":"closed","reason":"probe_ok"}' FROM runs;
`;

const SUMMARY_SQL = (extraSelect: string) => `
INSERT INTO summary
SELECT r.run_id, r.strategy, count(q.*), count(q.*) FILTER (WHERE q.status = 'ok'),
  quantile_cont(q.ttft_ms, 0.5) FILTER (WHERE q.status = 'ok'), quantile_cont(q.ttft_ms, 0.9) FILTER (WHERE q.status = 'ok'),
  quantile_cont(q.ttft_ms, 0.99) FILTER (WHERE q.status = 'ok'), quantile_cont(q.tpot_ms, 0.5) FILTER (WHERE q.status = 'ok'),
  quantile_cont(q.tpot_ms, 0.9) FILTER (WHERE q.status = 'ok'), quantile_cont(q.tpot_ms, 0.99) FILTER (WHERE q.status = 'ok'),
  quantile_cont(q.e2e_ms, 0.5) FILTER (WHERE q.status = 'ok'), quantile_cont(q.e2e_ms, 0.9) FILTER (WHERE q.status = 'ok'),
  quantile_cont(q.e2e_ms, 0.99) FILTER (WHERE q.status = 'ok'),
  count(q.*) FILTER (WHERE q.status = 'ok') / 60.0, 10.0, 0.2, 1200, 100,
  count(q.*) FILTER (WHERE q.status = 'ok' AND q.ttft_ms <= 1200 AND (q.tpot_ms IS NULL OR q.tpot_ms <= 100))::DOUBLE / count(q.*)
  ${extraSelect}
FROM runs r JOIN requests q USING (run_id) GROUP BY r.run_id, r.strategy;
`;

async function withDb(path: string, fn: (run: (sql: string) => Promise<void>) => Promise<void>): Promise<void> {
  mkdirSync(dirname(path), { recursive: true });
  const instance = await DuckDBInstance.create(path);
  const conn = await instance.connect();
  try {
    await fn(async (sql) => {
      await conn.run(sql);
    });
    await conn.run('CHECKPOINT');
  } finally {
    conn.closeSync();
    instance.closeSync();
  }
}

const sqlString = (s: string) => `'${s.replace(/'/g, "''")}'`;

/**
 * Writes the sweep fixture: one experiment `exp-sweep` whose 24 runs cross two labels (fixed,
 * p2c) with wait_s ∈ {0.5, 1, 2} × queue_limit ∈ {4, 8} and two seeds, in the shape the
 * simulator's sweeps write (params_json with label/strategy/router_params/seed and each axis,
 * runs.label and runs.pair_key), plus summary cost and a `comparisons` table of p2c against
 * fixed per pair group.
 */
export async function writeSweepFixture(path: string): Promise<void> {
  await withDb(path, async (run) => {
    await run(BASE_DDL(', label VARCHAR NOT NULL, pair_key VARCHAR NOT NULL', ', cost_per_1k_requests_usd DOUBLE NOT NULL'));
    await run(`CREATE TABLE comparisons (experiment_id VARCHAR NOT NULL, baseline VARCHAR NOT NULL, candidate VARCHAR NOT NULL,
      pair_key VARCHAR NOT NULL, metric VARCHAR NOT NULL, better VARCHAR NOT NULL, seeds INTEGER NOT NULL,
      baseline_mean DOUBLE NOT NULL, candidate_mean DOUBLE NOT NULL, diff_mean DOUBLE NOT NULL, diff_rel DOUBLE,
      ci_low DOUBLE, ci_high DOUBLE, confidence DOUBLE NOT NULL, resamples INTEGER NOT NULL, significant BOOLEAN NOT NULL,
      candidate_better BOOLEAN NOT NULL)`);
    const config = JSON.stringify({ name: 'offload-sweep', slo: { ttft_ms: 1200, tpot_ms: 100 } });
    await run(`INSERT INTO experiments VALUES ('${SWEEP_EXP}', 'offload-sweep', '../traces/fixture.arrow',
      'hand-made fixture\nsecond line', '2026-01-02T03:04:05.000Z', ${sqlString(config)}, 1)`);
    const values: string[] = [];
    for (const w of SWEEP.waitS) {
      for (const q of SWEEP.queueLimit) {
        for (const seed of SWEEP.seeds) {
          for (const label of SWEEP.labels) {
            const runId = `${label}-wait${w}-q${q}-seed${seed}`;
            const params = JSON.stringify({ label, strategy: label, router_params: {}, seed, wait_s: w, queue_limit: q });
            values.push(`(${sqlString(runId)}, '${SWEEP_EXP}', '${label}', ${sqlString(params)}, ${seed}, 'v20', 'abc1234def', 0.5, '${label}', 'wait_s=${w},queue_limit=${q}')`);
          }
        }
      }
    }
    await run(`INSERT INTO runs VALUES ${values.join(',\n')}`);
    await run(REQUESTS_SQL(SWEEP.requestsPerRun, 'label', 'p2c'));
    await run(COMMON_SQL(true));
    await run(SUMMARY_SQL(', 1000 * sum(q.cost_usd) / count(q.*) + 0.5'));
    // p2c vs fixed per pair group: means over the two seeds; a made-up but well-formed interval.
    await run(`
      INSERT INTO comparisons
      WITH s AS (SELECT r.label, r.pair_key, m.metric, avg(m.v) AS mean
                 FROM runs r JOIN summary USING (run_id),
                 LATERAL (VALUES ('ttft_p50_ms', ttft_p50_ms), ('ttft_p99_ms', ttft_p99_ms), ('e2e_p50_ms', e2e_p50_ms),
                                 ('e2e_p99_ms', e2e_p99_ms), ('goodput', goodput), ('cost_per_1k_requests_usd', cost_per_1k_requests_usd)) m(metric, v)
                 GROUP BY ALL)
      SELECT '${SWEEP_EXP}', 'fixed', 'p2c', c.pair_key, c.metric,
        CASE WHEN c.metric = 'goodput' THEN 'higher' ELSE 'lower' END, 2, b.mean, c.mean, c.mean - b.mean,
        (c.mean - b.mean) / nullif(abs(b.mean), 0),
        (c.mean - b.mean) - 0.1 * abs(b.mean) - 0.01, (c.mean - b.mean) + 0.05 * abs(b.mean) + 0.01,
        0.95, 2000,
        (c.mean - b.mean) - 0.1 * abs(b.mean) - 0.01 > 0 OR (c.mean - b.mean) + 0.05 * abs(b.mean) + 0.01 < 0,
        ((c.mean - b.mean) - 0.1 * abs(b.mean) - 0.01 > 0 AND c.metric = 'goodput')
          OR ((c.mean - b.mean) + 0.05 * abs(b.mean) + 0.01 < 0 AND c.metric <> 'goodput')
      FROM s c JOIN s b ON b.pair_key = c.pair_key AND b.metric = c.metric AND b.label = 'fixed'
      WHERE c.label = 'p2c'`);
  });
}

/**
 * Writes the legacy fixture: experiment `exp-legacy` with runs `fixed-1` and `round_robin-1`
 * (30 requests each) in the first results schema — no labels, pair keys, cost columns or
 * comparisons table.
 */
export async function writeLegacyFixture(path: string): Promise<void> {
  await withDb(path, async (run) => {
    await run(BASE_DDL('', ''));
    await run(`INSERT INTO experiments VALUES ('${LEGACY_EXP}', 'legacy', '../traces/old.arrow', 'old fixture',
      '2025-06-01T00:00:00.000Z', '{"slo":{"ttft_ms":1200,"tpot_ms":100}}', 7)`);
    await run(`INSERT INTO runs VALUES
      ('fixed-1', '${LEGACY_EXP}', 'fixed', '{}', 1, 'v20', 'fedcba9876', 0.2),
      ('round_robin-1', '${LEGACY_EXP}', 'round_robin', '{}', 1, 'v20', 'fedcba9876', 0.2)`);
    await run(REQUESTS_SQL(30, 'strategy', 'round_robin'));
    await run(COMMON_SQL(false));
    await run(SUMMARY_SQL(''));
  });
}

const point = (planId: string, rateScale: number, seed: number, holds: boolean): PlanPointRow => ({
  planId,
  question: 'max_rate',
  config: 'replicas=4',
  label: 'round_robin',
  strategy: 'round_robin',
  rateScale,
  replicas: 4,
  paramsJson: '{}',
  seed,
  runId: `rr/r${rateScale}/s${seed}`,
  requests: 500,
  goodput: holds ? 0.97 : 0.6,
  ttftMs: holds ? 800 : 9000,
  tpotMs: 40,
  slack: holds ? 0.02 : -0.35,
  holds,
  costPerHourUsd: 40,
  costPer1kRequestsUsd: 0.8 / rateScale,
  probeVerdict: holds ? 'holds' : 'fails',
  probeSlackMean: holds ? 0.02 : -0.35,
  probeSlackLow: holds ? 0.01 : -0.4,
  probeSlackHigh: holds ? 0.03 : -0.3,
});

/**
 * A results file holding a capacity plan `planId`: its experiment row, three `plan_points` rows
 * (round_robin on 4 replicas: rate 0.5 held by 2 seeds, rate 1 failed by 1), one row of another
 * plan, and one `plans` answer (0.7 rate_scale in [0.5, 1]).
 */
export async function writePlanFixture(path: string, planId: string): Promise<void> {
  const store = await ResultsStore.open(path, { overwrite: true });
  try {
    await store.addExperiment({ experimentId: planId, name: 'plan', tracePath: 't.arrow', traceSource: 'fixture', startedAt: '2024-06-01T00:00:00.000Z', configJson: '{}', seed: 1 });
    await createPlanTables(store);
    await addPlanPoints(store, [point(planId, 0.5, 1, true), point(planId, 0.5, 2, true), point(planId, 1, 1, false), point('other-plan', 2, 1, false)]);
    await addPlan(store, { planId, question: 'max_rate', config: 'replicas=4', label: 'round_robin', status: 'found', answer: 0.7, low: 0.5, high: 1, unit: 'rate_scale', confidence: 0.9, costPerHourUsd: 40, costPer1kRequestsUsd: 1.1, rank: null, detailJson: '{}' });
  } finally {
    await store.close();
  }
}
