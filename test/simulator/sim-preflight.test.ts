// `switchyard sim` checks before it touches the output: an existing non-results file is never
// overwritten, bad run routing and a missing trace fail first and leave the output byte-identical.
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { describe, expect, it } from 'vitest';
import { runExperiment } from '../../simulator/sim-command.ts';
import { ResultsStore } from '../../simulator/results/results-store.ts';
import { mooncakeConversation } from './fixtures.ts';

const dir = mkdtempSync(join(tmpdir(), 'switchyard-preflight-'));
const quiet = { jobs: 1, progress: false, print: () => {} } as const;

function writeExperiment(name: string, { runs = '  - strategy: fixed\n  - strategy: round_robin\n', trace = mooncakeConversation, extra = '' } = {}): string {
  const file = join(dir, `${name}.yaml`);
  writeFileSync(
    file,
    `name: ${name}
trace: ${trace}
seed: 3
rate_scale: 0.2
limit: 40
model: kimi
replicas: { count: 2, profile: llama2-70b-h100-tp4 }
runs:
${runs}output: ${join(dir, `${name}.duckdb`)}
${extra}`,
  );
  return file;
}

async function countOf(path: string, table: string): Promise<number> {
  const store = await ResultsStore.open(path);
  try {
    const [r] = await store.query<{ n: number }>(`select count(*)::INTEGER as n from ${table}`);
    return r!.n;
  } finally {
    await store.close();
  }
}

describe('switchyard sim: output file safety', () => {
  it('refuses to overwrite an existing file that is not a DuckDB file, and leaves it as it was', async () => {
    const notes = join(dir, 'notes.txt');
    writeFileSync(notes, 'notes\n');
    const lines: string[] = [];
    await expect(runExperiment(writeExperiment('notes'), { ...quiet, output: notes, print: (l) => lines.push(l) })).rejects.toThrow(
      /output .*notes\.txt exists and is not a DuckDB file; refusing to overwrite it: pick another --output path .* or delete it/,
    );
    expect(readFileSync(notes, 'utf8')).toBe('notes\n');
    // Refused before the trace is replayed, not after the first run.
    expect(lines.some((l) => /requests replayed/.test(l))).toBe(false);
  });

  it('an output whose folder cannot be made fails before the replay, naming the path', async () => {
    const file = writeExperiment('unwritable');
    const notes = join(dir, 'in-the-way.txt');
    writeFileSync(notes, 'notes\n');
    const lines: string[] = [];
    const under = join(notes, 'x.duckdb');
    await expect(runExperiment(file, { ...quiet, output: under, print: (l) => lines.push(l) })).rejects.toThrow(
      `output ${under} cannot be written: its folder ${notes} cannot be created (a path above it is a file): pick another --output path`,
    );
    expect(readFileSync(notes, 'utf8')).toBe('notes\n');
    expect(lines.some((l) => /requests replayed/.test(l))).toBe(false);
    // Under /proc no folder can be made; Node's recursive mkdir never returns there.
    if (existsSync('/proc/self')) {
      await expect(runExperiment(file, { ...quiet, output: '/proc/nope/x.duckdb', print: (l) => lines.push(l) })).rejects.toThrow(
        'output /proc/nope/x.duckdb cannot be written: its folder /proc/nope cannot be created (',
      );
      expect(lines.some((l) => /requests replayed/.test(l))).toBe(false);
    }
    // Missing folders above a writable one are made, as before.
    const nested = join(dir, 'a', 'b', 'c.duckdb');
    await runExperiment(file, { ...quiet, output: nested });
    expect(await countOf(nested, 'runs')).toBe(2);
  });

  it('refuses a directory and a DuckDB database without the results tables', async () => {
    const file = writeExperiment('other');
    const lines: string[] = [];
    await expect(runExperiment(file, { ...quiet, output: dir, print: (l) => lines.push(l) })).rejects.toThrow(/is a directory; refusing to overwrite it/);
    expect(lines.some((l) => /requests replayed/.test(l))).toBe(false);
    const other = join(dir, 'other-db.duckdb');
    const instance = await DuckDBInstance.create(other);
    const conn = await instance.connect();
    await conn.run('create table mine (x integer); insert into mine values (1)');
    conn.closeSync();
    instance.closeSync();
    const before = readFileSync(other);
    await expect(runExperiment(file, { ...quiet, output: other })).rejects.toThrow(/other-db\.duckdb is a DuckDB database without Switchyard results tables \(it has: mine\)/);
    expect(readFileSync(other).equals(before)).toBe(true);
  });

  it('an existing results file is replaced, as before (one experiment, one set of runs)', async () => {
    const file = writeExperiment('again');
    const out = join(dir, 'again.duckdb');
    await runExperiment(file, quiet);
    await runExperiment(file, quiet);
    expect(await countOf(out, 'experiments')).toBe(1);
    expect(await countOf(out, 'runs')).toBe(2);
    expect(await countOf(out, 'requests')).toBe(80);
  });
});

describe('switchyard sim: config checked before the output and trace', () => {
  it('a typo\'d strategy names runs[i] and leaves a pre-existing results file byte-identical', async () => {
    const good = writeExperiment('typo');
    const out = join(dir, 'typo.duckdb');
    await runExperiment(good, quiet);
    const before = readFileSync(out);
    const bad = writeExperiment('typo', { runs: '  - strategy: fixed\n  - strategy: round_robbin\n' });
    const err = await runExperiment(bad, quiet).then(() => null, (e: Error) => e);
    expect(err?.message).toMatch(/typo\.yaml:\d+: runs\[1\] \(label round_robbin\)\.strategy: unknown router 'round_robbin'; known routers: .*round_robin/);
    expect(readFileSync(out).equals(before)).toBe(true);
    expect(existsSync(`${out}.wal`)).toBe(false);
  });

  it('a typo in a run\'s params names runs[i].params', async () => {
    const bad = writeExperiment('params', { runs: '  - strategy: fixed\n  - strategy: routewise\n    params: { budget_alfa: 1 }\n' });
    await expect(runExperiment(bad, quiet)).rejects.toThrow(/params\.yaml:\d+: runs\[1\] \(label routewise\)\.params: .*unknown key\(s\) 'budget_alfa'/);
    expect(existsSync(join(dir, 'params.duckdb'))).toBe(false);
  });

  it('a bad experiment-level routing: key names the routing block and the key', async () => {
    const bad = writeExperiment('routing', { extra: 'routing: { bogus_key: 1 }\n' });
    await expect(runExperiment(bad, quiet)).rejects.toThrow(/routing\.yaml: routing is invalid:[\s\S]*bogus_key/);
    expect(existsSync(join(dir, 'routing.duckdb'))).toBe(false);
  });

  it('routing is checked before the trace is read (a bad strategy wins over a missing trace)', async () => {
    const bad = writeExperiment('order', { runs: '  - strategy: round_robbin\n', trace: '../nope/missing.arrow' });
    await expect(runExperiment(bad, quiet)).rejects.toThrow(/runs\[0\] \(label round_robbin\)\.strategy: unknown router/);
  });

  it('a missing trace names the experiment file and the resolved path, and creates no output', async () => {
    const file = writeExperiment('missing', { trace: '../nope/missing.arrow' });
    const resolved = resolve(dir, '../nope/missing.arrow');
    const err = await runExperiment(file, quiet).then(() => null, (e: Error) => e);
    expect(err?.message).toBe(`${file}: trace: file not found: ${resolved} (paths are relative to the experiment file)`);
    expect(existsSync(join(dir, 'missing.duckdb'))).toBe(false);
  });
});
