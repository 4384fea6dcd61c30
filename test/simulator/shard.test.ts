// Sharded sweeps: a sweep run as 4 shards in 4 processes and merged holds the same rows and
// summaries as the same sweep run in one process; the shard comes from i/N or a batch engine's
// environment; an incomplete directory does not merge; compare reads the directory in place.
// (Four node processes start here: the slowest test of the file, several seconds on a busy machine.)
import { spawn } from 'node:child_process';
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ResultsCatalog } from '../../notebooks-web/server/results-catalog.ts';
import { runCompare } from '../../simulator/compare-command.ts';
import { checkShards, mergeShards } from '../../simulator/results/merge.ts';
import { RUN_TABLES, runParquetPath } from '../../simulator/results/parquet-dir.ts';
import { ResultsStore } from '../../simulator/results/results-store.ts';
import { runExperiment } from '../../simulator/sim-command.ts';
import { resolveShard, shardCells } from '../../simulator/sweep/shard.ts';
import { expandGrid } from '../../simulator/sweep/grid.ts';
import { azureConv, mixedExperiment, repoRoot } from './fixtures.ts';

const dir = mkdtempSync(join(tmpdir(), 'switchyard-shard-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('resolveShard', () => {
  it('reads i/N, a Kubernetes Indexed Job and a Slurm array', () => {
    expect(resolveShard('2/4', undefined, {})).toEqual({ index: 2, count: 4 });
    expect(resolveShard('env', '5', { JOB_COMPLETION_INDEX: '3' })).toEqual({ index: 3, count: 5 });
    expect(resolveShard('env', undefined, { SLURM_ARRAY_TASK_ID: '12', SLURM_ARRAY_TASK_MIN: '10', SLURM_ARRAY_TASK_COUNT: '4' })).toEqual({ index: 2, count: 4 });
  });

  it('names what is missing or out of range', () => {
    expect(() => resolveShard('4/4', undefined, {})).toThrow(/outside 0..3/);
    expect(() => resolveShard('1-4', undefined, {})).toThrow(/i\/N/);
    expect(() => resolveShard('env', undefined, { JOB_COMPLETION_INDEX: '0' })).toThrow(/--shard-count/);
    expect(() => resolveShard('env', undefined, {})).toThrow(/JOB_COMPLETION_INDEX/);
  });

  it('splits the grid into disjoint shards that cover it', () => {
    const cells = expandGrid(mixedExperiment({ runs: [{ strategy: 'fixed' }, { strategy: 'round_robin' }], sweep: { seeds: 3, rate_scale: [1, 2] } }), 1);
    const ids = [0, 1, 2, 3].flatMap((i) => shardCells(cells, { index: i, count: 4 }).map((c) => c.runId));
    expect([...ids].sort()).toEqual(cells.map((c) => c.runId).sort());
    expect(shardCells(cells, { index: 1, count: 4 }).map((c) => c.index)).toEqual([0, 1, 2]);
  });
});

describe('sim --shard and merge', () => {
  const file = join(dir, 'sweep.yaml');
  writeFileSync(
    file,
    JSON.stringify({
      name: 'sharded',
      trace: azureConv,
      seed: 5,
      limit: 40,
      model: 'm',
      replicas: { count: 2, profile: 'llama2-70b-h100-tp4' },
      providers: [{ name: 'deepinfra', profile: 'minimax-m2.5-openrouter/deepinfra' }],
      runs: [{ strategy: 'fixed' }, { strategy: 'round_robin' }],
      sweep: { seeds: 2, rate_scale: [1, 2] },
      output: join(dir, 'unused.duckdb'),
    }),
  );
  const shardsDir = join(dir, 'shards-out');

  const sim = (args: string[]) =>
    new Promise<{ code: number | null; out: string }>((resolve) => {
      const child = spawn(process.execPath, [join(repoRoot, 'bin', 'switchyard.mjs'), 'sim', file, '--jobs', '1', '--no-progress', ...args], { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      child.stdout.on('data', (b: Buffer) => (out += b.toString()));
      child.stderr.on('data', (b: Buffer) => (out += b.toString()));
      child.on('close', (code) => resolve({ code, out }));
    });

  async function tableRows(store: ResultsStore, table: string): Promise<unknown[]> {
    // experiment_id differs (random vs. the shards' content hash), wall time is not deterministic.
    const exclude = table === 'runs' ? ' EXCLUDE (experiment_id, wall_seconds)' : '';
    return store.query(`SELECT *${exclude} FROM ${table} ORDER BY ALL`);
  }

  it('4 shards in 4 processes, merged, equal one process with the same seeds', async () => {
    const single = join(dir, 'single.duckdb');
    const [, ...results] = await Promise.all([
      runExperiment(file, { jobs: 1, output: single, progress: false, print: () => {} }),
      ...[0, 1, 2, 3].map((i) => sim(['--shard', `${i}/4`, '--output', shardsDir])),
    ]);
    for (const r of results) expect(r.out).toContain('written to');
    expect(results.map((r) => r.code)).toEqual([0, 0, 0, 0]);

    const merged = join(dir, 'merged.duckdb');
    const report = await mergeShards(shardsDir, merged);
    expect(report).toMatchObject({ shards: 4, runs: 8 });

    const a = await ResultsStore.open(single);
    const b = await ResultsStore.open(merged);
    const c = await ResultsStore.openParquetDir(shardsDir);
    try {
      for (const t of RUN_TABLES) {
        const want = await tableRows(a, t);
        if (t !== 'events') expect(want.length).toBeGreaterThan(0);
        expect(await tableRows(b, t)).toEqual(want);
        expect(await tableRows(c, t)).toEqual(want);
      }
      // Merged in grid order, as one process writes them.
      const order = 'SELECT run_id FROM runs';
      expect(await b.query(order)).toEqual(await a.query(order));
      expect(await b.query('SELECT count(*)::INT AS n FROM experiments')).toEqual([{ n: 1 }]);
    } finally {
      await Promise.all([a.close(), b.close(), c.close()]);
    }

    // The dashboard lists the directory as one entry and reads it in place.
    const catalog = ResultsCatalog.create([shardsDir]);
    expect(catalog.entries().map((e) => e.name)).toEqual(['shards-out']);
    const db = await catalog.db('shards-out');
    expect(await db.query('SELECT count(*)::INT AS n FROM summary')).toEqual([{ n: 8 }]);
    catalog.close();

    // compare reads the directory in place.
    const lines: string[] = [];
    await runCompare(shardsDir, { baseline: 'fixed', resamples: 200, print: (l) => lines.push(l) });
    expect(lines.join('\n')).toContain('read');
    expect(lines.join('\n')).toContain('in place');

    // Without a shard's manifest (a shard that has not finished) the directory does not merge.
    const manifest = join(shardsDir, 'shards', 'shard-2-of-4.json');
    renameSync(manifest, `${manifest}.away`);
    expect(() => checkShards(shardsDir)).toThrow(/shards 2 of 4 have not finished/);
    renameSync(`${manifest}.away`, manifest);
    rmSync(runParquetPath(shardsDir, 'requests', 'fixed/rate2/s6'));
    expect(() => checkShards(shardsDir)).toThrow(/run fixed\/rate2\/s6 has no requests/);
  });
});
