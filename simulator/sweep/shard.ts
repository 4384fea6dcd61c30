/**
 * Sharded sweeps: `switchyard sim --shard i/N` runs only shard i's cells — cell k of the grid
 * belongs to shard k mod N, a split that depends only on the grid, so N processes on N machines
 * (a Kubernetes Indexed Job, a Slurm job array) together run every cell exactly once — and
 * writes them as Parquet files into a directory that `switchyard merge` folds into one DuckDB
 * file (or that `compare` and the dashboard read in place, see results/parquet-dir.ts).
 *
 * The shard index comes from `--shard i/N`, or with `--shard env` from the batch engine:
 * `JOB_COMPLETION_INDEX` (Kubernetes Indexed Job; the count is not in the environment, so it is
 * passed with `--shard-count`, e.g. the Job's `spec.completions`), or `SLURM_ARRAY_TASK_ID` −
 * `SLURM_ARRAY_TASK_MIN` out of `SLURM_ARRAY_TASK_COUNT` (a Slurm job array, any `--array=a-b`).
 */
import { createHash } from 'node:crypto';
import { mkdir, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Cell } from './grid.ts';

/** One shard of N: `index` in 0..count−1. */
export interface Shard {
  readonly index: number;
  readonly count: number;
}

/** What a finished shard writes to `DIR/shards/shard-<i>-of-<N>.json`: the merge's completeness check. */
export interface ShardManifest {
  readonly experimentId: string;
  readonly shard: number;
  readonly count: number;
  /** Cells of the whole grid. */
  readonly gridCells: number;
  /** This shard's cells: grid index and run id, in grid order. */
  readonly cells: readonly { readonly index: number; readonly runId: string }[];
}

const int = (s: string | undefined) => (s !== undefined && /^\d+$/.test(s.trim()) ? Number(s.trim()) : null);

/**
 * The shard a process runs.
 * @param spec `i/N` (0-based i), or `env` to read the batch engine's variables (module doc).
 * @param shardCount `--shard-count` (needed with `JOB_COMPLETION_INDEX`), as given.
 * @throws Error naming the option or variable and the fix when a value is missing or out of range.
 */
export function resolveShard(spec: string, shardCount: string | undefined, env: NodeJS.ProcessEnv): Shard {
  let index: number | null;
  let count: number | null;
  let where: string;
  if (spec === 'env') {
    if (env.JOB_COMPLETION_INDEX !== undefined) {
      index = int(env.JOB_COMPLETION_INDEX);
      count = int(shardCount ?? env.SHARD_COUNT);
      where = 'JOB_COMPLETION_INDEX';
      if (count === null) throw new Error('--shard env with JOB_COMPLETION_INDEX: pass the shard count with --shard-count N (the Job\'s spec.completions) or SHARD_COUNT');
    } else if (env.SLURM_ARRAY_TASK_ID !== undefined) {
      const id = int(env.SLURM_ARRAY_TASK_ID);
      const min = int(env.SLURM_ARRAY_TASK_MIN ?? '0');
      count = int(shardCount ?? env.SLURM_ARRAY_TASK_COUNT);
      where = 'SLURM_ARRAY_TASK_ID − SLURM_ARRAY_TASK_MIN';
      if (id === null || min === null) throw new Error(`--shard env: SLURM_ARRAY_TASK_ID '${env.SLURM_ARRAY_TASK_ID}' and SLURM_ARRAY_TASK_MIN '${env.SLURM_ARRAY_TASK_MIN}' must be integers`);
      if (count === null) throw new Error('--shard env with SLURM_ARRAY_TASK_ID: SLURM_ARRAY_TASK_COUNT is not set; pass --shard-count N');
      index = id - min;
    } else {
      throw new Error('--shard env: neither JOB_COMPLETION_INDEX (Kubernetes Indexed Job) nor SLURM_ARRAY_TASK_ID (Slurm array) is set; use --shard i/N');
    }
  } else {
    const m = /^(\d+)\/(\d+)$/.exec(spec.trim());
    if (!m) throw new Error(`--shard must be i/N (e.g. 0/4, 0-based) or env, got '${spec}'`);
    index = Number(m[1]);
    count = Number(m[2]);
    where = '--shard';
    if (shardCount !== undefined && int(shardCount) !== count) throw new Error(`--shard-count ${shardCount} disagrees with --shard ${spec}`);
  }
  if (index === null) throw new Error(`--shard env: ${where} must be an integer`);
  if (count < 1) throw new Error(`shard count must be ≥ 1, got ${count}`);
  if (index < 0 || index >= count) throw new Error(`${where}: shard index ${index} is outside 0..${count - 1}`);
  return { index, count };
}

/** Shard `shard`'s cells (grid index mod count), renumbered 0.. for the worker pool. */
export function shardCells(cells: readonly Cell[], shard: Shard): Cell[] {
  return cells.filter((c) => c.index % shard.count === shard.index).map((c, index) => ({ ...c, index }));
}

/**
 * An experiment id every shard of one sweep agrees on: a UUID-shaped SHA-256 of the validated
 * experiment (with its seed).
 */
export function shardExperimentId(configJson: string): string {
  const h = createHash('sha256').update(configJson).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
}

/** Path of shard `index`-of-`count`'s manifest under `dir`. */
export function manifestPath(dir: string, index: number, count: number): string {
  return join(dir, 'shards', `shard-${index}-of-${count}.json`);
}

/** Writes the manifest last, atomically (rename), so its presence means the shard finished. */
export async function writeShardManifest(dir: string, manifest: ShardManifest): Promise<void> {
  const path = manifestPath(dir, manifest.shard, manifest.count);
  await mkdir(join(dir, 'shards'), { recursive: true });
  await writeFile(`${path}.tmp`, `${JSON.stringify(manifest, null, 2)}\n`);
  await rename(`${path}.tmp`, path);
}
