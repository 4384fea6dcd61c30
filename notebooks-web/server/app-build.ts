/**
 * Builds the browser app with Vite's JavaScript API when the build is missing or older than its
 * sources, so `switchyard dashboard` works straight after `npm ci` with no separate build step.
 * The build goes to a private temporary folder and is then swapped into `DIST_DIR`
 * (`node_modules/.cache/switchyard-dashboard/dist`, beside the gateway's bundle cache, so that
 * running the dashboard or the tests adds nothing to the working tree), so a server (or a second
 * build running at the same time) never sees a half-written folder.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, rmSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { InlineConfig } from 'vite';

const HERE = fileURLToPath(new URL('.', import.meta.url));

/** `notebooks-web/`. */
export const WEB_DIR = resolve(HERE, '..');
/** Vite root: `notebooks-web/app` (index.html, main.ts, …). */
export const APP_ROOT = join(WEB_DIR, 'app');
/** The dashboard's build cache (under node_modules, which git ignores). */
const CACHE_DIR = resolve(WEB_DIR, '..', 'node_modules', '.cache', 'switchyard-dashboard');
/** Where the built app goes. */
export const DIST_DIR = join(CACHE_DIR, 'dist');
/** Marker written last by a build; its mtime is the build's time. */
const STAMP = '.build-stamp';

/** Folders and files whose changes call for a rebuild. */
const SOURCES = [APP_ROOT, join(WEB_DIR, 'shared'), fileURLToPath(import.meta.url)];

/**
 * Vite settings of the app, shared by the programmatic build and `vite.config.ts` (dev mode).
 * `base: './'` keeps asset URLs relative, so the same build works under any mount point.
 */
export function appViteConfig(outDir: string = DIST_DIR): InlineConfig {
  return {
    configFile: false,
    root: APP_ROOT,
    base: './',
    logLevel: 'warn',
    clearScreen: false,
    build: {
      outDir,
      emptyOutDir: true,
      target: 'es2022',
      reportCompressedSize: false,
      // d3 + the app is one ~150 kB chunk; no need to split it.
      chunkSizeWarningLimit: 1024,
    },
  };
}

function newestMtimeMs(path: string): number {
  let st;
  try {
    st = statSync(path);
  } catch {
    return 0;
  }
  if (!st.isDirectory()) return st.mtimeMs;
  let newest = st.mtimeMs; // a deleted file changes its folder's mtime
  for (const name of readdirSync(path)) newest = Math.max(newest, newestMtimeMs(join(path, name)));
  return newest;
}

/** True when `dist` holds a finished build at least as new as every source file. */
export function isAppBuildFresh(distDir: string = DIST_DIR): boolean {
  const stamp = join(distDir, STAMP);
  if (!existsSync(stamp) || !existsSync(join(distDir, 'index.html'))) return false;
  const built = statSync(stamp).mtimeMs;
  return SOURCES.every((s) => newestMtimeMs(s) <= built);
}

/** Options of {@link ensureAppBuilt}. */
export interface EnsureBuiltOptions {
  /** Build even when the build looks fresh. */
  force?: boolean;
  /** Progress lines (default: none). */
  print?: (line: string) => void;
}

/**
 * Returns the folder of a fresh build of the app, building it first when needed.
 * @throws Error when Vite fails (a syntax error in the app names the file and line).
 */
export async function ensureAppBuilt(opts: EnsureBuiltOptions = {}): Promise<string> {
  if (!opts.force && isAppBuildFresh()) return DIST_DIR;
  const print = opts.print ?? (() => {});
  mkdirSync(CACHE_DIR, { recursive: true });
  const tmp = join(CACHE_DIR, `.dist-tmp-${process.pid}-${randomBytes(4).toString('hex')}`);
  const t0 = performance.now();
  print('building the dashboard app (vite)…');
  const { build } = await import('vite'); // loaded only when a build is due: it is large
  try {
    // Explicit mode: under vitest NODE_ENV is 'test', and a build must not depend on who ran it.
    await build({ ...appViteConfig(tmp), mode: 'production' });
    writeFileSync(join(tmp, STAMP), `${new Date().toISOString()}\n`);
    swapInto(tmp, DIST_DIR);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  print(`built the dashboard app in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  return DIST_DIR;
}

/** Replaces `dest` by `src` with two renames; a concurrent build that got there first wins. */
function swapInto(src: string, dest: string): void {
  const old = `${dest}.old-${process.pid}-${randomBytes(4).toString('hex')}`;
  try {
    renameSync(dest, old);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  try {
    renameSync(src, dest);
  } catch (err) {
    // Another build swapped its (equally fresh) output in between our two renames.
    if (!['ENOTEMPTY', 'EEXIST'].includes((err as NodeJS.ErrnoException).code ?? '')) throw err;
  } finally {
    rmSync(old, { recursive: true, force: true });
  }
}
