/**
 * `switchyard merge DIR --into results.duckdb`: folds the Parquet files of a sharded sweep
 * (parquet-dir.ts, sweep/shard.ts) into one results DuckDB file. It first checks that the
 * directory is complete — one manifest per shard 0..N−1, all of one experiment and shard count,
 * together naming every grid cell exactly once, each with its files — then copies the tables in
 * grid order, so the file holds the same rows in the same order as the sweep run in one process.
 * A planner round sharded the same way (`plan --shard`, plan/plan-command.ts) merges too: every
 * plan whose shards 0..N−1 all left their manifest (`shards/plan-<plan id>-<i>-of-<N>.json`) is
 * copied with its `plans` and `plan_points`, each probe run once.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { basename, join, relative } from 'node:path';
import { parseArgs } from 'node:util';
import { UsageError, type CliCommand } from '../../bin/command.ts';
import type { ShardManifest } from '../sweep/shard.ts';
import { PLAN_TABLES_SQL, type PlanShardManifest } from '../plan/plan-tables.ts';
import { isParquetResultsDir, parquetFiles, RUN_TABLES, runParquetPath, sqlString } from './parquet-dir.ts';
import { ResultsStore } from './results-store.ts';
import { TABLES } from './schema.ts';

/** What {@link mergeShards} did. */
export interface MergeReport {
  /** The sharded sweep's experiment id; null when the directory holds only plan shards. */
  readonly experimentId: string | null;
  /** The sweep's shard count (0 without a sweep). */
  readonly shards: number;
  /** The sweep's runs (0 without a sweep). */
  readonly runs: number;
  /** Rows copied per table (sweep and plans together). */
  readonly rows: Readonly<Record<string, number>>;
  /** The plan rounds merged: plan id and shard count. */
  readonly plans: readonly { readonly planId: string; readonly shards: number }[];
}

const PLAN_MANIFEST = /^plan-(.+)-(\d+)-of-(\d+)\.json$/;
const SWEEP_MANIFEST = /^shard-\d+-of-\d+\.json$/;

/** The manifest names in `DIR/shards/` (none when the folder is absent). */
function manifestNames(dir: string): string[] {
  const shardsDir = join(dir, 'shards');
  return existsSync(shardsDir) ? readdirSync(shardsDir).sort() : [];
}

/**
 * Reads and checks the plan shard manifests of `dir` (module doc).
 * @returns each plan round found, by plan id, with its shard count.
 * @throws Error naming the directory, the plan and the shards that have not finished, or a
 *   shard whose experiments file is gone.
 */
export function checkPlanShards(dir: string): { planId: string; count: number }[] {
  const byPlan = new Map<string, PlanShardManifest[]>();
  for (const n of manifestNames(dir)) {
    if (!PLAN_MANIFEST.test(n)) continue;
    const m = JSON.parse(readFileSync(join(dir, 'shards', n), 'utf8')) as PlanShardManifest;
    byPlan.set(m.planId, [...(byPlan.get(m.planId) ?? []), m]);
  }
  const out: { planId: string; count: number }[] = [];
  for (const [planId, ms] of byPlan) {
    const count = ms[0]!.count;
    if (ms.some((m) => m.count !== count)) throw new Error(`${dir}: plan ${planId} has shards of different counts (${[...new Set(ms.map((m) => m.count))].join(', ')}); rerun it into a fresh directory`);
    const have = new Set(ms.map((m) => m.shard));
    const missing = Array.from({ length: count }, (_, i) => i).filter((i) => !have.has(i));
    if (missing.length > 0) throw new Error(`${dir}: plan ${planId}: shards ${missing.join(', ')} of ${count} have not finished (no shards/plan-${planId}-<i>-of-${count}.json); run them first`);
    for (let i = 0; i < count; i++) {
      const f = join(dir, 'experiments', `${planId}-shard-${i}-of-${count}.parquet`);
      if (!existsSync(f)) throw new Error(`${dir}: plan ${planId}: shard ${i} has no ${relative(dir, f)}; rerun the shard`);
    }
    out.push({ planId, count });
  }
  return out;
}

/**
 * Reads and checks the shard manifests of `dir` (module doc).
 * @returns the run ids of every cell, in grid order, and the experiment id.
 * @throws Error naming the directory and what is missing or inconsistent.
 */
export function checkShards(dir: string): { experimentId: string; count: number; runIds: string[] } {
  if (!isParquetResultsDir(dir)) throw new Error(`${dir}: not a directory of Parquet results (no experiments/ folder); run switchyard sim --shard i/N --output ${dir}`);
  const shardsDir = join(dir, 'shards');
  const names = manifestNames(dir).filter((n) => SWEEP_MANIFEST.test(n));
  if (names.length === 0) throw new Error(`${dir}: no finished shard (shards/shard-<i>-of-<N>.json, or plan-<plan id>-<i>-of-<N>.json for plan --shard, is written when a shard ends)`);
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
  const plans = isParquetResultsDir(dir) ? checkPlanShards(dir) : [];
  const hasSweep = manifestNames(dir).some((n) => SWEEP_MANIFEST.test(n));
  const sweep = hasSweep || plans.length === 0 ? checkShards(dir) : null;
  const store = await ResultsStore.open(into);
  const rows: Record<string, number> = {};
  const add = (t: string, n: number) => (rows[t] = (rows[t] ?? 0) + n);
  try {
    await store.query('BEGIN TRANSACTION');
    try {
      if (sweep) await mergeSweep(store, dir, sweep.experimentId, sweep.runIds, add);
      for (const p of plans) await mergePlan(store, dir, p.planId, add);
      await store.query('COMMIT');
    } catch (err) {
      await store.query('ROLLBACK');
      throw err;
    }
  } finally {
    await store.close();
  }
  return { experimentId: sweep?.experimentId ?? null, shards: sweep?.count ?? 0, runs: sweep?.runIds.length ?? 0, rows, plans: plans.map((p) => ({ planId: p.planId, shards: p.count })) };
}

/** Copies one plan round's files (its shards' experiments, runs, summary, plan_points, plans) into `store`. */
async function mergePlan(store: ResultsStore, dir: string, planId: string, add: (table: string, n: number) => void): Promise<void> {
  await store.query(PLAN_TABLES_SQL);
  const prefix = `${planId}-shard-`;
  const files = (t: string) => parquetFiles(dir, t).filter((f) => basename(f).startsWith(prefix));
  for (const t of ['experiments', 'runs', 'summary', 'plan_points', 'plans'] as const) {
    const fs = files(t);
    if (fs.length === 0) continue;
    const src = `read_parquet([${fs.map(sqlString).join(', ')}])`;
    const cols = t === 'plan_points' || t === 'plans' ? '*' : TABLES[t].columns.map((c) => c.column).join(', ');
    // Every shard writes the plan's experiment row; a probe two searches share may have run in two shards.
    const key = t === 'experiments' ? 'experiment_id' : t === 'runs' || t === 'summary' ? 'run_id' : null;
    const select = key ? `SELECT DISTINCT ON (${key}) ${cols} FROM ${src} ORDER BY ${key}${t === 'experiments' ? ', started_at' : ''}` : `SELECT ${cols} FROM ${src}`;
    const target = cols === '*' ? t : `${t} (${cols})`;
    const [n] = await store.query<{ n: number }>(`INSERT INTO ${target} ${select}; SELECT count(*) AS n FROM (${select})`);
    add(t, n?.n ?? 0);
  }
}

/** Copies a sharded sweep's files into `store`, in grid order. */
async function mergeSweep(store: ResultsStore, dir: string, experimentId: string, runIds: readonly string[], add: (table: string, n: number) => void): Promise<void> {
  const cols = TABLES.experiments.columns.map((c) => c.column).join(', ');
  const expFiles = parquetFiles(dir, 'experiments');
  await store.query(
    `INSERT INTO experiments (${cols}) SELECT DISTINCT ON (experiment_id) ${cols} FROM read_parquet([${expFiles.map(sqlString).join(', ')}]) WHERE experiment_id = ${sqlString(experimentId)} ORDER BY experiment_id, started_at`,
  );
  for (const t of RUN_TABLES) {
    const tcols = TABLES[t].columns.map((c) => c.column).join(', ');
    const files = runIds.map((r) => sqlString(runParquetPath(dir, t, r))).join(', ');
    const [n] = await store.query<{ n: number }>(`INSERT INTO ${t} (${tcols}) SELECT ${tcols} FROM read_parquet([${files}]); SELECT count(*) AS n FROM read_parquet([${files}])`);
    add(t, n?.n ?? 0);
  }
}

/** The `merge` command. */
export const mergeCommand: CliCommand = {
  name: 'merge',
  summary: 'merge the Parquet files of a sharded sweep (sim --shard) or plan round (plan --shard) into one results DuckDB file',
  usage: `usage: switchyard merge <dir> --into <results.duckdb>

Checks that every shard of the sweep in <dir> finished (shards/shard-<i>-of-<N>.json) and copies
its Parquet files into <results.duckdb>, in grid order: the same rows as the sweep run in one
process. Plan rounds sharded with plan --shard (shards/plan-<id>-<i>-of-<N>.json) merge too.
compare and the dashboard also read <dir> in place, without merging.`,
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
    const what = [...(r.experimentId ? [`${r.shards} shards, ${r.runs} runs`] : []), ...r.plans.map((p) => `plan ${p.planId} (${p.shards} shards)`)].join('; ');
    process.stdout.write(`merged ${what} (${Object.entries(r.rows).map(([t, n]) => `${n} ${t}`).join(', ')}) into ${parsed.values.into}\n`);
    return 0;
  },
};
