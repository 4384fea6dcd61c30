/**
 * Request log → Arrow trace: reads the `requests` table of a gateway request log (DuckDB) and
 * writes the trace file `switchyard sim` replays (`traces/arrow-trace.ts`). Rows are taken in
 * arrival order; `arrival_ms` is ms after the first exported row; measured TTFT and E2E are
 * kept; `hash_ids` are the log's chained 2,048-byte prefix blocks (`block_unit: bytes`).
 * Request ids that repeat in the log (a client reusing `X-Request-Id`) get a `#n` suffix, since a
 * trace's ids are unique.
 */
import { DuckDBInstance } from '@duckdb/node-api';
import { writeTrace } from '../../traces/arrow-trace.ts';
import type { TraceMeta, TraceRow } from '../../traces/trace-row.ts';
import { LOG_BLOCK } from './log-row.ts';

/** Options of `exportRequestLog`. */
export interface ExportOptions {
  /** The request-log DuckDB file. */
  from: string;
  /** Arrow trace to write. */
  to: string;
  /** Only rows that arrived at or after this Unix ms. */
  sinceUnixMs?: number;
  /** Only rows that arrived before this Unix ms. */
  untilUnixMs?: number;
}

/**
 * Exports the log as a trace.
 * @returns rows written and the arrival span covered (Unix ms; null when no rows).
 * @throws Error when the file is not a request log (no `requests` table), or `writeTrace`'s
 *   errors for an invalid row.
 */
export async function exportRequestLog(opts: ExportOptions): Promise<{ rows: number; firstUnixMs: number | null; lastUnixMs: number | null }> {
  const instance = await DuckDBInstance.create(opts.from, { access_mode: 'READ_ONLY' });
  const conn = await instance.connect();
  try {
    const where: string[] = [];
    if (opts.sinceUnixMs !== undefined) where.push(`arrival_unix_ms >= ${Number(opts.sinceUnixMs)}`);
    if (opts.untilUnixMs !== undefined) where.push(`arrival_unix_ms < ${Number(opts.untilUnixMs)}`);
    let reader;
    try {
      reader = await conn.runAndReadAll(
        `SELECT arrival_unix_ms, request_id, session_id, caller_id, model, input_tokens, output_tokens, hash_ids, stream, ttft_ms, e2e_ms, http_status
         FROM requests ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY arrival_unix_ms, rowid`,
      );
    } catch (e) {
      throw new Error(`${opts.from}: not a Switchyard request log (${(e as Error).message})`);
    }
    const raw = reader.getRowObjectsJS() as Array<Record<string, unknown>>;
    const first = raw.length > 0 ? (raw[0]!.arrival_unix_ms as number) : null;
    const seen = new Map<string, number>();
    const rows: TraceRow[] = raw.map((r) => {
      const base = r.request_id as string;
      const n = seen.get(base) ?? 0;
      seen.set(base, n + 1);
      const hashes = r.hash_ids as number[] | null;
      return {
        arrivalMs: (r.arrival_unix_ms as number) - first!,
        requestId: n === 0 ? base : `${base}#${n}`,
        sessionId: (r.session_id as string | null) ?? null,
        callerId: (r.caller_id as string | null) ?? null,
        model: (r.model as string | null) ?? null,
        inputTokens: r.input_tokens as number,
        outputTokens: r.output_tokens as number,
        hashIds: hashes === null ? null : [...hashes],
        stream: r.stream as boolean,
        ttftMs: (r.ttft_ms as number | null) ?? null,
        e2eMs: (r.e2e_ms as number | null) ?? null,
        itlMs: null,
      };
    });
    const meta: TraceMeta = {
      source: `switchyard gateway request log ${opts.from}`,
      licence: 'proprietary (your own traffic)',
      citation: '',
      hardware: 'unknown',
      engine: 'unknown',
      servedModel: 'unknown',
      blockSize: LOG_BLOCK.blockSize,
      blockUnit: LOG_BLOCK.blockUnit,
      sessionRule: 'source',
    };
    const count = await writeTrace(opts.to, meta, rows);
    return { rows: count, firstUnixMs: first, lastUnixMs: raw.length > 0 ? (raw.at(-1)!.arrival_unix_ms as number) : null };
  } finally {
    conn.closeSync();
    instance.closeSync();
  }
}
