// @ts-check
/**
 * Builds commands into plain JavaScript with esbuild, with everything they import from this
 * repository:
 * - the gateway (`bin/gateway-main.ts` and, for `--workers N`, `gateway/server/worker.ts`), for
 *   the long-running `switchyard gateway`. A process that runs the bundle carries no TypeScript
 *   loader: tsx keeps a loader thread with its transpiler alive for the whole life of the process
 *   (and one per worker thread). Measured on the echo benchmark (external emulator, request log
 *   on): idle 172 → 134 MB; after 30,000 requests at 64 connections 266–280 → 195–220 MB.
 * - the simulator's commands (`bin/cli.ts`, whose commands load lazily, so each is its own chunk;
 *   the sweep worker `simulator/sweep/cell-worker.ts` and the results thread
 *   `simulator/results/results-thread.ts`), for `sim`, `plan`, `compare` and
 *   `merge`: a planner or a short sweep starts many times, and loading the simulator through tsx
 *   costs about 1 s of transpiling per process and again per worker thread.
 *
 * - Only the named entries' code is built: an error in another command's sources does not matter.
 * - Packages stay external (they resolve from node_modules as usual), except, in the simulator's
 *   bundle, the plain-JavaScript packages `sim` loads at every start (SIMULATOR_INLINE_PACKAGES).
 * - Each build folder holds a `package.json` declaring its files ES modules.
 * - `import.meta.url`, `import.meta.dirname` and `import.meta.filename` are replaced in each
 *   source file by that file's own values, so paths next to the sources (worker entries, data
 *   files) resolve exactly as under tsx.
 * - The output is written once per content hash to `node_modules/.cache/switchyard-bundle/<hash>/`
 *   (the OS temp folder when that is not writable). esbuild runs again (well under a second) only
 *   when a source file the last build read has changed size or mtime, or a built file is gone:
 *   `last-<name>.json` records the build's inputs with their stats. A build folder with a missing or changed file is repaired, files are written
 *   aside and renamed into place (concurrent starts never see a half-written file), and builds
 *   unused for an hour beyond the newest three are removed.
 */
import { createHash } from 'node:crypto';
import { accessSync, constants, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const REPO_ROOT = fileURLToPath(new URL('..', import.meta.url));
const GATEWAY_ENTRIES = { gateway: join(REPO_ROOT, 'bin', 'gateway-main.ts'), worker: join(REPO_ROOT, 'gateway', 'server', 'worker.ts') };
const SIMULATOR_ENTRIES = {
  cli: join(REPO_ROOT, 'bin', 'cli.ts'),
  'cell-worker': join(REPO_ROOT, 'simulator', 'sweep', 'cell-worker.ts'),
  'results-thread': join(REPO_ROOT, 'simulator', 'results', 'results-thread.ts'),
};
const KEEP_BUILDS = 3;
const STALE_MS = 60 * 60 * 1000;

/** @type {import('esbuild').Plugin} */
const importMetaOfSource = {
  name: 'import-meta-of-source',
  setup(b) {
    b.onLoad({ filter: /\.(ts|mjs|js)$/ }, async (args) => {
      if (args.path.includes('/node_modules/')) return undefined;
      const source = await readFile(args.path, 'utf8');
      if (!source.includes('import.meta')) return undefined;
      const contents = source
        .replaceAll('import.meta.url', JSON.stringify(pathToFileURL(args.path).href))
        .replaceAll('import.meta.dirname', JSON.stringify(dirname(args.path)))
        .replaceAll('import.meta.filename', JSON.stringify(args.path));
      return { contents, loader: args.path.endsWith('.ts') ? 'ts' : 'js' };
    });
  },
};

/**
 * zod's `locales` namespace (its error messages in some fifty languages, half of zod's code)
 * kept to English alone: zod's schemas import the English locale directly, and no source here
 * reads `z.locales`, yet a namespace re-export survives tree shaking, so every start would
 * otherwise parse all of them.
 * @type {import('esbuild').Plugin}
 */
const zodEnglishLocaleOnly = {
  name: 'zod-english-locale-only',
  setup(b) {
    b.onResolve({ filter: /^\.\.\/locales\/index\.js$/ }, (args) =>
      args.importer.includes('/node_modules/zod/') ? { path: join(dirname(args.importer), '..', 'locales', 'index.js'), namespace: 'zod-locales' } : undefined,
    );
    b.onLoad({ filter: /.*/, namespace: 'zod-locales' }, (args) => ({
      contents: `export { default as en } from ${JSON.stringify(join(dirname(args.path), 'en.js'))};\n`,
      loader: 'js',
      resolveDir: dirname(args.path),
    }));
  },
};

/**
 * Packages built into the simulator's bundle: plain JavaScript of many small ES modules, which
 * Node would otherwise resolve, read and compile file by file at every start (zod, yaml and
 * cli-progress in the CLI; apache-arrow in the results thread). Every other package stays
 * external (native code, worker files, or not loaded by `sim`).
 */
const SIMULATOR_INLINE_PACKAGES = new Set(['zod', 'yaml', 'apache-arrow', 'cli-progress', 'pure-rand']);

/**
 * Marks bare imports external, except those of the packages named (and whatever they import).
 * @param {Set<string>} inline
 * @returns {import('esbuild').Plugin}
 */
function externalPackagesBut(inline) {
  return {
    name: 'external-packages-but',
    setup(b) {
      b.onResolve({ filter: /^[^./]/ }, (args) => {
        if (args.path.startsWith('node:') || args.importer.includes('/node_modules/')) return undefined;
        const pkg = args.path.startsWith('@') ? args.path.split('/').slice(0, 2).join('/') : args.path.split('/')[0];
        return inline.has(pkg) ? undefined : { path: args.path, external: true };
      });
    },
  };
}

/** Where builds are kept: node_modules/.cache when writable, else the OS temp folder. */
function cacheRoot() {
  const cache = join(REPO_ROOT, 'node_modules', '.cache');
  try {
    mkdirSync(cache, { recursive: true });
    accessSync(cache, constants.W_OK);
    return join(cache, 'switchyard-bundle');
  } catch {
    return join(tmpdir(), 'switchyard-bundle');
  }
}

/**
 * Builds (or reuses) the gateway bundle.
 * @returns {Promise<{ gateway: string, worker: string }>} absolute paths of the two entry files, to `import()`.
 * @throws Error naming the first build error's file, line and text when the sources do not build.
 */
export async function bundleGateway() {
  const out = await bundle('gateway', GATEWAY_ENTRIES);
  return { gateway: out.gateway, worker: out.worker };
}

/**
 * Builds (or reuses) the simulator bundle.
 * @returns {Promise<{ cli: string, 'cell-worker': string, 'results-thread': string }>} absolute paths of the CLI entry, the sweep worker entry and the results thread's entry.
 * @throws Error naming the first build error's file, line and text when the sources do not build.
 */
export async function bundleSimulator() {
  const out = await bundle('simulator', SIMULATOR_ENTRIES, SIMULATOR_INLINE_PACKAGES);
  return { cli: out.cli, 'cell-worker': out['cell-worker'], 'results-thread': out['results-thread'] };
}

/**
 * The build recorded in `last-<name>.json` when every input still has the size and mtime it had
 * and every output file exists; else null.
 * @param {string} root
 * @param {string} name
 * @param {Record<string, string>} entries
 * @param {Set<string>} inline
 * @returns {Record<string, string> | null}
 */
function reusable(root, name, entries, inline) {
  try {
    const last = JSON.parse(readFileSync(join(root, `last-${name}.json`), 'utf8'));
    if (JSON.stringify(last.entries) !== JSON.stringify(entries) || JSON.stringify(last.inline ?? []) !== JSON.stringify([...inline])) return null;
    for (const [path, size, mtimeMs] of last.inputs) {
      const st = statSync(path);
      if (st.size !== size || st.mtimeMs !== mtimeMs) return null;
    }
    for (const f of last.files) if (!existsSync(join(last.dir, f))) return null;
    const now = new Date();
    utimesSync(last.dir, now, now);
    return Object.fromEntries(Object.keys(entries).map((k) => [k, join(last.dir, `${k}.js`)]));
  } catch {
    return null;
  }
}

/**
 * Builds `entries` (output name → source path) into one build folder, or reuses the last one.
 * @param {string} name
 * @param {Record<string, string>} entries
 * @param {Set<string>} [inline] packages built in (default none: every package stays external)
 * @returns {Promise<Record<string, string>>} output name → absolute path of its entry file
 */
async function bundle(name, entries, inline = new Set()) {
  const root = cacheRoot();
  const reused = reusable(root, name, entries, inline);
  if (reused) return reused;
  const { build, stop } = await import('esbuild');
  const startedMs = Date.now();
  let result;
  try {
    result = await build({
      absWorkingDir: REPO_ROOT,
      entryPoints: entries,
      metafile: true,
      bundle: true,
      splitting: true,
      format: 'esm',
      platform: 'node',
      target: 'node20',
      // A CommonJS package built in (cli-progress) requires Node's modules: each file gets a `require`.
      ...(inline.size === 0 ? { packages: 'external' } : { banner: { js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);" } }),
      outdir: join(root, 'out'),
      write: false,
      logLevel: 'silent',
      plugins: inline.size === 0 ? [importMetaOfSource] : [zodEnglishLocaleOnly, externalPackagesBut(inline), importMetaOfSource],
    });
  } catch (e) {
    const first = /** @type {{ errors?: Array<{ text: string, location: { file: string, line: number } | null }> }} */ (e).errors?.[0];
    if (!first) throw e;
    throw new Error(`${first.location ? `${first.location.file}:${first.location.line}: ` : ''}${first.text}`);
  } finally {
    await stop();
  }
  const files = result.outputFiles
    .map((f) => ({ name: f.path.slice(join(root, 'out').length + 1), contents: f.contents }))
    // The build folder's own package.json declares its files ES modules: without one (the
    // folder lies under node_modules, outside the repository's package scope) Node reads every
    // file twice at load, first to detect whether it is CommonJS.
    .concat([{ name: 'package.json', contents: new TextEncoder().encode('{ "type": "module" }\n') }])
    .sort((a, b) => (a.name < b.name ? -1 : 1));
  const hash = createHash('sha256');
  for (const f of files) hash.update(f.name).update('\0').update(f.contents);
  const dir = join(root, hash.digest('hex').slice(0, 16));
  mkdirSync(dir, { recursive: true });
  for (const f of files) {
    const path = join(dir, f.name);
    if (existsSync(path) && statSync(path).size === f.contents.length && readFileSync(path).equals(f.contents)) continue;
    mkdirSync(dirname(path), { recursive: true });
    const aside = `${path}.${process.pid}.tmp`;
    writeFileSync(aside, f.contents);
    renameSync(aside, path);
  }
  // Marks the build as used now, so pruning by another start keeps it.
  const now = new Date();
  utimesSync(dir, now, now);
  prune(root, dir);
  // The inputs' stats, for reuse by later starts; none is recorded when a source changed while
  // esbuild read it (its stat may not match what was built), so the next start builds again.
  // This file is an input too: a change to how the bundle is built builds it again.
  const inputs = [...Object.keys(result.metafile.inputs).map((p) => join(REPO_ROOT, p)), fileURLToPath(import.meta.url)]
    .filter((p) => existsSync(p))
    .map((p) => {
      const st = statSync(p);
      return [p, st.size, st.mtimeMs];
    });
  if (inputs.some(([, , mtimeMs]) => mtimeMs >= startedMs - 1000)) return Object.fromEntries(Object.keys(entries).map((k) => [k, join(dir, `${k}.js`)]));
  const record = join(root, `last-${name}.json`);
  const aside = `${record}.${process.pid}.tmp`;
  writeFileSync(aside, JSON.stringify({ entries, inline: [...inline], dir, files: files.map((f) => f.name), inputs }));
  renameSync(aside, record);
  return Object.fromEntries(Object.keys(entries).map((k) => [k, join(dir, `${k}.js`)]));
}

/** Removes builds unused for `STALE_MS` beyond the newest `KEEP_BUILDS` (never `current`). */
function prune(root, current) {
  try {
    const builds = readdirSync(root)
      .filter((n) => n !== 'out' && !n.endsWith('.json') && !n.endsWith('.tmp'))
      .map((n) => ({ path: join(root, n), mtimeMs: statSync(join(root, n)).mtimeMs }))
      .sort((a, b) => b.mtimeMs - a.mtimeMs);
    const cutoff = Date.now() - STALE_MS;
    for (const b of builds.slice(KEEP_BUILDS)) if (b.path !== current && b.mtimeMs < cutoff) rmSync(b.path, { recursive: true, force: true });
  } catch {
    // Pruning is housekeeping; a race with another start is harmless.
  }
}
