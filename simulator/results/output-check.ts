/**
 * The check that an experiment's output may be written: a new path, an empty file or an earlier
 * results file (replaced) pass; anything else is refused before a run touches it.
 */
import { existsSync, statSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { DuckDBInstance } from './duckdb-api.ts';

/** Bytes 8..11 of every DuckDB database file. */
const DUCKDB_MAGIC = 'DUCK';

/**
 * Refuses an output path `switchyard sim` must not replace: a directory or other non-file, a
 * non-empty file that is not a DuckDB database, or a DuckDB database that holds tables but not
 * the Switchyard results tables (`experiments`, `runs`). A missing path, an empty file, an empty
 * DuckDB database and an earlier results file pass (the run replaces the latter, as before).
 * @throws Error naming the file and saying to pick another path or delete it.
 */
export async function checkResultsOutput(path: string): Promise<void> {
  if (path === ':memory:' || !existsSync(path)) return;
  const refuse = (why: string) =>
    new Error(`output ${path} ${why}; refusing to overwrite it: pick another --output path (or output: in the experiment) or delete the file`);
  const st = statSync(path);
  if (st.isDirectory()) throw refuse('is a directory');
  if (!st.isFile()) throw refuse('is not a regular file');
  if (st.size === 0) return;
  const head = Buffer.alloc(12);
  const fh = await open(path, 'r');
  let read: number;
  try {
    ({ bytesRead: read } = await fh.read(head, 0, 12, 0));
  } finally {
    await fh.close();
  }
  if (read < 12 || head.toString('latin1', 8, 12) !== DUCKDB_MAGIC) throw refuse('exists and is not a DuckDB file');
  let tables: string[];
  try {
    const instance = await DuckDBInstance.create(path, { access_mode: 'READ_ONLY' });
    try {
      const connection = await instance.connect();
      try {
        const reader = await connection.runAndReadAll('SELECT table_name FROM duckdb_tables()');
        tables = reader.getRowObjectsJS().map((r) => String(r.table_name));
      } finally {
        connection.closeSync();
      }
    } finally {
      instance.closeSync();
    }
  } catch (err) {
    throw refuse(`is a DuckDB file that could not be opened to check it holds Switchyard results (${(err as Error).message.split('\n')[0]})`);
  }
  if (tables.length > 0 && !(tables.includes('experiments') && tables.includes('runs'))) {
    throw refuse(`is a DuckDB database without Switchyard results tables (it has: ${tables.slice(0, 5).join(', ')}${tables.length > 5 ? ', …' : ''})`);
  }
}
