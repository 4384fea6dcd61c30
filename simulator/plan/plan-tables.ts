/**
 * The planner's two tables, beside the results tables of the same DuckDB file (experiments, runs
 * and summary hold each probe run; requests and the other bulk tables stay empty):
 *
 * - `plan_points`: one row per evaluated run of a decided probe — the question, configuration,
 *   run label, rate and replica count, the cell's parameters, seed and run id, the SLO terms
 *   (goodput, TTFT/TPOT at the SLO percentile, slack), costs, whether this seed held the SLO,
 *   and the probe's verdict with its mean-slack interval;
 * - `plans`: one row per answer — question, configuration, run label, status, the answer with its
 *   interval and unit, the confidence, its costs and rank, and the details as JSON.
 */
import { join } from 'node:path';
import type { ResultsStore } from '../results/results-store.ts';
import { snakeCase } from '../results/schema.ts';

/** DDL of the planner tables (idempotent). */
export const PLAN_TABLES_SQL = `
CREATE TABLE IF NOT EXISTS plan_points (
  plan_id VARCHAR NOT NULL,
  question VARCHAR NOT NULL,
  config VARCHAR NOT NULL,
  label VARCHAR NOT NULL,
  strategy VARCHAR NOT NULL,
  rate_scale DOUBLE NOT NULL,
  replicas INTEGER NOT NULL,
  params_json VARCHAR NOT NULL,
  seed BIGINT NOT NULL,
  run_id VARCHAR NOT NULL,
  requests BIGINT NOT NULL,
  goodput DOUBLE NOT NULL,
  ttft_ms DOUBLE,
  tpot_ms DOUBLE,
  slack DOUBLE NOT NULL,
  holds BOOLEAN NOT NULL,
  cost_per_hour_usd DOUBLE NOT NULL,
  cost_per_1k_requests_usd DOUBLE NOT NULL,
  probe_verdict VARCHAR NOT NULL,
  probe_slack_mean DOUBLE NOT NULL,
  probe_slack_low DOUBLE NOT NULL,
  probe_slack_high DOUBLE NOT NULL
);
CREATE TABLE IF NOT EXISTS plans (
  plan_id VARCHAR NOT NULL,
  question VARCHAR NOT NULL,
  config VARCHAR NOT NULL,
  label VARCHAR NOT NULL,
  status VARCHAR NOT NULL,
  answer DOUBLE,
  low DOUBLE,
  high DOUBLE,
  unit VARCHAR NOT NULL,
  confidence DOUBLE NOT NULL,
  cost_per_hour_usd DOUBLE,
  cost_per_1k_requests_usd DOUBLE,
  rank INTEGER,
  detail_json VARCHAR NOT NULL
);`;

/** A `plan_points` row. */
export interface PlanPointRow {
  planId: string;
  question: string;
  config: string;
  label: string;
  strategy: string;
  rateScale: number;
  replicas: number;
  paramsJson: string;
  seed: number;
  runId: string;
  requests: number;
  goodput: number;
  ttftMs: number | null;
  tpotMs: number | null;
  slack: number;
  holds: boolean;
  costPerHourUsd: number;
  costPer1kRequestsUsd: number;
  probeVerdict: string;
  probeSlackMean: number;
  probeSlackLow: number;
  probeSlackHigh: number;
}

/** A `plans` row. */
export interface PlanRow {
  planId: string;
  question: string;
  config: string;
  label: string;
  /** `found`, `none` (nothing tried holds), `unbounded` (everything tried holds) or `undecided`. */
  status: string;
  answer: number | null;
  low: number | null;
  high: number | null;
  /** Unit of answer/low/high: `rate_scale`, `replicas` or `usd_per_1k_requests`. */
  unit: string;
  confidence: number;
  /** Mean total cost per hour of the answer's configuration, USD (null without one). */
  costPerHourUsd: number | null;
  /** Mean total cost per 1,000 requests of the answer's configuration, USD (null without one). */
  costPer1kRequestsUsd: number | null;
  /** Rank among the question's answers (min_replicas, offload), 1 = cheapest; null otherwise. */
  rank: number | null;
  detailJson: string;
}

async function insert(store: ResultsStore, table: string, row: object): Promise<void> {
  const entries = Object.entries(row);
  const sql = `INSERT INTO ${table} (${entries.map(([k]) => snakeCase(k)).join(', ')}) VALUES (${entries.map((_, i) => `$${i + 1}`).join(', ')})`;
  await store.query(sql, entries.map(([, v]) => v as string | number | boolean | null));
}

/** Creates the planner tables in `store` (keeps existing rows). */
export async function createPlanTables(store: ResultsStore): Promise<void> {
  await store.query(PLAN_TABLES_SQL);
}

/** Inserts `plan_points` rows. @throws DuckDB's Error for a value the column rejects. */
export async function addPlanPoints(store: ResultsStore, rows: readonly PlanPointRow[]): Promise<void> {
  for (const r of rows) await insert(store, 'plan_points', r);
}

/** Inserts one `plans` row. @throws DuckDB's Error for a value the column rejects. */
export async function addPlan(store: ResultsStore, row: PlanRow): Promise<void> {
  await insert(store, 'plans', row);
}

/** What a finished plan shard writes to `DIR/shards/plan-<plan id>-<i>-of-<N>.json`. */
export interface PlanShardManifest {
  readonly planId: string;
  readonly shard: number;
  readonly count: number;
  /** Searches of the whole plan. */
  readonly searches: number;
  /** This shard's searches: number and what it asks (`max_rate 4x fixed`), in order. */
  readonly ran: readonly { readonly index: number; readonly search: string }[];
}

/** Path of plan shard `index`-of-`count`'s manifest under `dir`. */
export function planManifestPath(dir: string, planId: string, index: number, count: number): string {
  return join(dir, 'shards', `plan-${planId}-${index}-of-${count}.json`);
}
