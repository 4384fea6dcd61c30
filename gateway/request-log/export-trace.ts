/**
 * Request log → Arrow trace: reads the `requests` table of a gateway request log (DuckDB) and
 * writes the trace file `switchyard sim` replays (`traces/arrow-trace.ts`). Rows are taken in
 * arrival order; `arrival_ms` is ms after the first exported row; measured TTFT and E2E are
 * kept; `hash_ids` are the log's chained 2,048-byte prefix blocks (`block_unit: bytes`).
 * The source note names the log files by base name (no machine paths travel with a trace).
 * Request ids that repeat in the log (a client reusing `X-Request-Id`) get a `#n` suffix, since a
 * trace's ids are unique.
 */
import { existsSync, readdirSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { writeTrace } from '../../traces/arrow-trace.ts';
import type { TraceMeta, TraceRow } from '../../traces/trace-row.ts';
import { HEALTH_CHECK_CALLER_ID, LOG_BLOCK } from './log-row.ts';

/** Options of `exportRequestLog`. */
export interface ExportOptions {
  /**
   * The request-log DuckDB file, or several (e.g. the `<name>.worker-<i>.duckdb` files of a
   * `--workers N` gateway), merged in arrival order.
   */
  from: string | readonly string[];
  /** Arrow trace to write. */
  to: string;
  /** Only rows that arrived at or after this Unix ms. */
  sinceUnixMs?: number;
  /** Only rows that arrived before this Unix ms. */
  untilUnixMs?: number;
}

/**
 * The per-worker logs a `--workers N` gateway writes for the configured `path`
 * (`<name>.worker-<i>.duckdb` beside it, `<name>` being `path` without `.duckdb`), sorted by
 * worker index; empty when there are none.
 */
export function workerLogSiblings(path: string): string[] {
  const dir = dirname(path);
  const stem = basename(path).replace(/\.duckdb$/, '');
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  const re = new RegExp(`^${stem.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\.worker-(\\d+)\\.duckdb$`);
  return names
    .map((n) => ({ n, m: re.exec(n) }))
    .filter((x) => x.m !== null)
    .sort((a, b) => Number(a.m![1]) - Number(b.m![1]))
    .map((x) => join(dir, x.n));
}

/**
 * The log files to read for a `--from` path: the path itself when it exists, and its
 * `.worker-<i>.duckdb` siblings (a multi-worker gateway's logs for that configured path) —
 * both when both exist (a gateway run once with one worker and once with several), so no file
 * of that path is left out. `workers` lists the sibling files taken.
 * @throws Error `<path>: no such request log` when neither exists.
 */
export function resolveRequestLogs(path: string): { files: string[]; workers: string[] } {
  const siblings = workerLogSiblings(path);
  const base = existsSync(path) ? [path] : [];
  if (base.length + siblings.length === 0) throw new Error(`${path}: no such request log (the file does not exist)`);
  return { files: [...base, ...siblings], workers: siblings };
}

/**
 * Exports the log (or logs, merged by arrival time) as a trace.
 * @returns rows written and the arrival span covered (Unix ms; null when no rows).
 * @throws Error when a file does not exist (naming its `.worker-<i>.duckdb` siblings when there
 *   are some), is not a request log (no `requests` table), or `writeTrace`'s errors for an
 *   invalid row.
 */
export async function exportRequestLog(opts: ExportOptions): Promise<{ rows: number; firstUnixMs: number | null; lastUnixMs: number | null }> {
  const files = typeof opts.from === 'string' ? [opts.from] : [...opts.from];
  if (files.length === 0) throw new Error('exportRequestLog: no request log given');
  for (const f of files) {
    if (existsSync(f)) continue;
    const siblings = workerLogSiblings(f);
    throw new Error(
      siblings.length > 0
        ? `${f}: no such request log; a --workers gateway writes one per worker: ${siblings.join(', ')} — pass them (or the configured path to merge them all)`
        : `${f}: no such request log (the file does not exist)`,
    );
  }
  const parts: Array<Array<Record<string, unknown>>> = [];
  for (const f of files) parts.push(await readRows(f, opts));
  // Stable merge: arrival time, then file order, then the row order within the file.
  const raw = parts.length === 1 ? parts[0]! : parts.flat().sort((a, b) => (a.arrival_unix_ms as number) - (b.arrival_unix_ms as number));
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
    source: `switchyard gateway request log ${files.map((f) => basename(f)).join(', ')}`,
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
}

/** The `requests` rows of one log file in the window, in arrival order. */
async function readRows(from: string, opts: ExportOptions): Promise<Array<Record<string, unknown>>> {
  const instance = await DuckDBInstance.create(from, { access_mode: 'READ_ONLY' });
  const conn = await instance.connect();
  try {
    // Background health-check probes are the gateway's own traffic, not a workload to replay.
    const where: string[] = [`caller_id IS DISTINCT FROM '${HEALTH_CHECK_CALLER_ID}'`];
    if (opts.sinceUnixMs !== undefined) where.push(`arrival_unix_ms >= ${Number(opts.sinceUnixMs)}`);
    if (opts.untilUnixMs !== undefined) where.push(`arrival_unix_ms < ${Number(opts.untilUnixMs)}`);
    let reader;
    try {
      reader = await conn.runAndReadAll(
        `SELECT arrival_unix_ms, request_id, session_id, caller_id, model, input_tokens, output_tokens, hash_ids, stream, ttft_ms, e2e_ms, http_status
         FROM requests ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY arrival_unix_ms, rowid`,
      );
    } catch (e) {
      throw new Error(`${from}: not a Switchyard request log (${(e as Error).message})`);
    }
    return reader.getRowObjectsJS() as Array<Record<string, unknown>>;
  } finally {
    conn.closeSync();
    instance.closeSync();
  }
}
