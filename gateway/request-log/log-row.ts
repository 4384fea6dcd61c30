/**
 * One row of the gateway's request log: the trace schema (`traces/README.md`) plus what only a
 * live gateway knows — endpoint, attempts, status, tokens, cost. Times are wall-clock Unix ms
 * for arrival (so logs from several days line up) and durations in ms.
 */

/**
 * The caller id of the rows the gateway writes for its own background health-check probes
 * (`gateway/health-checks/`): caller keys may not use the `switchyard:` prefix, and trace export
 * leaves these rows out.
 */
export const HEALTH_CHECK_CALLER_ID = 'switchyard:health-check';

/** A request-log row (the DuckDB table `requests`, column names snake_case of these). */
export interface RequestLogRow {
  /** Arrival, Unix epoch ms (wall clock); export subtracts the first exported row's. */
  arrivalUnixMs: number;
  requestId: string;
  sessionId: string | null;
  callerId: string | null;
  /** Model as the client named it; for an auto model, the candidate that served (or was to serve) it. */
  model: string | null;
  /** Prompt tokens: the upstream's usage when reported, else the gateway's estimate. */
  inputTokens: number;
  outputTokens: number;
  /** Chained 2,048-byte prefix block hashes (`prefix-hashes.ts`); null when not computed. */
  hashIds: number[] | null;
  stream: boolean;
  ttftMs: number | null;
  e2eMs: number;
  /** `chat` | `completion` | `embedding`. */
  api: string;
  /** Endpoint id that served the request; null when none did. */
  endpointId: string | null;
  /** Upstream attempts made. */
  attempts: number;
  /** HTTP status sent to the client (499 for a client gone before the end). */
  httpStatus: number;
  /** `ok` or the error code. */
  status: string;
  fallback: boolean;
  cachedTokens: number;
  /** From the serving route's pricing; 0 when it has none. */
  costUsd: number;
  /** The prompt's JSON, only with `log_prompts: true`; else null. */
  prompt: string | null;
  /** Why the request was moved to its model's offload route (`queue_wait`, …); null when it was not. */
  offloadReason: string | null;
  /** Strategy that planned the request (`fixed`, `least_latency`, …); null when none did. */
  strategy: string | null;
  /**
   * Decisions above the route, as JSON; null when there were none. `{"auto": …}` for a request
   * to an auto model: profile and version, candidates in order, the chosen one, each skip with
   * its reason, and the session action (`core` `AutoMetadata`); `model` is then the serving model.
   * Absent is written as null.
   */
  metadata?: string | null;
  /** The upstream attempts in start order; each becomes one row of the `attempts` table. */
  attemptLog: AttemptLogRow[];
}

/**
 * One upstream attempt of a logged request (a row of the `attempts` table, keyed by the request's
 * id and arrival, with its 1-based index).
 */
export interface AttemptLogRow {
  endpointId: string;
  /** Multi-target models: the direct model the attempt went to; null otherwise. */
  target: string | null;
  /** `ok`, `http_<status>`, or the failure kind (`timeout`, `connect_error`, …). */
  outcome: string;
  /** Why it was made: `primary`, `retry` (the endpoint just tried), `fallback` (another), `offload`. */
  reason: string;
  /** Start and end, ms after the request's arrival. */
  startOffsetMs: number;
  endOffsetMs: number;
  /** Tokens the upstream reported for this attempt; 0 for one that served nothing. */
  inputTokens: number;
  outputTokens: number;
  cachedTokens: number;
  /**
   * What the attempt cost, USD, at its own endpoint's prices over its own tokens; 0 for a failed
   * attempt (not billed) and for an endpoint without prices.
   */
  costUsd: number;
}

/** DuckDB column types the request log uses. */
export type LogColumnType = 'DOUBLE' | 'VARCHAR' | 'INTEGER' | 'BOOLEAN' | 'INTEGER[]';

/** A column of the `requests` table: the row field it holds, its name, type and nullability. */
export interface LogColumn {
  readonly field: keyof RequestLogRow;
  readonly column: string;
  readonly type: LogColumnType;
  readonly notNull: boolean;
}

const col = (field: keyof RequestLogRow, column: string, type: LogColumnType, notNull: boolean): LogColumn => ({ field, column, type, notNull });

/** The `requests` table's columns, in table order (the writer appends them in this order). */
export const REQUEST_LOG_COLUMNS: readonly LogColumn[] = [
  col('arrivalUnixMs', 'arrival_unix_ms', 'DOUBLE', true),
  col('requestId', 'request_id', 'VARCHAR', true),
  col('sessionId', 'session_id', 'VARCHAR', false),
  col('callerId', 'caller_id', 'VARCHAR', false),
  col('model', 'model', 'VARCHAR', false),
  col('inputTokens', 'input_tokens', 'INTEGER', true),
  col('outputTokens', 'output_tokens', 'INTEGER', true),
  col('hashIds', 'hash_ids', 'INTEGER[]', false),
  col('stream', 'stream', 'BOOLEAN', true),
  col('ttftMs', 'ttft_ms', 'DOUBLE', false),
  col('e2eMs', 'e2e_ms', 'DOUBLE', true),
  col('api', 'api', 'VARCHAR', true),
  col('endpointId', 'endpoint_id', 'VARCHAR', false),
  col('attempts', 'attempts', 'INTEGER', true),
  col('httpStatus', 'http_status', 'INTEGER', true),
  col('status', 'status', 'VARCHAR', true),
  col('fallback', 'fallback', 'BOOLEAN', true),
  col('cachedTokens', 'cached_tokens', 'INTEGER', true),
  col('costUsd', 'cost_usd', 'DOUBLE', true),
  col('prompt', 'prompt', 'VARCHAR', false),
  // Columns added after the first layout come last, so that a file of an older layout only needs
  // them added (`REQUEST_LOG_MIGRATIONS`) for the appender's column order to match.
  col('offloadReason', 'offload_reason', 'VARCHAR', false),
  col('strategy', 'strategy', 'VARCHAR', false),
  col('metadata', 'metadata', 'VARCHAR', false),
];

/** DDL of the `requests` table, from `REQUEST_LOG_COLUMNS`. */
export const REQUEST_LOG_DDL = `CREATE TABLE IF NOT EXISTS requests (
${REQUEST_LOG_COLUMNS.map((c) => `  ${c.column} ${c.type}${c.notNull ? ' NOT NULL' : ''}`).join(',\n')}
)`;

/** Block size and unit the log's `hash_ids` use (recorded in exported traces). */
export const LOG_BLOCK = { blockSize: 2048, blockUnit: 'bytes' } as const;
