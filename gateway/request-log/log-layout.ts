/**
 * The request log's second table and its migrations. `attempts` holds one row per upstream
 * attempt beside `requests` (one row per request), keyed by the request's id and arrival (a
 * client may send its own `x-request-id`, so the id alone need not be unique). Files of older
 * layouts are brought up to date when the writer opens them (`REQUEST_LOG_MIGRATIONS`).
 */
import { REQUEST_LOG_COLUMNS, type AttemptLogRow, type LogColumnType, type RequestLogRow } from './log-row.ts';

/**
 * Where a column of the `attempts` table comes from. The gateway thread posts only what each
 * attempt adds (`POSTED_ATTEMPT_FIELDS`) and each request's attempt count; the writer fills in the
 * rest: `request` repeats a column of the attempt's request row, `index` is the 1-based attempt
 * index, `attempt` is a posted field (plus the request's arrival when `plusArrival`: offsets
 * become Unix ms).
 */
export type AttemptColumnSource = { readonly request: keyof RequestLogRow } | { readonly index: true } | { readonly attempt: PostedAttemptField; readonly plusArrival: boolean };

/** A column of the `attempts` table: its name, type, nullability, and what fills it. */
export interface AttemptLogColumn {
  readonly column: string;
  readonly type: LogColumnType;
  readonly notNull: boolean;
  readonly source: AttemptColumnSource;
}

/** The attempt fields the gateway thread posts, one column each, in this order. */
export const POSTED_ATTEMPT_FIELDS = ['endpointId', 'target', 'outcome', 'reason', 'startOffsetMs', 'endOffsetMs', 'inputTokens', 'outputTokens', 'cachedTokens', 'costUsd'] as const satisfies ReadonlyArray<keyof AttemptLogRow>;

/** One of `POSTED_ATTEMPT_FIELDS`. */
export type PostedAttemptField = (typeof POSTED_ATTEMPT_FIELDS)[number];

const acol = (column: string, type: LogColumnType, notNull: boolean, source: AttemptColumnSource): AttemptLogColumn => ({ column, type, notNull, source });
const posted = (attempt: PostedAttemptField, plusArrival = false): AttemptColumnSource => ({ attempt, plusArrival });

/**
 * The `attempts` table's columns, in table order: the request's id and arrival (Unix ms), the
 * 1-based attempt index, endpoint, multi-target target, outcome, reason, start and end (Unix ms),
 * the attempt's tokens and its cost in USD (null only in rows migrated from a file that did not
 * record them).
 */
export const ATTEMPT_LOG_COLUMNS: readonly AttemptLogColumn[] = [
  acol('request_id', 'VARCHAR', true, { request: 'requestId' }),
  acol('arrival_unix_ms', 'DOUBLE', true, { request: 'arrivalUnixMs' }),
  acol('attempt_index', 'INTEGER', true, { index: true }),
  acol('endpoint_id', 'VARCHAR', true, posted('endpointId')),
  acol('target', 'VARCHAR', false, posted('target')),
  acol('outcome', 'VARCHAR', true, posted('outcome')),
  acol('reason', 'VARCHAR', true, posted('reason')),
  acol('start_unix_ms', 'DOUBLE', true, posted('startOffsetMs', true)),
  acol('end_unix_ms', 'DOUBLE', true, posted('endOffsetMs', true)),
  acol('input_tokens', 'INTEGER', false, posted('inputTokens')),
  acol('output_tokens', 'INTEGER', false, posted('outputTokens')),
  acol('cached_tokens', 'INTEGER', false, posted('cachedTokens')),
  acol('cost_usd', 'DOUBLE', false, posted('costUsd')),
];

/**
 * `ATTEMPT_LOG_COLUMNS`' sources as the writer thread reads them: `{request: c}` (column `c` of
 * the posted requests), `{index: true}`, or `{posted: c, arrival: c | -1}` (posted attempt column
 * `c`, plus requests column `arrival` unless -1).
 */
export type WriterAttemptSource = { request: number } | { index: true } | { posted: number; arrival: number };

/** `ATTEMPT_LOG_COLUMNS`' sources for the writer thread, in table order. */
export const WRITER_ATTEMPT_SOURCES: readonly WriterAttemptSource[] = ATTEMPT_LOG_COLUMNS.map(({ source: s }) => {
  const requestColumn = (f: keyof RequestLogRow): number => REQUEST_LOG_COLUMNS.findIndex((c) => c.field === f);
  if ('request' in s) return { request: requestColumn(s.request) };
  if ('index' in s) return { index: true };
  return { posted: POSTED_ATTEMPT_FIELDS.indexOf(s.attempt), arrival: s.plusArrival ? requestColumn('arrivalUnixMs') : -1 };
});

/** DDL of the `attempts` table, from `ATTEMPT_LOG_COLUMNS`. */
export const ATTEMPTS_DDL = `CREATE TABLE IF NOT EXISTS attempts (
${ATTEMPT_LOG_COLUMNS.map((c) => `  ${c.column} ${c.type}${c.notNull ? ' NOT NULL' : ''}`).join(',\n')}
)`;

/**
 * One migration step: `statements` run in one transaction, always or only when the query
 * `when` returns a first row whose first value is true (non-zero).
 */
export interface LogMigration {
  readonly name: string;
  readonly when?: string;
  readonly statements: readonly string[];
}

/** The per-attempt list columns of the layout before the `attempts` table (read by its migration). */
const LIST_COLUMNS = ['attempt_endpoints', 'attempt_targets', 'attempt_outcomes', 'attempt_start_ms', 'attempt_ms', 'attempt_reasons'];

/**
 * Steps that bring a file of an older layout to the current one, in order; each is idempotent.
 * 1. The first layout lacks the columns after `prompt`: they are added (last, so the appender's
 *    column order matches `REQUEST_LOG_COLUMNS`).
 * 2. The layout that kept attempts as list columns of `requests` with an `attempts` view over
 *    them: the view is dropped, its rows copied into the `attempts` table (tokens null: that
 *    layout did not record them), and the list columns dropped.
 * 3. The `attempts` table exists.
 * 4. An `attempts` table without the per-attempt cost gets `cost_usd` (last, null in old rows).
 */
export const REQUEST_LOG_MIGRATIONS: readonly LogMigration[] = [
  {
    name: 'requests columns after prompt',
    statements: REQUEST_LOG_COLUMNS.slice(REQUEST_LOG_COLUMNS.findIndex((c) => c.column === 'offload_reason')).map((c) => `ALTER TABLE requests ADD COLUMN IF NOT EXISTS ${c.column} ${c.type}`),
  },
  {
    name: 'attempt lists into the attempts table',
    when: `SELECT count(*) > 0 FROM duckdb_columns() WHERE table_name = 'requests' AND column_name = 'attempt_endpoints'`,
    statements: [
      'DROP VIEW IF EXISTS attempts',
      ATTEMPTS_DDL,
      `INSERT INTO attempts (request_id, arrival_unix_ms, attempt_index, endpoint_id, target, outcome, reason, start_unix_ms, end_unix_ms)
       SELECT request_id, arrival_unix_ms, i, coalesce(attempt_endpoints[i], 'unknown'), attempt_targets[i], coalesce(attempt_outcomes[i], 'unknown'), coalesce(attempt_reasons[i], 'unknown'),
              arrival_unix_ms + coalesce(attempt_start_ms[i], 0), arrival_unix_ms + coalesce(attempt_start_ms[i], 0) + coalesce(attempt_ms[i], 0)
       FROM (SELECT *, unnest(range(1, coalesce(len(attempt_endpoints), 0) + 1)) AS i FROM requests)`,
      ...LIST_COLUMNS.map((c) => `ALTER TABLE requests DROP COLUMN IF EXISTS ${c}`),
    ],
  },
  { name: 'attempts table', statements: [ATTEMPTS_DDL] },
  { name: 'attempt cost', statements: ['ALTER TABLE attempts ADD COLUMN IF NOT EXISTS cost_usd DOUBLE'] },
];
