/**
 * `switchyard merge DIR --into results.duckdb`: folds the Parquet files of a sharded sweep
 * (parquet-dir.ts, sweep/shard.ts) into one results DuckDB file. It first checks that the
 * directory is complete — one manifest per shard 0..N−1, all of one experiment and shard count,
 * together naming every grid cell exactly once, each with its files — then copies the tables in
 * grid order, so the file holds the same rows in the same order as the sweep run in one process.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { parseArgs } from 'node:util';
import { UsageError, type CliCommand } from '../../bin/command.ts';
import type { ShardManifest } from '../sweep/shard.ts';
import { isParquetResultsDir, parquetFiles, RUN_TABLES, runParquetPath, sqlString } from './parquet-dir.ts';
import { ResultsStore } from './results-store.ts';
import { TABLES } from './schema.ts';

/** What {@link mergeShards} did. */
export interface MergeReport {
  readonly experimentId: string;
  readonly shards: number;
  readonly runs: number;
  /** Rows copied per table. */
  readonly rows: Readonly<Record<string, number>>;
}

/**
 * Reads and checks the shard manifests of `dir` (module doc).
 * @returns the run ids of every cell, in grid order, and the experiment id.
 * @throws Error naming the directory and what is missing or inconsistent.
 */
export function checkShards(dir: string): { experimentId: string; count: number; runIds: string[] } {
  if (!isParquetResultsDir(dir)) throw new Error(`${dir}: not a directory of Parquet results (no experiments/ folder); run switchyard sim --shard i/N --output ${dir}`);
  const shardsDir = join(dir, 'shards');
  const names = existsSync(shardsDir) ? readdirSync(shardsDir).filter((n) => /^shard-\d+-of-\d+\.json$/.test(n)) : [];
  if (names.length === 0) throw new Error(`${dir}: no finished shard (shards/shard-<i>-of-<N>.json is written when a shard ends)`);
  const manifests = names.map((n) => JSON.parse(readFileSync(join(shardsDir, n), 'utf8')) as ShardManifest);
  const first = manifests[0]!;
  for (const m of manifests) {
    if (m.count !== first.count || m.experimentId !== first.experimentId || m.gridCells !== first.gridCells) {
      throw new Error(`${dir}: shards of different sweeps (shard ${first.shard}/${first.count} of experiment ${first.experimentId}, shard ${m.shard}/${m.count} of ${m.experimentId}); use one directory per sweep`);
    }
  }
  const have = new Set(manifests.map((m) => m.shard));
  const missing = Array.from({ length: first.count }, (_, i) => i).filter((i) => !have.has(i));
  if (missing.length > 0) throw new Error(`${dir}: shards ${missing.join(', ')} of ${first.count} have not finished (no shards/shard-<i>-of-${first.count}.json); run them first`);
  const runIds: (string | undefined)[] = new Array(first.gridCells);
  for (const m of manifests) {
    for (const c of m.cells) {
      if (runIds[c.index] !== undefined) throw new Error(`${dir}: grid cell ${c.index} (${c.runId}) appears in two shards`);
      runIds[c.index] = c.runId;
    }
  }
  const absent = runIds.flatMap((r, i) => (r === undefined ? [i] : []));
  if (absent.length > 0) throw new Error(`${dir}: grid cells ${absent.join(', ')} are in no shard`);
  for (const runId of runIds as string[]) {
    for (const t of RUN_TABLES) {
      if (!existsSync(runParquetPath(dir, t, runId))) throw new Error(`${dir}: run ${runId} has no ${relative(dir, runParquetPath(dir, t, runId))}; rerun its shard`);
    }
  }
  return { experimentId: first.experimentId, count: first.count, runIds: runIds as string[] };
}

/**
 * Merges the shards in `dir` into the results file `into` (created if absent; an existing
 * results file keeps its rows and gains these).
 * @throws Error from {@link checkShards}; DuckDB's constraint Error when `into` already holds
 *   one of the runs (merge into a new file, or remove the old one).
 */
export async function mergeShards(dir: string, into: string): Promise<MergeReport> {
  const { experimentId, count, runIds } = checkShards(dir);
  const store = await ResultsStore.open(into);
  const rows: Record<string, number> = {};
  try {
    await store.query('BEGIN TRANSACTION');
    try {
      const cols = TABLES.experiments.columns.map((c) => c.column).join(', ');
      const expFiles = parquetFiles(dir, 'experiments');
      await store.query(
        `INSERT INTO experiments (${cols}) SELECT DISTINCT ON (experiment_id) ${cols} FROM read_parquet([${expFiles.map(sqlString).join(', ')}]) WHERE experiment_id = ${sqlString(experimentId)} ORDER BY experiment_id, started_at`,
      );
      for (const t of RUN_TABLES) {
        const tcols = TABLES[t].columns.map((c) => c.column).join(', ');
        const files = runIds.map((r) => sqlString(runParquetPath(dir, t, r))).join(', ');
        const [n] = await store.query<{ n: number }>(`INSERT INTO ${t} (${tcols}) SELECT ${tcols} FROM read_parquet([${files}]); SELECT count(*) AS n FROM read_parquet([${files}])`);
        rows[t] = n?.n ?? 0;
      }
      await store.query('COMMIT');
    } catch (err) {
      await store.query('ROLLBACK');
      throw err;
    }
  } finally {
    await store.close();
  }
  return { experimentId, shards: count, runs: runIds.length, rows };
}

/** The `merge` command. */
export const mergeCommand: CliCommand = {
  name: 'merge',
  summary: 'merge the Parquet files of a sharded sweep (sim --shard) into one results DuckDB file',
  usage: `usage: switchyard merge <dir> --into <results.duckdb>

Checks that every shard of the sweep in <dir> finished (shards/shard-<i>-of-<N>.json) and copies
its Parquet files into <results.duckdb>, in grid order: the same rows as the sweep run in one
process. compare and the dashboard also read <dir> in place, without merging.`,
  async run(args) {
    let parsed;
    try {
      parsed = parseArgs({ args, allowPositionals: true, options: { into: { type: 'string' } } });
    } catch (err) {
      if ((err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) throw new UsageError((err as Error).message);
      throw err;
    }
    const dir = parsed.positionals[0];
    if (!dir || parsed.positionals.length > 1) throw new UsageError('merge takes exactly one directory');
    if (!parsed.values.into) throw new UsageError('--into <results.duckdb> is required');
    const r = await mergeShards(dir, parsed.values.into);
    process.stdout.write(`merged ${r.shards} shards, ${r.runs} runs (${Object.entries(r.rows).map(([t, n]) => `${n} ${t}`).join(', ')}) into ${parsed.values.into}\n`);
    return 0;
  },
};
