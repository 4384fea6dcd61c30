/**
 * The strategy modules a gateway configuration names (gateway.yaml `strategies:`, paths relative
 * to that file), imported once per thread: the main thread when it loads the configuration,
 * each worker thread again when it starts or reloads (a configuration carries only the modules'
 * records, which are plain data). A module is imported under its modification time, so a SIGHUP
 * after editing it imports the new version; an unchanged one comes from Node's module cache.
 * Contract and checks: core `strategy-module.ts`.
 */
import { statSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { BUILTIN_STRATEGIES, StrategyModules, type StrategyModuleRecord, type StrategyRegistry } from '../../core/index.ts';

const BUILTIN_NAMES = BUILTIN_STRATEGIES.map((d) => d.name);

/** This thread's imported strategy modules. */
const modules = new StrategyModules(async (path) => {
  try {
    // A TypeScript loader (tsx) does not transform a URL with a query: .ts modules go without.
    const version = /\.[cm]?ts$/.test(path) ? '' : `?mtime=${statSync(path).mtimeMs}`;
    return await import(`${pathToFileURL(path).href}${version}`);
  } catch (e) {
    // Node itself has no TypeScript loader; the bundled CLI commands run without one.
    if ((e as { code?: string }).code === 'ERR_UNKNOWN_FILE_EXTENSION') {
      throw new Error(`${(e as Error).message}; compile the module to .mjs, or run with SWITCHYARD_BUNDLE=0 (TypeScript through tsx)`);
    }
    throw e;
  }
});

/** `entries` (as written in gateway.yaml) as absolute paths, relative ones against `baseDir`. */
export function strategyModulePaths(entries: readonly string[], baseDir: string): string[] {
  return entries.map((e) => (isAbsolute(e) ? e : resolve(baseDir, e)));
}

/**
 * Imports and checks the modules at `paths` (absolute) in this thread. Never rejects for a bad
 * module: its record carries the error (file missing, syntax error, a missing or wrong export).
 */
export function loadStrategyModules(paths: readonly string[]): Promise<StrategyModuleRecord[]> {
  return modules.load(paths, BUILTIN_NAMES);
}

/**
 * The built-in strategies plus those of `records` (loaded ones registered, failed ones marked
 * unavailable). @throws Error when a loaded record's module was not loaded in this thread.
 */
export function strategyRegistry(records: readonly StrategyModuleRecord[]): StrategyRegistry {
  return modules.registry(records, BUILTIN_STRATEGIES);
}
