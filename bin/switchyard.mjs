#!/usr/bin/env node
// Entry shim. `switchyard gateway` runs from an esbuild bundle of the gateway's sources, and the
// simulator's commands (`sim`, `plan`, `compare`, `merge`) from a bundle of the CLI (bin/bundle.mjs),
// so neither carries a TypeScript loader (and a sweep's worker threads start without one); set
// SWITCHYARD_BUNDLE=0 to run them through tsx like everything else. Every other command registers
// tsx and runs the TypeScript sources as they are (no build step).
import { pathToFileURL } from 'node:url';

const SIMULATOR_COMMANDS = new Set(['sim', 'plan', 'compare', 'merge']);
const command = process.argv[2];
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
    await import(pathToFileURL(entries.cli).href);
    started = true;
  }
}
if (!started) {
  const { register } = await import('tsx/esm/api');
  register();
  await import('./cli.ts');
}
