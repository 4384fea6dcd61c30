/**
 * Runs the cells of a sweep on `jobs` worker threads (or in this thread when jobs is 1) and
 * hands their outputs to the caller *in cell order*, whatever order they finish in — so the
 * results database is the same with any `--jobs`. Each worker reads the trace once and runs one
 * cell at a time; a failed cell stops the sweep with its run id in the error.
 */
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { Cell } from './grid.ts';
import { runCell, TraceCache, type CellOutput } from './cell-runner.ts';

/**
 * Worker threads worth starting for `cells` cells on `cores` cores: one core is left to the
 * thread that writes the results (DuckDB appends and summaries run there), so
 * `min(cells, cores − 1)`; 1 — run in this thread — when that is 1 or less: on two busy cores
 * one worker loses more to its start-up, its own trace read and the copy of every result than
 * it gains by replaying while this thread writes.
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
  /** Traces already read by this thread, reused when jobs ≤ 1 (a caller running many small sweeps). */
  cache?: TraceCache;
}

type FromWorker =
  | { type: 'progress'; index: number; done: number }
  | { type: 'result'; output: CellOutput }
  | { type: 'error'; index: number; message: string; stack: string };

/**
 * Runs every cell and delivers outputs in order.
 * @throws (rejects with) the first cell's Error (message names the run id), after stopping the workers.
 */
export async function runCells(cells: readonly Cell[], opts: PoolOptions): Promise<void> {
  const jobs = Math.max(1, Math.min(Math.floor(opts.jobs), cells.length));
  if (opts.inThread ?? jobs <= 1) {
    const cache = opts.cache ?? new TraceCache();
    for (const cell of cells) {
      const out = await runCell(cell, cache, opts.onProgress && ((done) => opts.onProgress!(cell.index, done)));
      await opts.onOutput(out);
    }
    return;
  }
  await new Promise<void>((resolve, reject) => {
    const workers: Worker[] = [];
    const pending = new Map<number, CellOutput>();
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
    const flush = () => {
      writing = writing.then(async () => {
        while (!failed && pending.has(nextWrite)) {
          const out = pending.get(nextWrite)!;
          pending.delete(nextWrite);
          nextWrite++;
          await opts.onOutput(out);
        }
        if (!failed && !finished && nextWrite === cells.length) {
          finished = true;
          for (const w of workers) void w.terminate();
          resolve();
        }
      }).catch((err: Error) => stop(err));
    };
    const feed = (w: Worker) => {
      if (nextCell < cells.length) w.postMessage({ type: 'run', cell: cells[nextCell++]! });
    };
    for (let i = 0; i < jobs; i++) {
      // Under the simulator bundle (bin/switchyard.mjs) the worker is plain JavaScript; else tsx boots the sources.
      const bundled = process.env.SWITCHYARD_BUNDLED_SIM_WORKER;
      const w = new Worker(bundled ? new URL(pathToFileURL(bundled).href) : new URL('./cell-worker-boot.mjs', import.meta.url));
      workers.push(w);
      w.on('message', (m: FromWorker) => {
        if (failed) return;
        if (m.type === 'progress') opts.onProgress?.(m.index, m.done);
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
