/**
 * Results as a directory of Parquet files, the form sharded sweeps write: one file per run and
 * table, `DIR/<table>/<run id>.parquet` (runs, requests, attempts, endpoint_timeseries, events,
 * summary), one `DIR/experiments/<experiment id>-shard-<i>-of-<N>.parquet` per shard, and a
 * manifest per finished shard (`DIR/shards/`, sweep/shard.ts). Columns and types are exactly
 * schema.ts's, so DuckDB reads the directory in place with `read_parquet('DIR/<table>/*.parquet')`
 * (`ResultsStore.openParquetDir`) and `switchyard merge` copies it into a DuckDB file.
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import { rename } from 'node:fs/promises';
import { join } from 'node:path';
import { createFolders } from './output-shape.ts';
import { TABLE_NAMES, TABLES, createTableSql, type TableName } from './schema.ts';

/**
 * Tables of other writers that a directory may also hold (`switchyard plan --output DIR/`:
 * plan-tables.ts), read in place when they have files; absent otherwise.
 */
export const EXTRA_TABLES = ['plan_points', 'plans'] as const;

/**
 * Whether `path` names a Parquet results directory to write: one that exists as such, or a path
 * ending in `/` (a directory, not a DuckDB file).
 */
export function isParquetOutput(path: string): boolean {
  return path.endsWith('/') || isParquetResultsDir(path);
}

/** Tables written per run (each has a `run_id` column). */
export const RUN_TABLES = ['runs', 'requests', 'attempts', 'endpoint_timeseries', 'events', 'summary'] as const satisfies readonly TableName[];

/** `'…'` SQL string literal. */
export function sqlString(s: string): string {
  return `'${s.replace(/'/g, "''")}'`;
}

/** Whether `path` is a Parquet results directory (it has an `experiments/` folder). */
export function isParquetResultsDir(path: string): boolean {
  try {
    return statSync(path).isDirectory() && existsSync(join(path, 'experiments'));
  } catch {
    return false;
  }
}

/** The `.parquet` files of `DIR/<table>/`, sorted by name; empty when the folder is absent. */
export function parquetFiles(dir: string, table: string): string[] {
  const folder = join(dir, table);
  if (!existsSync(folder)) return [];
  return readdirSync(folder)
    .filter((n) => n.endsWith('.parquet'))
    .sort()
    .map((n) => join(folder, n));
}

/**
 * SQL that makes each results table a view over its Parquet files (an empty table where there
 * are none): experiments de-duplicated by id (every shard writes its experiment's row; the
 * earliest start is kept).
 */
export function parquetDirSchemaSql(dir: string): string {
  const extra = EXTRA_TABLES.flatMap((name) => {
    const files = parquetFiles(dir, name);
    return files.length === 0 ? [] : [`CREATE VIEW ${name} AS SELECT * FROM read_parquet([${files.map(sqlString).join(', ')}]);`];
  });
  return [...TABLE_NAMES.map((name) => {
    const files = parquetFiles(dir, name);
    if (files.length === 0) return createTableSql(TABLES[name]);
    const cols = TABLES[name].columns.map((c) => c.column).join(', ');
    const src = `read_parquet([${files.map(sqlString).join(', ')}])`;
    if (name === 'experiments') return `CREATE VIEW experiments AS SELECT DISTINCT ON (experiment_id) ${cols} FROM ${src} ORDER BY experiment_id, started_at;`;
    return `CREATE VIEW ${name} AS SELECT ${cols} FROM ${src};`;
  }), ...extra].join('\n');
}

/**
 * Creates `dir` with its per-table folders (keeps files already there).
 * @throws Error naming `dir` when it, or a folder above it, is a file (ENOTDIR/EEXIST), or cannot be created.
 */
export async function prepareParquetDir(dir: string): Promise<void> {
  try {
    for (const sub of ['experiments', 'shards', ...RUN_TABLES]) createFolders(join(dir, sub));
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOTDIR' || code === 'EEXIST') {
      throw new Error(`--output ${dir}: a Parquet results directory was asked for (the path ends in '/'), but this path or a folder above it is a file; name a directory, or drop the trailing '/' to write one DuckDB file`);
    }
    throw new Error(`--output ${dir}: cannot create the Parquet results directory: ${(err as Error).message}`);
  }
}

/** Runs one SQL script (the store's `query`). */
export type RunSql = (sql: string) => Promise<unknown>;

/**
 * The Parquet file of run `runId` in `DIR/<table>/`. Readable run ids hold slashes (`fixed/s42`),
 * so every character outside `[A-Za-z0-9._=-]` is written as `+` and two hex digits (not `%`:
 * DuckDB decodes percent escapes in the paths it reads).
 */
export function runParquetPath(dir: string, table: string, runId: string): string {
  const name = runId.replace(/[^A-Za-z0-9._=-]/g, (c) => `+${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
  return join(dir, table, `${name}.parquet`);
}

/**
 * Copies the rows of run `runId` from every per-run table of a store into `DIR/<table>/<runId>.parquet`
 * (`runParquetPath`)
 * (written under a temporary name, then renamed, so a killed process leaves no partial file
 * that a glob would read) and deletes them from the store.
 */
export async function exportRunParquet(run: RunSql, dir: string, runId: string): Promise<void> {
  for (const table of RUN_TABLES) {
    const path = runParquetPath(dir, table, runId);
    await run(`COPY (SELECT * FROM ${table} WHERE run_id = ${sqlString(runId)}) TO ${sqlString(`${path}.tmp`)} (FORMAT parquet); DELETE FROM ${table} WHERE run_id = ${sqlString(runId)};`);
    await rename(`${path}.tmp`, path);
  }
}

/**
 * Copies whole tables of a store into `DIR/<table>/<name>.parquet` (each written aside and
 * renamed), skipping empty ones — what `switchyard plan` writes into a Parquet directory.
 */
export async function exportTablesParquet(run: (sql: string) => Promise<Array<Record<string, unknown>>>, dir: string, tables: readonly string[], name: string): Promise<void> {
  for (const table of tables) {
    const [{ n }] = (await run(`SELECT count(*)::INTEGER AS n FROM ${table}`)) as [{ n: number }];
    if (n === 0) continue;
    createFolders(join(dir, table));
    const path = join(dir, table, `${name}.parquet`);
    await run(`COPY (SELECT * FROM ${table}) TO ${sqlString(`${path}.tmp`)} (FORMAT parquet);`);
    await rename(`${path}.tmp`, path);
  }
}

/** Copies the `experiments` table of a store into `DIR/experiments/<name>.parquet` (atomically). */
export async function exportExperimentsParquet(run: RunSql, dir: string, name: string): Promise<void> {
  const path = join(dir, 'experiments', `${name}.parquet`);
  await run(`COPY (SELECT * FROM experiments) TO ${sqlString(`${path}.tmp`)} (FORMAT parquet);`);
  await rename(`${path}.tmp`, path);
}
