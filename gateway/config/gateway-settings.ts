/**
 * `gateway.yaml`: what the gateway needs beyond the model registry (`models.yaml`) and the
 * routing file (`routing.yaml`), both of which belong to the core. Listener and limits, upstream
 * connection pools and timeouts, caller keys and endpoint-health tunables. Snake_case with units
 * in the names, like the core's files.
 */
import { CALLER_ROLES, type CallerRole } from '../../core/index.ts';
import { z } from 'zod';

const MIB = 1024 * 1024;

/** The public listener and request limits. */
export const ServerSchema = z
  .object({
    host: z.string().min(1).default('127.0.0.1'),
    port: z.number().int().min(0).max(65535).default(8080),
    /**
     * Worker threads, each a whole gateway (own core, breakers, pools) on the same port
     * (SO_REUSEPORT). State is per worker, so more than 1 prints a warning, and models whose
     * routing keeps state refuse to start.
     */
    workers: z.number().int().min(1).max(256).default(1),
    /** Largest request body; larger ⇒ 413. */
    body_limit_mb: z.number().positive().max(1024).default(16),
    /** Requests in flight per worker; beyond ⇒ 503 with Retry-After. */
    max_in_flight: z.number().int().positive().default(4096),
    /**
     * Longest wait for a request's whole body after its headers, ms; later ⇒ 408
     * `request_timeout` and the connection closed (a slow-body client holds an in-flight place
     * meanwhile). uWS itself closes a connection 10–12 s after its last complete request (idle
     * keep-alive, slow headers, slow bodies; fixed), so this matters below that.
     */
    body_read_timeout_ms: z.number().int().positive().max(3_600_000).default(10_000),
    /** Retry-After seconds sent with the 503 of an exceeded in-flight bound. */
    overload_retry_after_sec: z.number().int().nonnegative().default(1),
    /** Root seed of routing draws; absent ⇒ a random one, logged at start. */
    seed: z.number().int().optional(),
    log_level: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
    /**
     * Admin listener (`/health` without a key; `/health/deep`, `/routing`, `/metrics`, `/admin/…`
     * with an admin key, as on the public port; `/status/models`, `/status/config` with an admin
     * key, here only): keep it on a private address. null or `off` ⇒ none (as `--admin-port off`).
     */
    admin_host: z.string().min(1).default('127.0.0.1'),
    admin_port: z.preprocess((v) => (v === 'off' ? null : v), z.number().int().min(0).max(65535).nullable()).default(8081),
    /**
     * Serve `/metrics` on the admin listener without an admin key, for a Prometheus scraper.
     * Only allowed when `admin_host` is a loopback or private address (checked at load); every
     * other operational route keeps needing an admin key on every listener.
     */
    metrics_without_key: z.boolean().default(false),
    /** SIGTERM: longest wait for in-flight requests before the rest are cut, ms. */
    drain_grace_ms: z.number().int().nonnegative().default(30_000),
  })
  .strict();

/**
 * The request log: every request that reached routing, appended to a DuckDB file in the trace
 * schema plus endpoint, attempts, status, TTFT, E2E, tokens and cost (`gateway/request-log/`).
 */
export const RequestLogSchema = z
  .object({
    /** DuckDB file; null ⇒ no request log. */
    path: z.string().min(1).nullable().default(null),
    /** Store each prompt's JSON too (default: only its prefix block hashes). */
    log_prompts: z.boolean().default(false),
    /** Rows buffered (not yet written) before new rows are dropped and counted. */
    buffer_rows: z.number().int().positive().default(50_000),
    /**
     * Rows per hand-over to the writer thread. Small and frequent hand-overs keep rows from
     * outliving the young generation, so they are never promoted to the old one (peak RSS is
     * lower; `bench/request-log.bench.ts` measures the per-row costs); the writer commits per
     * 4,000 rows (fewer when they carry long prompts) or 1 s on its side (a crash loses at most
     * those, plus what was not yet handed over).
     */
    batch_rows: z.number().int().positive().default(256),
    /** Longest wait of a row before it is handed over, ms (its commit follows within 1 s). */
    flush_interval_ms: z.number().int().positive().default(100),
    /**
     * DuckDB `memory_limit` of the writer, MB; default `requestLogMemoryLimitMb`: 32 MB, or 128 MB
     * with `log_prompts: true`. The writer never reads the table back, so its buffer pool needs
     * only the row group being filled (about 12 MB of rows without prompts) and the commit in
     * progress; more only keeps written blocks cached, and the process grows with the table up
     * to the limit (measured standalone over 400,000 rows: at 128 MB written blocks took 10 MB
     * per 100,000 rows and kept growing; at 24 MB they stayed at 1–2 MB). Rows that carry
     * prompts are larger: a commit of 1,000 rows of 12 KB failed to pin a block at 32 MB, and
     * even at 128 MB prompts of about 50 KB fail after a few thousand rows (DuckDB keeps the row
     * group being filled in memory); such losses are logged and counted
     * (`switchyard_request_log_lost_rows_total`).
     */
    memory_limit_mb: z.number().int().min(16).optional(),
  })
  .strict();

/** undici pools towards the upstreams, one per origin. */
export const UpstreamSchema = z
  .object({
    connections_per_origin: z.number().int().positive().default(256),
    connect_timeout_ms: z.number().int().positive().default(5_000),
    /** Until the upstream's response headers (non-stream responses send them at the end). */
    headers_timeout_ms: z.number().int().positive().default(300_000),
    /** Longest silence between two body chunks. */
    body_timeout_ms: z.number().int().positive().default(300_000),
    keep_alive_timeout_ms: z.number().int().positive().default(4_000),
    /** Error bodies read from an upstream are cut at this size. */
    max_error_body_kb: z.number().int().positive().default(64),
  })
  .strict();

/** One caller key. The key itself is never stored: only its SHA-256 (hex). */
export const CallerKeySchema = z
  .object({
    /** Caller id for logs, affinity and prompt-size hints; `switchyard:…` ids are the gateway's own (its health-check probes). */
    id: z
      .string()
      .min(1)
      .refine((id) => !id.startsWith('switchyard:'), 'caller ids starting with switchyard: are reserved for the gateway\'s own traffic (its health-check probes); choose another id'),
    sha256: z
      .string()
      .regex(/^[0-9a-fA-F]{64}$/, 'must be the 64-hex-digit SHA-256 of the key; compute it with: printf %s "$KEY" | sha256sum'),
    /** Model ids or aliases the key may use; absent ⇒ every model. An id admits its aliases. */
    allowed_models: z.array(z.string().min(1)).optional(),
    /**
     * The caller's tier (seed 000): `free` < `pro` < `internal` < `admin`. Upstream keys reserved
     * above it (`api_keys[].min_role` in models.yaml) are invisible to its requests; `admin` is
     * also the control-plane role (pin a route with `X-Route-Pin`, `/health/deep`, `/routing`,
     * `/metrics`, `/admin/…`). Absent ⇒ `admin` when `admin: true`, else `free`.
     */
    role: z.enum(CALLER_ROLES).optional(),
    /** The admin role, as `role: admin` (kept for existing configs); contradicting `role` is refused. */
    admin: z.boolean().optional(),
    /** The grant this key belongs to (logs and affinity group callers by it), when keys are issued per grant. */
    grant_id: z.string().min(1).optional(),
  })
  .strict()
  .superRefine((k, ctx) => {
    if (k.admin === true && k.role !== undefined && k.role !== 'admin') {
      ctx.addIssue({ code: 'custom', path: ['role'], message: `admin: true means role: admin, but role is ${k.role}; drop admin: true, or set role: admin` });
    }
    if (k.admin === false && k.role === 'admin') ctx.addIssue({ code: 'custom', path: ['admin'], message: 'role: admin makes the key an admin, but admin is false; drop admin: false' });
  });

/** The effective tier of a caller key: its `role`, else `admin` for `admin: true`, else `free`. */
export function callerKeyRole(k: { readonly role?: CallerRole; readonly admin?: boolean }): CallerRole {
  return k.role ?? (k.admin === true ? 'admin' : 'free');
}

/** Caller authentication: `keys` (default) or an explicit `none` for local use. */
export const AuthSchema = z
  .object({
    mode: z.enum(['keys', 'none']).default('keys'),
    keys: z.array(CallerKeySchema).default([]),
    /** In `none` mode: whether the anonymous caller is an admin (may pin), as `anonymous_role: admin`. Default false. */
    anonymous_admin: z.boolean().default(false),
    /**
     * In `none` mode: the tier of every (keyless) caller for key pools. Absent ⇒ `admin` with
     * `anonymous_admin: true`, else `free`.
     */
    anonymous_role: z.enum(CALLER_ROLES).optional(),
  })
  .strict()
  .superRefine((a, ctx) => {
    if (a.anonymous_role !== undefined && a.mode !== 'none') ctx.addIssue({ code: 'custom', path: ['anonymous_role'], message: 'anonymous_role applies to auth.mode: none only (with keys, each key has its role); remove it' });
    if (a.anonymous_admin && a.anonymous_role !== undefined && a.anonymous_role !== 'admin') {
      ctx.addIssue({ code: 'custom', path: ['anonymous_role'], message: `anonymous_admin: true means anonymous_role: admin, but anonymous_role is ${a.anonymous_role}; drop one of them` });
    }
  });

/** Endpoint health (core `HealthOptions`), in the YAML's units. */
export const HealthSchema = z
  .object({
    failure_threshold: z.number().int().min(1).optional(),
    cooldown_sec: z.number().positive().optional(),
    min_availability: z.number().min(0).max(1).optional(),
    ewma_alpha: z.number().gt(0).max(1).optional(),
  })
  .strict();


/**
 * The runtime data store (`gateway/store/`): the overlay operators change through `/admin/…`
 * (weight overrides, disabled providers) and the admin audit log. Absent ⇒ no database: changes
 * live in the process only and are lost at exit. `pglite` runs PostgreSQL inside the gateway
 * (one process; data in `dir`); `postgres` uses a server several replicas share.
 */
export const StoreSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('pglite'), dir: z.string().min(1) }).strict(),
  z
    .object({
      kind: z.literal('postgres'),
      /** `postgres://user:password@host:port/database`. */
      url: z.string().regex(/^postgres(ql)?:\/\//, 'must be a postgres:// (or postgresql://) URL'),
      pool_size: z.number().int().min(1).max(100).default(4),
      connect_timeout_ms: z.number().int().positive().default(5_000),
    })
    .strict(),
]);

/**
 * OpenTelemetry traces (`gateway/tracing/`): one server span per inference request and one child
 * span per upstream attempt, with the GenAI semantic conventions' `gen_ai.*` attributes, sent
 * over OTLP/HTTP. Off by default; when off, no OpenTelemetry module is loaded.
 */
export const TracingSchema = z
  .object({
    enabled: z.boolean().default(false),
    /** OTLP/HTTP traces URL (the collector's `/v1/traces`). */
    endpoint: z
      .string()
      .regex(/^https?:\/\/[^/\s]+/, 'must be an http:// or https:// URL, e.g. http://127.0.0.1:4318/v1/traces')
      .default('http://127.0.0.1:4318/v1/traces'),
    /** Share of new traces recorded (by trace id); a client's sampled flag wins when it sends a `traceparent`. */
    sample_ratio: z.number().min(0).max(1).default(1),
    /** The `service.name` resource attribute. */
    service_name: z.string().min(1).default('switchyard-gateway'),
  })
  .strict();

/**
 * Background health checks (`health_check:` in models.yaml): how many probes one gateway process
 * runs at once, across every checked route. Waiting probes start in order as slots free.
 */
export const HealthChecksSchema = z
  .object({
    max_concurrent_probes: z.number().int().min(1).max(1_000).default(4),
  })
  .strict();

/**
 * Routing state shared between gateway replicas (`gateway/state/`). `local` (the default): each
 * process keeps its own breakers and affinity pins. `redis`: replicas share breaker failure counts,
 * the single half-open probe claim and affinity pins through one Redis (or Valkey) server; each
 * replica reads a local mirror and writes asynchronously, so a request never waits on Redis except
 * to claim a scarce unit (the probe), and then at most `acquire_timeout_ms`.
 */
export const StateSchema = z.discriminatedUnion('backend', [
  z.object({ backend: z.literal('local') }).strict(),
  z
    .object({
      backend: z.literal('redis'),
      /** `redis://[user:password@]host:port[/db]` (or `rediss://` for TLS). */
      url: z.string().regex(/^rediss?:\/\/[^/\s]+/, 'must be a redis:// or rediss:// URL, e.g. redis://127.0.0.1:6379'),
      /**
       * Key prefix, so that several deployments can share one server. Every key is
       * `<prefix>{<tag>}:…`, one hash tag per script's keys so that it also runs on Redis Cluster.
       */
      prefix: z
        .string()
        .min(1)
        .max(64)
        .regex(/^[A-Za-z0-9_.:-]+$/, 'may hold only letters, digits and _ . : - (no braces: the hash tag is added by the gateway)')
        .default('switchyard:'),
      /** The longest a request waits on Redis to claim a shared unit before using local state, ms. */
      acquire_timeout_ms: z.number().int().min(1).max(10_000).default(50),
      /**
       * The staleness bound, ms: how old a mirrored fact may be before the mirror is re-read in
       * full (pub/sub keeps it fresh in between; this bounds the damage of a lost message).
       */
      max_staleness_ms: z.number().int().min(10).max(600_000).default(1_000),
      /** How long a connection attempt may take before the replica starts on local state, ms. */
      connect_timeout_ms: z.number().int().positive().max(60_000).default(1_000),
    })
    .strict(),
]);

/** The validated `StateSchema` value (defaults applied). */
export type StateConfig = z.infer<typeof StateSchema>;

/** `store:` extras shared by both kinds. */
export const StorePollSchema = z.number().int().min(100).default(2_000);

/** The whole `gateway.yaml`. Every block is optional. */
export const GatewaySettingsSchema = z
  .object({
    server: ServerSchema.default(ServerSchema.parse({})),
    upstream: UpstreamSchema.default(UpstreamSchema.parse({})),
    auth: AuthSchema.default(AuthSchema.parse({})),
    health: HealthSchema.default({}),
    /** Core routing tunables (prefill-aware P2C, affinity, …), handed to the core as they are. */
    routing_settings: z.record(z.string(), z.unknown()).default({}),
    /**
     * Strategy modules (.js / .mjs; .ts / .mts only under tsx, SWITCHYARD_BUNDLE=0) registered next to the
     * built-ins, paths relative to this file (`strategy-modules.ts`; contract: core
     * `strategies/strategy-module.ts`). A module that fails leaves out only the models that use it.
     */
    strategies: z.array(z.string().min(1)).default([]),
    request_log: RequestLogSchema.default(RequestLogSchema.parse({})),
    store: StoreSchema.optional(),
    /**
     * How often the overlay is read back from the store, ms, so that changes made through another
     * replica (or another worker) are applied here too. Ignored without a store.
     */
    store_poll_ms: StorePollSchema,
    tracing: TracingSchema.default(TracingSchema.parse({})),
    health_checks: HealthChecksSchema.default(HealthChecksSchema.parse({})),
    /** Routing state shared between replicas; `local` (per process) by default. */
    state: StateSchema.default({ backend: 'local' }),
    /**
     * The runtime setting that makes the registry's `auto:` profiles exist (seed 000 "Auto 模型"):
     * off by default; while off, `auto` and `auto-<name>` get 404 and are absent from
     * `/v1/models`. A reload applies a change; a value set at run time through
     * `PUT /admin/settings/auto_mode_enabled` (kept in the store) wins until it is deleted.
     */
    auto_mode_enabled: z.boolean().default(false),
  })
  .strict();

/** The validated `GatewaySettingsSchema` value (defaults applied). */
export type GatewaySettings = z.infer<typeof GatewaySettingsSchema>;
/** The validated `CallerKeySchema` value (defaults applied). */
export type CallerKeyConfig = z.infer<typeof CallerKeySchema>;
/** The validated `AuthSchema` value (defaults applied). */
export type AuthConfig = z.infer<typeof AuthSchema>;
/** The validated `RequestLogSchema` value (defaults applied). */
export type RequestLogConfig = z.infer<typeof RequestLogSchema>;

/** The validated `TracingSchema` value (defaults applied). */
export type TracingConfig = z.infer<typeof TracingSchema>;

/** The body limit in bytes. */
export function bodyLimitBytes(s: GatewaySettings): number {
  return Math.floor(s.server.body_limit_mb * MIB);
}

/**
 * The request log writer's DuckDB `memory_limit`, MB: `memory_limit_mb` when set, else 32, or 128
 * when prompts are logged (see `memory_limit_mb`).
 */
export function requestLogMemoryLimitMb(rl: { memory_limit_mb?: number | undefined; log_prompts: boolean }): number {
  return rl.memory_limit_mb ?? (rl.log_prompts ? 128 : 32);
}
