/**
 * Runs planner probes on the sweep machinery. A probe is one configuration of the experiment
 * (one run label, a rate scale, optionally a replica count and any fields set by dotted path) at
 * a growing list of seeds; it is expanded as a one-combination sweep (`expandGrid`, so every
 * cell is validated and named like a sweep cell) and its cells run through `runCells`.
 *
 * A probe stores only what it needs: each cell's requests go into a scratch in-memory store just
 * long enough for `computeSummary`; the plan's DuckDB file keeps the run row and its summary.
 * Cells are memoised by run id, so a configuration two questions share is simulated once.
 */
import type { Experiment } from '../experiment.ts';
import type { RunResult } from '../replay.ts';
import type { ResultsStore } from '../results/results-store.ts';
import type { SummaryRow } from '../results/result-rows.ts';
import { cellSummaryOptions, type TraceCache } from '../sweep/cell-runner.ts';
import { expandGrid, type Cell } from '../sweep/grid.ts';
import type { AxisValue } from '../sweep/sweep-config.ts';
import { runCells } from '../sweep/worker-pool.ts';
import type { PlanConfig } from './plan-config.ts';
import { addPlanPoints } from './plan-tables.ts';
import { decide, scoreRun, type ProbeDecision, type RunScore } from './slo-verdict.ts';
import { tInterval, type MeanInterval } from './t-interval.ts';

/** What to simulate in one probe. */
export interface ProbeSpec {
  /** Question asking (`max_rate`, `min_replicas`, `offload`), stored with the points. */
  readonly question: string;
  /** Configuration label, stored with the points. */
  readonly config: string;
  /** Index into the experiment's `runs:`. */
  readonly runIndex: number;
  readonly rateScale: number;
  /** `replicas.count`; default the experiment's (or the configuration's `set`). */
  readonly replicas?: number;
  /** Experiment fields by dotted path (a configuration's `set`). */
  readonly set: Readonly<Record<string, AxisValue>>;
}

/** One simulated run of a probe. */
export interface ProbeRun {
  readonly cell: Cell;
  readonly summary: SummaryRow;
  readonly score: RunScore;
  /** Total cost (GPU + hosted tokens + fees) per hour of virtual time, USD. */
  readonly costPerHourUsd: number;
}

/** A decided (or exhausted) probe. */
export interface ProbeResult extends ProbeDecision {
  readonly spec: ProbeSpec;
  readonly runs: readonly ProbeRun[];
  /** Mean cost per hour over seeds with its interval, USD. */
  readonly costPerHourUsd: MeanInterval;
  /** Mean cost per 1,000 requests over seeds with its interval, USD. */
  readonly costPer1kRequestsUsd: MeanInterval;
  /** Replica count the probe ran with. */
  readonly replicas: number;
}

/** Options of {@link ProbeRunner}. */
export interface ProbeRunnerOptions {
  readonly experiment: Experiment;
  readonly plan: PlanConfig;
  /** Root seed: a probe's seeds are seed, seed+1, …. */
  readonly seed: number;
  /** `experiments.experiment_id` of the plan (runs and points reference it). */
  readonly planId: string;
  /** The plan's DuckDB file (runs, summary, plan_points). */
  readonly store: ResultsStore;
  /** A scratch store (`:memory:`) for each cell's requests while its summary is computed. */
  readonly scratch: ResultsStore;
  readonly cache: TraceCache;
  /** Worker threads per batch of seeds (1 = this thread). */
  readonly jobs: number;
  readonly gitRevision: string;
  /** `scheduled` simulations were queued; `done` finished (cached ones are not counted). */
  readonly onSimulations?: (scheduled: number, done: number) => void;
}

const MS_PER_HOUR = 3_600_000;
const PROBE_SAMPLE_INTERVAL_MS = 3_600_000;

/** Runs probes for one plan; see the module doc. */
export class ProbeRunner {
  private readonly done = new Map<string, ProbeRun>();
  private scheduled = 0;
  private finished = 0;
  /** Simulations run (cache hits excluded). */
  get simulations(): number {
    return this.finished;
  }

  constructor(private readonly opts: ProbeRunnerOptions) {}

  /**
   * Evaluates `spec`: starts with `plan.seeds.min` seeds and adds seeds (one batch of `jobs` at a
   * time) until the verdict is decided or `plan.seeds.max` is reached; stores the probe's points.
   * @throws Error naming the probe when a configuration makes the experiment invalid, or a run's error.
   */
  async evaluate(spec: ProbeSpec): Promise<ProbeResult> {
    const { plan } = this.opts;
    let k = plan.seeds.min;
    let runs = await this.runSeeds(spec, k);
    let decision = decide(runs.map((r) => r.score.slack), plan.confidence);
    while (decision.verdict === 'undecided' && k < plan.seeds.max) {
      k = Math.min(plan.seeds.max, k + Math.max(1, this.opts.jobs));
      runs = await this.runSeeds(spec, k);
      decision = decide(runs.map((r) => r.score.slack), plan.confidence);
    }
    const costPerHourUsd = tInterval(runs.map((r) => r.costPerHourUsd), plan.confidence);
    const costPer1kRequestsUsd = tInterval(runs.map((r) => r.summary.costPer1kRequestsUsd), plan.confidence);
    const replicas = runs[0]!.cell.experiment.replicas.count;
    const result: ProbeResult = { ...decision, spec, runs, costPerHourUsd, costPer1kRequestsUsd, replicas };
    await addPlanPoints(
      this.opts.store,
      runs.map((r) => ({
        planId: this.opts.planId,
        question: spec.question,
        config: spec.config,
        label: r.cell.run.label,
        strategy: r.cell.run.strategy,
        rateScale: r.cell.experiment.rate_scale,
        replicas: r.cell.experiment.replicas.count,
        paramsJson: r.cell.paramsJson,
        seed: r.cell.seed,
        runId: r.cell.runId,
        requests: r.summary.requests,
        goodput: r.score.goodput,
        ttftMs: r.score.ttftMs,
        tpotMs: r.score.tpotMs,
        slack: r.score.slack,
        holds: r.score.slack >= 0,
        costPerHourUsd: r.costPerHourUsd,
        costPer1kRequestsUsd: r.summary.costPer1kRequestsUsd,
        probeVerdict: decision.verdict,
        probeSlackMean: decision.slack.mean,
        probeSlackLow: decision.slack.low,
        probeSlackHigh: decision.slack.high,
      })),
    );
    return result;
  }

  /** The probe's first `k` seeds as cells, run where not memoised. */
  private async runSeeds(spec: ProbeSpec, k: number): Promise<ProbeRun[]> {
    const { experiment: exp, seed } = this.opts;
    const run = exp.runs[spec.runIndex];
    if (!run) throw new Error(`probe ${spec.question}/${spec.config}: no run ${spec.runIndex}`);
    const probeExp: Experiment = {
      ...exp,
      runs: [run],
      // Summaries do not read endpoint samples; one per virtual hour keeps a stretched trace light.
      sample_interval_ms: Math.max(exp.sample_interval_ms, PROBE_SAMPLE_INTERVAL_MS),
      sweep: {
        seeds: Array.from({ length: k }, (_, i) => seed + i),
        rate_scale: [spec.rateScale],
        ...(spec.replicas !== undefined && { replicas: [spec.replicas] }),
        axes: Object.fromEntries(Object.entries(spec.set).map(([k, v]) => [k, [v]])),
      },
    };
    const cells = expandGrid(probeExp, seed);
    const todo = cells.filter((c) => !this.done.has(c.runId));
    for (const c of cells) {
      const had = this.done.get(c.runId);
      if (had && had.cell.paramsJson !== c.paramsJson) {
        throw new Error(`planner: two probes share run id ${c.runId} with different parameters (${had.cell.paramsJson} vs ${c.paramsJson}); use distinct configuration values`);
      }
    }
    if (todo.length > 0) {
      this.scheduled += todo.length;
      this.opts.onSimulations?.(this.scheduled, this.finished);
      // runCells numbers outputs by cell index; renumber the cells to run.
      const batch = todo.map((c, index) => ({ ...c, index }));
      await runCells(batch, {
        jobs: this.opts.jobs,
        cache: this.opts.cache,
        onOutput: async (out) => {
          const cell = batch[out.index]!;
          this.done.set(cell.runId, await this.store(cell, out.result, out.wallSeconds));
          this.finished++;
          this.opts.onSimulations?.(this.scheduled, this.finished);
        },
      });
    }
    return cells.map((c) => this.done.get(c.runId)!);
  }

  private async store(cell: Cell, res: RunResult, wallSeconds: number): Promise<ProbeRun> {
    const { scratch, store, plan } = this.opts;
    await scratch.appendRequests(res.requests);
    const summary = await scratch.computeSummary(cell.runId, cell.run.label, cellSummaryOptions(cell, res));
    await scratch.query('DELETE FROM requests; DELETE FROM summary;');
    await store.addRun({
      runId: cell.runId,
      experimentId: this.opts.planId,
      strategy: cell.run.strategy,
      paramsJson: cell.paramsJson,
      seed: cell.seed,
      nodeVersion: process.version,
      gitRevision: this.opts.gitRevision,
      wallSeconds,
      label: cell.run.label,
      pairKey: cell.pairKey,
    });
    await store.addSummary(summary);
    return { cell, summary, score: scoreRun(summary, plan.slo), costPerHourUsd: summary.totalCostUsd / (summary.durationMs / MS_PER_HOUR) };
  }
}
