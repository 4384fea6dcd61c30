/**
 * The results thread: a worker that reads the experiment's trace (Arrow, or its decoded columns
 * cached by an earlier run) and writes its results (DuckDB), so neither library loads in, nor
 * blocks, the thread that replays. It runs the
 * requests of one `ResultsWriter` one at a time, in the order they were posted.
 * Protocol (results-sink.ts) — in: `{ id, op, arg }` with op `readTrace` (a path; answers
 * `{ meta, columns }`, the trace sorted by arrival as shared columns), `open` (WriterOptions),
 * `append` (ColumnarRows[], buffers transferred), `finishCell` (FinishedCell; answers the
 * SummaryRow), `compare` (StoreCompareOptions; answers the rows), `close`;
 * out: `{ id, value }` or `{ id, error: { message, stack, code } }`.
 */
import { parentPort } from 'node:worker_threads';
import { traceToColumns } from '../../traces/trace-columns.ts';
import { readCachedColumns, traceCacheEnabled, writeCachedColumns } from '../../traces/trace-column-cache.ts';
import { phase } from '../phase-clock.ts';
import type { FinishedCell, ResultsWriter, WriterOptions } from './results-writer.ts';
import type { ColumnarRows } from './columnar-rows.ts';
import type { StoreCompareOptions } from '../compare/paired-comparison.ts';

/** A request to the results thread. */
export type ToResultsThread =
  | { id: number; op: 'readTrace'; arg: string }
  | { id: number; op: 'open'; arg: WriterOptions }
  | { id: number; op: 'append'; arg: ColumnarRows[] }
  | { id: number; op: 'finishCell'; arg: FinishedCell }
  | { id: number; op: 'compare'; arg: StoreCompareOptions }
  | { id: number; op: 'close'; arg: null };

const port = parentPort;
if (!port) throw new Error('results-thread.ts must run in a worker thread');
let writer: ResultsWriter | null = null;
let tail: Promise<unknown> = Promise.resolve();
// The trace read is the first request, and the replay waits for it. A trace decoded by an
// earlier run is read back from its cache file (traces/trace-column-cache.ts); the Arrow reader
// loads only when there is none.
// DuckDB loads at once too, not when the output is opened: its native library loading while the
// main thread replays slows the replay's first cell (measured ~60-150 ms) more than loading
// it now delays the trace read.
const resultsWriter = import('./results-writer.ts');
resultsWriter.catch(() => undefined); // a failure is reported by the open that awaits it

async function handle(m: ToResultsThread): Promise<unknown> {
  phase('results', `${m.op}-start`);
  try {
    return await handleOp(m);
  } finally {
    phase('results', `${m.op}-end`);
  }
}

async function handleOp(m: ToResultsThread): Promise<unknown> {
  switch (m.op) {
    case 'readTrace': {
      const cached = traceCacheEnabled() ? readCachedColumns(m.arg) : null;
      if (cached) return cached;
      const { readTrace } = await import('../../traces/arrow-trace.ts');
      const { meta, rows } = await readTrace(m.arg);
      const sorted = [...rows].sort((a, b) => a.arrivalMs - b.arrivalMs);
      const columns = traceToColumns(sorted);
      if (traceCacheEnabled()) writeCachedColumns(m.arg, meta, columns);
      return { meta, columns };
    }
    case 'open': {
      const { ResultsWriter } = await resultsWriter;
      writer = await ResultsWriter.open(m.arg);
      return null;
    }
    case 'append':
      return writer!.append(m.arg);
    case 'finishCell':
      return writer!.finishCell(m.arg);
    case 'compare':
      return writer!.compare(m.arg);
    case 'close':
      await writer?.close();
      writer = null;
      return null;
  }
}

port.on('message', (m: ToResultsThread) => {
  tail = tail
    .then(() => handle(m))
    .then(
      (value) => port.postMessage({ id: m.id, value }),
      (err: NodeJS.ErrnoException) => port.postMessage({ id: m.id, error: { message: err.message, stack: err.stack ?? '', code: err.code } }),
    );
});
