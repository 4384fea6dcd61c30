#!/usr/bin/env node
// Entry shim. `switchyard gateway` runs from an esbuild bundle of the gateway's sources, and the
// simulator's commands (`sim`, `plan`, `compare`, `merge`) from a bundle of the CLI (bin/bundle.mjs),
// so neither carries a TypeScript loader (and a sweep's worker threads start without one); set
// SWITCHYARD_BUNDLE=0 to run them through tsx like everything else. Every other command registers
// tsx and runs the TypeScript sources as they are (no build step). `sim` starts its results thread
// before the CLI bundle loads, and exits as soon as its output is flushed.
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';

// A reader that closes the pipe early (`switchyard validate … | head -1`) ends the command
// quietly, as it would end a Unix tool; any other write error still surfaces.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (e) => {
    if (e.code === 'EPIPE') process.exit(0);
    throw e;
  });
}

const SIMULATOR_COMMANDS = new Set(['sim', 'plan', 'compare', 'merge']);
const command = process.argv[2];

// A server started through a wrapper (`npm run dashboard &`, then `kill $!`) is orphaned when the
// wrapper dies without passing the signal on: npm does not forward SIGTERM to its script. When
// the parent goes (this process is re-parented), the server stops as on SIGTERM — drain, flush,
// exit — instead of holding its port.
const SERVER_COMMANDS = new Set(['gateway', 'demo', 'dashboard', 'emulate']);
if (SERVER_COMMANDS.has(command)) {
  const parent = process.ppid;
  const watch = setInterval(() => {
    if (process.ppid === parent) return;
    clearInterval(watch);
    process.stderr.write(`switchyard ${command}: parent process ${parent} exited; stopping as on SIGTERM\n`);
    process.kill(process.pid, 'SIGTERM');
  }, 1_000);
  watch.unref();
}
let started = false;
if (command === 'gateway' && process.env.SWITCHYARD_BUNDLE !== '0') {
  try {
    const { bundleGateway } = await import('./bundle.mjs');
    const entries = await bundleGateway();
    // Worker threads (`--workers N`) run the bundled worker too (gateway/server/worker-entry.mjs).
    process.env.SWITCHYARD_BUNDLED_WORKER = entries.worker;
    await import(pathToFileURL(entries.gateway).href);
    started = true;
  } catch (e) {
    // A build error, or a bundle file gone before it was linked (nothing of it has run then).
    delete process.env.SWITCHYARD_BUNDLED_WORKER;
    process.stderr.write(`switchyard: could not run the gateway bundle (${e.message}); running the sources through tsx\n`);
  }
} else if (command !== undefined && SIMULATOR_COMMANDS.has(command) && process.env.SWITCHYARD_BUNDLE !== '0') {
  let entries = null;
  try {
    const { bundleSimulator } = await import('./bundle.mjs');
    entries = await bundleSimulator();
  } catch (e) {
    process.stderr.write(`switchyard: could not build the simulator bundle (${e.message}); running the sources through tsx\n`);
  }
  if (entries) {
    // Sweep worker threads run the bundled worker (simulator/sweep/worker-pool.ts), and `sim`
    // reads the trace and writes DuckDB on the bundled results thread (simulator/results/results-sink.ts).
    process.env.SWITCHYARD_BUNDLED_SIM_WORKER = entries['cell-worker'];
    process.env.SWITCHYARD_BUNDLED_RESULTS_THREAD = entries['results-thread'];
    if (command === 'sim') prestartResultsThread(entries['results-thread']);
    await import(pathToFileURL(entries.cli).href);
    started = true;
    // `sim` has written and closed its results once the CLI module has run: exit as soon as
    // what it printed is flushed, rather than wait for the results thread's teardown.
    if (command === 'sim') {
      const flushed = (s) => (s.writableLength === 0 ? null : new Promise((resolve) => s.once('drain', resolve)));
      await Promise.all([flushed(process.stdout), flushed(process.stderr)]);
      process.exit();
    }
  }
}
if (!started) {
  const { register } = await import('tsx/esm/api');
  register();
  await import('./cli.ts');
}

/**
 * Starts `sim`'s results thread before the CLI bundle loads, so the thread's own start and the
 * loading of its trace reader overlap this thread's module loading and experiment checks; the
 * first `threadSink()` adopts it (simulator/results/results-sink.ts). Unreferenced until
 * adopted, so a run that never opens a sink (`--help`, a usage error) still exits; an error or
 * exit before adoption is recorded, and the sink then starts a thread of its own.
 */
function prestartResultsThread(entry) {
  if (process.argv.includes('--help') || process.argv.includes('-h')) return;
  const worker = new Worker(pathToFileURL(entry));
  const early = { worker, failed: false };
  const failed = () => {
    early.failed = true;
  };
  worker.once('error', failed);
  worker.once('exit', failed);
  early.release = () => {
    worker.off('error', failed);
    worker.off('exit', failed);
  };
  worker.unref();
  globalThis[Symbol.for('switchyard.prestartedResultsThread')] = early;
}
