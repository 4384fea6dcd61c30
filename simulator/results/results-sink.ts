/**
 * Where `switchyard sim` sends its trace reads and results: a `ResultsWriter` in this thread, or
 * the results thread (results-thread.ts), where the Arrow reader and DuckDB load and work while
 * this thread replays. Requests are answered in the order they are made, in either case; calls
 * need not await the previous one (rows are appended in call order).
 */
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { traceFromColumns, type TraceColumns } from '../../traces/trace-columns.ts';
import type { TraceMeta } from '../../traces/trace-row.ts';
import type { StoreCompareOptions } from '../compare/paired-comparison.ts';
import type { SortedTrace } from '../sweep/cell-runner.ts';
import { transferList, type ColumnarRows } from './columnar-rows.ts';
import type { ComparisonRow, SummaryRow } from './result-rows.ts';
import type { FinishedCell, WriterOptions } from './results-writer.ts';
import type { ToResultsThread } from './results-thread.ts';

/** The operations of a results writer, wherever it runs. */
export interface ResultsSink {
  /**
   * The trace at `path`, sorted by arrival (the results thread reads it; its rows are rebuilt
   * here from shared columns).
   * @throws the reader's Error (with `code` `ENOENT` for a missing file).
   */
  readTrace(path: string): Promise<SortedTrace>;
  /** Opens the output (ResultsWriter.open). */
  open(opts: WriterOptions): Promise<void>;
  /** Appends a running cell's rows; the batches' buffers are handed over (unusable here after). */
  append(batches: ColumnarRows[]): Promise<void>;
  /** Writes a finished cell's run row and summary. */
  finishCell(cell: FinishedCell): Promise<SummaryRow>;
  /** The stored paired comparison of the runs written. */
  compare(opts: StoreCompareOptions): Promise<ComparisonRow[]>;
  /** Closes the output (checkpointed) and stops the thread; idempotent. */
  close(): Promise<void>;
}

/** A sink whose writer runs in this thread (tests, and runs through tsx); requests run one at a time, in call order. */
export function inThreadSink(): ResultsSink {
  let writer: import('./results-writer.ts').ResultsWriter | null = null;
  let tail: Promise<unknown> = Promise.resolve();
  let closing: Promise<void> | null = null;
  const queue = <T>(fn: () => Promise<T>): Promise<T> => {
    const run = tail.then(fn);
    tail = run.catch(() => undefined);
    return run;
  };
  return {
    async readTrace(path) {
      const { readTrace } = await import('../../traces/arrow-trace.ts');
      const { meta, rows } = await readTrace(path);
      return { meta, sorted: [...rows].sort((a, b) => a.arrivalMs - b.arrivalMs) };
    },
    open: (opts) =>
      queue(async () => {
        const { ResultsWriter } = await import('./results-writer.ts');
        writer = await ResultsWriter.open(opts);
      }),
    append: (batches) => queue(() => writer!.append(batches)),
    finishCell: (cell) => queue(() => writer!.finishCell(cell)),
    compare: (opts) => queue(() => writer!.compare(opts)),
    close() {
      closing ??= queue(async () => {
        await writer?.close();
        writer = null;
      });
      return closing;
    },
  };
}

/** What bin/switchyard.mjs leaves on `globalThis` when it started the results thread early. */
interface PrestartedThread {
  readonly worker: Worker;
  /** True once the thread raised an error or exited before adoption. */
  readonly failed: boolean;
  /** Removes the listeners that set `failed`. */
  release(): void;
}

const PRESTARTED = Symbol.for('switchyard.prestartedResultsThread');

/**
 * The results thread bin/switchyard.mjs started before the CLI loaded, taken once (referenced
 * again, so it keeps the process alive like a thread started here); null when there is none or it
 * failed before adoption (it is then stopped).
 */
function takePrestarted(): Worker | null {
  const slot = globalThis as { [PRESTARTED]?: PrestartedThread };
  const early = slot[PRESTARTED];
  if (!early) return null;
  delete slot[PRESTARTED];
  early.release();
  if (early.failed) {
    void early.worker.terminate();
    return null;
  }
  early.worker.ref();
  return early.worker;
}

/**
 * Starts the results thread (or adopts the one bin/switchyard.mjs started early): the bundled entry named by `SWITCHYARD_BUNDLED_RESULTS_THREAD`
 * (bin/switchyard.mjs sets it), else the TypeScript sources through tsx.
 */
export function threadSink(): ResultsSink {
  const bundled = process.env.SWITCHYARD_BUNDLED_RESULTS_THREAD;
  const worker = takePrestarted() ?? new Worker(bundled ? new URL(pathToFileURL(bundled).href) : new URL('./results-thread-boot.mjs', import.meta.url));
  const waiting = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  let nextId = 0;
  let dead: Error | null = null;
  let closing: Promise<void> | null = null;
  const failAll = (err: Error) => {
    dead ??= err;
    for (const w of waiting.values()) w.reject(err);
    waiting.clear();
  };
  worker.on('message', (m: { id: number; value?: unknown; error?: { message: string; stack: string; code?: string } }) => {
    const w = waiting.get(m.id);
    if (!w) return;
    waiting.delete(m.id);
    if (m.error) {
      const e = new Error(m.error.message) as NodeJS.ErrnoException;
      e.stack = m.error.stack;
      if (m.error.code !== undefined) e.code = m.error.code;
      w.reject(e);
    } else w.resolve(m.value);
  });
  worker.on('error', (err) => failAll(err));
  worker.on('exit', (code) => failAll(new Error(`results thread exited with code ${code}`)));
  const call = <T>(op: ToResultsThread['op'], arg: unknown, transfer: ArrayBuffer[] = []): Promise<T> => {
    if (dead) return Promise.reject(dead);
    const id = nextId++;
    return new Promise<T>((resolve, reject) => {
      waiting.set(id, { resolve: resolve as (v: unknown) => void, reject });
      worker.postMessage({ id, op, arg }, transfer);
    });
  };
  return {
    async readTrace(path) {
      const { meta, columns } = await call<{ meta: TraceMeta; columns: TraceColumns }>('readTrace', path);
      return { meta, sorted: traceFromColumns(columns) };
    },
    open: (opts) => call('open', opts),
    append: (batches) => call('append', batches, transferList(batches)),
    finishCell: (cell) => call('finishCell', cell),
    compare: (opts) => call('compare', opts),
    close() {
      closing ??= (dead ? Promise.resolve() : call<void>('close', null)).finally(() => {
        worker.removeAllListeners('exit');
        void worker.terminate();
      });
      return closing;
    },
  };
}
