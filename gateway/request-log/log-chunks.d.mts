/** Types of `log-chunks.mjs` (plain JavaScript, run by the writer thread), for TypeScript callers. */
import type { DuckDBDataChunk } from '@duckdb/node-api';
import type { LogColumnType } from './log-row.ts';

/** Rows per data chunk: DuckDB's vector size (2,048). */
export const CHUNK_ROWS: number;

/** A writer of one table's data chunks (see `chunkWriter`). */
export interface ChunkWriter {
  /** Characters of the strings the last fill copied into DuckDB's string heap (those not inlined). */
  readonly heapChars: number;
  /**
   * The table's chunk (the same one each time, valid until the next fill) holding rows `from`
   * (inclusive) to `to` (exclusive, at most `CHUNK_ROWS` after `from`) of `columns`
   * (`columns[c][r]`, one array per column, in table order).
   * @throws Error on a value its column's type cannot hold, or a row range over `CHUNK_ROWS`.
   */
  fill(columns: readonly (readonly unknown[])[], from: number, to: number): DuckDBDataChunk;
}

/** A chunk writer for a table of these column types, in table order. */
export function chunkWriter(types: readonly LogColumnType[]): ChunkWriter;
