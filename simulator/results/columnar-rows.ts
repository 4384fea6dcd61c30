/**
 * Result rows as columns of typed arrays: what a sweep worker hands to the thread that writes the
 * results (transferred, not copied: one `ArrayBuffer` per column, see {@link transferList}), and
 * what the results store appends chunk by chunk (results-store.ts `appendColumns`). A column per
 * table column of schema.ts, in its order:
 * - DOUBLE and BIGINT → `Float64Array` (BIGINT values are safe integers),
 * - INTEGER → `Int32Array`, BOOLEAN → `Uint8Array` (0/1),
 * - VARCHAR → dictionary codes (`Int32Array`) into a list of the distinct strings (run ids,
 *   statuses and endpoint names repeat on every row),
 * - nullable numbers carry a `Uint8Array` null mask (1 = null); a null string is code −1.
 * Encoding checks every value as the row appender does (same errors, naming `table[i].field`),
 * so a batch that encodes appends without a type error. Decoding gives back rows equal to the
 * encoded ones field for field (a test checks it).
 */
import { TABLES, type ColumnDef, type TableDef, type TableName } from './schema.ts';
import { checkValue } from './value-check.ts';

/** One encoded column; `nulls[i] === 1` marks row i null (nullable numeric columns only). */
export type ColumnData =
  | { readonly kind: 'f64'; readonly values: Float64Array; readonly nulls: Uint8Array | null }
  | { readonly kind: 'i32'; readonly values: Int32Array; readonly nulls: Uint8Array | null }
  | { readonly kind: 'bool'; readonly values: Uint8Array; readonly nulls: Uint8Array | null }
  | { readonly kind: 'str'; readonly codes: Int32Array; readonly dict: readonly string[] };

/** Rows of one table as columns (table.columns order); structured-cloneable. */
export interface ColumnarRows {
  readonly table: TableName;
  /** Rows encoded. */
  readonly length: number;
  readonly columns: readonly ColumnData[];
}

/** The cheap test of a non-null value (checkValue builds the error when it fails). */
function fits(type: ColumnDef['type'], v: unknown): boolean {
  switch (type) {
    case 'DOUBLE':
      return typeof v === 'number' && Number.isFinite(v);
    case 'INTEGER':
      return typeof v === 'number' && (v | 0) === v;
    case 'BIGINT':
      return typeof v === 'number' && Number.isSafeInteger(v);
    case 'BOOLEAN':
      return typeof v === 'boolean';
    default:
      return false;
  }
}

function encodeColumn(table: TableDef, col: ColumnDef, rows: readonly object[], from: number, to: number): ColumnData {
  const n = to - from;
  const field = col.field;
  if (col.type === 'VARCHAR') {
    const codes = new Int32Array(n);
    const dict: string[] = [];
    const index = new Map<string, number>();
    for (let i = 0; i < n; i++) {
      const v = (rows[from + i] as Record<string, unknown>)[field];
      if (typeof v === 'string') {
        let c = index.get(v);
        if (c === undefined) {
          c = dict.length;
          dict.push(v);
          index.set(v, c);
        }
        codes[i] = c;
      } else if (v === null && col.nullable) codes[i] = -1;
      else checkValue(table.name, from + i, col, v); // throws
    }
    return { kind: 'str', codes, dict };
  }
  let nulls: Uint8Array | null = null;
  const values = col.type === 'INTEGER' ? new Int32Array(n) : col.type === 'BOOLEAN' ? new Uint8Array(n) : new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const v = (rows[from + i] as Record<string, unknown>)[field];
    if (v === null && col.nullable) {
      (nulls ??= new Uint8Array(n))[i] = 1;
      continue;
    }
    if (!fits(col.type, v)) checkValue(table.name, from + i, col, v); // throws: fits and checkValue agree
    values[i] = col.type === 'BOOLEAN' ? (v ? 1 : 0) : (v as number);
  }
  if (col.type === 'INTEGER') return { kind: 'i32', values: values as Int32Array, nulls };
  if (col.type === 'BOOLEAN') return { kind: 'bool', values: values as Uint8Array, nulls };
  return { kind: 'f64', values: values as Float64Array, nulls };
}

/**
 * Encodes `rows[from, to)` of `table` as columns.
 * @throws TypeError / RangeError naming `table[i].field` (i counted from the start of `rows`) for
 *   the first value that does not fit its column — as the store's row appender would.
 */
export function encodeRows(table: TableName, rows: readonly object[], from = 0, to = rows.length): ColumnarRows {
  const def = TABLES[table];
  return { table, length: to - from, columns: def.columns.map((c) => encodeColumn(def, c, rows, from, to)) };
}

/** The rows `encodeRows` encoded, as plain objects keyed by field (numbers, strings, booleans, null). */
export function decodeRows<T = Record<string, unknown>>(cols: ColumnarRows): T[] {
  const def = TABLES[cols.table];
  const out: Record<string, unknown>[] = Array.from({ length: cols.length }, () => ({}));
  def.columns.forEach((c, ci) => {
    const d = cols.columns[ci]!;
    for (let i = 0; i < cols.length; i++) out[i]![c.field] = columnValue(d, i);
  });
  return out as T[];
}

/** Row `i` of column `d`: number, string, boolean or null. */
export function columnValue(d: ColumnData, i: number): string | number | boolean | null {
  if (d.kind === 'str') {
    const c = d.codes[i]!;
    return c < 0 ? null : d.dict[c]!;
  }
  if (d.nulls !== null && d.nulls[i] === 1) return null;
  return d.kind === 'bool' ? d.values[i] === 1 : d.values[i]!;
}

/** The buffers of `batches`, to pass as `postMessage`'s transfer list (each buffer once). */
export function transferList(batches: readonly ColumnarRows[]): ArrayBuffer[] {
  const seen = new Set<ArrayBuffer>();
  for (const b of batches) {
    for (const d of b.columns) {
      if (d.kind === 'str') seen.add(d.codes.buffer as ArrayBuffer);
      else {
        seen.add(d.values.buffer as ArrayBuffer);
        if (d.nulls) seen.add(d.nulls.buffer as ArrayBuffer);
      }
    }
  }
  return [...seen];
}
