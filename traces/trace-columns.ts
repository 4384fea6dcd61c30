/**
 * A parsed trace as columns, for handing to worker threads without each of them reading and
 * parsing the Arrow file again: numbers live in `SharedArrayBuffer`s (posted to every worker
 * without a copy), strings in one text shared by all string columns (one string to clone, not one
 * per row). `traceFromColumns(traceToColumns(rows))` gives rows equal to `rows` field for field
 * (a test checks it), so a cell replays the same rows in any thread.
 */
import type { TraceRow } from './trace-row.ts';

/** A trace's rows as columns; structured-cloneable (buffers shared, not copied). */
export interface TraceColumns {
  readonly length: number;
  readonly arrivalMs: Float64Array;
  readonly inputTokens: Float64Array;
  readonly outputTokens: Float64Array;
  /** 1 = streamed. */
  readonly stream: Uint8Array;
  /** Measured TTFT and E2E, ms; NaN where null. */
  readonly ttftMs: Float64Array;
  readonly e2eMs: Float64Array;
  /**
   * String fields, 4 per row (requestId, sessionId, callerId, model): `[start, end)` into `text`
   * at `strings[2 * (4 * row + field)]`; start −1 = null.
   */
  readonly strings: Int32Array;
  readonly text: string;
  /** List fields (hashIds, itlMs): row i's values are `[offsets[2i], offsets[2i + 1])` of `values`; start −1 = null. */
  readonly hashIds: { readonly offsets: Int32Array; readonly values: Float64Array };
  readonly itlMs: { readonly offsets: Int32Array; readonly values: Float64Array };
}

/** A typed array over a fresh `SharedArrayBuffer`. */
function shared<T extends Float64Array | Int32Array | Uint8Array>(Ctor: { new (b: SharedArrayBuffer): T; BYTES_PER_ELEMENT: number }, n: number): T {
  return new Ctor(new SharedArrayBuffer(Math.max(1, n) * Ctor.BYTES_PER_ELEMENT));
}

function listColumn(rows: readonly TraceRow[], get: (r: TraceRow) => readonly number[] | null) {
  let total = 0;
  for (const r of rows) total += get(r)?.length ?? 0;
  const offsets = shared(Int32Array, 2 * rows.length);
  const values = shared(Float64Array, total);
  let at = 0;
  rows.forEach((r, i) => {
    const list = get(r);
    if (list === null) {
      offsets[2 * i] = -1;
      offsets[2 * i + 1] = -1;
      return;
    }
    offsets[2 * i] = at;
    for (const v of list) values[at++] = v;
    offsets[2 * i + 1] = at;
  });
  return { offsets, values };
}

/** Encodes `rows` (in the order given) as shared columns. */
export function traceToColumns(rows: readonly TraceRow[]): TraceColumns {
  const n = rows.length;
  const arrivalMs = shared(Float64Array, n);
  const inputTokens = shared(Float64Array, n);
  const outputTokens = shared(Float64Array, n);
  const stream = shared(Uint8Array, n);
  const ttftMs = shared(Float64Array, n);
  const e2eMs = shared(Float64Array, n);
  const strings = shared(Int32Array, 8 * n);
  const parts: string[] = [];
  const seen = new Map<string, number>();
  let textLength = 0;
  const putString = (slot: number, v: string | null) => {
    if (v === null) {
      strings[2 * slot] = -1;
      strings[2 * slot + 1] = -1;
      return;
    }
    let start = seen.get(v);
    if (start === undefined) {
      start = textLength;
      parts.push(v);
      textLength += v.length;
      seen.set(v, start);
    }
    strings[2 * slot] = start;
    strings[2 * slot + 1] = start + v.length;
  };
  rows.forEach((r, i) => {
    arrivalMs[i] = r.arrivalMs;
    inputTokens[i] = r.inputTokens;
    outputTokens[i] = r.outputTokens;
    stream[i] = r.stream ? 1 : 0;
    ttftMs[i] = r.ttftMs ?? Number.NaN;
    e2eMs[i] = r.e2eMs ?? Number.NaN;
    putString(4 * i, r.requestId);
    putString(4 * i + 1, r.sessionId);
    putString(4 * i + 2, r.callerId);
    putString(4 * i + 3, r.model);
  });
  return {
    length: n,
    arrivalMs,
    inputTokens,
    outputTokens,
    stream,
    ttftMs,
    e2eMs,
    strings,
    text: parts.join(''),
    hashIds: listColumn(rows, (r) => r.hashIds),
    itlMs: listColumn(rows, (r) => r.itlMs),
  };
}

/** The rows `traceToColumns` encoded, in order (fresh objects and arrays). */
export function traceFromColumns(c: TraceColumns): TraceRow[] {
  const str = (slot: number): string | null => {
    const start = c.strings[2 * slot]!;
    return start < 0 ? null : c.text.slice(start, c.strings[2 * slot + 1]!);
  };
  const list = (l: TraceColumns['hashIds'], i: number): number[] | null => {
    const start = l.offsets[2 * i]!;
    if (start < 0) return null;
    // A loop, not Array.from (which goes through the typed array's iterator: ~10x slower here);
    // push keeps the array packed, as the reader's arrays are.
    const out: number[] = [];
    for (let j = start, end = l.offsets[2 * i + 1]!; j < end; j++) out.push(l.values[j]!);
    return out;
  };
  const rows: TraceRow[] = new Array(c.length);
  for (let i = 0; i < c.length; i++) {
    const ttft = c.ttftMs[i]!;
    const e2e = c.e2eMs[i]!;
    rows[i] = {
      arrivalMs: c.arrivalMs[i]!,
      requestId: str(4 * i)!,
      sessionId: str(4 * i + 1),
      callerId: str(4 * i + 2),
      model: str(4 * i + 3),
      inputTokens: c.inputTokens[i]!,
      outputTokens: c.outputTokens[i]!,
      hashIds: list(c.hashIds, i),
      stream: c.stream[i] === 1,
      ttftMs: Number.isNaN(ttft) ? null : ttft,
      e2eMs: Number.isNaN(e2e) ? null : e2e,
      itlMs: list(c.itlMs, i),
    };
  }
  return rows;
}
