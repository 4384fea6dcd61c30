/**
 * A sweep worker thread: receives cells from the pool, runs each with `runCell` and posts the
 * result back (structured clone). Progress is posted at most every 100 ms of wall time.
 * Protocol — in: `{ type: 'run', cell }`; out: `{ type: 'progress', index, done }`,
 * `{ type: 'result', output }`, `{ type: 'error', index, message, stack }`.
 */
import { parentPort } from 'node:worker_threads';
import type { Cell } from './grid.ts';
import { runCell, TraceCache } from './cell-runner.ts';

/** A message from the pool to a worker. */
export type ToWorker = { type: 'run'; cell: Cell };

const port = parentPort;
if (!port) throw new Error('cell-worker.ts must run in a worker thread');
const cache = new TraceCache();

port.on('message', (msg: ToWorker) => {
  const { cell } = msg;
  let last = 0;
  runCell(cell, cache, (done) => {
    const t = performance.now();
    if (t - last < 100) return;
    last = t;
    port.postMessage({ type: 'progress', index: cell.index, done });
  }).then(
    (output) => port.postMessage({ type: 'result', output }),
    (err: Error) => port.postMessage({ type: 'error', index: cell.index, message: err.message, stack: err.stack ?? '' }),
  );
});
