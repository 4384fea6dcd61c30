/**
 * A sweep worker thread: receives the parsed traces and then cells from the pool, runs each with
 * `runCell` and posts its rows back as columns while it runs (buffers transferred, not copied),
 * then the run's totals. Progress is posted at most every 100 ms of wall time.
 * Protocol — in: `{ type: 'trace', path, meta, columns }` (shared columns, traces/trace-columns.ts;
 * sent once per trace before any cell that replays it), `{ type: 'run', cell, tables, chunkRows? }`;
 * out: `{ type: 'progress', index, done }`, `{ type: 'chunk', index, batches }`,
 * `{ type: 'result', output }`, `{ type: 'error', index, message, stack }`.
 */
import { parentPort } from 'node:worker_threads';
import { traceFromColumns, type TraceColumns } from '../../traces/trace-columns.ts';
import type { TraceMeta } from '../../traces/trace-row.ts';
import { transferList } from '../results/columnar-rows.ts';
import type { Cell } from './grid.ts';
import { runCell, TraceCache, type RowTable } from './cell-runner.ts';
import { loadStrategyModules } from '../strategy-modules.ts';

/** A message from the pool to a worker. */
export type ToWorker =
  | { type: 'trace'; path: string; meta: TraceMeta; columns: TraceColumns }
  | { type: 'run'; cell: Cell; tables: readonly RowTable[]; chunkRows?: number };

const port = parentPort;
if (!port) throw new Error('cell-worker.ts must run in a worker thread');
const cache = new TraceCache();

port.on('message', (msg: ToWorker) => {
  if (msg.type === 'trace') {
    // Rows are rebuilt from the shared columns on first use, in this thread.
    cache.put(msg.path, Promise.resolve().then(() => ({ meta: msg.meta, sorted: traceFromColumns(msg.columns) })));
    return;
  }
  const { cell, tables, chunkRows } = msg;
  let last = 0;
  // The cell carries its experiment's strategy module records: import those modules here too.
  loadStrategyModules((cell.experiment.strategyModules ?? []).map((m) => m.path)).then(() => runCell(cell, cache, {
    tables,
    ...(chunkRows !== undefined && { chunkRows }),
    onProgress: (done) => {
      const t = performance.now();
      if (t - last < 100) return;
      last = t;
      port.postMessage({ type: 'progress', index: cell.index, done });
    },
    onChunk: (batches) => port.postMessage({ type: 'chunk', index: cell.index, batches }, transferList(batches)),
  })).then(
    (output) => port.postMessage({ type: 'result', output }),
    (err: Error) => port.postMessage({ type: 'error', index: cell.index, message: err.message, stack: err.stack ?? '' }),
  );
});
