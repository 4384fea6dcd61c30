/**
 * Reads what calibration needs from a gateway request log: the DuckDB `requests` table the
 * gateway writes (column names as in `traces/README.md` plus `endpoint_id`, `attempts`, `status`,
 * `api`). Only requests that one endpoint served completely in one attempt are used — a
 * fallback's or an error's latency is not the endpoint's — and embeddings are left out (no
 * tokens are generated). The table is read by its documented column names, so the simulator
 * does not import the gateway.
 */
import { existsSync } from 'node:fs';
import { DuckDBInstance } from '@duckdb/node-api';

/** One logged request as calibration sees it. Times in ms. */
export interface LoggedRequest {
  /** Endpoint id that served it (`<model>:<location>`, e.g. `demo:local-8101`). */
  readonly endpointId: string;
  /** Arrival, ms after the first used request of the log(s). */
  readonly arrivalMs: number;
  readonly inputTokens: number;
  readonly outputTokens: number;
  /** Prefix block hashes as logged; null when not computed. */
  readonly hashIds: readonly number[] | null;
  /** Measured time to first token; null when the log has none (non-streamed responses). */
  readonly ttftMs: number | null;
  /** Measured end-to-end latency. */
  readonly e2eMs: number;
}

/** The location part of an endpoint id (`demo:local-8101` → `local-8101`). */
export function endpointName(endpointId: string): string {
  return endpointId.slice(endpointId.lastIndexOf(':') + 1);
}

/**
 * Reads the usable requests of one or more request logs, merged in arrival order.
 * @throws Error naming the file when it does not exist or has no `requests` table of the
 *   request-log shape, or when no request is usable (none served `ok` in one attempt).
 */
export async function readRequestLog(files: readonly string[]): Promise<LoggedRequest[]> {
  const raw: Array<Record<string, unknown>> = [];
  for (const f of files) {
    if (!existsSync(f)) throw new Error(`${f}: no such request log (the file does not exist)`);
    const instance = await DuckDBInstance.create(f, { access_mode: 'READ_ONLY' });
    const conn = await instance.connect();
    try {
      const reader = await conn
        .runAndReadAll(
          `SELECT arrival_unix_ms, endpoint_id, input_tokens, output_tokens, hash_ids, ttft_ms, e2e_ms
           FROM requests
           WHERE status = 'ok' AND attempts = 1 AND endpoint_id IS NOT NULL AND api <> 'embedding' AND output_tokens > 0
           ORDER BY arrival_unix_ms, rowid`,
        )
        .catch((e: Error) => {
          throw new Error(`${f}: not a Switchyard request log (${e.message})`);
        });
      raw.push(...(reader.getRowObjectsJS() as Array<Record<string, unknown>>));
    } finally {
      conn.closeSync();
      instance.closeSync();
    }
  }
  if (raw.length === 0) throw new Error(`${files.join(', ')}: no request served ok in one attempt; nothing to calibrate on`);
  if (files.length > 1) raw.sort((a, b) => (a.arrival_unix_ms as number) - (b.arrival_unix_ms as number));
  const first = raw[0]!.arrival_unix_ms as number;
  return raw.map((r) => ({
    endpointId: r.endpoint_id as string,
    arrivalMs: (r.arrival_unix_ms as number) - first,
    inputTokens: r.input_tokens as number,
    outputTokens: r.output_tokens as number,
    hashIds: (r.hash_ids as number[] | null) ?? null,
    ttftMs: (r.ttft_ms as number | null) ?? null,
    e2eMs: r.e2e_ms as number,
  }));
}
