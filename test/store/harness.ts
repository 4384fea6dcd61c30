// Helpers of the store suites: a fresh PostgreSQL database per use on the run's server (see
// postgres-server.ts), a fresh PGlite directory, and admin calls over HTTP.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inject } from 'vitest';

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

export { adminCall, weightPath } from './harness-http.ts';
