/**
 * One row of the gateway's request log: the trace schema (`traces/README.md`) plus what only a
 * live gateway knows — endpoint, attempts, status, tokens, cost. Times are wall-clock Unix ms
 * for arrival (so logs from several days line up) and durations in ms.
 */

/** A request-log row (the DuckDB table `requests`, column names snake_case of these). */
export interface RequestLogRow {
  /** Arrival, Unix epoch ms (wall clock); export subtracts the first exported row's. */
  arrivalUnixMs: number;
  requestId: string;
  sessionId: string | null;
  callerId: string | null;
  /** Model as the client named it. */
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
}

/** Column DDL of the `requests` table, in `RequestLogRow` order. */
export const REQUEST_LOG_DDL = `CREATE TABLE IF NOT EXISTS requests (
  arrival_unix_ms DOUBLE NOT NULL,
  request_id VARCHAR NOT NULL,
  session_id VARCHAR,
  caller_id VARCHAR,
  model VARCHAR,
  input_tokens INTEGER NOT NULL,
  output_tokens INTEGER NOT NULL,
  hash_ids INTEGER[],
  stream BOOLEAN NOT NULL,
  ttft_ms DOUBLE,
  e2e_ms DOUBLE NOT NULL,
  api VARCHAR NOT NULL,
  endpoint_id VARCHAR,
  attempts INTEGER NOT NULL,
  http_status INTEGER NOT NULL,
  status VARCHAR NOT NULL,
  fallback BOOLEAN NOT NULL,
  cached_tokens INTEGER NOT NULL,
  cost_usd DOUBLE NOT NULL,
  prompt VARCHAR
)`;

/** Block size and unit the log's `hash_ids` use (recorded in exported traces). */
export const LOG_BLOCK = { blockSize: 2048, blockUnit: 'bytes' } as const;
