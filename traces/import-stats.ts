/**
 * The summary a converter returns (and the CLI prints) after writing a trace.
 */
import type { TraceMeta, TraceRow } from './trace-row.ts';

/** What one import produced. */
export interface ImportStats {
  /** Source file read. */
  src: string;
  /** Arrow trace file written. */
  dst: string;
  /** Rows (requests) written. */
  rows: number;
  /** Distinct non-null session ids (0 when the trace has none). */
  sessions: number;
  /** Sum of input tokens over all rows. */
  inputTokens: number;
  /** Sum of output tokens over all rows. */
  outputTokens: number;
  /** Total number of prefix-block hash ids over all rows (0 when the source has none). */
  hashIds: number;
  /** Arrival of the last row minus the first, ms (0 for fewer than two rows). */
  spanMs: number;
  /** The metadata written to the file. */
  meta: TraceMeta;
}

/** Computes `ImportStats` from the rows that were written. */
export function importStats(src: string, dst: string, meta: TraceMeta, rows: readonly TraceRow[]): ImportStats {
  const sessions = new Set<string>();
  let inputTokens = 0;
  let outputTokens = 0;
  let hashIds = 0;
  for (const r of rows) {
    if (r.sessionId !== null) sessions.add(r.sessionId);
    inputTokens += r.inputTokens;
    outputTokens += r.outputTokens;
    hashIds += r.hashIds?.length ?? 0;
  }
  const first = rows[0]?.arrivalMs ?? 0;
  const last = rows[rows.length - 1]?.arrivalMs ?? first;
  return { src, dst, rows: rows.length, sessions: sessions.size, inputTokens, outputTokens, hashIds, spanMs: last - first, meta };
}
