/**
 * The part of the output check that needs no DuckDB: a path `switchyard sim` would replace must
 * be missing, an empty file or a file that starts like a DuckDB database. `sim` runs it before
 * any replay (so a mistyped output is refused at once, not after the first run), and the results
 * thread runs it again, followed by the check of the tables inside (`output-check.ts`).
 */
import { closeSync, existsSync, openSync, readSync, statSync } from 'node:fs';

/** Bytes 8..11 of every DuckDB database file. */
const DUCKDB_MAGIC = 'DUCK';

/** The error for an output that must not be replaced, saying why and what to do. */
export function refuseOutput(path: string, why: string): Error {
  return new Error(`output ${path} ${why}; refusing to overwrite it: pick another --output path (or output: in the experiment) or delete it`);
}

/**
 * Whether the regular file at `path` starts like a DuckDB database (its magic at bytes 8..11).
 * Reads 12 bytes; false for a shorter file.
 * @throws Error from the file system when the file cannot be opened.
 */
export function startsLikeDuckDb(path: string): boolean {
  const head = Buffer.alloc(12);
  const fd = openSync(path, 'r');
  let read: number;
  try {
    read = readSync(fd, head, 0, 12, 0);
  } finally {
    closeSync(fd);
  }
  return read === 12 && head.toString('latin1', 8, 12) === DUCKDB_MAGIC;
}

/**
 * Refuses an output path that is a directory or other non-file, or a non-empty file that is not
 * a DuckDB database. A missing path, ':memory:', an empty file and any DuckDB file pass.
 * @returns whether the path is an existing, non-empty DuckDB file (whose tables are still to check).
 * @throws Error (`refuseOutput`) naming the path.
 */
export function checkOutputShape(path: string): boolean {
  if (path === ':memory:' || !existsSync(path)) return false;
  const st = statSync(path);
  if (st.isDirectory()) throw refuseOutput(path, 'is a directory');
  if (!st.isFile()) throw refuseOutput(path, 'is not a regular file');
  if (st.size === 0) return false;
  if (!startsLikeDuckDb(path)) throw refuseOutput(path, 'exists and is not a DuckDB file');
  return true;
}
