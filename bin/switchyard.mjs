#!/usr/bin/env node
// Entry shim. `switchyard gateway` runs from an esbuild bundle of the gateway's sources
// (bin/bundle.mjs), so a long-running gateway carries no TypeScript loader; set
// SWITCHYARD_BUNDLE=0 to run it through tsx like everything else. Every other command registers
// tsx and runs the TypeScript sources as they are (no build step).
import { pathToFileURL } from 'node:url';

let started = false;
if (process.argv[2] === 'gateway' && process.env.SWITCHYARD_BUNDLE !== '0') {
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
}
if (!started) {
  const { register } = await import('tsx/esm/api');
  register();
  await import('./cli.ts');
}
