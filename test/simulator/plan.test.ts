// The capacity planner: its Student-t interval, its two monotone searches, and `switchyard plan`
// end to end on a synthetic D/D/c system whose capacity is known in closed form.
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { writeTrace } from '../../traces/arrow-trace.ts';
import type { TraceRow } from '../../traces/trace-row.ts';
import { loadStepTimeProfile } from '../../simulator/engine/step-time.ts';
import { searchMaxRate, searchMinCount } from '../../simulator/plan/capacity-search.ts';
import { planCommand, runPlan } from '../../simulator/plan/plan-command.ts';
import { planManifestPath } from '../../simulator/plan/plan-tables.ts';
import { decide } from '../../simulator/plan/slo-verdict.ts';
import { studentTQuantile, tInterval } from '../../simulator/plan/t-interval.ts';
import { checkPlanShards, mergeShards } from '../../simulator/results/merge.ts';
import { ResultsStore } from '../../simulator/results/results-store.ts';
import { azureConv } from './fixtures.ts';
import { ReadOnlyDb } from '../../notebooks-web/server/read-only-db.ts';
import { planTables } from '../../notebooks-web/server/plan-queries.ts';

const dir = mkdtempSync(join(tmpdir(), 'switchyard-plan-'));

describe('Student-t interval', () => {
  it('matches tabulated quantiles', () => {
    // NIST/SEMATECH e-Handbook table 1.3.6.7.2 (upper critical values of t).
    const table: [number, number, number][] = [[0.975, 1, 12.706], [0.975, 2, 4.303], [0.975, 5, 2.571], [0.975, 30, 2.042], [0.95, 10, 1.812], [0.995, 3, 5.841]];
    for (const [p, df, t] of table) expect(studentTQuantile(p, df)).toBeCloseTo(t, 3);
  });

  it('is mean ± t·s/√n and decides only when it clears 0', () => {
    const m = tInterval([1, 2, 3], 0.95);
    expect(m.mean).toBe(2);
    expect(m.high - m.mean).toBeCloseTo(4.303 / Math.sqrt(3), 3);
    expect(decide([0.1, 0.2, 0.15], 0.95).verdict).toBe('pass');
    expect(decide([-0.1, -0.2, -0.15], 0.95).verdict).toBe('fail');
    expect(decide([-0.1, 0.2, 0.05], 0.95).verdict).toBe('undecided');
    expect(decide([0, 0], 0.95).verdict).toBe('pass');
  });
});

describe('capacity searches', () => {
  it('searchMaxRate brackets a monotone threshold within tolerance', async () => {
    await fc.assert(
      fc.asyncProperty(fc.double({ min: 0.02, max: 50, noNaN: true }), async (theta) => {
        const a = await searchMaxRate(async (r) => (r <= theta ? 'pass' : 'fail'), { start: 1, floor: 0.01, ceiling: 100, tolerance: 0.02, maxProbes: 40 });
        expect(a.status).toBe('found');
        expect(a.low!).toBeLessThanOrEqual(theta);
        expect(a.high!).toBeGreaterThan(theta);
        expect(a.high! / a.low! - 1).toBeLessThanOrEqual(0.02);
      }),
      { numRuns: 50 },
    );
  });

  it('searchMaxRate counts an undecided probe as not shown to hold, and says so', async () => {
    const a = await searchMaxRate(async (r) => (r <= 1 ? 'pass' : r < 1.5 ? 'undecided' : 'fail'), { start: 1, floor: 0.1, ceiling: 10, tolerance: 0.01, maxProbes: 30 });
    expect(a.low!).toBeLessThanOrEqual(1);
    expect(a.highVerdict).toBe('undecided');
    expect(a.converged).toBe(true);
  });

  it('searchMaxRate reports none / unbounded at the floor / ceiling', async () => {
    expect((await searchMaxRate(async () => 'fail', { start: 1, floor: 0.25, ceiling: 4, tolerance: 0.05, maxProbes: 20 })).status).toBe('none');
    expect((await searchMaxRate(async () => 'pass', { start: 1, floor: 0.25, ceiling: 4, tolerance: 0.05, maxProbes: 20 })).status).toBe('unbounded');
  });

  it('searchMinCount finds the fewest units', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 40 }), async (need) => {
        const a = await searchMinCount(async (n) => (n >= need ? 'pass' : 'fail'), 64);
        expect(a.count).toBe(need);
        if (need > 1) expect(a.belowVerdict).toBe('fail');
      }),
    );
    expect((await searchMinCount(async (n) => (n >= 9 ? 'pass' : 'fail'), 8)).status).toBe('none');
  });
});

describe('switchyard plan on a D/D/c system', () => {
  // c replicas of a vLLM model that runs one request at a time (max_num_seqs 1), every request a
  // P-token prompt with one output token and no prefix reuse: each is served in one prefill step
  // of constant length S. Arrivals are evenly spaced Δ0 apart; rate_scale r divides arrival
  // times, and round_robin hands replica j every c-th request, Δ = c·Δ0/r apart.
  //
  // With the per-request SLO TTFT ≤ 2S: stable (c·Δ0/r ≥ S) every request waits 0, TTFT = S.
  // Overloaded, the k-th request (0-based) of a replica waits k·(S − cΔ0/r), so it meets the SLO
  // iff k ≤ S / (S − cΔ0/r). With n = N/c requests per replica and goodput G = 0.99, the SLO holds
  // iff ⌊S/(S − cΔ0/r)⌋ + 1 ≥ G·n, i.e. r ≤ r* = (c·Δ0/S) / (1 − 1/(G·n − 1)): a hair above the
  // capacity c·Δ0/S of the D/D/c queue.
  const promptTokens = 1000;
  const c = 2;
  const n = 400;
  const gapMs = 100;
  const goodput = 0.99;
  const stepMs = loadStepTimeProfile('llama2-70b-h100-tp4').model.stepMs({
    prefillTokens: promptTokens,
    prefillSeqs: 1,
    prefillAttnPairs: (promptTokens * promptTokens) / 2,
    decodeSeqs: 0,
    decodeContextTokens: 0,
  });
  const capacity = (c * gapMs) / stepMs;
  const perReplica = n / c;
  const rStar = capacity / (1 - 1 / (goodput * perReplica - 1));
  const tolerance = 0.02;

  async function writeExperiment(plan: Record<string, unknown>, name = Object.keys(plan).join('-')): Promise<string> {
    const trace = join(dir, 'ddc.arrow');
    const rows: TraceRow[] = Array.from({ length: n }, (_, i) => ({
      arrivalMs: i * gapMs,
      requestId: `r${i}`,
      sessionId: null,
      callerId: null,
      model: null,
      inputTokens: promptTokens,
      outputTokens: 1,
      hashIds: null,
      stream: true,
      ttftMs: null,
      e2eMs: null,
      itlMs: null,
    }));
    await writeTrace(trace, { source: 'synthetic D/D/c', licence: 'CC0-1.0', citation: '', hardware: 'unknown', engine: 'unknown', servedModel: 'unknown', blockSize: 0, blockUnit: 'tokens', sessionRule: 'none' }, rows);
    const file = join(dir, `ddc-${name}.yaml`);
    writeFileSync(
      file,
      JSON.stringify({
        name: 'ddc',
        trace,
        seed: 1,
        rate_scale: 1,
        model: 'm',
        replicas: { count: c, profile: 'llama2-70b-h100-tp4', max_num_seqs: 1, enable_prefix_caching: false },
        routing: { upstream_concurrency_enabled: false },
        costs: { gpu_usd_per_hour: 2, gpus_per_replica: 4 },
        slo: { ttft_ms: 2 * stepMs, tpot_ms: 1000 },
        runs: [{ strategy: 'round_robin' }],
        plan: { slo: { goodput }, seeds: { min: 2, max: 3 }, ...plan },
        output: join(dir, 'unused.duckdb'),
      }),
    );
    return file;
  }

  it('max_rate finds the closed-form capacity within tolerance and stores every point', async () => {
    const file = await writeExperiment({ max_rate: { start: 1, tolerance } });
    const output = join(dir, 'max-rate.duckdb');
    const lines: string[] = [];
    const report = await runPlan(file, { output, progress: false, print: (l) => lines.push(l) });
    const a = report.answers[0]!;
    expect(a.status).toBe('found');
    expect(a.low!).toBeLessThanOrEqual(rStar * 1.001);
    expect(a.high!).toBeGreaterThanOrEqual(rStar * 0.999);
    expect(a.high! / a.low! - 1).toBeLessThanOrEqual(tolerance);
    expect(Math.abs(a.low! / capacity - 1)).toBeLessThanOrEqual(tolerance);
    expect(lines.some((l) => l.startsWith('max_rate base round_robin: rate_scale ∈ ['))).toBe(true);
    const store = await ResultsStore.open(output);
    try {
      const [counts] = await store.query<{ points: number; runs: number; summaries: number; requests: number; answers: number }>(
        'SELECT (SELECT count(*) FROM plan_points) points, (SELECT count(*) FROM runs) runs, (SELECT count(*) FROM summary) summaries, (SELECT count(*) FROM requests) requests, (SELECT count(*) FROM plans) AS answers',
      );
      expect(counts!.points).toBe(report.simulations);
      expect(counts!.runs).toBe(report.simulations);
      expect(counts!.summaries).toBe(report.simulations);
      expect(counts!.requests).toBe(0);
      expect(counts!.answers).toBe(1);
      // A deterministic system: every seed of a probe agrees, so each probe decided with the minimum.
      const verdicts = await store.query<{ v: string; k: number }>('SELECT probe_verdict v, count(*)::INT k FROM plan_points GROUP BY 1');
      expect(verdicts.every((v) => v.v !== 'undecided')).toBe(true);
    } finally {
      await store.close();
    }
  });

  it('min_replicas finds the fewest replicas for a rate 2.5 replicas would carry', async () => {
    const rate = (2.5 * gapMs) / stepMs;
    const file = await writeExperiment({
      min_replicas: {
        rate_scale: rate,
        max_count: 8,
        choices: [
          { label: 'cheap', set: { 'costs.gpu_usd_per_hour': 1 } },
          { label: 'dear', set: { 'costs.gpu_usd_per_hour': 3 } },
        ],
      },
    });
    const report = await runPlan(file, { output: join(dir, 'min-replicas.duckdb'), progress: false, print: () => {} });
    expect(report.answers.map((a) => [a.config, a.answer, a.rank])).toEqual([
      ['cheap', 3, 1],
      ['dear', 3, 2],
    ]);
    // 3 replicas × 4 GPUs × $1/h.
    expect(report.answers[0]!.costPerHourUsd).toBeCloseTo(12, 6);

    // The same plan into a Parquet directory: the same tables, read in place.
    const out = join(dir, 'min-replicas-parquet/');
    const again = await runPlan(file, { output: out, progress: false, print: () => {} });
    expect(again.answers).toEqual(report.answers.map((a) => ({ ...a, planId: again.planId })));
    const fromDir = await ResultsStore.openParquetDir(out);
    const fromFile = await ResultsStore.open(join(dir, 'min-replicas.duckdb'));
    try {
      const q = (t: string, order: string) => `SELECT * EXCLUDE (plan_id) FROM ${t} ORDER BY ${order}`;
      expect(await fromDir.query(q('plans', 'question, config, label'))).toEqual(await fromFile.query(q('plans', 'question, config, label')));
      expect(await fromDir.query(q('plan_points', 'run_id'))).toEqual(await fromFile.query(q('plan_points', 'run_id')));
      const runs = 'SELECT run_id, strategy, params_json, seed FROM runs ORDER BY run_id';
      expect(await fromDir.query(runs)).toEqual(await fromFile.query(runs));
      const summary = 'SELECT * FROM summary ORDER BY run_id';
      expect(await fromDir.query(summary)).toEqual(await fromFile.query(summary));
    } finally {
      await fromDir.close();
      await fromFile.close();
    }
    // The dashboard's plans page reads the directory in place too.
    const db = await ReadOnlyDb.open(out);
    try {
      const plans = await planTables(db, again.planId);
      expect(plans.available).toBe(true);
      expect(plans.answers).toHaveLength(2);
      expect(plans.points.length).toBeGreaterThan(0);
    } finally {
      db.close();
    }
  });

  it('a round split over 2 shards (one through --shard env) gives the answers and points of one process, under one plan id', async () => {
    const file = await writeExperiment({
      max_rate: { start: 1, tolerance: 0.1, configs: [{ label: 'c2', set: { 'replicas.count': 2 } }, { label: 'c3', set: { 'replicas.count': 3 } }] },
    }, 'sharded');
    const single = join(dir, 'sharded-single.duckdb');
    const one = await runPlan(file, { output: single, progress: false, print: () => {} });
    const out = join(dir, 'plan-shards');
    const first = await runPlan(file, { output: out, shard: { index: 0, count: 2 }, progress: false, print: () => {} });
    // The second as a Kubernetes Indexed Job pod runs it: the index from JOB_COMPLETION_INDEX.
    const saved = process.env.JOB_COMPLETION_INDEX;
    const write = process.stdout.write;
    process.env.JOB_COMPLETION_INDEX = '1';
    process.stdout.write = (() => true) as typeof process.stdout.write;
    try {
      expect(await planCommand.run([file, '--shard', 'env', '--shard-count', '2', '--output', out, '--no-progress'])).toBe(0);
    } finally {
      process.stdout.write = write;
      if (saved === undefined) delete process.env.JOB_COMPLETION_INDEX;
      else process.env.JOB_COMPLETION_INDEX = saved;
    }
    expect(first.answers.map((a) => a.config)).toEqual(['c2']);
    for (const i of [0, 1]) expect(existsSync(planManifestPath(out, first.planId, i, 2))).toBe(true);

    const a = await ResultsStore.open(single);
    const b = await ResultsStore.openParquetDir(out);
    try {
      expect(await b.query('SELECT DISTINCT plan_id FROM plans')).toEqual([{ plan_id: first.planId }]);
      expect(await b.query('SELECT count(*)::INT AS n FROM experiments')).toEqual([{ n: 1 }]);
      const q = (t: string) => `SELECT * EXCLUDE (plan_id) FROM ${t} ORDER BY ALL`;
      const answers = await b.query(q('plans'));
      expect(answers).toHaveLength(2);
      expect(answers).toEqual(await a.query(q('plans')));
      expect(await b.query(q('plan_points'))).toEqual(await a.query(q('plan_points')));
      expect(await b.query('SELECT * FROM summary ORDER BY ALL')).toEqual(await a.query('SELECT * FROM summary ORDER BY ALL'));
      expect(one.answers).toHaveLength(2);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }

    // merge folds the round into one DuckDB file with the same tables.
    const mergedFile = join(dir, 'plan-merged.duckdb');
    const report = await mergeShards(out, mergedFile);
    expect(report).toMatchObject({ experimentId: null, plans: [{ planId: first.planId, shards: 2 }] });
    const m = await ResultsStore.open(mergedFile);
    const s1 = await ResultsStore.open(single);
    try {
      const q = (t: string) => `SELECT * EXCLUDE (plan_id) FROM ${t} ORDER BY ALL`;
      expect(await m.query(q('plans'))).toEqual(await s1.query(q('plans')));
      expect(await m.query(q('plan_points'))).toEqual(await s1.query(q('plan_points')));
      expect(await m.query('SELECT * FROM summary ORDER BY ALL')).toEqual(await s1.query('SELECT * FROM summary ORDER BY ALL'));
      expect(await m.query('SELECT count(*)::INT AS n FROM experiments')).toEqual([{ n: 1 }]);
    } finally {
      await Promise.all([m.close(), s1.close()]);
    }
    // A round with a shard missing does not merge.
    rmSync(planManifestPath(out, first.planId, 1, 2));
    expect(() => checkPlanShards(out)).toThrow(/shards 1 of 2 have not finished/);
  });
});

describe('switchyard plan offload', () => {
  it('ranks the settings that hold by cost and stores each point', async () => {
    const file = join(dir, 'offload.yaml');
    writeFileSync(
      file,
      JSON.stringify({
        name: 'offload',
        trace: azureConv,
        seed: 3,
        limit: 120,
        rate_scale: 2,
        model: 'm',
        replicas: { count: 1, profile: 'llama2-70b-h100-tp4' },
        providers: [{ name: 'deepinfra', profile: 'minimax-m2.5-openrouter/deepinfra', weight: 0.0001 }],
        offload: { provider: 'deepinfra', wait_sec: 1 },
        costs: { gpu_usd_per_hour: 2.5, gpus_per_replica: 4 },
        slo: { ttft_ms: 10_000, tpot_ms: 200 },
        runs: [{ strategy: 'fixed' }],
        plan: { slo: { goodput: 0.5 }, seeds: { min: 2, max: 3 }, offload: { wait_sec: [0.5, 60], engine_queue_limit: [0] } },
        output: join(dir, 'unused.duckdb'),
      }),
    );
    const output = join(dir, 'offload.duckdb');
    const report = await runPlan(file, { output, progress: false, print: () => {} });
    const found = report.answers.filter((a) => a.status === 'found');
    expect(found.length).toBeGreaterThan(0);
    expect(found.map((a) => a.rank)).toEqual(found.map((_, i) => i + 1));
    for (let i = 1; i < found.length; i++) expect(found[i]!.answer!).toBeGreaterThanOrEqual(found[i - 1]!.answer!);
    for (const a of found) expect(a.low!).toBeLessThanOrEqual(a.answer!);
    const store = await ResultsStore.open(output);
    try {
      const rows = await store.query<{ config: string; n: number }>("SELECT config, count(*)::INT AS n FROM plan_points WHERE question = 'offload' GROUP BY config ORDER BY config");
      expect(rows.map((r) => r.config)).toEqual(['wait0.5-limit0', 'wait60-limit0']);
    } finally {
      await store.close();
    }
  });

  /** A one-replica plan experiment on the Azure conversation trace, `plan` its questions. */
  function smallPlan(name: string, plan: Record<string, unknown>): string {
    const file = join(dir, name);
    const exp = { name: 'x', trace: azureConv, model: 'm', replicas: { count: 1, profile: 'llama2-70b-h100-tp4' }, runs: [{ strategy: 'fixed' }], plan: { slo: { goodput: 0.5 }, ...plan }, output: join(dir, 'unused.duckdb') };
    writeFileSync(file, JSON.stringify(exp));
    return file;
  }

  it('refuses a Parquet output under a file before any simulation runs', async () => {
    const file = smallPlan('parquet-under-file.yaml', { max_rate: { start: 1 } });
    const blocker = join(dir, 'a-file');
    writeFileSync(blocker, 'not a directory');
    const lines: string[] = [];
    await expect(runPlan(file, { output: `${blocker}/`, progress: false, print: (l) => lines.push(l) })).rejects.toThrow(/--output .*a-file\/: .*is a file/);
    expect(lines.some((l) => l.includes('simulations'))).toBe(false);
  });

  it('needs the experiment\'s offload: block', async () => {
    const file = smallPlan('no-offload.yaml', { offload: { wait_sec: [1] } });
    await expect(runPlan(file, { output: join(dir, 'x.duckdb'), progress: false, print: () => {} })).rejects.toThrow(/plan.offload needs the experiment's offload: block/);
  });

  it('refuses a max_rate bracket out of order (floor ≤ start ≤ ceiling) before any simulation runs', async () => {
    const run = (name: string, max_rate: Record<string, unknown>) => {
      const lines: string[] = [];
      return runPlan(smallPlan(name, { max_rate }), { output: join(dir, 'x.duckdb'), progress: false, print: (l) => lines.push(l) }).then(() => lines);
    };
    await expect(run('floor-above-ceiling.yaml', { start: 0.5, floor: 5, ceiling: 1 })).rejects.toThrow(/plan\.max_rate\.floor: floor 5 is above ceiling 1; use floor ≤ start ≤ ceiling/);
    await expect(run('start-below-floor.yaml', { start: 0.5, floor: 1 })).rejects.toThrow(/plan\.max_rate\.start: start 0\.5 is below floor 1/);
    await expect(run('start-above-ceiling.yaml', { start: 3, ceiling: 2 })).rejects.toThrow(/plan\.max_rate\.start: start 3 is above ceiling 2/);
    // start defaults to the experiment's rate_scale (1 here): a floor above it is refused too.
    await expect(run('default-start-below-floor.yaml', { floor: 2 })).rejects.toThrow(/start 1 \(the experiment's rate_scale when start is not set\) must lie within floor 2 and ceiling 32/);
  });
});
