// Sweeps: the grid expands into stable, unique, validated cells; running it on 1 or 2 worker
// threads writes the same DuckDB tables.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { expandGrid, setPath } from '../../simulator/sweep/grid.ts';
import { runExperiment, storedConfig } from '../../simulator/sim-command.ts';
import { ResultsStore } from '../../simulator/results/results-store.ts';
import { azureConv, mixedExperiment } from './fixtures.ts';

const dir = mkdtempSync(join(tmpdir(), 'switchyard-sweep-'));

describe('expandGrid', () => {
  const exp = mixedExperiment({
    seed: 3,
    runs: [{ strategy: 'fixed' }, { strategy: 'round_robin' }],
    scenarios: { outage: [{ kind: 'crash', endpoint: 'deepinfra', from_ms: 1000, to_ms: 2000 }] },
    faults: [{ kind: 'slow', endpoint: 'replica-0', from_ms: 0, to_ms: 500, factor: 2 }],
    sweep: { seeds: 2, scenarios: ['none', 'outage'], axes: { 'client.timeout_ms': [30_000, 60_000] } },
  });

  it('is runs × scenarios × axes × seeds, with stable unique ids and flat params', () => {
    const cells = expandGrid(exp, 3);
    expect(cells).toHaveLength(16);
    expect(cells.slice(0, 4).map((c) => c.runId)).toEqual([
      'fixed/none/timeout_ms30000/s3',
      'round_robin/none/timeout_ms30000/s3',
      'fixed/none/timeout_ms30000/s4',
      'round_robin/none/timeout_ms30000/s4',
    ]);
    expect(new Set(cells.map((c) => c.runId)).size).toBe(16);
    expect(expandGrid(exp, 3).map((c) => c.runId)).toEqual(cells.map((c) => c.runId));
    const last = cells[15]!;
    expect(last.runId).toBe('round_robin/outage/timeout_ms60000/s4');
    expect(last.pairKey).toBe('scenario=outage,client.timeout_ms=60000');
    expect(JSON.parse(last.paramsJson)).toEqual({ label: 'round_robin', strategy: 'round_robin', router_params: {}, seed: 4, scenario: 'outage', 'client.timeout_ms': 60_000 });
    expect(last.experiment.client.timeout_ms).toBe(60_000);
    expect(last.experiment.faults.map((f) => f.kind)).toEqual(['slow', 'crash']);
    expect(cells[0]!.experiment.faults.map((f) => f.kind)).toEqual(['slow']);
    expect(last.experiment.sweep).toBeUndefined();
    // Cells that differ only in the run pair up: same pair key, same seed.
    expect(cells[0]!.pairKey).toBe(cells[1]!.pairKey);
    expect(cells[0]!.seed).toBe(cells[1]!.seed);
  });

  it('without a sweep: one cell per run at the seed', () => {
    const cells = expandGrid(mixedExperiment({ runs: [{ strategy: 'fixed' }, { strategy: 'round_robin', label: 'rr' }] }), 42);
    expect(cells.map((c) => [c.runId, c.pairKey, c.seed])).toEqual([
      ['fixed/s42', '', 42],
      ['rr/s42', '', 42],
    ]);
  });

  it('sets list entries by name and names ambiguous axes by their whole path', () => {
    const cells = expandGrid(mixedExperiment({ sweep: { replicas: [1, 2], rate_scale: [0.5], axes: { 'providers.deepinfra.limits.rpm': [60], 'providers.minimax.limits.rpm': [120] } } }), 1);
    expect(cells.map((c) => c.runId)).toEqual([
      'round_robin/replicas1/rate0.5/providers_deepinfra_limits_rpm60/providers_minimax_limits_rpm120/s1',
      'round_robin/replicas2/rate0.5/providers_deepinfra_limits_rpm60/providers_minimax_limits_rpm120/s1',
    ]);
    expect(cells[0]!.experiment.providers.map((p) => p.limits.rpm)).toEqual([60, 120]);
    expect(cells[0]!.experiment.replicas.count).toBe(1);
    const obj: Record<string, unknown> = { runs: [{ strategy: 'fixed', params: {} }] };
    setPath(obj, 'runs.fixed.params.alpha', 2);
    expect(obj).toEqual({ runs: [{ strategy: 'fixed', params: { alpha: 2 } }] });
    expect(() => setPath(obj, 'runs.nope.params', 1)).toThrow(/'runs\.nope' names no entry/);
  });

  it('names a swept trace by its base name, never its path', () => {
    const cells = expandGrid(mixedExperiment({ sweep: { axes: { trace: ['../traces/azure-2023/conv.arrow', '/data/x/code.arrow'] } } }), 2);
    expect(cells.map((c) => c.runId)).toEqual(['round_robin/conv/s2', 'round_robin/code/s2']);
  });

  it('stores the experiment without absolute paths', () => {
    const exp = { ...mixedExperiment({ trace: '/abs/where/conv.arrow', output: '/abs/out/r.duckdb' }), tracePath: '/abs/where/conv.arrow', file: '/abs/where/exp.yaml' };
    const stored = JSON.stringify(storedConfig(exp, 9));
    expect(stored).not.toContain('/abs/');
    expect(JSON.parse(stored)).toMatchObject({ file: 'exp.yaml', seed: 9, trace: 'conv.arrow', output: 'r.duckdb' });
    expect(storedConfig(mixedExperiment({ trace: '../traces/x.arrow' }), 1).trace).toBe('../traces/x.arrow');
  });

  it('names the cell and field when a combination is invalid', () => {
    const bad = mixedExperiment({ faults: [{ kind: 'crash', endpoint: 'replica-1', from_ms: 0, to_ms: 1 }], sweep: { replicas: [1, 2] } });
    expect(() => expandGrid(bad, 1)).toThrow(/sweep cell replicas=1[\s\S]*faults\.0\.endpoint/);
    expect(() => mixedExperiment({ sweep: { scenarios: ['missing'] } })).toThrow(/no scenario 'missing'/);
  });
});

describe('switchyard sim sweeps', () => {
  const file = join(dir, 'sweep.yaml');
  writeFileSync(
    file,
    `name: sweep
trace: ${azureConv}
seed: 7
limit: 120
model: m
replicas: { count: 2, profile: llama2-70b-h100-tp4 }
providers:
  - { name: deepinfra, profile: minimax-m2.5-openrouter/deepinfra }
  - name: chutes
    profile: minimax-m2.5-subscriptions/chutes
    limits: { quota: [{ window_ms: 10000, requests: 5 }] }
client: { stream: 0.7, retries: { max: 1 } }
costs: { gpu_usd_per_hour: 2, gpus_per_replica: 4 }
scenarios:
  outage: [{ kind: crash, endpoint: deepinfra, from_ms: 5000, to_ms: 12000 }]
runs:
  - strategy: fixed
  - strategy: round_robin
sweep: { seeds: 2, scenarios: [none, outage] }
compare: { baseline: fixed, resamples: 500 }
output: ${join(dir, 'unused.duckdb')}
`,
  );

  async function tables(path: string) {
    const store = await ResultsStore.open(path);
    try {
      return {
        runs: await store.query('select * exclude (experiment_id, wall_seconds, git_revision) from runs order by run_id'),
        requests: await store.query('select * from requests order by run_id, request_id'),
        attempts: await store.query('select * from attempts order by run_id, request_id, attempt_id'),
        events: await store.query('select * from events order by run_id, at_ms, kind, endpoint_id, detail_json'),
        timeseries: await store.query('select * from endpoint_timeseries order by run_id, endpoint_id, at_ms'),
        summary: await store.query('select * from summary order by run_id'),
        comparisons: await store.query('select * exclude (experiment_id) from comparisons order by candidate, pair_key, metric'),
      };
    } finally {
      await store.close();
    }
  }

  it('writes every cell as a run; results are the same with --jobs 1 and --jobs 2', async () => {
    const one = await runExperiment(file, { jobs: 1, progress: false, print: () => {}, output: join(dir, 'one.duckdb') });
    const lines: string[] = [];
    await runExperiment(file, { jobs: 2, progress: false, print: (l) => lines.push(l), output: join(dir, 'two.duckdb') });
    expect(lines.join('\n')).toMatch(/8 runs: 2 strategies × scenario × 2 seeds, 2 jobs/);
    expect(lines.join('\n')).toMatch(/round_robin vs fixed \[scenario=outage\], 2 seeds/);
    expect(one.summaries.map((s) => s.runId)).toEqual([
      'fixed/none/s7',
      'round_robin/none/s7',
      'fixed/none/s8',
      'round_robin/none/s8',
      'fixed/outage/s7',
      'round_robin/outage/s7',
      'fixed/outage/s8',
      'round_robin/outage/s8',
    ]);
    const a = await tables(join(dir, 'one.duckdb'));
    const b = await tables(join(dir, 'two.duckdb'));
    expect(a.requests).toHaveLength(8 * 120);
    expect(b).toEqual(a);
    expect(a.runs.map((r) => (r as { pair_key: string }).pair_key)).toContain('scenario=outage');
    expect(a.events.some((e) => (e as { kind: string }).kind === 'fault')).toBe(true);
    expect(a.attempts.some((x) => (x as { status: number | null }).status === 429)).toBe(true); // chutes' quota
    expect(a.comparisons.length).toBeGreaterThan(0);
  });

  it('the results thread (trace read and DuckDB writes beside the replay) writes the same rows, in the same order', async () => {
    // Small chunks, so each cell's rows reach the thread in several batches while it runs.
    await runExperiment(file, { jobs: 1, progress: false, print: () => {}, output: join(dir, 'in-thread.duckdb') });
    await runExperiment(file, { jobs: 2, resultsThread: true, chunkRows: 16, progress: false, print: () => {}, output: join(dir, 'thread.duckdb') });
    const unordered = async (path: string) => {
      const store = await ResultsStore.open(path);
      try {
        return {
          requests: await store.query('select * from requests'),
          attempts: await store.query('select * from attempts'),
          timeseries: await store.query('select * from endpoint_timeseries'),
          events: await store.query('select * from events'),
          summary: await store.query('select * from summary'),
        };
      } finally {
        await store.close();
      }
    };
    const a = await unordered(join(dir, 'in-thread.duckdb'));
    const b = await unordered(join(dir, 'thread.duckdb'));
    expect(a.requests).toHaveLength(8 * 120);
    expect(b).toEqual(a);
    expect(await tables(join(dir, 'thread.duckdb'))).toEqual(await tables(join(dir, 'in-thread.duckdb')));
  }, 60_000);
});

describe('dotted paths of sweep axes and plan configurations', () => {
  it('a misspelt field is reported at load, with its line and the nearest name', async () => {
    const { loadExperiment } = await import('../../simulator/experiment.ts');
    const file = join(dir, 'typo.yaml');
    writeFileSync(
      file,
      [
        'name: typo',
        `trace: ${azureConv}`,
        'model: m',
        'replicas: { count: 1, profile: llama2-70b-h100-tp4 }',
        'runs: [{ strategy: fixed }]',
        'sweep:',
        '  axes:',
        '    client.timeout_msx: [1000, 2000]',
        '    providers.deepinfra.limits.rpm: [10]',
        'plan:',
        '  slo: { goodput: 0.5 }',
        '  max_rate:',
        '    configs:',
        '      - label: a',
        '        set: { replica.count: 2 }',
        '',
      ].join('\n'),
    );
    let message = '';
    try {
      loadExperiment(file);
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toMatch(/typo\.yaml:8: sweep\.axes\.client\.timeout_msx: 'client\.timeout_msx' names no experiment field: client has no 'timeout_msx' \(did you mean 'client\.timeout_ms'\?\)/);
    expect(message).toMatch(/typo\.yaml:15: plan\.max_rate\.configs\.0\.set\.replica\.count: .*did you mean 'replicas\.count'/);
    // A list entry named by its name passes the check (the cell's own validation covers the rest).
    expect(message).not.toMatch(/providers\.deepinfra/);
  });

  it('an unknown top-level segment or a path below a single value is refused with the nearest valid key', async () => {
    const { loadExperiment } = await import('../../simulator/experiment.ts');
    const file = join(dir, 'engine-typo.yaml');
    writeFileSync(
      file,
      [
        'name: engine-typo',
        `trace: ${azureConv}`,
        'model: m',
        'replicas: { count: 1, profile: llama2-70b-h100-tp4 }',
        'runs: [{ strategy: fixed }]',
        'sweep:',
        '  axes:',
        '    engine.max_num_seq: [8, 16]',
        '    replicas.engine.max_num_seq: [8]',
        '',
      ].join('\n'),
    );
    expect(() => loadExperiment(file)).toThrow(/engine-typo\.yaml:8: sweep\.axes\.engine\.max_num_seq: 'engine\.max_num_seq' names no experiment field: an experiment has no 'engine' \(did you mean 'replicas\.max_num_seqs'\?\); allowed there: name, /);
    expect(() => loadExperiment(file)).toThrow(/engine-typo\.yaml:9: sweep\.axes\.replicas\.engine\.max_num_seq: 'replicas\.engine\.max_num_seq' names no experiment field: replicas\.engine is a single value, not a mapping \(did you mean 'replicas\.max_num_seqs'\?\)/);
  });
});
