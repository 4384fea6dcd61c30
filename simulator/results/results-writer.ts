/**
 * Writes an experiment's results as its cells run: rows arrive as columns (columnar-rows.ts)
 * while a cell replays, and when it ends its `runs` row and summary are written. What is kept
 * follows the store level: `full` keeps requests, attempts, samples and events; `requests` the
 * requests; `summary` only the run and its summary (requests pass through an in-memory table
 * that computes it). A shard writes into an in-memory store and exports each finished run as
 * Parquet files (parquet-dir.ts). The same class runs in the thread that replays (tests, tsx) or
 * in its own thread (results-thread.ts), where DuckDB loads and writes beside the replay.
 */
import { gitRevision } from './git-revision.ts';
import { checkResultsOutput } from './output-check.ts';
import { compareInStore, type StoreCompareOptions } from '../compare/paired-comparison.ts';
import type { ColumnarRows } from './columnar-rows.ts';
import { exportExperimentsParquet, exportRunParquet, prepareParquetDir } from './parquet-dir.ts';
import type { ComparisonRow, ExperimentRow, RunRow, SummaryRow } from './result-rows.ts';
import { ResultsStore, type SummaryOptions } from './results-store.ts';
import { tablesOfLevel, type StoreLevel } from './store-level.ts';

/** Options of {@link ResultsWriter.open}. */
export interface WriterOptions {
  /** Results DuckDB file (replaced; refused when it is some other file), or the Parquet directory of a shard. */
  readonly output: string;
  /** Write Parquet files into `output` (a shard), named `<experiment id>-shard-<i>-of-<N>` for the experiments row. */
  readonly shardName: string | null;
  readonly level: StoreLevel;
  readonly experiment: ExperimentRow;
}

/** A finished cell: its `runs` row (the writer adds node version and git revision) and what its summary needs. */
export interface FinishedCell {
  readonly run: Omit<RunRow, 'nodeVersion' | 'gitRevision'>;
  readonly label: string;
  readonly summary: SummaryOptions;
}

/** An experiment's results being written; see the module doc. */
export class ResultsWriter {
  private constructor(
    private readonly opts: WriterOptions,
    private readonly store: ResultsStore,
    private readonly scratch: ResultsStore | null,
    private readonly revision: string,
  ) {}

  /** The checkpoint queued after the last finished cell; awaited (its error thrown) by close. */
  private checkpointed: Promise<void> = Promise.resolve();

  /**
   * Checks the output (a results file may be replaced, nothing else), opens it (a shard: an
   * in-memory store and the Parquet directory), and writes the experiment's row.
   * @throws Error naming the output when it is not a results file or cannot be written.
   */
  static async open(opts: WriterOptions): Promise<ResultsWriter> {
    const shard = opts.shardName !== null;
    if (!shard) await checkResultsOutput(opts.output);
    // One DuckDB thread: the writer runs beside the replay (results-thread.ts), and a second
    // DuckDB thread only takes a core from it (more CPU per row appended, the replay slower).
    const threads = 1;
    const store = shard ? await ResultsStore.open(':memory:', { threads }) : await ResultsStore.open(opts.output, { overwrite: true, threads });
    const scratch = opts.level === 'summary' ? await ResultsStore.open(':memory:', { threads }) : null;
    await store.addExperiment(opts.experiment);
    if (shard) {
      await prepareParquetDir(opts.output);
      await exportExperimentsParquet((sql) => store.query(sql), opts.output, opts.shardName!);
    }
    return new ResultsWriter(opts, store, scratch, gitRevision());
  }

  /** Appends a running cell's rows (tables its level does not keep are ignored). */
  async append(batches: readonly ColumnarRows[]): Promise<void> {
    const keep = tablesOfLevel(this.opts.level) as readonly string[];
    for (const b of batches) {
      if (!keep.includes(b.table)) continue;
      await (this.scratch ?? this.store).appendColumns(b);
    }
  }

  /** Writes a finished cell's `runs` row and summary (a shard: exports the run's Parquet files); returns the summary. */
  async finishCell(cell: FinishedCell): Promise<SummaryRow> {
    const { store, scratch } = this;
    await store.addRun({ ...cell.run, nodeVersion: process.version, gitRevision: this.revision });
    let s: SummaryRow;
    if (scratch) {
      s = await scratch.computeSummary(cell.run.runId, cell.label, cell.summary);
      await scratch.query('DELETE FROM requests; DELETE FROM summary;');
      await store.addSummary(s);
    } else {
      s = await store.computeSummary(cell.run.runId, cell.label, cell.summary);
    }
    if (this.opts.shardName !== null) await exportRunParquet((sql) => store.query(sql), this.opts.output, cell.run.runId);
    else {
      // Queued, not awaited: the finished cell's rows are folded into the file while the next
      // cell replays, so the close at the end folds only the last cell's.
      this.checkpointed = this.checkpointed.then(() => store.checkpoint());
      this.checkpointed.catch(() => undefined);
    }
    return s;
  }

  /** The paired comparison of the runs written (compare/paired-comparison.ts), stored in `comparisons`. */
  compare(opts: StoreCompareOptions): Promise<ComparisonRow[]> {
    return compareInStore(this.store, opts);
  }

  /** Checkpoints and closes the stores. */
  async close(): Promise<void> {
    try {
      await this.checkpointed;
      await this.store.close();
    } finally {
      await this.scratch?.close();
    }
  }
}
