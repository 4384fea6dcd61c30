/**
 * The validity rules of one trace row, shared by the writer (refuse to write a bad file)
 * and the reader (refuse to hand a bad row to the simulator).
 */
import type { TraceRow } from './trace-row.ts';
import type { TraceColumn } from './trace-schema.ts';

/** What is wrong with a row: the column, the offending value, and what the column allows. */
export interface RowProblem {
  column: TraceColumn;
  value: unknown;
  allowed: string;
}

const INT32_MAX = 2 ** 31 - 1;
// A lone UTF-16 surrogate cannot be encoded as UTF-8, so it would not survive a round trip.
const LONE_SURROGATE = /\p{Cs}/u;

/**
 * Checks one row. Runtime types are checked too (rows may come from untyped JSON), so a
 * null in a non-nullable column is reported like any other bad value.
 * @param row the row, possibly ill-typed at runtime.
 * @param prevArrivalMs arrival of the previous row of the same trace, or null for the first row.
 * @param seenIds request ids of earlier rows (the row's own id is added when it passes);
 *   pass null to skip the uniqueness check.
 * @returns the first problem found, or null when the row is valid.
 */
export function checkTraceRow(
  row: TraceRow,
  prevArrivalMs: number | null,
  seenIds: Set<string> | null,
): RowProblem | null {
  const a = row.arrivalMs;
  if (typeof a !== 'number' || !Number.isFinite(a) || a < 0) {
    return { column: 'arrival_ms', value: a, allowed: 'a finite number ≥ 0 (ms from trace start)' };
  }
  if (prevArrivalMs !== null && a < prevArrivalMs) {
    return { column: 'arrival_ms', value: a, allowed: `non-decreasing arrivals (previous row: ${prevArrivalMs})` };
  }
  const id = row.requestId;
  if (typeof id !== 'string' || id.length === 0 || LONE_SURROGATE.test(id)) {
    return { column: 'request_id', value: id, allowed: 'a non-empty well-formed string' };
  }
  if (seenIds?.has(id)) {
    return { column: 'request_id', value: id, allowed: 'an id not used by an earlier row (request ids are unique)' };
  }
  for (const [column, value] of [
    ['session_id', row.sessionId],
    ['caller_id', row.callerId],
    ['model', row.model],
  ] as const) {
    if (value !== null && (typeof value !== 'string' || LONE_SURROGATE.test(value))) {
      return { column, value, allowed: 'null or a well-formed string' };
    }
  }
  for (const [column, value] of [
    ['input_tokens', row.inputTokens],
    ['output_tokens', row.outputTokens],
  ] as const) {
    if (!Number.isInteger(value) || value < 0 || value > INT32_MAX) {
      return { column, value, allowed: `an integer in [0, ${INT32_MAX}] (tokens)` };
    }
  }
  if (row.hashIds !== null) {
    if (!Array.isArray(row.hashIds)) return { column: 'hash_ids', value: row.hashIds, allowed: 'null or a list of integers' };
    for (const h of row.hashIds) {
      if (!Number.isInteger(h) || h < -INT32_MAX - 1 || h > INT32_MAX) {
        return { column: 'hash_ids', value: h, allowed: 'null or a list of 32-bit integers' };
      }
    }
  }
  if (typeof row.stream !== 'boolean') {
    return { column: 'stream', value: row.stream, allowed: 'true or false' };
  }
  for (const [column, value] of [
    ['ttft_ms', row.ttftMs],
    ['e2e_ms', row.e2eMs],
  ] as const) {
    if (value !== null && (typeof value !== 'number' || !Number.isFinite(value) || value < 0)) {
      return { column, value, allowed: 'null or a finite number ≥ 0 (ms)' };
    }
  }
  if (row.itlMs !== null) {
    if (!Array.isArray(row.itlMs)) return { column: 'itl_ms', value: row.itlMs, allowed: 'null or a list of numbers' };
    for (const v of row.itlMs) {
      if (typeof v !== 'number' || !Number.isFinite(v) || v < 0) {
        return { column: 'itl_ms', value: v, allowed: 'null or a list of finite numbers ≥ 0 (ms)' };
      }
    }
  }
  seenIds?.add(id);
  return null;
}

/**
 * The error message for a bad row: `<file>: row <N> (1-based), column <col>: got <value>; allowed: <rule>`.
 * @param rowNumber 1-based data row number (row 1 = first row of the trace).
 */
export function rowProblemMessage(file: string, rowNumber: number, p: RowProblem): string {
  return `${file}: row ${rowNumber} (1-based), column ${p.column}: got ${showValue(p.value)}; allowed: ${p.allowed}`;
}

function showValue(v: unknown): string {
  if (typeof v === 'string') return JSON.stringify(v.length > 60 ? `${v.slice(0, 60)}…` : v);
  if (typeof v === 'number') return Object.is(v, -0) ? '-0' : String(v);
  if (v === undefined) return 'undefined';
  try {
    const s = JSON.stringify(v);
    return s.length > 60 ? `${s.slice(0, 60)}…` : s;
  } catch {
    return String(v);
  }
}
