/**
 * The store's schema, as numbered migrations applied in order and recorded in
 * `schema_migrations`. A migration is never edited once released: a change is a new entry.
 * `migrate` runs on one connection holding a session-level `pg_advisory_lock`, so gateways that
 * start together against one server apply each migration once, and it refuses a database that a
 * newer gateway has already migrated past what this code knows.
 */
import type { Queryer } from './sql-store.ts';

/** One schema step. */
export interface Migration {
  readonly version: number;
  readonly description: string;
  readonly sql: string;
}

/** Every migration, oldest first; versions are 1, 2, 3, … */
export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    description: 'overlay (weight overrides, disabled providers) and the admin audit log',
    sql: `
CREATE TABLE weight_overrides (
  model_id text NOT NULL,
  endpoint_id text NOT NULL,
  weight double precision CHECK (weight IS NULL OR weight >= 0),
  version integer NOT NULL,
  updated_by text NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (model_id, endpoint_id)
);
CREATE TABLE disabled_providers (
  provider text PRIMARY KEY,
  disabled boolean NOT NULL,
  version integer NOT NULL,
  updated_by text NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE audit_log (
  id bigserial PRIMARY KEY,
  at timestamptz NOT NULL DEFAULT now(),
  caller_id text NOT NULL,
  method text NOT NULL,
  path text NOT NULL,
  status integer NOT NULL,
  before jsonb,
  after jsonb
);`,
  },
  {
    version: 2,
    description: 'the remote address of each audited admin call',
    sql: `ALTER TABLE audit_log ADD COLUMN remote_addr text`,
  },
  {
    version: 3,
    description: 'runtime models and routes, re-pointed routes, strategy switches and offload policies',
    sql: `
CREATE SEQUENCE routing_record_seq;
CREATE TABLE routing_records (
  kind text NOT NULL CHECK (kind IN ('model', 'route', 'repoint', 'strategy', 'offload')),
  model_id text NOT NULL,
  key text NOT NULL,
  value jsonb,
  seq bigint NOT NULL,
  version integer NOT NULL,
  updated_by text NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (kind, model_id, key)
)`,
  },
  {
    version: 4,
    description: 'RouteWise settings per model and the fallback layer',
    // model_id '' is the fallback layer (no model id is empty); a NULL value is a removed setting
    // that keeps its version, like a cleared weight override.
    sql: `
CREATE TABLE routewise_settings (
  model_id text NOT NULL,
  key text NOT NULL,
  value jsonb,
  version integer NOT NULL,
  updated_by text NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (model_id, key)
)`,
  },
  {
    version: 5,
    description: 'provider keys added at run time and min_role reservations of keys from the environment',
    // Keys added through the admin API are sent upstream, so the secret is stored; it is never
    // returned. Reservations of keys that come from the environment or models.yaml are keyed by
    // the key's SHA-256 and kept when the key leaves the rotation (seed 000).
    sql: `
CREATE TABLE provider_api_keys (
  key_id text PRIMARY KEY,
  provider text NOT NULL,
  api_key text NOT NULL,
  key_sha256 text NOT NULL UNIQUE,
  min_role text NOT NULL DEFAULT 'free' CHECK (min_role IN ('free', 'pro', 'internal', 'admin')),
  updated_by text NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE provider_env_key_min_roles (
  key_sha256 text PRIMARY KEY,
  min_role text NOT NULL CHECK (min_role IN ('free', 'pro', 'internal', 'admin')),
  updated_by text NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now()
)`,
  },
  {
    version: 6,
    description: 'stored /v1/responses responses and the conversation items that led to each',
    sql: `
CREATE TABLE stored_responses (
  id text PRIMARY KEY,
  endpoint_id text NOT NULL,
  response jsonb NOT NULL,
  input jsonb NOT NULL,
  stored_at_ms bigint NOT NULL
);
CREATE INDEX stored_responses_age ON stored_responses (stored_at_ms)`,
  },
  {
    version: 7,
    description: 'runtime settings of the gateway (auto_mode_enabled) over their gateway.yaml values',
    // A NULL value is a removed setting (the gateway.yaml value applies again) that keeps its
    // version, like a cleared weight override.
    sql: `
CREATE TABLE runtime_settings (
  key text PRIMARY KEY,
  value jsonb,
  version integer NOT NULL,
  updated_by text NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now()
)`,
  },
];

/** The newest schema version this code knows. */
export const SCHEMA_VERSION = MIGRATIONS[MIGRATIONS.length - 1]!.version;

/** Advisory-lock key of the migrations (any fixed 64-bit number; 'swyd-mig' in ASCII). */
const MIGRATION_LOCK = '8319953392429934951';

/**
 * Brings the schema up to `SCHEMA_VERSION` and returns it. Rows with a NULL weight in
 * `weight_overrides` are cleared overrides: they keep the record's version, so a write that read
 * an earlier version is still refused after a delete and re-create.
 * @throws Error when the database is at a newer version than `SCHEMA_VERSION`.
 */
export async function migrate(q: Queryer): Promise<number> {
  await q.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
  try {
    await q.query('CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, description text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())');
    const { rows } = await q.query<{ v: number | null }>('SELECT max(version) AS v FROM schema_migrations');
    const current = rows[0]?.v ?? 0;
    if (current > SCHEMA_VERSION) {
      throw new Error(`the database schema is at version ${current}, newer than this gateway's ${SCHEMA_VERSION}; run a gateway at least as new as the one that migrated it, or point store: at another database`);
    }
    for (const m of MIGRATIONS) {
      if (m.version <= current) continue;
      await q.query('BEGIN');
      try {
        for (const stmt of m.sql.split(/;\s*\n/).map((x) => x.trim()).filter((x) => x.length > 0)) await q.query(stmt);
        await q.query('INSERT INTO schema_migrations (version, description) VALUES ($1, $2)', [m.version, m.description]);
        await q.query('COMMIT');
      } catch (e) {
        await q.query('ROLLBACK').catch(() => {});
        throw new Error(`migration ${m.version} (${m.description}) failed: ${(e as Error).message}`);
      }
    }
    return SCHEMA_VERSION;
  } finally {
    await q.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]).catch(() => {});
  }
}
