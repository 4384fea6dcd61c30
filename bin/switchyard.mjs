#!/usr/bin/env node
// Entry shim. `switchyard gateway` runs from an esbuild bundle of the sources (bin/bundle.mjs),
// so a long-running gateway carries no TypeScript loader (about 40 MB resident less); set
// SWITCHYARD_BUNDLE=0 to run it through tsx like everything else. Every other command registers
// tsx and runs the TypeScript sources as they are (no build step).
import { pathToFileURL } from 'node:url';

let entry = null;
if (process.argv[2] === 'gateway' && process.env.SWITCHYARD_BUNDLE !== '0') {
  try {
    const { bundleCli } = await import('./bundle.mjs');
    entry = await bundleCli();
  } catch (e) {
    process.stderr.write(`switchyard: could not bundle the gateway (${e.message.split('\n')[0]}); running the sources through tsx\n`);
  }
}
if (entry !== null) {
  await import(pathToFileURL(entry).href);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import('./cli.ts');
}
