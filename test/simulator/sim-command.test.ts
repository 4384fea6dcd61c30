// `switchyard sim` end to end: a YAML experiment on the real trace → a real DuckDB file.
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runExperiment } from '../../simulator/sim-command.ts';
import { loadExperiment } from '../../simulator/experiment.ts';
import { ResultsStore } from '../../simulator/results/results-store.ts';
import { mooncakeConversation } from './fixtures.ts';

const dir = mkdtempSync(join(tmpdir(), 'switchyard-sim-'));

function writeExperiment(name: string, extra = ''): string {
  const file = join(dir, `${name}.yaml`);
  writeFileSync(
    file,
    `name: ${name}
trace: ${mooncakeConversation}
seed: 3
rate_scale: 0.2
limit: 300
model: kimi
replicas: { count: 4, profile: llama2-70b-h100-tp4 }
runs:
  - strategy: fixed
  - strategy: round_robin
output: ${join(dir, `${name}.duckdb`)}
${extra}`,
  );
  return file;
}

async function requestsOf(path: string) {
  const store = await ResultsStore.open(path);
  try {
    return await store.query('select * exclude (run_id) from requests order by run_id, request_id');
  } finally {
    await store.close();
  }
}

describe('switchyard sim', () => {
  it('writes every table and one requests row per trace request per run; prints the seed first', async () => {
    const lines: string[] = [];
    const report = await runExperiment(writeExperiment('e1'), { progress: false, print: (l) => lines.push(l) });
    expect(lines[0]).toMatch(/^seed 3\b/);
    expect(lines.join('\n')).toMatch(/TTFT p50/);
    const store = await ResultsStore.open(report.output);
    try {
      const [c] = await store.query<{ n: number }>('select count(*) as n from requests');
      expect(c!.n).toBe(600);
      const tables = await store.query<{ name: string }>("select table_name as name from information_schema.tables order by 1");
      expect(tables.map((t) => t.name)).toEqual(['attempts', 'comparisons', 'endpoint_timeseries', 'events', 'experiments', 'requests', 'runs', 'summary']);
      const runs = await store.query<{ strategy: string; seed: number; node_version: string }>('select strategy, seed, node_version from runs order by strategy');
      expect(runs.map((r) => r.strategy)).toEqual(['fixed', 'round_robin']);
      expect(runs[0]!.node_version).toBe(process.version);
      const summary = await store.query<{ ttft_p50_ms: number; ok_requests: number }>('select * from summary');
      expect(summary).toHaveLength(2);
      expect(summary.every((s) => s.ok_requests === 300 && s.ttft_p50_ms > 0)).toBe(true);
    } finally {
      await store.close();
    }
  });

  it('same seed twice ⇒ identical requests tables; --seed changes the draws', async () => {
    const file = writeExperiment('e2');
    await runExperiment(file, { jobs: 1, progress: false, print: () => {}, output: join(dir, 'a.duckdb') });
    await runExperiment(file, { jobs: 1, progress: false, print: () => {}, output: join(dir, 'b.duckdb') });
    await runExperiment(file, { jobs: 1, progress: false, print: () => {}, output: join(dir, 'c.duckdb'), seed: 4 });
    const a = await requestsOf(join(dir, 'a.duckdb'));
    expect(await requestsOf(join(dir, 'b.duckdb'))).toEqual(a);
    expect(await requestsOf(join(dir, 'c.duckdb'))).not.toEqual(a);
  });

  it('--store summary and requests keep less, with the same summaries as full', async () => {
    const file = writeExperiment('levels');
    const counts = async (path: string) => {
      const store = await ResultsStore.open(path);
      try {
        const tables = ['runs', 'summary', 'requests', 'attempts', 'endpoint_timeseries'];
        const n = await Promise.all(tables.map(async (t) => Number((await store.query<{ n: bigint }>(`select count(*) as n from ${t}`))[0]!.n)));
        return Object.fromEntries(tables.map((t, i) => [t, n[i]]));
      } finally {
        await store.close();
      }
    };
    const full = await runExperiment(file, { jobs: 1, progress: false, print: () => {}, output: join(dir, 'full.duckdb') });
    const summary = await runExperiment(file, { jobs: 1, progress: false, print: () => {}, output: join(dir, 'summary.duckdb'), store: 'summary' });
    const requests = await runExperiment(file, { jobs: 1, progress: false, print: () => {}, output: join(dir, 'requests.duckdb'), store: 'requests' });
    expect(summary.summaries).toEqual(full.summaries);
    expect(requests.summaries).toEqual(full.summaries);
    const f = await counts(join(dir, 'full.duckdb'));
    expect(f.requests).toBe(600);
    expect(f.attempts).toBeGreaterThan(0);
    expect(await counts(join(dir, 'summary.duckdb'))).toEqual({ runs: 2, summary: 2, requests: 0, attempts: 0, endpoint_timeseries: 0 });
    expect(await counts(join(dir, 'requests.duckdb'))).toEqual({ runs: 2, summary: 2, requests: 600, attempts: 0, endpoint_timeseries: 0 });
  });

  it('a bad experiment names the field and what is allowed', () => {
    const file = writeExperiment('bad', 'rate_scale_typo: 1\n').replace('.yaml', '.yaml');
    expect(() => loadExperiment(file)).toThrow(/rate_scale_typo/);
    writeFileSync(join(dir, 'bad2.yaml'), `name: x\ntrace: t\nreplicas: { count: 0, profile: p }\nruns: []\noutput: o\n`);
    expect(() => loadExperiment(join(dir, 'bad2.yaml'))).toThrow(/replicas\.count[\s\S]*runs/);
  });

  it('a YAML syntax error names file, line and column and shows the offending line', () => {
    const file = join(dir, 'syntax.yaml');
    writeFileSync(file, 'name: x\ntrace: t\nruns:\n  - strategy: fixed\n    params: { a: 1\noutput: o\n');
    expect(() => loadExperiment(file)).toThrow(new RegExp(`^${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:6:1: YAML syntax error: .+\n  6 \\| output: o\n    \\| \\^$`));
  });

  it('a missing field is called required, with an example of what to write; an empty file says so', () => {
    const file = join(dir, 'missing.yaml');
    writeFileSync(file, 'name: x\nreplicas: { count: 1, profile: llama2-70b-h100-tp4 }\n');
    expect(() => loadExperiment(file)).toThrow(/trace: required: this field is missing \(expected a string\); an Arrow trace file relative to this file, e\.g\. trace: /);
    expect(() => loadExperiment(file)).toThrow(/runs: required: this field is missing \(expected a list\); one entry per strategy, e\.g\. runs: \[/);
    expect(() => loadExperiment(file)).toThrow(/output: required: this field is missing \(expected a string\); the results DuckDB file/);
    expect(() => loadExperiment(file)).not.toThrow(/received undefined/);
    const empty = join(dir, 'empty-experiment.yaml');
    writeFileSync(empty, '\n');
    expect(() => loadExperiment(empty)).toThrow(/\(root\): the file is empty; an experiment is a mapping with at least name, trace, replicas, runs, output/);
  });

  it('output: is relative to the experiment file, as trace: is (not to the working directory)', async () => {
    const sub = join(dir, 'nested');
    mkdirSync(sub, { recursive: true });
    const file = join(sub, 'rel.yaml');
    writeFileSync(file, `name: rel\ntrace: ${mooncakeConversation}\nseed: 1\nlimit: 20\nmodel: kimi\nreplicas: { count: 1, profile: llama2-70b-h100-tp4 }\nruns:\n  - strategy: fixed\noutput: out/rel.duckdb\n`);
    mkdirSync(join(sub, 'out'));
    const lines: string[] = [];
    const report = await runExperiment(file, { jobs: 1, progress: false, print: (l) => lines.push(l) });
    expect(report.output).toBe(join(sub, 'out', 'rel.duckdb'));
    expect(existsSync(join(sub, 'out', 'rel.duckdb'))).toBe(true);
    expect(lines.at(-1)).toContain(join(sub, 'out', 'rel.duckdb'));
  });

  it('an empty trace file is named with the problem (not a TypeError)', async () => {
    const empty = join(dir, 'empty.arrow');
    writeFileSync(empty, '');
    const file = join(dir, 'empty.yaml');
    writeFileSync(file, `name: empty\ntrace: empty.arrow\nmodel: kimi\nreplicas: { count: 1, profile: llama2-70b-h100-tp4 }\nruns:\n  - strategy: fixed\noutput: empty.duckdb\n`);
    await expect(runExperiment(file, { jobs: 1, progress: false, print: () => {} })).rejects.toThrow(`${empty}: the file is empty (0 bytes), not an Arrow trace`);
  });

  it('every problem of an experiment comes in one report, each with its line', () => {
    const file = join(dir, 'many.yaml');
    writeFileSync(
      file,
      'name: x\ntrace: t.arrow\nrate_scal: 1\nmodel: m\nreplicas: { count: 0, profile: llama2-70b-h100-tp4 }\nruns:\n  - strategy: fixed\n    params:\n      prefill_awar: true\n  - strategy: round_robbin\noutput: o.duckdb\n',
    );
    let message = '';
    try {
      loadExperiment(file);
    } catch (e) {
      message = (e as Error).message;
    }
    expect(message.split('\n')).toEqual([
      `${file} is invalid (4 problems):`,
      expect.stringMatching(new RegExp(`^  ${file}:3: rate_scal: unknown field \\(did you mean 'rate_scale'\\?\\); allowed here: name, `)),
      expect.stringMatching(new RegExp(`^  ${file}:5: replicas\\.count: `)),
      expect.stringMatching(new RegExp(`^  ${file}:9: runs\\[0\\] \\(label fixed\\)\\.params: router_params for 'fixed' are invalid: unknown key\\(s\\) 'prefill_awar' \\(did you mean 'prefill_aware'\\?\\); allowed keys: `)),
      expect.stringMatching(new RegExp(`^  ${file}:10: runs\\[1\\] \\(label round_robbin\\)\\.strategy: unknown router 'round_robbin'`)),
    ]);
  });
});
