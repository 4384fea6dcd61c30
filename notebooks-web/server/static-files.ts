/**
 * Serves the built app (`DIST_DIR` of app-build.ts) read-only. A path is decoded segment by segment
 * (no `.`/`..`, no separators inside a segment) and the resolved file, symlinks followed, must
 * lie inside the app folder; anything else is a 400 or a 404, never a file from elsewhere.
 */
import { realpath, readFile, stat } from 'node:fs/promises';
import { extname, join, sep } from 'node:path';
import { notFound } from './http-errors.ts';
import { checkSegment } from './query-params.ts';

/** Content types of the files a Vite build emits. */
const CONTENT_TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
  '.woff2': 'font/woff2',
};

/** A file to send. */
export interface StaticFile {
  body: Buffer;
  contentType: string;
  /** `Cache-Control` value: hashed assets are immutable; the page itself is revalidated. */
  cacheControl: string;
}

/**
 * The file of `segments` (decoded path segments) under `appDir`; `[]` is `index.html`.
 * @throws ApiError 400 for a traversal-shaped or malformed segment, 404 when there is no such
 *   file inside `appDir`.
 */
export async function readStaticFile(appDir: string, segments: readonly string[]): Promise<StaticFile> {
  const rel = segments.length === 0 ? ['index.html'] : segments.map((s) => checkSegment('path segment', s));
  const root = await realpath(appDir);
  let file: string;
  try {
    file = await realpath(join(root, ...rel));
  } catch {
    throw notFound(`no such file /${rel.join('/')}`);
  }
  if (!file.startsWith(root + sep) || !(await stat(file)).isFile()) throw notFound(`no such file /${rel.join('/')}`);
  return {
    body: await readFile(file),
    contentType: CONTENT_TYPES[extname(file).toLowerCase()] ?? 'application/octet-stream',
    cacheControl: rel[0] === 'assets' ? 'public, max-age=31536000, immutable' : 'no-cache',
  };
}
