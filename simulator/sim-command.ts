/**
 * `switchyard sim <experiment.yaml>`: expands the experiment's sweep grid (runs × swept
 * parameters × seeds; one cell per run without a sweep), runs every cell — in parallel on
 * worker threads with `--jobs` (default: the machine's cores) — writes each as a `run` of the
 * experiment's DuckDB file with its requests, attempts, samples and events, prints a summary
 * table, and, when the experiment has a `compare:` block, the paired comparison. Prints the seed
 * first; `--seed` reproduces every cell exactly, whatever `--jobs` is.
 */
import { availableParallelism } from 'node:os';
import { basename, isAbsolute, relative } from 'node:path';
import { randomUUID } from 'node:crypto';
import cliProgress from 'cli-progress';
import { UsageError, type CliCommand } from '../bin/command.ts';
import { parseRunArgs, SHARD_OPTIONS, shardFromArgs } from './run-args.ts';
import { cellSummaryOptions, TraceCache, type SortedTrace } from './sweep/cell-runner.ts';
import { describeReplicas } from './engine/replica-config.ts';
import { experimentOutputPath, loadExperimentAsync, resolveProviders, type Experiment } from './experiment.ts';
import type { ComparisonRow, SummaryRow } from './results/result-rows.ts';
import { STORE_LEVELS, tablesOfLevel, type StoreLevel } from './results/store-level.ts';
import { inThreadSink, threadSink, type ResultsSink } from './results/results-sink.ts';
import { checkOutputShape, prepareOutputFolder } from './results/output-shape.ts';
import { expandGrid } from './sweep/grid.ts';
import { shardCells, shardExperimentId, writeShardManifest, type Shard } from './sweep/shard.ts';
import { defaultJobs, runCells } from './sweep/worker-pool.ts';
import { formatComparisons } from './compare/paired-comparison.ts';
import { checkTraceFiles, traceNotFound, validateCellRouting } from './preflight.ts';
import { phase } from './phase-clock.ts';

/** Re-exported for benches and tests: trace rows as replayed (sorted by arrival, cut to `limit`). */
export { selectRows } from './sweep/cell-runner.ts';
export { STORE_LEVELS, type StoreLevel } from './results/store-level.ts';

/** Options of `runExperiment`. */
export interface SimOptions {
  /** Overrides the experiment's seed (the first seed of a sweep). */
  seed?: number;
  /** Overrides the output DuckDB path (relative to the working directory, as on the command line). */
  output?: string;
  /** Show a progress bar (default: when stderr is a TTY). */
  progress?: boolean;
  /** Worker threads (default: `defaultJobs`, one per core but one, capped at the cells; 1 = run in this thread). */
  jobs?: number;
  /** Where text goes (default: process.stdout.write). */
  print?: (line: string) => void;
  /**
   * Run only this shard's cells (sweep/shard.ts) and write them as Parquet files into the
   * directory `output` (default: the experiment's output without `.duckdb`, plus `-shards`).
   */
  shard?: Shard;
  /** What the results keep of each run (`StoreLevel`); default `full`. */
  store?: StoreLevel;
  /**
   * Read the trace and write the results on their own thread (results/results-thread.ts), beside
   * the replay. Default: when the simulator runs from its bundle (bin/switchyard.mjs); through
   * tsx a thread would first have to load tsx and transpile the sources again.
   */
  resultsThread?: boolean;
  /** Finished requests per batch of rows sent to the writer while a cell runs (default 4,096; tests use small ones). */
  chunkRows?: number;
}

/** What a finished experiment returns. */
export interface SimReport {
  experimentId: string;
  output: string;
  seed: number;
  /** One per cell, in grid order. */
  summaries: SummaryRow[];
  /** Rows of the paired comparison (empty without a `compare:` block). */
  comparisons: ComparisonRow[];
}

/** `path` relative to the working directory when it lies below it (shorter to read and to paste), else as given. */
function shownPath(path: string): string {
  const rel = relative(process.cwd(), path);
  return rel === '' || rel.startsWith('..') || isAbsolute(rel) ? path : rel;
}

/** One line naming the endpoints of an experiment, for run headers. */
export function describeEndpoints(exp: Experiment): string {
  const parts: string[] = [describeReplicas(exp.replicas)];
  const providers = resolveProviders(exp);
  if (providers.length > 0) parts.push(`${providers.length} hosted provider${providers.length === 1 ? '' : 's'} (${providers.map((p) => `${p.name}: ${p.type} ${p.profile}`).join(', ')})`);
  return parts.join(' + ');
}

/** A path as the results store keeps it: as written when relative, its base name when absolute (no machine paths in results). */
export function portablePath(p: string): string {
  return isAbsolute(p) ? basename(p) : p;
}

/**
 * The experiment as `experiments.config_json` stores it: the file as written plus the seed used,
 * with the file named by its base name, no resolved trace path, and `trace`, `calibration` and
 * `output` as written when relative (base names when absolute) — a results file carries no
 * machine paths.
 */
export function storedConfig(exp: Experiment, seed: number): Record<string, unknown> {
  const { tracePath: _tracePath, file, strategyModules: _modules, ...rest } = exp;
  return {
    ...rest,
    trace: portablePath(exp.trace),
    output: portablePath(exp.output),
    ...(exp.calibration !== undefined && { calibration: portablePath(exp.calibration) }),
    file: basename(file),
    seed,
  };
}

/**
 * Runs an experiment file end to end. Before opening the output or reading the trace it builds
 * every run's routing, checks the trace files exist and that the output is new or an earlier
 * results file (which is replaced), so a bad experiment leaves the output untouched.
 * @throws Error for an invalid experiment, sweep cell or run routing (names the file, the run
 *   entry and the field), a missing or unreadable trace (names file and row), an output that is
 *   not a results file, or a broken simulator invariant (names the run).
 */
export async function runExperiment(file: string, opts: SimOptions = {}): Promise<SimReport> {
  phase('main', 'start');
  const print = opts.print ?? ((s: string) => process.stdout.write(`${s}\n`));
  // The results thread starts first: it loads the trace reader while this thread parses the
  // experiment, reads the trace while this thread checks it, then loads DuckDB and opens the
  // output while this thread replays. The output check runs there before anything is written,
  // and the output is opened only once the checks below have passed.
  const sink: ResultsSink = opts.resultsThread ?? process.env.SWITCHYARD_BUNDLED_RESULTS_THREAD !== undefined ? threadSink() : inThreadSink();
  let exp: Experiment;
  let seed: number;
  let output: string;
  let tracePromise: Promise<SortedTrace>;
  let grid: ReturnType<typeof expandGrid>;
  let cells: typeof grid;
  const shard = opts.shard;
  try {
    exp = await loadExperimentAsync(file);
    phase('main', 'config');
    seed = opts.seed ?? exp.seed;
    output = opts.output ?? (shard ? `${experimentOutputPath(exp).replace(/\.duckdb$/i, '')}-shards` : experimentOutputPath(exp));
    tracePromise = sink.readTrace(exp.tracePath);
    tracePromise.catch(() => undefined); // awaited below; a failure is reported there
    print(`seed ${seed}  (reproduce with --seed ${seed})`);
    print(`experiment ${exp.name}: ${describeEndpoints(exp)}, rate_scale ${exp.rate_scale}`);
    // Everything that can be checked without the trace is checked before the output is touched.
    grid = expandGrid(exp, seed);
    cells = shard ? shardCells(grid, shard) : grid;
    validateCellRouting(exp, cells);
    checkTraceFiles(exp, cells);
    // A directory or a non-DuckDB file at the output is refused now, not after the first run
    // (the results thread checks the tables inside a DuckDB file as it opens it).
    if (!shard) checkOutputShape(output);
    // Its folder is made now, so an output that cannot be written fails before the replay.
    if (!shard) prepareOutputFolder(output);
  } catch (err) {
    await sink.close();
    throw err;
  }
  const jobs = opts.jobs ?? defaultJobs(cells.length, availableParallelism());
  phase('main', 'validated');
  if (shard) print(`shard ${shard.index}/${shard.count}: ${cells.length} of ${grid.length} cells, Parquet files into ${output}/`);

  const level = opts.store ?? 'full';
  const summaries: SummaryRow[] = [];
  const labelsRepeat = cells.length > exp.runs.length;
  let comparisons: ComparisonRow[] = [];
  const showProgress = opts.progress ?? (process.stderr.isTTY === true);
  const bar = showProgress
    ? new cliProgress.SingleBar({ format: `${cells.length} runs {bar} {percentage}% | {value}/{total} requests | {duration}s`, hideCursor: true }, cliProgress.Presets.shades_classic)
    : null;
  let experimentId = '';
  let appendError: Error | null = null;
  const pendingSummaries: Promise<SummaryRow>[] = [];
  try {
    // Portable (no absolute paths), so shards on different machines derive the same experiment id.
    const configJson = JSON.stringify(storedConfig(exp, seed));
    experimentId = shard ? shardExperimentId(configJson) : randomUUID();
    const startedAt = new Date().toISOString();
    const opened = tracePromise.then(({ meta }) =>
      sink.open({
        output,
        shardName: shard ? `${experimentId}-shard-${shard.index}-of-${shard.count}` : null,
        level,
        experiment: { experimentId, name: exp.name, tracePath: portablePath(exp.trace), traceSource: meta.source, startedAt, configJson, seed },
      }),
    );
    let openError: Error | null = null;
    opened.catch((err: Error) => (openError = err)); // awaited below; a failure is reported there
    // Read once; cells run in this thread (--jobs 1) replay these same parsed rows, workers share its columns.
    const traces = new TraceCache();
    const { meta, sorted: allRows } = await tracePromise.catch((err: NodeJS.ErrnoException) => {
      throw err.code === 'ENOENT' ? traceNotFound(exp, exp.tracePath) : err;
    });
    traces.put(exp.tracePath, { meta, sorted: allRows });
    phase('main', 'trace');
    print(`trace ${exp.trace}: ${exp.limit === undefined ? allRows.length : Math.min(exp.limit, allRows.length)} requests (source: ${meta.source.split('\n')[0]})`);
    const rowsOf = (e: Experiment) => (e.limit === undefined ? allRows.length : Math.min(e.limit, allRows.length));
    const workers = Math.max(1, Math.min(jobs, cells.length));
    const axes = cells[0]?.axes.map((a) => a.name) ?? [];
    const seeds = new Set(cells.map((c) => c.seed)).size;
    print(`${cells.length} run${cells.length === 1 ? '' : 's'}: ${exp.runs.length} strateg${exp.runs.length === 1 ? 'y' : 'ies'}${axes.length ? ` × ${axes.join(' × ')}` : ''} × ${seeds} seed${seeds === 1 ? '' : 's'}, ${workers} job${workers === 1 ? '' : 's'}`);

    const total = cells.reduce((s, c) => s + rowsOf(c.experiment), 0);
    const doneBy = new Float64Array(cells.length);
    let doneSum = 0;
    bar?.start(total, 0);
    await runCells(cells, {
      jobs,
      cache: traces,
      tables: tablesOfLevel(level),
      ...(opts.chunkRows !== undefined && { chunkRows: opts.chunkRows }),
      onProgress: (index, done) => {
        doneSum += done - doneBy[index]!;
        doneBy[index] = done;
        bar?.update(doneSum);
      },
      // Posted at once, not awaited: the rows queue at the writer (after its open) while the
      // replay goes on; a failed append is reported when the cell finishes.
      onChunk: (_index, batches) => {
        sink.append(batches).catch((err: Error) => (appendError ??= err));
      },
      onOutput: async (out) => {
        const cell = cells[out.index]!;
        const res = out.result;
        const n = out.requestCount;
        doneSum += n - doneBy[out.index]!;
        doneBy[out.index] = n;
        bar?.update(doneSum);
        if (!showProgress) {
          print(`${cell.runId}: ${n} requests replayed in ${Math.round(out.wallSeconds * 1000)} ms (${Math.round(n / Math.max(out.wallSeconds, 1e-9))} req/s, ${res.eventsProcessed} events)`);
        }
        // An output that failed to open stops the sweep at the first finished cell.
        if (openError) throw openError;
        // Queued behind the cell's rows, not awaited: the next cell starts at once.
        const summary = sink.finishCell({
          run: { runId: cell.runId, experimentId, strategy: cell.run.strategy, paramsJson: cell.paramsJson, seed: cell.seed, wallSeconds: out.wallSeconds, label: cell.run.label, pairKey: cell.pairKey },
          label: cell.run.label,
          summary: cellSummaryOptions(cell, res),
        });
        summary.catch(() => undefined); // awaited below, in order
        pendingSummaries.push(summary);
      },
    });
    bar?.stop();
    phase('main', 'replayed');
    await opened;
    for (const s of pendingSummaries) summaries.push(await s);
    phase('main', 'summaries');
    // Appends are answered before the finishCell queued after them: any failure is known by now.
    if (appendError) throw appendError;
    if (shard) {
      const gridIndex = new Map(grid.map((c) => [c.runId, c.index]));
      await writeShardManifest(output, { experimentId, shard: shard.index, count: shard.count, gridCells: grid.length, cells: cells.map((c) => ({ index: gridIndex.get(c.runId)!, runId: c.runId })) });
    } else if (exp.compare) {
      comparisons = await sink.compare({
        baseline: exp.compare.baseline,
        ...(exp.compare.metrics && { metrics: exp.compare.metrics }),
        resamples: exp.compare.resamples,
        confidence: exp.compare.confidence,
      });
    }
  } finally {
    bar?.stop();
    await sink.close();
    phase('main', 'closed');
  }
  print('');
  print(formatSummaryTable(summaries, labelsRepeat));
  if (exp.compare && !shard) {
    print('');
    print(formatComparisons(comparisons));
  }
  print('');
  const shown = shownPath(output);
  if (shard) {
    print(`shard ${shard.index}/${shard.count} written to ${shown}/ (merge all shards: npx switchyard merge ${shown} --into results.duckdb)`);
    return { experimentId, output, seed, summaries, comparisons };
  }
  phase('main', 'printed');
  print(`results: ${shown}  (browse: npx switchyard dashboard ${shown}; or any DuckDB client: select * from summary)`);
  return { experimentId, output, seed, summaries, comparisons };
}

const fmt = (v: number | null, digits = 0) => (v === null ? '-' : v.toFixed(digits));

/**
 * Renders summaries as an aligned text table (ms, percent, USD per 1,000 requests), one line per
 * run named by its label, or by its run id when `byRunId` (a sweep repeats labels).
 */
export function formatSummaryTable(rows: readonly SummaryRow[], byRunId = false): string {
  const header = ['run', 'ok/total', 'TTFT p50', 'p90', 'p99', 'TPOT p50', 'p99', 'E2E p50', 'p90', 'p99', 'prefix hit', 'goodput', '$/1k req'];
  const body = rows.map((s) => [
    byRunId ? s.runId : s.strategy,
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
    s.costPer1kRequestsUsd.toFixed(3),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((r) => r[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  const slo = rows[0]
    ? `latencies in ms; goodput = ok with TTFT ≤ ${rows[0].sloTtftMs} ms and TPOT ≤ ${rows[0].sloTpotMs} ms; $/1k req = (hosted tokens + plan fees + GPU-hours) per 1,000 requests`
    : '';
  return [line(header), ...body.map(line), slo].join('\n');
}

const SIM_USAGE = `usage: switchyard sim <experiment.yaml> [--seed N] [--output FILE] [--jobs N] [--no-progress] [--store summary|requests|full] [--shard i/N|env [--shard-count N]]

Replays the experiment's trace through each of its runs (and sweep grid) and writes the results
to a DuckDB file. Paths in the experiment are relative to the experiment file.

options:
  --seed N        root seed, overriding the experiment's seed: (the first seed of a sweep);
                  every run is reproducible from it. Negative seeds: --seed=-1 or --seed -1
  --output FILE   results DuckDB file, overriding the experiment's output:. An earlier
                  results file there is replaced; any other existing file is left alone (error)
  --jobs N        worker threads running cells in parallel (default: the machine's cores
                  less one, for the thread writing results, at most the cells; 1 = run in
                  this thread); results do not depend on it
  --store LEVEL   what each run writes: full (default: requests, attempts, endpoint samples,
                  events), requests (requests only) or summary (the summary row only; the
                  planner's choice); runs and summaries are written at every level
  --no-progress   no progress bar; print one line per finished run instead
                  (the bar is shown only when stderr is a terminal)
  --shard i/N     run only shard i (0-based) of N: the cells whose grid index mod N is i; write
                  one Parquet file per cell and table into the directory --output (default: the
                  output without .duckdb, plus -shards); merge with switchyard merge
  --shard env     the shard from a batch engine: JOB_COMPLETION_INDEX (Kubernetes Indexed Job,
                  with --shard-count N) or SLURM_ARRAY_TASK_ID − SLURM_ARRAY_TASK_MIN of
                  SLURM_ARRAY_TASK_COUNT (Slurm job array)
  --shard-count N number of shards for --shard env (a Job's spec.completions)`;

/** The `sim` command: `switchyard sim <experiment.yaml> [--seed N] [--output FILE] [--jobs N] [--no-progress]`. */
export const simCommand: CliCommand = {
  name: 'sim',
  summary: 'replay a trace through the routing strategies (and sweep grid) of an experiment; results in DuckDB',
  usage: SIM_USAGE,
  async run(args) {
    const { file, seed, jobs, values } = parseRunArgs('sim', args, { ...SHARD_OPTIONS, store: { type: 'string' } });
    const store = values.store as string | undefined;
    if (store !== undefined && !STORE_LEVELS.includes(store as StoreLevel)) throw new UsageError(`--store must be one of ${STORE_LEVELS.join(', ')}, got '${store}'`);
    const shard = shardFromArgs(values, process.env);
    await runExperiment(file, {
      ...(shard && { shard }),
      ...(seed !== undefined && { seed }),
      ...(store !== undefined && { store: store as StoreLevel }),
      ...(jobs !== undefined && { jobs }),
      ...(typeof values.output === 'string' && { output: values.output }),
      ...(values['no-progress'] === true && { progress: false }),
    });
    return 0;
  },
};
