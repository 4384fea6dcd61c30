/**
 * `switchyard sim <experiment.yaml>`: replays the experiment's trace once per run, writes every
 * request, attempt, sample and event to the experiment's DuckDB file, and prints a per-run
 * summary table. Prints the seed first; `--seed` reproduces a run exactly.
 */
import { execFileSync } from 'node:child_process';
import { parseArgs } from 'node:util';
import { randomUUID } from 'node:crypto';
import cliProgress from 'cli-progress';
import { UsageError, type CliCommand } from '../bin/command.ts';
import { readTrace } from '../traces/arrow-trace.ts';
import { describeReplicas, replicaFactory } from './engine/replica-config.ts';
import { loadExperiment, type Experiment } from './experiment.ts';
import { replayRun, type RunSpec } from './replay.ts';
import { ResultsStore } from './results/results-store.ts';
import type { SummaryRow } from './results/result-rows.ts';
import type { TraceRow } from '../traces/trace-row.ts';

/** Options of `runExperiment`. */
export interface SimOptions {
  /** Overrides the experiment's seed. */
  seed?: number;
  /** Overrides the output DuckDB path. */
  output?: string;
  /** Show a progress bar (default: when stderr is a TTY or not in CI). */
  progress?: boolean;
  /** Where text goes (default: process.stdout.write). */
  print?: (line: string) => void;
}

/** What a finished experiment returns. */
export interface SimReport {
  experimentId: string;
  output: string;
  seed: number;
  summaries: SummaryRow[];
}

function gitRevision(): string {
  try {
    return execFileSync('git', ['rev-parse', 'HEAD'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return 'unknown';
  }
}

/** Trace rows as replayed: sorted by arrival (stable), cut to `limit`. */
export function selectRows(rows: readonly TraceRow[], exp: Experiment): TraceRow[] {
  const sorted = [...rows].sort((a, b) => a.arrivalMs - b.arrivalMs);
  return exp.limit === undefined ? sorted : sorted.slice(0, exp.limit);
}

/**
 * Runs an experiment file end to end.
 * @throws Error for an invalid experiment (names the field), an unreadable trace (names file and
 *   row), or a broken simulator invariant.
 */
export async function runExperiment(file: string, opts: SimOptions = {}): Promise<SimReport> {
  const print = opts.print ?? ((s: string) => process.stdout.write(`${s}\n`));
  const exp = loadExperiment(file);
  const seed = opts.seed ?? exp.seed;
  const output = opts.output ?? exp.output;
  print(`seed ${seed}  (reproduce with --seed ${seed})`);
  print(`experiment ${exp.name}: ${describeReplicas(exp.replicas)}, rate_scale ${exp.rate_scale}`);

  const { meta, rows: allRows } = await readTrace(exp.tracePath);
  const rows = selectRows(allRows, exp);
  print(`trace ${exp.trace}: ${rows.length} requests (source: ${meta.source.split('\n')[0]})`);
  const hashBlockTokens = meta.blockUnit === 'tokens' && meta.blockSize > 0 ? meta.blockSize : 512;

  const store = await ResultsStore.open(output, { overwrite: true });
  const experimentId = randomUUID();
  await store.addExperiment({
    experimentId,
    name: exp.name,
    tracePath: exp.trace,
    traceSource: meta.source,
    startedAt: new Date().toISOString(),
    configJson: JSON.stringify({ ...exp, seed }),
    seed,
  });
  const showProgress = opts.progress ?? (process.stderr.isTTY === true);
  const summaries: SummaryRow[] = [];
  try {
    for (const r of exp.runs) {
      const run: RunSpec = { strategy: r.strategy, params: r.params, label: r.label ?? r.strategy };
      const runId = `${run.label}-${seed}`;
      const bar = showProgress
        ? new cliProgress.SingleBar({ format: `${run.label.padEnd(14)} {bar} {percentage}% | {value}/{total} requests | {duration}s`, hideCursor: true }, cliProgress.Presets.shades_classic)
        : null;
      bar?.start(rows.length, 0);
      const t0 = performance.now();
      const res = replayRun({
        experiment: exp,
        rows,
        run,
        runId,
        seed,
        makeReplica: replicaFactory(exp.replicas, hashBlockTokens),
        onProgress: (done) => bar?.update(done),
      });
      const wallSeconds = (performance.now() - t0) / 1000;
      bar?.stop();
      await store.addRun({ runId, experimentId, strategy: run.label, paramsJson: JSON.stringify(run.params), seed, nodeVersion: process.version, gitRevision: gitRevision(), wallSeconds });
      await store.appendRequests(res.requests);
      await store.appendAttempts(res.attempts);
      await store.appendTimeseries(res.samples);
      await store.appendEvents(res.events);
      const s = await store.computeSummary(runId, run.label, { sloTtftMs: exp.slo.ttft_ms, sloTpotMs: exp.slo.tpot_ms, durationMs: Math.max(1, res.durationMs) });
      summaries.push(s);
      if (!showProgress) print(`${run.label}: ${rows.length} requests replayed in ${wallSeconds.toFixed(1)} s (${Math.round(rows.length / wallSeconds)} req/s, ${res.eventsProcessed} events)`);
    }
  } finally {
    await store.close();
  }
  print('');
  print(formatSummaryTable(summaries));
  print('');
  print(`results: ${output}  (try: duckdb ${output} "select * from summary")`);
  return { experimentId, output, seed, summaries };
}

const fmt = (v: number | null, digits = 0) => (v === null ? '-' : v.toFixed(digits));

/** Renders summaries as an aligned text table (ms, percent). */
export function formatSummaryTable(rows: readonly SummaryRow[]): string {
  const header = ['run', 'ok/total', 'TTFT p50', 'p90', 'p99', 'TPOT p50', 'p99', 'E2E p50', 'p90', 'p99', 'prefix hit', 'goodput'];
  const body = rows.map((s) => [
    s.strategy,
    `${s.okRequests}/${s.requests}`,
    fmt(s.ttftP50Ms),
    fmt(s.ttftP90Ms),
    fmt(s.ttftP99Ms),
    fmt(s.tpotP50Ms, 1),
    fmt(s.tpotP99Ms, 1),
    fmt(s.e2eP50Ms),
    fmt(s.e2eP90Ms),
    fmt(s.e2eP99Ms),
    `${(s.prefixCacheHitRate * 100).toFixed(1)}%`,
    `${(s.goodput * 100).toFixed(1)}%`,
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((r) => r[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  const slo = rows[0] ? `latencies in ms; goodput = ok with TTFT ≤ ${rows[0].sloTtftMs} ms and TPOT ≤ ${rows[0].sloTpotMs} ms` : '';
  return [line(header), ...body.map(line), slo].join('\n');
}

/** The `sim` command: `switchyard sim <experiment.yaml> [--seed N] [--output FILE] [--no-progress]`. */
export const simCommand: CliCommand = {
  name: 'sim',
  summary: 'replay a trace through the routing strategies of an experiment; results in DuckDB',
  usage: 'usage: switchyard sim <experiment.yaml> [--seed N] [--output FILE] [--no-progress]',
  async run(args) {
    const { values, positionals } = parseArgs({
      args,
      allowPositionals: true,
      options: { seed: { type: 'string' }, output: { type: 'string' }, 'no-progress': { type: 'boolean' } },
    });
    const file = positionals[0];
    if (!file || positionals.length > 1) throw new UsageError('sim takes exactly one experiment file');
    let seed: number | undefined;
    if (values.seed !== undefined) {
      seed = Number(values.seed);
      if (!Number.isInteger(seed)) throw new UsageError(`--seed must be an integer, got '${values.seed}'`);
    }
    await runExperiment(file, {
      ...(seed !== undefined && { seed }),
      ...(values.output !== undefined && { output: values.output }),
      ...(values['no-progress'] && { progress: false }),
    });
    return 0;
  },
};
