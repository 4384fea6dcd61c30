/**
 * The check that an experiment's output may be written: a new path, an empty file or an earlier
 * results file (replaced) pass; anything else is refused before a run touches it.
 */
import { DuckDBInstance } from './duckdb-api.ts';
import { checkOutputShape, refuseOutput } from './output-shape.ts';

/**
 * Refuses an output path `switchyard sim` must not replace: a directory or other non-file, a
 * non-empty file that is not a DuckDB database (`checkOutputShape`), or a DuckDB database that
 * holds tables but not the Switchyard results tables (`experiments`, `runs`). A missing path, an
 * empty file, an empty DuckDB database and an earlier results file pass (the run replaces the
 * latter, as before).
 * @throws Error naming the file and saying to pick another path or delete it.
 */
export async function checkResultsOutput(path: string): Promise<void> {
  if (!checkOutputShape(path)) return;
  const refuse = (why: string) => refuseOutput(path, why);
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
