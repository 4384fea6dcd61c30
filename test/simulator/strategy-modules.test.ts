// Strategy modules named in an experiment (`strategies:`, relative to the experiment file): the
// example module routes a simulator run, in this thread and in sweep worker threads alike (same
// rows with --jobs 1 and 2); a run naming a strategy whose module is missing is refused with the
// module's path; an unknown params key of a module strategy is refused like a built-in's.
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadExperimentAsync } from '../../simulator/experiment.ts';
import { runExperiment } from '../../simulator/sim-command.ts';
import { ResultsStore } from '../../simulator/results/results-store.ts';
import { mooncakeConversation, repoRoot } from './fixtures.ts';

const dir = mkdtempSync(join(tmpdir(), 'switchyard-sim-strategies-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
copyFileSync(join(repoRoot, 'examples', 'strategies', 'cheapest-first.mjs'), join(dir, 'cheapest-first.mjs'));

function writeExperiment(name: string, runs: string, strategies = '[./cheapest-first.mjs]'): string {
  const file = join(dir, `${name}.yaml`);
  writeFileSync(
    file,
    `name: ${name}
trace: ${mooncakeConversation}
seed: 3
rate_scale: 0.2
limit: 120
model: kimi
replicas: { count: 3, profile: llama2-70b-h100-tp4 }
strategies: ${strategies}
runs:
${runs}
output: ${join(dir, `${name}.duckdb`)}
`,
  );
  return file;
}

async function query<T>(path: string, sql: string): Promise<T[]> {
  const store = await ResultsStore.open(path);
  try {
    return await store.query<T>(sql);
  } finally {
    await store.close();
  }
}

describe('strategy modules in the simulator', () => {
  it('a run of the module strategy routes by it: all unpriced, so by endpoint id, spilling down that order only', async () => {
    const file = writeExperiment('routes', '  - strategy: cheapest-first\n  - strategy: round_robin\n');
    const exp = await loadExperimentAsync(file);
    expect(exp.strategyModules?.map((m) => [m.name, m.error])).toEqual([['cheapest-first', null]]);
    const one = await runExperiment(file, { jobs: 1, progress: false, print: () => {}, output: join(dir, 'one.duckdb') });
    const rows = await query<{ label: string; endpoint_id: string; n: number }>(
      one.output,
      'select r.label, q.endpoint_id, count(*)::int as n from requests q join runs r using (run_id) group by 1, 2 order by 1, 2',
    );
    // Its order is replica-0, replica-1, replica-2: the first while it admits, the next when it is full.
    const cheapest = new Map(rows.filter((r) => r.label === 'cheapest-first').map((r) => [r.endpoint_id, r.n]));
    expect(cheapest.get('kimi:replica-2')).toBeUndefined();
    expect(cheapest.get('kimi:replica-0')!).toBeGreaterThan(cheapest.get('kimi:replica-1') ?? 0);
    expect((cheapest.get('kimi:replica-0') ?? 0) + (cheapest.get('kimi:replica-1') ?? 0)).toBe(120);
    expect(rows.filter((r) => r.label === 'round_robin').length).toBe(3);

    // Sweep worker threads import the module themselves: same rows with two jobs.
    const two = await runExperiment(file, { jobs: 2, progress: false, print: () => {}, output: join(dir, 'two.duckdb') });
    const sql = 'select * exclude (run_id) from requests order by run_id, request_id';
    expect(await query(two.output, sql)).toEqual(await query(one.output, sql));
  }, 120_000);

  it('a run naming a strategy whose module is missing is refused with the module path', async () => {
    const file = writeExperiment('missing', '  - strategy: gone\n', '[./gone.mjs]');
    await expect(loadExperimentAsync(file)).rejects.toThrow(
      new RegExp(`runs\\[0\\] \\(label gone\\)\\.strategy: router 'gone' is unavailable: strategy module ${join(dir, 'gone.mjs').replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}: cannot be imported`),
    );
  });

  it('an unknown params key of a module strategy is refused, naming the allowed keys', async () => {
    const file = writeExperiment('badkey', '  - strategy: cheapest-first\n    params: { unpriced: true }\n');
    await expect(loadExperimentAsync(file)).rejects.toThrow(/runs\[0\] \(label cheapest-first\)\.params: router_params for 'cheapest-first' are invalid: unknown key\(s\) 'unpriced'.*allowed keys: unpriced_first/);
  });
});

describe('experiments/strategy-module.yaml', () => {
  it('loads with the example module from its strategies: line', async () => {
    const exp = await loadExperimentAsync(join(repoRoot, 'experiments', 'strategy-module.yaml'));
    expect(exp.strategyModules).toEqual([{ path: join(repoRoot, 'examples', 'strategies', 'cheapest-first.mjs'), name: 'cheapest-first', error: null, workerSafe: true }]);
    expect(exp.runs.map((r) => r.strategy)).toEqual(['cheapest-first', 'fixed']);
  });
});
