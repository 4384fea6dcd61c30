// Helpers of the store suites: a fresh PostgreSQL database per use on the run's server (see
// postgres-server.ts), a fresh PGlite directory, and admin calls over HTTP.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inject } from 'vitest';
import { KEYS } from '../gateway/harness.ts';

/** The run's PostgreSQL URL, or '' (tests skip with `pgSkip`). */
export const PG_URL = inject('pgUrl');
export const PG_SKIP = inject('pgSkip');

let dbSeq = 0;

/** A new empty database on the run's server; returns its URL. */
export async function freshDatabase(): Promise<string> {
  const { default: pg } = await import('pg');
  const name = `t_${process.pid}_${Date.now()}_${dbSeq++}`;
  const c = new pg.Client({ connectionString: PG_URL });
  await c.connect();
  await c.query(`CREATE DATABASE ${name}`);
  await c.end();
  return PG_URL.replace(/\/[^/]*$/, `/${name}`);
}

/** Runs SQL as the server's superuser on the `postgres` database. */
export async function superuser(sql: string): Promise<void> {
  const { default: pg } = await import('pg');
  const c = new pg.Client({ connectionString: PG_URL });
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}

/** A new PGlite directory. */
export function freshPgliteDir(): string {
  return join(mkdtempSync(join(tmpdir(), 'switchyard-pglite-')), 'db');
}

/** An admin call: status, JSON body, ETag. */
export async function adminCall(
  base: string,
  method: string,
  path: string,
  opts: { body?: unknown; key?: string | null; ifMatch?: string; raw?: string } = {},
): Promise<{ status: number; body: any; etag: string | null }> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  const key = opts.key === undefined ? KEYS.admin : opts.key;
  if (key !== null) headers.authorization = `Bearer ${key}`;
  if (opts.ifMatch !== undefined) headers['if-match'] = opts.ifMatch;
  const body = method === 'GET' ? undefined : (opts.raw ?? (opts.body === undefined ? undefined : JSON.stringify(opts.body)));
  const r = await fetch(`${base}${path}`, { method, headers, ...(body !== undefined && { body }) });
  const text = await r.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not JSON (metrics)
  }
  return { status: r.status, body: parsed, etag: r.headers.get('etag') };
}

/** `/admin/routing/weights/{model}/{endpoint}` with both segments encoded. */
export const weightPath = (model: string, endpoint: string): string => `/admin/routing/weights/${encodeURIComponent(model)}/${encodeURIComponent(endpoint)}`;
