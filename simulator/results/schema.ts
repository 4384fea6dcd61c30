/**
 * The results database schema, in one place: the simulator's results store creates it, and the
 * dashboard and the gateway log are meant to reuse the same DDL so their files can be queried
 * with the same SQL.
 *
 * Each table is declared once as a map from the camelCase field of its row type
 * (result-rows.ts) to a DuckDB column type; the column name is the field's snake_case form and
 * the column order is the field order. The mapped types below make the compiler reject a spec
 * that misses a field, names a field the row lacks, or disagrees with the row about nullability
 * (`'DOUBLE?'` = nullable DOUBLE, required exactly where the TS field admits `null`).
 */
import type {
  AttemptRow,
  EndpointSampleRow,
  EventRow,
  ComparisonRow,
  ExperimentRow,
  RequestRow,
  RunRow,
  SummaryRow,
} from './result-rows.ts';

/** DuckDB column types used by the results database. */
export type SqlType = 'VARCHAR' | 'DOUBLE' | 'INTEGER' | 'BIGINT' | 'BOOLEAN';

/** Per-field column types of a row: `T` for NOT NULL fields, `` `${T}?` `` for nullable ones. */
export type TableSpec<Row> = {
  readonly [K in keyof Row]-?: null extends Row[K] ? `${SqlType}?` : SqlType;
};

/** One column of a results table, resolved from a {@link TableSpec}. */
export interface ColumnDef {
  /** camelCase field of the row type, e.g. `arrivalMs`. */
  readonly field: string;
  /** snake_case column name, e.g. `arrival_ms`. */
  readonly column: string;
  readonly type: SqlType;
  readonly nullable: boolean;
}

/** A results table: name, columns in DDL order, optional primary key (column names). */
export interface TableDef {
  readonly name: TableName;
  readonly columns: readonly ColumnDef[];
  readonly primaryKey: readonly string[];
}

/** Names of the results tables, in creation order. */
export const TABLE_NAMES = [
  'experiments',
  'runs',
  'requests',
  'attempts',
  'endpoint_timeseries',
  'events',
  'summary',
  'comparisons',
] as const;

/** A results table name. */
export type TableName = (typeof TABLE_NAMES)[number];

/**
 * Column names that are not the plain snake_case of their field: a digit run inside a word
 * (`costPer1kRequestsUsd`) cannot be told from one that is part of a word (`e2eMs`).
 */
export const COLUMN_NAME_OVERRIDES: Readonly<Record<string, string>> = {
  costPer1kRequestsUsd: 'cost_per_1k_requests_usd',
};

/** camelCase → snake_case: `ttftP50Ms` → `ttft_p50_ms`, `e2eMs` → `e2e_ms`; see COLUMN_NAME_OVERRIDES. */
export function snakeCase(field: string): string {
  return COLUMN_NAME_OVERRIDES[field] ?? field.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

const experimentsSpec: TableSpec<ExperimentRow> = {
  experimentId: 'VARCHAR',
  name: 'VARCHAR',
  tracePath: 'VARCHAR',
  traceSource: 'VARCHAR',
  startedAt: 'VARCHAR',
  configJson: 'VARCHAR',
  seed: 'BIGINT',
};

const runsSpec: TableSpec<RunRow> = {
  runId: 'VARCHAR',
  experimentId: 'VARCHAR',
  strategy: 'VARCHAR',
  paramsJson: 'VARCHAR',
  seed: 'BIGINT',
  nodeVersion: 'VARCHAR',
  gitRevision: 'VARCHAR',
  wallSeconds: 'DOUBLE',
  label: 'VARCHAR',
  pairKey: 'VARCHAR',
};

const requestsSpec: TableSpec<RequestRow> = {
  runId: 'VARCHAR',
  requestId: 'VARCHAR',
  sessionId: 'VARCHAR?',
  callerId: 'VARCHAR?',
  arrivalMs: 'DOUBLE',
  endpointId: 'VARCHAR?',
  queueWaitMs: 'DOUBLE?',
  ttftMs: 'DOUBLE?',
  tpotMs: 'DOUBLE?',
  e2eMs: 'DOUBLE?',
  inputTokens: 'INTEGER',
  outputTokens: 'INTEGER',
  cachedTokens: 'INTEGER',
  status: 'VARCHAR',
  costUsd: 'DOUBLE',
  fallbacks: 'INTEGER',
  offloadReason: 'VARCHAR?',
  stream: 'BOOLEAN',
  tries: 'INTEGER',
  gatewayReplica: 'INTEGER',
};

const attemptsSpec: TableSpec<AttemptRow> = {
  runId: 'VARCHAR',
  requestId: 'VARCHAR',
  attemptId: 'INTEGER',
  endpointId: 'VARCHAR',
  startMs: 'DOUBLE',
  endMs: 'DOUBLE',
  outcome: 'VARCHAR',
  status: 'INTEGER?',
  clientTry: 'INTEGER',
  retryAfterMs: 'DOUBLE?',
  cause: 'VARCHAR?',
  costUsd: 'DOUBLE',
};

const endpointTimeseriesSpec: TableSpec<EndpointSampleRow> = {
  runId: 'VARCHAR',
  endpointId: 'VARCHAR',
  atMs: 'DOUBLE',
  running: 'INTEGER',
  waiting: 'INTEGER',
  kvUsage: 'DOUBLE',
  // BIGINT: a backlog is a sum over many prompts, unlike a single request's token count.
  prefillBacklogTokens: 'BIGINT',
  batchTokens: 'INTEGER',
  steps: 'BIGINT',
  preemptions: 'BIGINT',
};

const eventsSpec: TableSpec<EventRow> = {
  runId: 'VARCHAR',
  atMs: 'DOUBLE',
  kind: 'VARCHAR',
  endpointId: 'VARCHAR?',
  detailJson: 'VARCHAR',
};

const summarySpec: TableSpec<SummaryRow> = {
  runId: 'VARCHAR',
  strategy: 'VARCHAR',
  requests: 'BIGINT',
  okRequests: 'BIGINT',
  ttftP50Ms: 'DOUBLE?',
  ttftP90Ms: 'DOUBLE?',
  ttftP99Ms: 'DOUBLE?',
  tpotP50Ms: 'DOUBLE?',
  tpotP90Ms: 'DOUBLE?',
  tpotP99Ms: 'DOUBLE?',
  e2eP50Ms: 'DOUBLE?',
  e2eP90Ms: 'DOUBLE?',
  e2eP99Ms: 'DOUBLE?',
  throughputRps: 'DOUBLE',
  outputTokensPerSec: 'DOUBLE',
  prefixCacheHitRate: 'DOUBLE',
  sloTtftMs: 'DOUBLE',
  sloTpotMs: 'DOUBLE',
  goodput: 'DOUBLE',
  successRate: 'DOUBLE',
  failedRequests: 'BIGINT',
  rateLimitedRequests: 'BIGINT',
  clientGoneRequests: 'BIGINT',
  retriedRequests: 'BIGINT',
  fallbackRequests: 'BIGINT',
  tokenCostUsd: 'DOUBLE',
  fixedCostUsd: 'DOUBLE',
  gpuHours: 'DOUBLE',
  gpuCostUsd: 'DOUBLE',
  totalCostUsd: 'DOUBLE',
  costPer1kRequestsUsd: 'DOUBLE',
  durationMs: 'DOUBLE',
};

const comparisonsSpec: TableSpec<ComparisonRow> = {
  experimentId: 'VARCHAR',
  baseline: 'VARCHAR',
  candidate: 'VARCHAR',
  pairKey: 'VARCHAR',
  metric: 'VARCHAR',
  better: 'VARCHAR',
  seeds: 'INTEGER',
  baselineMean: 'DOUBLE',
  candidateMean: 'DOUBLE',
  diffMean: 'DOUBLE',
  diffRel: 'DOUBLE?',
  ciLow: 'DOUBLE?',
  ciHigh: 'DOUBLE?',
  confidence: 'DOUBLE',
  resamples: 'INTEGER',
  significant: 'BOOLEAN',
  candidateBetter: 'BOOLEAN',
};

function defineTable<Row>(
  name: TableName,
  spec: TableSpec<Row>,
  primaryKeyFields: readonly (keyof Row & string)[] = [],
): TableDef {
  const columns = Object.entries(spec as Record<string, string>).map(([field, decl]) => {
    const nullable = decl.endsWith('?');
    return {
      field,
      column: snakeCase(field),
      type: (nullable ? decl.slice(0, -1) : decl) as SqlType,
      nullable,
    };
  });
  return { name, columns, primaryKey: primaryKeyFields.map(snakeCase) };
}

/**
 * Table definitions by name. Only the small per-experiment / per-run tables carry primary keys:
 * an index on the bulk tables would slow the appender down and buy nothing the simulator needs.
 */
export const TABLES: { readonly [N in TableName]: TableDef } = {
  experiments: defineTable('experiments', experimentsSpec, ['experimentId']),
  runs: defineTable('runs', runsSpec, ['runId']),
  requests: defineTable('requests', requestsSpec),
  attempts: defineTable('attempts', attemptsSpec),
  endpoint_timeseries: defineTable('endpoint_timeseries', endpointTimeseriesSpec),
  events: defineTable('events', eventsSpec),
  summary: defineTable('summary', summarySpec, ['runId']),
  comparisons: defineTable('comparisons', comparisonsSpec, ['experimentId', 'baseline', 'candidate', 'pairKey', 'metric']),
};

/** `CREATE TABLE IF NOT EXISTS …` for one table definition; idempotent. */
export function createTableSql(table: TableDef): string {
  const lines = table.columns.map(
    (c) => `  ${c.column} ${c.type}${c.nullable ? '' : ' NOT NULL'}`,
  );
  if (table.primaryKey.length > 0) lines.push(`  PRIMARY KEY (${table.primaryKey.join(', ')})`);
  return `CREATE TABLE IF NOT EXISTS ${table.name} (\n${lines.join(',\n')}\n);`;
}

/** Idempotent DDL of each results table, keyed by table name. */
export const RESULTS_DDL: { readonly [N in TableName]: string } = Object.fromEntries(
  TABLE_NAMES.map((n) => [n, createTableSql(TABLES[n])]),
) as { readonly [N in TableName]: string };

/** The whole results schema as one SQL script (all tables, `IF NOT EXISTS`), runnable as is. */
export const RESULTS_SCHEMA_SQL: string = TABLE_NAMES.map((n) => RESULTS_DDL[n]).join('\n\n');
