/**
 * Runs the cells of a sweep on `jobs` worker threads (or in this thread when jobs is 1) and
 * hands their rows and outputs to the caller *in cell order*, whatever order they finish in — so
 * the results database is the same with any `--jobs`. This thread parses each trace once and
 * shares its columns with every worker (traces/trace-columns.ts); a worker runs one cell at a
 * time and sends its rows back as columns while it runs. A failed cell stops the sweep with its
 * run id in the error.
 */
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { traceToColumns } from '../../traces/trace-columns.ts';
import { decodeRows, type ColumnarRows } from '../results/columnar-rows.ts';
import type { Cell } from './grid.ts';
import { ROW_TABLES, runCell, TraceCache, type CellOutput, type RowTable } from './cell-runner.ts';

/**
 * Worker threads worth starting for `cells` cells on `cores` cores: one core is left to the
 * results thread (trace read, DuckDB appends and summaries), so `min(cells, cores − 1)`; 1 — run
 * in the main thread — when that is 1 or less: on two cores a sweep worker would only add its
 * start-up to the replay it takes over.
 */
export function defaultJobs(cells: number, cores: number): number {
  return Math.max(1, Math.min(cells, cores - 1));
}

/** Options of `runCells`. */
export interface PoolOptions {
  /** Worker threads; ≤ 1 runs the cells in this thread unless `inThread` is false. */
  jobs: number;
  /** Run in this thread (default: when jobs ≤ 1); false with jobs 1 runs one worker thread. */
  inThread?: boolean;
  /** Progress of one cell: requests finished so far. */
  onProgress?: (index: number, done: number) => void;
  /** Receives each output in cell order; the next is not delivered before this resolves. */
  onOutput: (output: CellOutput) => Promise<void>;
  /** Traces already read by this thread (a caller running many small sweeps); workers get them as shared columns. */
  cache?: TraceCache;
  /**
   * Receives each cell's rows of `tables` as columns while the cell runs, in cell order (all of
   * a cell's batches before its output, and before the next cell's). Without it, the rows of
   * `tables` arrive in the output's result.
   */
  onChunk?: (index: number, batches: ColumnarRows[]) => Promise<void> | void;
  /** Tables whose rows are kept (default all four); the rest are dropped in the run. */
  tables?: readonly RowTable[];
  /** Finished requests per chunk handed to `onChunk` (default: runCell's). */
  chunkRows?: number;
}

const RESULT_FIELD = { requests: 'requests', attempts: 'attempts', endpoint_timeseries: 'samples', events: 'events' } as const;

type FromWorker =
  | { type: 'progress'; index: number; done: number }
  | { type: 'chunk'; index: number; batches: ColumnarRows[] }
  | { type: 'result'; output: CellOutput }
  | { type: 'error'; index: number; message: string; stack: string };

/**
 * Runs every cell and delivers outputs in order.
 * @throws (rejects with) the first cell's Error (message names the run id), after stopping the workers.
 */
export async function runCells(cells: readonly Cell[], opts: PoolOptions): Promise<void> {
  const jobs = Math.max(1, Math.min(Math.floor(opts.jobs), cells.length));
  const tables = opts.tables ?? ROW_TABLES;
  const cache = opts.cache ?? new TraceCache();
  if (opts.inThread ?? jobs <= 1) {
    for (const cell of cells) {
      const writes: Array<Promise<void> | void> = [];
      const onChunk = opts.onChunk;
      const out = await runCell(cell, cache, {
        tables,
        ...(opts.chunkRows !== undefined && { chunkRows: opts.chunkRows }),
        ...(opts.onProgress && { onProgress: (done: number) => opts.onProgress!(cell.index, done) }),
        // Called at once, inside the replay: a writer on another thread gets the rows while it runs.
        ...(onChunk && { onChunk: (batches: ColumnarRows[]) => void writes.push(onChunk(cell.index, batches)) }),
      });
      await Promise.all(writes);
      await opts.onOutput(out);
    }
    return;
  }
  // Parsed once here, shared with every worker.
  const paths = [...new Set(cells.map((c) => c.experiment.tracePath))];
  const traces = await Promise.all(paths.map(async (path) => ({ path, trace: await cache.get(path) })));
  const traceMessages = traces.map(({ path, trace }) => ({ type: 'trace' as const, path, meta: trace.meta, columns: traceToColumns(trace.sorted) }));
  await new Promise<void>((resolve, reject) => {
    const workers: Worker[] = [];
    const pending = new Map<number, CellOutput>();
    // Chunks of cells after the one being written wait here, in arrival order.
    const held = new Map<number, ColumnarRows[][]>();
    // Without onChunk: the batches of each cell, decoded into its result on delivery.
    const kept = new Map<number, ColumnarRows[]>();
    let nextCell = 0;
    let nextWrite = 0;
    let failed = false;
    let finished = false;
    let writing: Promise<void> = Promise.resolve();
    const stop = (err: Error) => {
      if (failed || finished) return;
      failed = true;
      for (const w of workers) void w.terminate();
      reject(err);
    };
    const deliverChunk = async (index: number, batches: ColumnarRows[]) => {
      if (opts.onChunk) await opts.onChunk(index, batches);
      else kept.set(index, [...(kept.get(index) ?? []), ...batches]);
    };
    const chunk = (index: number, batches: ColumnarRows[]) => {
      if (index !== nextWrite) {
        held.set(index, [...(held.get(index) ?? []), batches]);
        return;
      }
      writing = writing.then(() => (failed ? undefined : deliverChunk(index, batches))).catch((err: Error) => stop(err));
    };
    const flush = () => {
      writing = writing.then(async () => {
        while (!failed && pending.has(nextWrite)) {
          const out = pending.get(nextWrite)!;
          pending.delete(nextWrite);
          const batches = kept.get(nextWrite);
          kept.delete(nextWrite);
          for (const b of batches ?? []) {
            const into = out.result[RESULT_FIELD[b.table as RowTable]] as object[];
            for (const row of decodeRows(b)) into.push(row);
          }
          nextWrite++;
          await opts.onOutput(out);
          // The next cell's chunks that came in meanwhile, in order.
          for (const batches of held.get(nextWrite) ?? []) await deliverChunk(nextWrite, batches);
          held.delete(nextWrite);
        }
        if (!failed && !finished && nextWrite === cells.length) {
          finished = true;
          for (const w of workers) void w.terminate();
          resolve();
        }
      }).catch((err: Error) => stop(err));
    };
    const feed = (w: Worker) => {
      if (nextCell < cells.length) w.postMessage({ type: 'run', cell: cells[nextCell++]!, tables, ...(opts.chunkRows !== undefined && { chunkRows: opts.chunkRows }) });
    };
    for (let i = 0; i < jobs; i++) {
      // Under the simulator bundle (bin/switchyard.mjs) the worker is plain JavaScript; else tsx boots the sources.
      const bundled = process.env.SWITCHYARD_BUNDLED_SIM_WORKER;
      const w = new Worker(bundled ? new URL(pathToFileURL(bundled).href) : new URL('./cell-worker-boot.mjs', import.meta.url));
      workers.push(w);
      for (const t of traceMessages) w.postMessage(t);
      w.on('message', (m: FromWorker) => {
        if (failed) return;
        if (m.type === 'progress') opts.onProgress?.(m.index, m.done);
        else if (m.type === 'chunk') chunk(m.index, m.batches);
        else if (m.type === 'result') {
          pending.set(m.output.index, m.output);
          feed(w);
          flush();
        } else {
          const e = new Error(m.message);
          e.stack = m.stack;
          stop(e);
        }
      });
      w.on('error', (err) => stop(err));
      w.on('exit', (code) => {
        if (!finished && code !== 0) stop(new Error(`sweep worker exited with code ${code}`));
      });
      feed(w);
    }
  });
}
