/**
 * The routing tunables of the core (prefill-aware selection and session affinity) as ONE typed,
 * frozen object, validated once at start.
 *
 * Two sources feed it, with one naming rule between them: a snake_case key is the environment
 * variable's name in lower case without its `ROUTING_` prefix.
 *
 * | key (experiment `routing:` block) | environment variable              | default | field                         |
 * | --------------------------------- | --------------------------------- | ------- | ----------------------------- |
 * | `prefill_aware_enabled`           | `ROUTING_PREFILL_AWARE_ENABLED`   | true    | `prefillAwareEnabled`         |
 * | `prefill_intervene_tokens`        | `ROUTING_PREFILL_INTERVENE_TOKENS`| 50 000  | `prefillInterveneTokens`      |
 * | `prefill_elephant_tokens`         | `ROUTING_PREFILL_ELEPHANT_TOKENS` | 200 000 | `prefillElephantTokens`       |
 * | `prefill_elephant_limit`          | `ROUTING_PREFILL_ELEPHANT_LIMIT`  | 1       | `prefillElephantLimit`        |
 * | `prefill_affinity_ceiling`        | `ROUTING_PREFILL_AFFINITY_CEILING`| 150 000 | `prefillAffinityCeilingTokens`|
 * | `prefill_affinity_exclude_own`    | `ROUTING_PREFILL_AFFINITY_EXCLUDE_OWN` | false | `prefillAffinityExcludeOwn` |
 * | `prefill_hint_ttl_sec`            | `ROUTING_PREFILL_HINT_TTL_SEC`    | 1 200   | `prefillHintTtlSec`           |
 * | `affinity_enabled`                | `ROUTING_AFFINITY_ENABLED`        | true    | `affinityEnabled`             |
 * | `affinity_max_age_sec`            | `ROUTING_AFFINITY_MAX_AGE_SEC`    | 86 400  | `affinityMaxAgeSec`           |
 * | `affinity_ttl_sec`                | `ROUTING_AFFINITY_TTL_SEC`        | 300     | `affinityTtlSec`              |
 * | `affinity_sweep_threshold`        | `ROUTING_AFFINITY_SWEEP_THRESHOLD`| 1 000   | `affinitySweepThreshold`      |
 *
 * | `upstream_concurrency_enabled`    | `UPSTREAM_CONCURRENCY_ENABLED`    | true    | `upstreamConcurrencyEnabled`  |
 * | `upstream_concurrency_initial_limit` | `UPSTREAM_CONCURRENCY_INITIAL_LIMIT` | 8 | `upstreamConcurrencyInitialLimit` |
 * | `upstream_concurrency_max_limit`  | `UPSTREAM_CONCURRENCY_MAX_LIMIT`  | 64      | `upstreamConcurrencyMaxLimit` |
 * | `upstream_concurrency_probe_success_interval` | `UPSTREAM_CONCURRENCY_PROBE_SUCCESS_INTERVAL` | 100 | `upstreamConcurrencyProbeSuccessInterval` |
 * | `upstream_concurrency_acquire_timeout_sec` | `UPSTREAM_CONCURRENCY_ACQUIRE_TIMEOUT_SEC` | 30 | `upstreamConcurrencyAcquireTimeoutSec` |
 * | `timeout_connect_sec`             | `ROUTING_TIMEOUT_CONNECT_SEC`     | 10      | `connectTimeoutSec`           |
 * | `timeout_headers_sec`             | `ROUTING_TIMEOUT_HEADERS_SEC`     | 300     | `headersTimeoutSec`           |
 * | `timeout_first_token_sec`         | `ROUTING_TIMEOUT_FIRST_TOKEN_SEC` | 300     | `firstTokenTimeoutSec`        |
 * | `timeout_request_sec`             | `ROUTING_TIMEOUT_REQUEST_SEC`     | 600     | `requestTimeoutSec`           |
 * | `timeout_stream_idle_sec`         | `ROUTING_TIMEOUT_STREAM_IDLE_SEC` | 120     | `streamIdleTimeoutSec`        |
 * | `timeout_overall_sec`             | `ROUTING_TIMEOUT_OVERALL_SEC`     | 1 800   | `overallDeadlineSec`          |
 *
 * The `upstream_concurrency_*` keys are seed 000 "出站并发" and keep the spec's environment names
 * (no `ROUTING_` prefix). The timeouts are Switchyard's own (the spec names none); their
 * defaults are generous so that a slow but live engine is never cut off: connect covers TCP+TLS
 * (enforced by the driver, which sees sockets), headers runs from dispatch to the first upstream
 * output, first token from dispatch to a stream's first content token, request bounds a
 * non-streaming attempt, stream idle bounds the gap between chunks of a
 * stream (armed only once the driver reports `chunk` events), overall bounds the whole life.
 *
 * `prefill_affinity_exclude_own` is Switchyard's extension, off by default: with it, the tokens
 * of the caller's own requests still in prefill on its pinned endpoint do not count towards the
 * affinity ceiling. Seed 000 measures the endpoint's whole backlog; on the Mooncake reference
 * slice of `bench/` the exemption let heavy callers pile onto their pinned replica and doubled
 * the `fixed` strategy's TTFT p99, so the spec's rule stays the default.
 *
 * The first eight come from seed 000 ("prefill 感知的选路", "会话亲和"); the spec fixes the
 * affinity TTL (300 s) and sweep threshold (1 000) as constants — Switchyard exposes them so an
 * experiment can sweep them, with the spec's values as defaults.
 */
import { z } from 'zod';
import { formatConfigError } from './models-config.ts';

/** The validated routing tunables. Token counts are prompt tokens; durations are seconds. */
export interface RoutingSettings {
  /** Use prefill load in the `fixed` router's draw (power-of-two-choices). Default true. */
  readonly prefillAwareEnabled: boolean;
  /** Load overrides weight only when the heavier of the two drawn endpoints has at least this
   *  many uncached prompt tokens in prefill. Integer ≥ 0 (0 = always prefer the lighter). Default 50 000. */
  readonly prefillInterveneTokens: number;
  /** A request whose estimated uncached prompt on an endpoint reaches this is an elephant there.
   *  Integer ≥ 1. Default 200 000. */
  readonly prefillElephantTokens: number;
  /** Concurrent elephants an endpoint takes before elephants avoid it. Integer ≥ 1. Default 1. */
  readonly prefillElephantLimit: number;
  /** A pinned endpoint whose prefill backlog exceeds this many tokens is bypassed and the pin
   *  moves. Integer ≥ 0. Default 150 000. */
  readonly prefillAffinityCeilingTokens: number;
  /** Leave the caller's own requests still in prefill out of the backlog the ceiling compares
   *  (Switchyard's extension; seed 000 counts the whole backlog). Default false. */
  readonly prefillAffinityExcludeOwn: boolean;
  /** How long a (caller, endpoint) prompt-size hint is trusted, seconds ≥ 0 (0 = no hints). Default 1 200. */
  readonly prefillHintTtlSec: number;
  /** Session affinity in the `fixed` router. Default true. */
  readonly affinityEnabled: boolean;
  /** Hard lifetime of a pin from its creation, seconds ≥ 0 (0 = no cap). Default 86 400. */
  readonly affinityMaxAgeSec: number;
  /** Sliding idle TTL of a pin, seconds > 0. Default 300. */
  readonly affinityTtlSec: number;
  /** Expired pins are swept lazily once the table holds more than this many. Integer ≥ 1. Default 1 000. */
  readonly affinitySweepThreshold: number;
  /** Adaptive outbound concurrency per (provider, API key) for non-local routes. Default true. */
  readonly upstreamConcurrencyEnabled: boolean;
  /** Starting in-flight limit of each (provider, key). Integer ≥ 1. Default 8. */
  readonly upstreamConcurrencyInitialLimit: number;
  /** Highest the limit grows to. Integer ≥ 1. Default 64. */
  readonly upstreamConcurrencyMaxLimit: number;
  /** Successes between two +1 steps of the limit. Integer ≥ 1. Default 100. */
  readonly upstreamConcurrencyProbeSuccessInterval: number;
  /** Longest wait for an outbound slot (or engine-hold place) before moving on, seconds > 0. Default 30. */
  readonly upstreamConcurrencyAcquireTimeoutSec: number;
  /** TCP+TLS connect limit, seconds > 0, enforced by the driver. Default 10. */
  readonly connectTimeoutSec: number;
  /** Dispatch → first upstream output (headers, preamble or token), seconds > 0. Default 300. */
  readonly headersTimeoutSec: number;
  /**
   * Dispatch → first token of a streaming attempt, seconds > 0. Default 300. The core's own
   * `first_token` wait: a stream whose headers came but whose tokens never do (a silent
   * upstream) is cancelled and fails over instead of waiting for the overall deadline.
   */
  readonly firstTokenTimeoutSec: number;
  /** Dispatch → end of a non-streaming attempt, seconds > 0. Default 600. */
  readonly requestTimeoutSec: number;
  /** Longest gap between stream chunks once chunks are reported, seconds > 0. Default 120. */
  readonly streamIdleTimeoutSec: number;
  /** Start → end of the whole request life, seconds > 0. Default 1 800. */
  readonly overallDeadlineSec: number;
}

/** Spec defaults (seed 000), frozen. */
export const DEFAULT_ROUTING_SETTINGS: Readonly<RoutingSettings> = Object.freeze({
  prefillAwareEnabled: true,
  prefillInterveneTokens: 50_000,
  prefillElephantTokens: 200_000,
  prefillElephantLimit: 1,
  prefillAffinityCeilingTokens: 150_000,
  prefillAffinityExcludeOwn: false,
  prefillHintTtlSec: 1_200,
  affinityEnabled: true,
  affinityMaxAgeSec: 86_400,
  affinityTtlSec: 300,
  affinitySweepThreshold: 1_000,
  upstreamConcurrencyEnabled: true,
  upstreamConcurrencyInitialLimit: 8,
  upstreamConcurrencyMaxLimit: 64,
  upstreamConcurrencyProbeSuccessInterval: 100,
  upstreamConcurrencyAcquireTimeoutSec: 30,
  connectTimeoutSec: 10,
  headersTimeoutSec: 300,
  firstTokenTimeoutSec: 300,
  requestTimeoutSec: 600,
  streamIdleTimeoutSec: 120,
  overallDeadlineSec: 1_800,
});

const tokens = (min: number) => z.number().int().min(min);

/** Schema of the snake_case block (experiment `routing:`); strict, every key optional. */
export const RoutingSettingsSchema = z
  .object({
    prefill_aware_enabled: z.boolean().optional(),
    prefill_intervene_tokens: tokens(0).optional(),
    prefill_elephant_tokens: tokens(1).optional(),
    prefill_elephant_limit: tokens(1).optional(),
    prefill_affinity_ceiling: tokens(0).optional(),
    prefill_affinity_exclude_own: z.boolean().optional(),
    prefill_hint_ttl_sec: z.number().nonnegative().optional(),
    affinity_enabled: z.boolean().optional(),
    affinity_max_age_sec: z.number().nonnegative().optional(),
    affinity_ttl_sec: z.number().positive().optional(),
    affinity_sweep_threshold: tokens(1).optional(),
    upstream_concurrency_enabled: z.boolean().optional(),
    upstream_concurrency_initial_limit: tokens(1).optional(),
    upstream_concurrency_max_limit: tokens(1).optional(),
    upstream_concurrency_probe_success_interval: tokens(1).optional(),
    upstream_concurrency_acquire_timeout_sec: z.number().positive().optional(),
    timeout_connect_sec: z.number().positive().optional(),
    timeout_headers_sec: z.number().positive().optional(),
    timeout_first_token_sec: z.number().positive().optional(),
    timeout_request_sec: z.number().positive().optional(),
    timeout_stream_idle_sec: z.number().positive().optional(),
    timeout_overall_sec: z.number().positive().optional(),
  })
  .strict();

type SnakeKey = keyof z.infer<typeof RoutingSettingsSchema>;

/** snake_case key → typed field. The environment variable is `ROUTING_` + the key upper-cased. */
const FIELD_OF: Readonly<Record<SnakeKey, keyof RoutingSettings>> = {
  prefill_aware_enabled: 'prefillAwareEnabled',
  prefill_intervene_tokens: 'prefillInterveneTokens',
  prefill_elephant_tokens: 'prefillElephantTokens',
  prefill_elephant_limit: 'prefillElephantLimit',
  prefill_affinity_ceiling: 'prefillAffinityCeilingTokens',
  prefill_affinity_exclude_own: 'prefillAffinityExcludeOwn',
  prefill_hint_ttl_sec: 'prefillHintTtlSec',
  affinity_enabled: 'affinityEnabled',
  affinity_max_age_sec: 'affinityMaxAgeSec',
  affinity_ttl_sec: 'affinityTtlSec',
  affinity_sweep_threshold: 'affinitySweepThreshold',
  upstream_concurrency_enabled: 'upstreamConcurrencyEnabled',
  upstream_concurrency_initial_limit: 'upstreamConcurrencyInitialLimit',
  upstream_concurrency_max_limit: 'upstreamConcurrencyMaxLimit',
  upstream_concurrency_probe_success_interval: 'upstreamConcurrencyProbeSuccessInterval',
  upstream_concurrency_acquire_timeout_sec: 'upstreamConcurrencyAcquireTimeoutSec',
  timeout_connect_sec: 'connectTimeoutSec',
  timeout_headers_sec: 'headersTimeoutSec',
  timeout_first_token_sec: 'firstTokenTimeoutSec',
  timeout_request_sec: 'requestTimeoutSec',
  timeout_stream_idle_sec: 'streamIdleTimeoutSec',
  timeout_overall_sec: 'overallDeadlineSec',
};
const SNAKE_KEYS = Object.keys(FIELD_OF) as SnakeKey[];
const BOOLEAN_KEYS: ReadonlySet<SnakeKey> = new Set(['prefill_aware_enabled', 'prefill_affinity_exclude_own', 'affinity_enabled', 'upstream_concurrency_enabled']);

/**
 * The environment variable for a snake_case key, e.g. `ROUTING_PREFILL_INTERVENE_TOKENS`;
 * `upstream_concurrency_*` keys keep the spec's unprefixed names (`UPSTREAM_CONCURRENCY_MAX_LIMIT`).
 */
export function routingEnvName(key: string): string {
  if (key.startsWith('upstream_concurrency_')) return key.toUpperCase();
  return `ROUTING_${key.toUpperCase()}`;
}

/** Every environment variable `routingSettingsFromEnv` reads (for typo warnings). */
export const ROUTING_ENV_NAMES: readonly string[] = Object.freeze(SNAKE_KEYS.map(routingEnvName));

/**
 * Validates a snake_case block (the experiment file's `routing:` record) over the defaults.
 * Absent keys keep their default.
 * @param where label for errors, e.g. `experiments/x.yaml routing`.
 * @throws Error listing each bad key with what is allowed; an unknown key lists the known ones.
 */
export function parseRoutingSettings(raw: Record<string, unknown>, where = 'routing settings'): Readonly<RoutingSettings> {
  const r = RoutingSettingsSchema.safeParse(raw);
  if (!r.success) {
    const msg = formatConfigError(where, r.error);
    const unknown = r.error.issues.some((i) => i.code === 'unrecognized_keys');
    throw new Error(unknown ? `${msg}\n  known keys: ${SNAKE_KEYS.join(', ')}` : msg);
  }
  const out: Record<string, unknown> = { ...DEFAULT_ROUTING_SETTINGS };
  for (const key of SNAKE_KEYS) {
    const v = r.data[key];
    if (v !== undefined) out[FIELD_OF[key]] = v;
  }
  return Object.freeze(out as unknown as RoutingSettings);
}

/** The snake_case form of a typed object (inverse of `parseRoutingSettings`). */
function toSnake(s: RoutingSettings): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of SNAKE_KEYS) out[key] = s[FIELD_OF[key]];
  return out;
}

const TYPED_FIELDS: readonly string[] = Object.values(FIELD_OF);

/** Whether `x` has exactly the typed (camelCase) fields — a `RoutingSettings`, not a snake_case block. */
function isTyped(x: Record<string, unknown>): boolean {
  const keys = Object.keys(x);
  return keys.length === TYPED_FIELDS.length && keys.every((k) => TYPED_FIELDS.includes(k));
}

/**
 * What `RoutingCoreOptions.settings` accepts: the snake_case block of an experiment file (any
 * subset of keys), or a complete `RoutingSettings` (from `routingSettingsFromEnv` or
 * `{...DEFAULT_ROUTING_SETTINGS, …}`), re-validated. Absent ⇒ the defaults.
 * @throws Error naming each bad key (see `parseRoutingSettings`).
 */
export function resolveRoutingSettings(source: Record<string, unknown> | RoutingSettings | undefined, where = 'routing settings'): Readonly<RoutingSettings> {
  if (source === undefined) return DEFAULT_ROUTING_SETTINGS;
  const rec = source as Record<string, unknown>;
  return parseRoutingSettings(isTyped(rec) ? toSnake(source as RoutingSettings) : rec, where);
}

const TRUE = new Set(['1', 'true', 'yes', 'on']);
const FALSE = new Set(['0', 'false', 'no', 'off']);

/**
 * Builds the settings from environment-style variables (the gateway passes `process.env`; the
 * core never reads it). Reads only the `ROUTING_*` names in the table above; others are ignored
 * (they belong to other features). Unset or empty ⇒ the default. Booleans: 1/true/yes/on and
 * 0/false/no/off (any case). Numbers: decimal, `_` separators allowed (`50_000`).
 * @throws Error naming the variable, its value and what is allowed.
 */
export function routingSettingsFromEnv(env: Readonly<Record<string, string | undefined>>): Readonly<RoutingSettings> {
  const raw: Record<string, unknown> = {};
  for (const key of SNAKE_KEYS) {
    const name = routingEnvName(key);
    const text = env[name]?.trim();
    if (text === undefined || text === '') continue;
    if (BOOLEAN_KEYS.has(key)) {
      const t = text.toLowerCase();
      if (TRUE.has(t)) raw[key] = true;
      else if (FALSE.has(t)) raw[key] = false;
      else throw new Error(`${name}='${text}' is not a boolean; use 1 or 0 (also true/false, yes/no, on/off)`);
      continue;
    }
    const n = Number(text.replaceAll('_', ''));
    if (!Number.isFinite(n)) throw new Error(`${name}='${text}' is not a number; write e.g. ${name}=${toSnake(DEFAULT_ROUTING_SETTINGS)[key]}`);
    raw[key] = n;
  }
  const r = RoutingSettingsSchema.safeParse(raw);
  if (!r.success) {
    const lines = r.error.issues.map((i) => {
      const key = String(i.path[0] ?? '');
      return `  ${routingEnvName(key)}=${String(raw[key])}: ${i.message}`;
    });
    throw new Error(`routing environment is invalid:\n${lines.join('\n')}`);
  }
  return parseRoutingSettings(raw);
}
