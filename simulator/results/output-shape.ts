/**
 * The part of the output check that needs no DuckDB: a path `switchyard sim` would replace must
 * be missing, an empty file or a file that starts like a DuckDB database. `sim` runs it before
 * any replay (so a mistyped output is refused at once, not after the first run), and the results
 * thread runs it again, followed by the check of the tables inside (`output-check.ts`). The
 * output's folder is created here too, one level at a time, so an impossible folder fails at
 * once with its path.
 */
import { closeSync, existsSync, mkdirSync, openSync, readSync, statSync } from 'node:fs';
import { dirname } from 'node:path';

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

/**
 * Creates folder `dir` and any missing folders above it, one level at a time from the nearest
 * one that exists. Node's `mkdir(…, { recursive: true })` is not used: under a pseudo file
 * system such as `/proc` it retries its ENOENT without end instead of failing.
 * @throws Error from the file system (ENOENT, ENOTDIR, EACCES, …) for the first level that
 *   cannot be created, or EEXIST when a level is a file.
 */
export function createFolders(dir: string): void {
  const missing: string[] = [];
  let at = dir;
  while (!existsSync(at)) {
    missing.push(at);
    const up = dirname(at);
    if (up === at) break;
    at = up;
  }
  if (existsSync(at) && !statSync(at).isDirectory()) {
    throw Object.assign(new Error(`ENOTDIR: not a directory, '${at}'`), { code: 'ENOTDIR' });
  }
  for (let i = missing.length - 1; i >= 0; i--) {
    try {
      mkdirSync(missing[i]!);
    } catch (err) {
      // Made by someone else meanwhile: fine when it is a folder.
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST' || !statSync(missing[i]!).isDirectory()) throw err;
    }
  }
}

/**
 * Creates the folder an output DuckDB file goes into, before any run, so an output that cannot
 * be written is refused at once rather than after the replay.
 * @throws Error naming the output path, the folder and the system's reason.
 */
export function prepareOutputFolder(path: string): void {
  if (path === ':memory:') return;
  const dir = dirname(path);
  try {
    createFolders(dir);
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    const why = e.code === 'ENOTDIR' ? 'a path above it is a file' : e.code === 'EACCES' || e.code === 'EPERM' ? 'permission denied' : (e.code ?? e.message);
    throw new Error(`output ${path} cannot be written: its folder ${dir} cannot be created (${why}): pick another --output path (or output: in the experiment)`);
  }
}
