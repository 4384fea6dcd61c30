/**
 * `switchyard compare <db> --baseline <run>`: paired comparison of every run label against a
 * baseline over the seeds of a sweep (see compare/paired-comparison.ts). Prints per-metric
 * differences with bootstrap intervals, marks the significant ones, and merges the rows into the
 * database's `comparisons` table for the dashboard: the compared metrics' rows of that baseline
 * are replaced, any other rows (an experiment's own `compare:` metrics) are kept.
 */
import { existsSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { UsageError, type CliCommand } from '../bin/command.ts';
import { closestName } from '../core/index.ts';
import { DEFAULT_METRICS, METRIC_NAMES, type MetricName } from './compare/metrics.ts';
import { compareInStore, formatComparisons } from './compare/paired-comparison.ts';
import { ResultsStore } from './results/results-store.ts';
import { isParquetResultsDir } from './results/parquet-dir.ts';

/** Options of `runCompare`. */
export interface CompareCommandOptions {
  baseline: string;
  metrics?: readonly MetricName[];
  resamples?: number;
  confidence?: number;
  /** Where text goes (default: process.stdout.write). */
  print?: (line: string) => void;
}

/**
 * Compares the runs of the results database `db` against `baseline` and prints the table.
 * @throws Error when the file is missing, holds no runs, or the baseline matches nothing.
 */
export async function runCompare(db: string, opts: CompareCommandOptions): Promise<void> {
  const print = opts.print ?? ((s: string) => process.stdout.write(`${s}\n`));
  if (!existsSync(db)) throw new Error(`${db}: no such results database (run switchyard sim first)`);
  // A directory of Parquet results (sim --shard) is read in place; its comparisons are not stored.
  const inPlace = isParquetResultsDir(db);
  const store = inPlace ? await ResultsStore.openParquetDir(db) : await ResultsStore.open(db);
  try {
    const rows = await compareInStore(store, opts);
    print(formatComparisons(rows));
    print('');
    const metrics = opts.metrics ?? DEFAULT_METRICS;
    const [all] = await store.query<{ n: number }>('SELECT count(*)::INTEGER AS n FROM comparisons');
    const kept = (all?.n ?? rows.length) - rows.length;
    print(inPlace ? `read ${db} in place (not stored; switchyard merge ${db} --into FILE keeps comparisons)` : `stored in ${db}: table comparisons (${rows.length} row${rows.length === 1 ? '' : 's'} for ${metrics.join(', ')}${kept > 0 ? `; ${kept} other row${kept === 1 ? '' : 's'} kept` : ''})`);
  } finally {
    await store.close();
  }
}

/** The `compare` command. */
export const compareCommand: CliCommand = {
  name: 'compare',
  summary: 'paired comparison of runs against a baseline, with bootstrap intervals over seeds',
  usage:
    'usage: switchyard compare <results.duckdb | parquet results dir> --baseline <run label or id> [--metrics m1,m2,…] [--resamples N] [--confidence 0.95]\n' +
    `metrics: ${METRIC_NAMES.join(', ')}`,
  async run(args) {
    const { values, positionals } = parseArgs({
      args,
      allowPositionals: true,
      options: { baseline: { type: 'string' }, metrics: { type: 'string' }, resamples: { type: 'string' }, confidence: { type: 'string' } },
    });
    const db = positionals[0];
    if (!db || positionals.length > 1) throw new UsageError('compare takes exactly one results database');
    if (!values.baseline) throw new UsageError('--baseline is required (a run label such as fixed)');
    let metrics: MetricName[] | undefined;
    if (values.metrics !== undefined) {
      metrics = values.metrics.split(',').map((m) => m.trim()) as MetricName[];
      const bad = metrics.filter((m) => !(METRIC_NAMES as readonly string[]).includes(m));
      if (bad.length > 0) {
        const named = bad.map((m) => {
          const near = closestName(m, METRIC_NAMES);
          return near ? `${m} (did you mean ${near}?)` : m;
        });
        throw new UsageError(`--metrics: unknown ${named.join(', ')}; metrics are ${METRIC_NAMES.join(', ')}`);
      }
    }
    let resamples: number | undefined;
    if (values.resamples !== undefined) {
      resamples = Number(values.resamples);
      if (!Number.isInteger(resamples) || resamples < 100) throw new UsageError(`--resamples must be an integer ≥ 100, got '${values.resamples}'`);
    }
    let confidence: number | undefined;
    if (values.confidence !== undefined) {
      confidence = Number(values.confidence);
      if (!(confidence > 0 && confidence < 1)) throw new UsageError(`--confidence must be in (0, 1), got '${values.confidence}'`);
    }
    await runCompare(db, {
      baseline: values.baseline,
      ...(metrics && { metrics }),
      ...(resamples !== undefined && { resamples }),
      ...(confidence !== undefined && { confidence }),
    });
    return 0;
  },
};
