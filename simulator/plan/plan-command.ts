/**
 * `switchyard plan <experiment.yaml>`: answers the capacity questions of the experiment's
 * `plan:` block (plan-config.ts) by searching over simulations (capacity-search.ts), each probe
 * decided over seeds at the plan's confidence (slo-verdict.ts):
 *
 * - `max_rate`: per configuration and run, the highest `rate_scale` shown to hold the SLO, as an
 *   interval [low, high) — low holds, high does not (or cannot be told apart from the bound);
 * - `min_replicas`: per choice and run, the fewest replicas holding the SLO at a rate, ranked by
 *   total cost per hour, then per 1,000 requests;
 * - `offload`: per run, the `offload.wait_sec` × `offload.engine_queue_limit` setting holding the
 *   SLO at the lowest cost per 1,000 requests, hosted overflow included.
 *
 * Writes the experiment's output DuckDB file (replaced): `experiments`, one `runs` + `summary`
 * row per simulated run, every evaluated run in `plan_points` and every answer in `plans`. An
 * output ending in `/` (or an existing Parquet results directory, such as `sim --shard` writes)
 * gets the same tables as Parquet files, `DIR/<table>/<plan id>.parquet`, which the dashboard
 * and DuckDB read in place (results/parquet-dir.ts).
 *
 * With a shard (`--shard i/N`, or `--shard env` under a Kubernetes Indexed Job or a Slurm array,
 * as `sim --shard`), a round of the plan runs on N machines: its searches are numbered in the
 * order above — one per `max_rate` configuration × run, one per run for `min_replicas` (all its
 * choices, so their ranks stay exact) and for `offload` (its whole grid) — and shard i runs the
 * searches whose number mod N is i. Every shard writes into one Parquet directory under one plan
 * id (a hash of the experiment and seed), `DIR/<table>/<plan id>-shard-<i>-of-<N>.parquet`, and
 * `DIR/shards/plan-<plan id>-<i>-of-<N>.json` last; the directory then reads as one plan.
 */
import { gitRevision } from '../results/git-revision.ts';
import { randomUUID } from 'node:crypto';
import { mkdir, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import cliProgress from 'cli-progress';
import type { CliCommand } from '../../bin/command.ts';
import { experimentOutputPath, loadExperimentAsync, runLabel } from '../experiment.ts';
import { checkTraceFiles, traceNotFound, validateCellRouting } from '../preflight.ts';
import { checkResultsOutput } from '../results/output-check.ts';
import { prepareOutputFolder } from '../results/output-shape.ts';
import { ResultsStore } from '../results/results-store.ts';
import { exportTablesParquet, isParquetOutput, prepareParquetDir } from '../results/parquet-dir.ts';
import { parseRunArgs, SHARD_OPTIONS, shardFromArgs } from '../run-args.ts';
import { TraceCache } from '../sweep/cell-runner.ts';
import { expandGrid } from '../sweep/grid.ts';
import { roundRate, searchMaxRate, searchMinCount, type SearchProbe } from './capacity-search.ts';
import { storedConfig } from '../sim-command.ts';
import { shardExperimentId, type Shard } from '../sweep/shard.ts';
import { maxRateBracketProblem, type PlanConfig } from './plan-config.ts';
import { addPlan, createPlanTables, planManifestPath, type PlanRow, type PlanShardManifest } from './plan-tables.ts';
import { ProbeRunner, type ProbeResult, type ProbeSpec } from './probe-runner.ts';
import { describeSlo } from './slo-verdict.ts';
import type { MeanInterval } from './t-interval.ts';

/** Options of {@link runPlan}. */
export interface PlanOptions {
  /** Root seed (a probe's seeds are seed, seed+1, …); default the experiment's. */
  seed?: number;
  /** Output DuckDB file, or a Parquet results directory (a path ending in `/`); default the experiment's `output:`. */
  output?: string;
  /** Worker threads per batch of seeds (default 1: this thread). */
  jobs?: number;
  /** Show a progress bar (default: when stderr is a TTY). */
  progress?: boolean;
  /** Where text goes (default: process.stdout.write). */
  print?: (line: string) => void;
  /**
   * Run only this shard's searches (module doc), into the Parquet directory `output` (default:
   * the experiment's output without `.duckdb`, plus `-shards/`).
   */
  shard?: Shard;
}

/** What {@link runPlan} returns. */
export interface PlanReport {
  planId: string;
  output: string;
  seed: number;
  /** Every answer, as stored in `plans`. */
  answers: PlanRow[];
  /** Simulations run (memoised repeats excluded). */
  simulations: number;
}

/** `mean [low, high]`, all with the digits the mean's magnitude calls for. */
const interval = (m: MeanInterval) => {
  const a = Math.max(Math.abs(m.mean), Math.abs(m.high - m.low));
  const d = a >= 100 ? 0 : a >= 1 ? 2 : 3;
  return `${m.mean.toFixed(d)} [${m.low.toFixed(d)}, ${m.high.toFixed(d)}]`;
};

/** Requests per second of the replayed rows at rate_scale 1 (count over arrival span). */
function baseRequestsPerSec(rows: readonly { arrivalMs: number }[]): number {
  if (rows.length < 2) return 0;
  const spanMs = rows[rows.length - 1]!.arrivalMs - rows[0]!.arrivalMs;
  return spanMs > 0 ? ((rows.length - 1) * 1000) / spanMs : 0;
}

function probeSummary(p: ProbeResult): Record<string, unknown> {
  return { verdict: p.verdict, seeds: p.runs.length, slack: p.slack, cost_per_hour_usd: p.costPerHourUsd, cost_per_1k_requests_usd: p.costPer1kRequestsUsd };
}

/**
 * Runs the plan of experiment `file` (module doc) and prints each answer with its interval.
 * @throws Error for an experiment without a `plan:` block, an invalid experiment or probe
 *   configuration (names the file and field), an `offload` question without an `offload:` block,
 *   a missing trace, an output that is not a results file, or a run's error.
 */
export async function runPlan(file: string, opts: PlanOptions = {}): Promise<PlanReport> {
  const print = opts.print ?? ((s: string) => process.stdout.write(`${s}\n`));
  const exp = await loadExperimentAsync(file);
  const plan: PlanConfig | undefined = exp.plan;
  if (!plan) throw new Error(`${file}: no plan: block; add one with slo: and a question (max_rate, min_replicas or offload), see README "Capacity planning"`);
  if (plan.max_rate) {
    const start = plan.max_rate.start ?? exp.rate_scale;
    const bad = maxRateBracketProblem(start, plan.max_rate.floor ?? start / 32, plan.max_rate.ceiling ?? start * 32);
    if (bad) throw new Error(`${file}: ${bad}`);
  }
  if (plan.offload && !exp.offload) throw new Error(`${file}: plan.offload needs the experiment's offload: block (its provider takes the overflow)`);
  for (const [i, c] of (plan.min_replicas?.choices ?? []).entries()) {
    if ('replicas.count' in c.set) throw new Error(`${file}: plan.min_replicas.choices[${i}].set: replicas.count is what min_replicas searches; remove it`);
  }
  const seed = opts.seed ?? exp.seed;
  const shard = opts.shard;
  const output = opts.output ?? (shard ? `${experimentOutputPath(exp).replace(/\.duckdb$/i, '')}-shards/` : experimentOutputPath(exp));
  const jobs = opts.jobs ?? 1;
  // The base configuration is checked before anything is written.
  const baseCells = expandGrid({ ...exp, sweep: undefined }, seed);
  validateCellRouting(exp, baseCells);
  checkTraceFiles(exp, baseCells);
  const toDir = shard !== undefined || isParquetOutput(output);
  if (!toDir) await checkResultsOutput(output);
  if (!toDir) prepareOutputFolder(output); // an output that cannot be written is refused before any simulation
  else await prepareParquetDir(output); // a file in the way is refused before any simulation runs

  const cache = new TraceCache();
  const { meta, sorted } = await cache.get(exp.tracePath).catch((err: NodeJS.ErrnoException) => {
    throw err.code === 'ENOENT' ? traceNotFound(exp, exp.tracePath) : err;
  });
  const rows = exp.limit === undefined ? sorted : sorted.slice(0, exp.limit);
  const baseRps = baseRequestsPerSec(rows);
  print(`seed ${seed}  (reproduce with --seed ${seed})`);
  print(`plan ${exp.name}: trace ${exp.trace}, ${rows.length} requests (${baseRps.toFixed(2)} req/s at rate_scale 1)`);
  print(`SLO: ${describeSlo(plan.slo, { ttftMs: exp.slo.ttft_ms, tpotMs: exp.slo.tpot_ms })}; ${plan.seeds.min}-${plan.seeds.max} seeds per probe, Student-t ${(plan.confidence * 100).toFixed(0)}% interval of the mean slack`);

  // Every shard of one plan round agrees on its id; a plan in one process gets a fresh one.
  const planId = shard ? shardExperimentId(JSON.stringify({ plan: storedConfig(exp, seed) })) : randomUUID();
  // Searches are numbered in the order they are asked; a shard runs those ≡ its index mod N.
  let searches = 0;
  const ran: { index: number; search: string }[] = [];
  const mine = (search: string): boolean => {
    const index = searches++;
    if (shard && index % shard.count !== shard.index) return false;
    ran.push({ index, search });
    return true;
  };
  if (shard) print(`shard ${shard.index}/${shard.count}: plan id ${planId}`);
  // A Parquet directory: the tables are built in memory and exported when the plan is done.
  const store = toDir ? await ResultsStore.open(':memory:') : await ResultsStore.open(output, { overwrite: true });
  const scratch = await ResultsStore.open(':memory:');
  const showProgress = opts.progress ?? (process.stderr.isTTY === true);
  const bar = showProgress
    ? new cliProgress.SingleBar({ format: 'plan {bar} {value}/{total} simulations | {duration}s', hideCursor: true }, cliProgress.Presets.shades_classic)
    : null;
  bar?.start(1, 0);
  const answers: PlanRow[] = [];
  const held: string[] = [];
  let runner: ProbeRunner | undefined;
  try {
    await createPlanTables(store);
    await store.addExperiment({
      experimentId: planId,
      name: exp.name,
      tracePath: exp.trace,
      traceSource: meta.source,
      startedAt: new Date().toISOString(),
      configJson: JSON.stringify({ ...exp, seed }),
      seed,
    });
    runner = new ProbeRunner({
      experiment: exp,
      plan,
      seed,
      planId,
      store,
      scratch,
      cache,
      jobs,
      gitRevision: gitRevision(),
      onSimulations: (scheduled, done) => {
        bar?.setTotal(scheduled);
        bar?.update(done);
      },
    });
    const r = runner;
    const answer = async (row: Omit<PlanRow, 'planId' | 'confidence'>) => {
      const full = { planId, confidence: plan.confidence, ...row };
      answers.push(full);
      await addPlan(store, full);
    };
    // Under a progress bar answers are held until it stops, so they never interleave with it.
    const say = (line: string) => (bar ? held.push(line) : print(line));

    if (plan.max_rate) {
      const q = plan.max_rate;
      for (const config of q.configs) {
        for (const [runIndex, run] of exp.runs.entries()) {
          const label = runLabel(run);
          if (!mine(`max_rate ${config.label} ${label}`)) continue;
          const seen = new Map<number, ProbeResult>();
          const probe = async (rate: number) => {
            const p = await r.evaluate({ question: 'max_rate', config: config.label, runIndex, rateScale: rate, set: config.set });
            seen.set(rate, p);
            return p.verdict;
          };
          const start = q.start ?? exp.rate_scale;
          const a = await searchMaxRate(probe, { start, floor: q.floor ?? start / 32, ceiling: q.ceiling ?? start * 32, tolerance: q.tolerance, maxProbes: q.max_probes });
          const at = (x: number | null) => (x === null ? null : seen.get(x)!);
          const lo = at(a.low);
          const hi = at(a.high);
          const rps = (x: number | null) => (x === null ? '?' : (x * baseRps).toFixed(2));
          let text: string;
          if (a.status === 'none') text = `holds at no rate tried down to floor (lowest ${a.probes.at(-1)!.at}: mean slack ${interval(hi!.slack)})`;
          else if (a.status === 'unbounded') text = `holds at every rate tried, up to ${a.low} (${rps(a.low)} req/s); raise ceiling or max_probes`;
          else {
            text = `rate_scale ∈ [${a.low}, ${a.high}) = ${rps(a.low)}–${rps(a.high)} req/s; holds at ${a.low} (slack ${interval(lo!.slack)}, ${lo!.runs.length} seeds), ` +
              `${a.highVerdict === 'fail' ? 'fails' : 'cannot be told from the bound'} at ${a.high} (slack ${interval(hi!.slack)}, ${hi!.runs.length} seeds)`;
            if (!a.converged) text += `; not within tolerance ${q.tolerance} after ${a.probes.length} probes`;
          }
          say(`max_rate ${config.label} ${label}: ${text}`);
          await answer({
            question: 'max_rate',
            config: config.label,
            label,
            status: a.status,
            answer: a.low,
            low: a.low,
            high: a.high,
            unit: 'rate_scale',
            costPerHourUsd: lo?.costPerHourUsd.mean ?? null,
            costPer1kRequestsUsd: lo?.costPer1kRequestsUsd.mean ?? null,
            rank: null,
            detailJson: JSON.stringify({
              base_requests_per_sec: baseRps,
              requests_per_sec_low: a.low === null ? null : a.low * baseRps,
              requests_per_sec_high: a.high === null ? null : a.high * baseRps,
              high_verdict: a.highVerdict,
              converged: a.converged,
              tolerance: q.tolerance,
              at_low: lo && probeSummary(lo),
              at_high: hi && probeSummary(hi),
              probes: a.probes,
            }),
          });
        }
      }
    }

    if (plan.min_replicas) {
      const q = plan.min_replicas;
      const rate = roundRate(q.rate_scale ?? exp.rate_scale);
      for (const [runIndex, run] of exp.runs.entries()) {
        const label = runLabel(run);
        if (!mine(`min_replicas ${label}`)) continue;
        const found: { choice: string; count: number; p: ProbeResult; below: ProbeResult | undefined; probes: readonly SearchProbe[] }[] = [];
        for (const choice of q.choices) {
          const seen = new Map<number, ProbeResult>();
          const a = await searchMinCount(async (count) => {
            const p = await r.evaluate({ question: 'min_replicas', config: choice.label, runIndex, rateScale: rate, replicas: count, set: choice.set });
            seen.set(count, p);
            return p.verdict;
          }, q.max_count);
          if (a.status === 'none') {
            say(`min_replicas ${choice.label} ${label} at rate_scale ${rate}: not even ${q.max_count} replicas hold the SLO (slack ${interval(seen.get(q.max_count)!.slack)})`);
            await answer({ question: 'min_replicas', config: choice.label, label, status: 'none', answer: null, low: null, high: null, unit: 'replicas', costPerHourUsd: null, costPer1kRequestsUsd: null, rank: null, detailJson: JSON.stringify({ rate_scale: rate, probes: a.probes }) });
          } else found.push({ choice: choice.label, count: a.count!, p: seen.get(a.count!)!, below: seen.get(a.count! - 1), probes: a.probes });
        }
        found.sort((x, y) => x.p.costPerHourUsd.mean - y.p.costPerHourUsd.mean || x.p.costPer1kRequestsUsd.mean - y.p.costPer1kRequestsUsd.mean);
        for (const [i, f] of found.entries()) {
          const below = f.below ? `; ${f.count - 1} ${f.below.verdict === 'fail' ? 'fail' : 'cannot be told from the bound'} (slack ${interval(f.below.slack)})` : '';
          say(
            `min_replicas #${i + 1} ${f.choice} ${label} at rate_scale ${rate}: ${f.count} replicas, $${interval(f.p.costPerHourUsd)}/h, $${interval(f.p.costPer1kRequestsUsd)} per 1k requests ` +
              `(slack ${interval(f.p.slack)}, ${f.p.runs.length} seeds${below})`,
          );
          await answer({
            question: 'min_replicas',
            config: f.choice,
            label,
            status: 'found',
            answer: f.count,
            low: f.count,
            high: f.count,
            unit: 'replicas',
            costPerHourUsd: f.p.costPerHourUsd.mean,
            costPer1kRequestsUsd: f.p.costPer1kRequestsUsd.mean,
            rank: i + 1,
            detailJson: JSON.stringify({ rate_scale: rate, at_count: probeSummary(f.p), below: f.below && probeSummary(f.below), probes: f.probes }),
          });
        }
      }
    }

    if (plan.offload) {
      const q = plan.offload;
      const rate = roundRate(q.rate_scale ?? exp.rate_scale);
      for (const [runIndex, run] of exp.runs.entries()) {
        const label = runLabel(run);
        if (!mine(`offload ${label}`)) continue;
        const points: { config: string; wait: number; limit: number; p: ProbeResult }[] = [];
        for (const wait of q.wait_sec) {
          for (const limit of q.engine_queue_limit) {
            const config = `wait${wait}-limit${limit}`;
            const spec: ProbeSpec = { question: 'offload', config, runIndex, rateScale: rate, set: { 'offload.wait_sec': wait, 'offload.engine_queue_limit': limit } };
            points.push({ config, wait, limit, p: await r.evaluate(spec) });
          }
        }
        const passing = points.filter((x) => x.p.verdict === 'pass').sort((x, y) => x.p.costPer1kRequestsUsd.mean - y.p.costPer1kRequestsUsd.mean);
        if (passing.length === 0) {
          say(`offload ${label} at rate_scale ${rate}: no setting tried holds the SLO (${points.length} settings)`);
          await answer({ question: 'offload', config: '-', label, status: 'none', answer: null, low: null, high: null, unit: 'usd_per_1k_requests', costPerHourUsd: null, costPer1kRequestsUsd: null, rank: null, detailJson: JSON.stringify({ rate_scale: rate }) });
        }
        for (const [i, x] of passing.entries()) {
          const c = x.p.costPer1kRequestsUsd;
          if (i < 3) say(`offload #${i + 1} ${label} at rate_scale ${rate}: wait_sec ${x.wait}, engine_queue_limit ${x.limit}: $${interval(c)} per 1k requests, $${interval(x.p.costPerHourUsd)}/h (slack ${interval(x.p.slack)})`);
          await answer({
            question: 'offload',
            config: x.config,
            label,
            status: 'found',
            answer: c.mean,
            low: c.low,
            high: c.high,
            unit: 'usd_per_1k_requests',
            costPerHourUsd: x.p.costPerHourUsd.mean,
            costPer1kRequestsUsd: c.mean,
            rank: i + 1,
            detailJson: JSON.stringify({ rate_scale: rate, wait_sec: x.wait, engine_queue_limit: x.limit, probe: probeSummary(x.p) }),
          });
        }
        if (passing.length > 1 && passing[1]!.p.costPer1kRequestsUsd.low <= passing[0]!.p.costPer1kRequestsUsd.high) {
          say(`  (the two cheapest settings' cost intervals overlap: more seeds would be needed to tell them apart)`);
        }
      }
    }
    if (toDir) {
      await prepareParquetDir(output);
      await exportTablesParquet((sql) => store.query(sql), output, ['experiments', 'runs', 'summary', 'plan_points', 'plans'], shard ? `${planId}-shard-${shard.index}-of-${shard.count}` : planId);
      if (shard) {
        const manifest: PlanShardManifest = { planId, shard: shard.index, count: shard.count, searches, ran };
        const path = planManifestPath(output, planId, shard.index, shard.count);
        await mkdir(join(output, 'shards'), { recursive: true });
        await writeFile(`${path}.tmp`, `${JSON.stringify(manifest, null, 2)}\n`);
        await rename(`${path}.tmp`, path);
      }
    }
  } finally {
    bar?.stop();
    for (const line of held) print(line);
    await scratch.close();
    await store.close();
  }
  print('');
  if (shard) print(`shard ${shard.index}/${shard.count}: ${ran.length} of ${searches} searches`);
  print(`${runner?.simulations ?? 0} simulations; results: ${output}  (tables plans, plan_points, summary)`);
  return { planId, output, seed, answers, simulations: runner?.simulations ?? 0 };
}

const PLAN_USAGE = `usage: switchyard plan <experiment.yaml> [--seed N] [--output FILE] [--jobs N] [--no-progress] [--shard i/N|env [--shard-count N]]

Answers the capacity questions of the experiment's plan: block (max_rate, min_replicas,
offload) by searching over simulations; each probe runs seeds until the Student-t interval of
its mean SLO slack lies on one side of 0, or plan.seeds.max is reached.

options:
  --seed N        root seed (a probe's seeds are N, N+1, …), overriding the experiment's seed:
  --output FILE   results DuckDB file, overriding the experiment's output: (replaced); a path
                  ending in / (or a Parquet results directory) gets Parquet files instead,
                  DIR/<table>/<plan id>.parquet, read in place by the dashboard
  --jobs N        worker threads running a probe's seeds in parallel (default 1)
  --no-progress   no progress bar (the bar is shown only when stderr is a terminal)
  --shard i/N     run only searches k with k mod N = i (0-based; a max_rate configuration × run,
                  or a run of min_replicas / offload) into a Parquet results directory (default
                  the experiment's output without .duckdb, plus -shards/); N such processes write
                  one plan, read in place by the dashboard
  --shard env     take i and N from a Kubernetes Indexed Job (JOB_COMPLETION_INDEX, with
                  --shard-count N) or a Slurm array (SLURM_ARRAY_TASK_ID − SLURM_ARRAY_TASK_MIN of
                  SLURM_ARRAY_TASK_COUNT)`;

/** The `plan` command. */
export const planCommand: CliCommand = {
  name: 'plan',
  summary: 'capacity planner: max rate, fewest replicas and cheapest offload settings that hold an SLO, with intervals',
  usage: PLAN_USAGE,
  async run(args) {
    const { file, seed, jobs, values } = parseRunArgs('plan', args, SHARD_OPTIONS);
    const shard = shardFromArgs(values, process.env);
    await runPlan(file, {
      ...(shard && { shard }),
      ...(seed !== undefined && { seed }),
      ...(jobs !== undefined && { jobs }),
      ...(typeof values.output === 'string' && { output: values.output }),
      ...(values['no-progress'] === true && { progress: false }),
    });
    return 0;
  },
};
