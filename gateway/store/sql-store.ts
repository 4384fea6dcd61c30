/**
 * The gateway's runtime data store: PostgreSQL, either embedded in the process (`kind: pglite`,
 * `@electric-sql/pglite`: Postgres compiled to WebAssembly, one connection, data in a directory)
 * or a server shared by several replicas (`kind: postgres`, the `pg` driver). Both speak the same
 * SQL with `$1` parameters, so everything above this file is written once. Each driver is
 * imported only when a store of its kind is opened: a gateway without `store:` loads neither.
 *
 * Opening runs the migrations (`migrations.ts`) under a session-level `pg_advisory_lock`, so two
 * gateways starting together against one server migrate once, and refuses a database whose
 * schema is newer than this code knows.
 */
import { mkdirSync } from 'node:fs';
import { migrate } from './migrations.ts';
import { NOTIFY_CHANGE_SQL } from './change-feed.ts';

/** `store:` of gateway.yaml, validated. */
export type StoreConfig = { kind: 'pglite'; dir: string } | { kind: 'postgres'; url: string; pool_size: number; connect_timeout_ms: number };

/** A query result: rows as objects keyed by column name, and how many rows a write touched. */
export interface SqlResult<T> {
  rows: T[];
  rowCount: number;
}

/** Runs one statement (`$1`… parameters). */
export interface Queryer {
  query<T = Record<string, unknown>>(sql: string, params?: readonly unknown[]): Promise<SqlResult<T>>;
}

/** An open store. */
export interface SqlStore extends Queryer {
  readonly kind: StoreConfig['kind'];
  /** Where it lives, for logs (`dir`, or the URL without its password). */
  readonly where: string;
  /** Schema version after migrations. */
  readonly schemaVersion: number;
  /**
   * Runs `fn` inside BEGIN … COMMIT on one connection (ROLLBACK when it throws). Every
   * transaction is an overlay write: on PostgreSQL it also announces a change to the other
   * replicas (`change-feed.ts`), delivered at commit only.
   */
  transaction<T>(fn: (q: Queryer) => Promise<T>): Promise<T>;
  /** Runs `fn` on one connection held for its whole duration (session-level locks). */
  session<T>(fn: (q: Queryer) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

/**
 * Opens the store and migrates it.
 * @throws Error `store (<kind> <where>): <cause>` when it cannot be reached or opened, or when
 *   its schema is newer than this gateway's (names both versions and the fix).
 */
export async function openStore(cfg: StoreConfig): Promise<SqlStore> {
  const where = cfg.kind === 'pglite' ? cfg.dir : redactUrl(cfg.url);
  let store: Omit<SqlStore, 'schemaVersion'>;
  try {
    store = cfg.kind === 'pglite' ? await openPglite(cfg.dir) : await openPostgres(cfg);
  } catch (e) {
    throw new Error(`store (${cfg.kind} ${where}): cannot open: ${(e as Error).message}`);
  }
  try {
    const schemaVersion = await store.session((q) => migrate(q));
    return Object.assign(store, { schemaVersion });
  } catch (e) {
    await store.close().catch(() => {});
    throw new Error(`store (${cfg.kind} ${where}): ${(e as Error).message}`);
  }
}

async function openPglite(dir: string): Promise<Omit<SqlStore, 'schemaVersion'>> {
  mkdirSync(dir, { recursive: true });
  const { PGlite } = await import('@electric-sql/pglite');
  const db = new PGlite(dir);
  await db.waitReady;
  // One connection: statements of concurrent callers would interleave inside a transaction,
  // so every use takes its turn on this chain.
  let turn: Promise<unknown> = Promise.resolve();
  const exclusive = <T>(fn: () => Promise<T>): Promise<T> => {
    const run = turn.then(fn, fn);
    turn = run.catch(() => {});
    return run;
  };
  const raw: Queryer = {
    async query<T>(sql: string, params: readonly unknown[] = []) {
      const r = await db.query<T>(sql, params as unknown[]);
      return { rows: r.rows, rowCount: r.affectedRows ?? r.rows.length };
    },
  };
  return {
    kind: 'pglite',
    where: dir,
    query: (sql, params) => exclusive(() => raw.query(sql, params)),
    session: (fn) => exclusive(() => fn(raw)),
    transaction: (fn) => exclusive(() => db.transaction((tx) => fn({ query: async (sql, params = []) => {
      const r = await tx.query(sql, params as unknown[]);
      return { rows: r.rows as never[], rowCount: r.affectedRows ?? r.rows.length };
    } }))),
    close: async () => {
      await turn;
      await db.close();
    },
  };
}

async function openPostgres(cfg: Extract<StoreConfig, { kind: 'postgres' }>): Promise<Omit<SqlStore, 'schemaVersion'>> {
  const { default: pg } = await import('pg');
  const pool = new pg.Pool({ connectionString: cfg.url, max: cfg.pool_size, connectionTimeoutMillis: cfg.connect_timeout_ms });
  // An idle client that loses its server emits 'error' on the pool; the next query reports it.
  pool.on('error', () => {});
  const client = await pool.connect(); // reachability now, with the driver's own message
  client.release();
  type PgQueryable = { query(text: string, values?: unknown[]): Promise<{ rows: unknown[]; rowCount: number | null }> };
  const wrap = (c: PgQueryable): Queryer => ({
    async query<T>(sql: string, params: readonly unknown[] = []) {
      const r = await c.query(sql, params as unknown[]);
      return { rows: r.rows as T[], rowCount: r.rowCount ?? 0 };
    },
  });
  const session = async <T>(fn: (q: Queryer) => Promise<T>): Promise<T> => {
    const c = await pool.connect();
    try {
      return await fn(wrap(c));
    } finally {
      c.release();
    }
  };
  return {
    kind: 'postgres',
    where: redactUrl(cfg.url),
    query: wrap(pool).query,
    session,
    transaction: (fn) =>
      session(async (q) => {
        await q.query('BEGIN');
        try {
          const out = await fn(q);
          await q.query(NOTIFY_CHANGE_SQL);
          await q.query('COMMIT');
          return out;
        } catch (e) {
          await q.query('ROLLBACK').catch(() => {});
          throw e;
        }
      }),
    close: () => pool.end(),
  };
}

/** The URL with its password replaced by `***` (logs, errors). */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '(unparsable url)';
  }
}
