// @ts-check
/**
 * Fills DuckDB data chunks from the request log's posted columns through the C API's vector
 * calls (`@duckdb/node-bindings`), for the writer thread (`log-worker.mjs`). Each column is
 * written into a typed array owned here and copied into its vector with one call, and its
 * validity mask likewise, instead of one JavaScript vector object and a call per value. A
 * VARCHAR of at most 12 ASCII bytes is written in place as an inlined `duckdb_string_t` (length,
 * then the bytes, zero padded: the layout `duckdb.h` declares), so the short repeated values of
 * the log (status, api, endpoint ids, reasons) cost no call into DuckDB; a longer or non-ASCII
 * string is handed to `duckdb_vector_assign_string_element`, which copies it into the vector's
 * string heap. Values are converted as `@duckdb/node-api`'s vectors convert them: an INTEGER
 * that is not a 32-bit integer, or a VARCHAR that is not a string, makes the chunk throw.
 *
 * Plain JavaScript, like the writer that imports it.
 */
import { endianness } from 'node:os';
import duckdb from '@duckdb/node-bindings';
import { DuckDBDataChunk } from '@duckdb/node-api';

// The typed arrays below are copied into DuckDB's vectors byte for byte: the host's byte order
// must be the little-endian one they are written in.
if (endianness() !== 'LE' || duckdb.sizeof_bool !== 1) throw new Error('request log: the chunk writer needs a little-endian host with 1-byte booleans');

/** Rows per data chunk: DuckDB's vector size (2,048). */
export const CHUNK_ROWS = duckdb.vector_size();

/** Bytes of one `duckdb_string_t`; the first 4 hold the length, up to 12 more an inlined string. */
const STRING_T_BYTES = 16;
const INLINE_BYTES = 12;

/**
 * DuckDB's logical type of a log column type.
 * @param {import('./log-row.ts').LogColumnType} t
 * @returns {import('@duckdb/node-bindings').LogicalType}
 */
function logicalType(t) {
  const T = duckdb.Type;
  switch (t) {
    case 'DOUBLE':
      return duckdb.create_logical_type(T.DOUBLE);
    case 'VARCHAR':
      return duckdb.create_logical_type(T.VARCHAR);
    case 'INTEGER':
      return duckdb.create_logical_type(T.INTEGER);
    case 'BOOLEAN':
      return duckdb.create_logical_type(T.BOOLEAN);
    case 'INTEGER[]':
      return duckdb.create_list_type(duckdb.create_logical_type(T.INTEGER));
    default:
      throw new Error(`request log: no chunk writer for column type ${String(t)}`);
  }
}

/**
 * Bytes of a validity mask for `rows` rows (whole 64-bit words, as DuckDB keeps it).
 * @param {number} rows
 */
const maskBytes = (rows) => Math.ceil(rows / 64) * 8;

/**
 * A writer of one table's data chunks.
 * @param {readonly import('./log-row.ts').LogColumnType[]} types the table's column types, in table order
 * @returns {{ heapChars: number, fill: (columns: readonly (readonly unknown[])[], from: number, to: number) => DuckDBDataChunk }}
 *   `heapChars`: characters of the strings the last fill copied into DuckDB's string heap (those
 *   not inlined), what its rows weigh beyond their fixed-size values;
 *   `fill` returns the table's chunk (the same one each time, valid until the next fill) holding rows `from` (inclusive) to `to` (exclusive, at most `CHUNK_ROWS`
 *   after `from`) of `columns` (`columns[c][r]`, one array per column); it throws on a value its
 *   column's type cannot hold (see the module's note).
 */
export function chunkWriter(types) {
  // One chunk per table for the writer's life, reset before each fill: creating one allocates
  // every vector at full size, a cost that would recur per posted batch. The appender copies a
  // chunk's values when it is appended, so the next fill may overwrite them.
  const raw = duckdb.create_data_chunk(types.map(logicalType));
  const chunk = new DuckDBDataChunk(raw);
  const mask = new Uint8Array(maskBytes(CHUNK_ROWS));
  /** Scratch arrays, one per column, reused by every chunk. */
  const scratch = types.map((t) => {
    if (t === 'DOUBLE') return new Float64Array(CHUNK_ROWS);
    if (t === 'INTEGER') return new Int32Array(CHUNK_ROWS);
    if (t === 'BOOLEAN') return new Uint8Array(CHUNK_ROWS);
    if (t === 'VARCHAR') return new Uint8Array(CHUNK_ROWS * STRING_T_BYTES);
    // INTEGER[]: each row's list entry, offset and length as two little-endian u64 (low words here).
    return new Uint32Array(CHUNK_ROWS * 4);
  });
  /** The list columns' child values, grown as needed. */
  let listChild = new Int32Array(CHUNK_ROWS * 4);
  /** Rows of the current VARCHAR column handed to DuckDB one by one. */
  const slow = new Int32Array(CHUNK_ROWS);

  /**
   * Marks the nulls of `values[from..to)` invalid in `vector`, when there are any.
   * @param {import('@duckdb/node-bindings').Vector} vector
   * @param {readonly unknown[]} values
   * @param {number} from
   * @param {number} n
   */
  const writeValidity = (vector, values, from, n) => {
    let first = -1;
    for (let r = 0; r < n; r++) {
      const v = values[from + r];
      if (v === null || v === undefined) {
        first = r;
        break;
      }
    }
    if (first < 0) return;
    const bytes = maskBytes(n);
    mask.fill(0xff, 0, bytes);
    for (let r = first; r < n; r++) {
      const v = values[from + r];
      if (v === null || v === undefined) mask[r >> 3] &= ~(1 << (r & 7));
    }
    duckdb.vector_ensure_validity_writable(vector);
    duckdb.copy_data_to_vector_validity(vector, 0, mask.buffer, 0, bytes);
  };

  return {
    heapChars: 0,
    fill(columns, from, to) {
      this.heapChars = 0;
      const n = to - from;
      if (n < 0 || n > CHUNK_ROWS) throw new Error(`request log: a chunk holds 0 to ${CHUNK_ROWS} rows, not ${n}`);
      if (columns.length !== types.length) throw new Error(`request log: ${columns.length} columns for a table of ${types.length}`);
      duckdb.data_chunk_reset(raw);
      for (let c = 0; c < types.length; c++) {
        const values = /** @type {readonly unknown[]} */ (columns[c]);
        if (values.length < to) throw new Error(`request log: column ${c + 1} has ${values.length} values for ${to} rows`);
        const vector = duckdb.data_chunk_get_vector(raw, c);
        const t = types[c];
        if (t === 'DOUBLE') {
          const a = /** @type {Float64Array} */ (scratch[c]);
          for (let r = 0; r < n; r++) {
            const v = values[from + r];
            a[r] = v === null || v === undefined ? 0 : /** @type {number} */ (v);
          }
          duckdb.copy_data_to_vector(vector, 0, a.buffer, 0, n * 8);
        } else if (t === 'INTEGER') {
          const a = /** @type {Int32Array} */ (scratch[c]);
          for (let r = 0; r < n; r++) {
            const v = values[from + r];
            if (v === null || v === undefined) a[r] = 0;
            else if (!Number.isInteger(v) || /** @type {number} */ (v) < -2147483648 || /** @type {number} */ (v) > 2147483647) throw new Error(`column ${c + 1}: ${String(v)} is not a 32-bit integer`);
            else a[r] = /** @type {number} */ (v);
          }
          duckdb.copy_data_to_vector(vector, 0, a.buffer, 0, n * 4);
        } else if (t === 'BOOLEAN') {
          const a = /** @type {Uint8Array} */ (scratch[c]);
          for (let r = 0; r < n; r++) a[r] = values[from + r] ? 1 : 0;
          duckdb.copy_data_to_vector(vector, 0, a.buffer, 0, n);
        } else if (t === 'VARCHAR') {
          const a = /** @type {Uint8Array} */ (scratch[c]);
          a.fill(0, 0, n * STRING_T_BYTES);
          let slowRows = 0;
          for (let r = 0; r < n; r++) {
            const v = values[from + r];
            if (v === null || v === undefined) continue;
            const len = typeof v === 'string' ? v.length : INLINE_BYTES + 1;
            let inline = len <= INLINE_BYTES;
            if (inline) {
              const s = /** @type {string} */ (v);
              const at = r * STRING_T_BYTES;
              for (let i = 0; i < len; i++) {
                const code = s.charCodeAt(i);
                // NUL goes the slow way too, so that every string is cut at a NUL alike.
                if (code >= 0x80 || code === 0) {
                  inline = false;
                  break;
                }
                a[at + 4 + i] = code;
              }
              if (inline) a[at] = len;
              else a.fill(0, at, at + STRING_T_BYTES);
            }
            if (!inline) slow[slowRows++] = r;
          }
          duckdb.copy_data_to_vector(vector, 0, a.buffer, 0, n * STRING_T_BYTES);
          for (let i = 0; i < slowRows; i++) {
            const r = slow[i];
            const v = /** @type {string} */ (values[from + r]);
            duckdb.vector_assign_string_element(vector, r, v);
            this.heapChars += v.length;
          }
        } else {
          const entries = /** @type {Uint32Array} */ (scratch[c]);
          entries.fill(0, 0, n * 4);
          let total = 0;
          for (let r = 0; r < n; r++) {
            const v = /** @type {readonly number[] | null | undefined} */ (values[from + r]);
            if (v === null || v === undefined) continue;
            if (total + v.length > listChild.length) {
              const grown = new Int32Array(Math.max(listChild.length * 2, total + v.length));
              grown.set(listChild.subarray(0, total));
              listChild = grown;
            }
            entries[r * 4] = total;
            entries[r * 4 + 2] = v.length;
            for (let i = 0; i < v.length; i++) {
              const x = v[i];
              if (!Number.isInteger(x) || x < -2147483648 || x > 2147483647) throw new Error(`column ${c + 1}: list element ${String(x)} is not a 32-bit integer`);
              listChild[total++] = x;
            }
          }
          duckdb.list_vector_reserve(vector, total);
          duckdb.copy_data_to_vector(duckdb.list_vector_get_child(vector), 0, listChild.buffer, 0, total * 4);
          duckdb.list_vector_set_size(vector, total);
          duckdb.copy_data_to_vector(vector, 0, entries.buffer, 0, n * 16);
        }
        writeValidity(vector, values, from, n);
      }
      duckdb.data_chunk_set_size(raw, n);
      return chunk;
    },
  };
}
