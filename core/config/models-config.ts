/**
 * The validated model registry the core routes with (`models.yaml` + `routing.yaml`).
 * Drivers parse YAML, interpolate `${ENV}` and call `parseModelsConfig`; the core receives only
 * validated values. Field names follow the YAML (snake_case); seed 000 "choosing a router",
 * "adding a model".
 */
import { kindTakesReservations } from '../keys/own-credential-kinds.ts';
import { z } from 'zod';
import { CALLER_ROLES } from '../keys/caller-role.ts';
import { HashSourceSchema } from '../hashing/hash-key.ts';
import { parseCidr } from '../multi-target/cidr.ts';

/** Prices in USD per 1M tokens. `cached_input` defaults to `input` when absent. */
export const PricingSchema = z
  .object({
    input_usd_per_1m: z.number().nonnegative().default(0),
    output_usd_per_1m: z.number().nonnegative().default(0),
    cached_input_usd_per_1m: z.number().nonnegative().optional(),
  })
  .strict();

/**
 * One quota window of a subscription route (seed 000 "RouteWise" route entries): `limit`
 * requests (or tokens) per rolling `window_sec`.
 */
export const QuotaWindowConfigSchema = z
  .object({
    limit: z.number().positive(),
    window_sec: z.number().positive(),
    unit: z.enum(['requests', 'tokens']).default('requests'),
  })
  .strict();

/**
 * The largest route weight (models.yaml `route[].weight`, the admin API's routes and weight
 * overrides): weights are relative, and with this bound the sum over any model's routes stays
 * finite, so the weighted draw keeps their ratios.
 */
export const MAX_ROUTE_WEIGHT = 1e6;

/** The longest offload wait (`offload.wait_sec`), seconds: one day. */
export const MAX_OFFLOAD_WAIT_SEC = 86_400;

/**
 * A background health check (`health_check:` on a route, or on a direct model for all its
 * routes): a small probe every `interval_sec`, bounded by `timeout_ms`; `unhealthy_threshold`
 * failed probes in a row mark the route unhealthy, `healthy_threshold` passed probes in a row
 * healthy again (`core/health/health-checks.ts`). `mode: report_only` (seed 000, the default)
 * only reports in GET /health/deep; `mode: enforce` (seed 003) also takes an unhealthy route out
 * of candidate sets and hash rings until it passes again.
 */
export const HealthCheckSchema = z
  .object({
    mode: z.enum(['report_only', 'enforce']).default('report_only'),
    interval_sec: z.number().positive().max(86_400, 'must be at most 86400 seconds (one day)').default(30),
    timeout_ms: z.number().int().positive().max(600_000, 'must be at most 600000 ms (ten minutes)').default(5_000),
    unhealthy_threshold: z.number().int().min(1).max(100).default(3),
    healthy_threshold: z.number().int().min(1).max(100).default(2),
  })
  .strict();

/** One entry of a route's `api_keys:` pool. */
export const ApiKeyEntrySchema = z
  .object({
    /** The secret (interpolated from the environment by the driver, e.g. `${OPENAI_KEY_PRO}`). */
    key: z.string().min(1, 'must not be empty (is the environment variable set?)'),
    /** Display id in logs and the admin API; absent ⇒ `key-` and a prefix of the key's hash. */
    id: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, 'an id is 1-64 letters, digits, . _ -').optional(),
    /** Lowest caller role that may use the key: free (default, not reserved), pro, internal or admin. */
    min_role: z.enum(CALLER_ROLES).default('free'),
  })
  .strict();

/** One `route:` entry of a model. */
export const RouteSchema = z
  .object({
    kind: z.string().min(1).default('openai_compat'),
    weight: z.number().nonnegative().max(MAX_ROUTE_WEIGHT, `must be at most ${MAX_ROUTE_WEIGHT} (weights are relative)`).default(1),
    base_url: z.string().min(1),
    provider: z.string().min(1).optional(),
    provider_model_id: z.string().min(1).optional(),
    api_key: z.string().optional(),
    /**
     * A pool of upstream keys (seed 000 "为某个层级预留上游 key"), instead of `api_key`: each
     * `key` (the secret, usually `${ENV_VAR}`), an optional display `id`, and `min_role`, the
     * lowest caller tier that may use it (default `free`, not reserved).
     */
    api_keys: z.array(ApiKeyEntrySchema).min(1, 'list at least one key, or drop api_keys').optional(),
    input_modalities: z.array(z.enum(['text', 'image', 'audio'])).default(['text']),
    /**
     * Endpoint families the route serves, by the ids the driver registers (the gateway checks
     * them against its families); absent ⇒ its kind's default (`model/route-endpoints.ts`).
     */
    endpoints: z.array(z.string().regex(/^[a-z][a-z0-9_]*$/, 'an endpoint family id is lower-case letters, digits and _, e.g. chat')).min(1).optional(),
    context_length: z.number().int().positive().optional(),
    pricing: PricingSchema.optional(),
    /** Overrides the loopback test for local/remote splits. */
    local: z.boolean().optional(),
    /**
     * RouteWise resource semantics (seed 000): how the route is paid for. Absent ⇒ `on_demand`.
     * `quota` needs `quota:`; `concurrency` needs `concurrency:`. Other routers ignore these.
     */
    provider_type: z.enum(['on_demand', 'quota', 'concurrency']).optional(),
    /** Quota windows of a `quota` route; with several, the tightest decides. */
    quota: z.union([QuotaWindowConfigSchema, z.array(QuotaWindowConfigSchema).min(1)]).optional(),
    /** Slots of a `concurrency` route. */
    concurrency: z.object({ limit: z.number().int().positive() }).strict().optional(),
    /** Routes of one model naming the same id share one quota (one subscription). */
    quota_pool: z.string().min(1).optional(),
    /** Routes of one model naming the same id share one set of slots. */
    concurrency_pool: z.string().min(1).optional(),
    /** Background health check of this route (opt-in); overrides the model's `health_check:`. */
    health_check: HealthCheckSchema.optional(),
    /**
     * RouteWise quota source (seed 000 "RouteWise", quota sources): a selector matched exactly
     * against the usage records of the quota fetchers registered for `provider`; `usage_label`
     * and `unit` are the fetcher's own strings. Until a record matches, the route is unready.
     */
    quota_source: z.object({ provider: z.string().min(1), usage_label: z.string().min(1), unit: z.string().min(1) }).strict().optional(),
    /**
     * RouteWise: count this quota route's requests in the process per local day against its
     * `quota: {limit, window_sec: 86400}` (seed 000's `local` counter: per worker, from zero at
     * each start, reset at local midnight, requests only).
     */
    local_quota_fallback: z.boolean().optional(),
  })
  .strict()
  .superRefine((r, ctx) => {
    const type = r.provider_type ?? 'on_demand';
    const issue = (path: string, message: string) => ctx.addIssue({ code: 'custom', path: [path], message });
    if (r.api_key !== undefined && r.api_keys !== undefined) issue('api_keys', 'a route has either api_key (one key) or api_keys (a pool), not both; move the api_key into api_keys');
    if (!kindTakesReservations(r.kind)) {
      r.api_keys?.forEach((k, i) => {
        if (k.min_role !== 'free') ctx.addIssue({ code: 'custom', path: ['api_keys', i, 'min_role'], message: `a ${r.kind} route holds its own credential, so a min_role reservation never takes effect on it; drop min_role (or set free) and restrict the model with the caller keys' allowed_models instead` });
      });
    }
    if (type === 'quota' && r.quota === undefined) issue('quota', 'a provider_type: quota route needs quota: {limit, window_sec}');
    if (type === 'concurrency' && r.concurrency === undefined) issue('concurrency', 'a provider_type: concurrency route needs concurrency: {limit}');
    if (type !== 'quota') {
      if (r.quota !== undefined) issue('quota', `quota: applies to provider_type: quota routes; this route is ${type}`);
      if (r.quota_pool !== undefined) issue('quota_pool', `quota_pool: applies to provider_type: quota routes; this route is ${type}`);
    }
    if (r.quota_source !== undefined && type !== 'quota') issue('quota_source', `quota_source: applies to provider_type: quota routes; this route is ${type}`);
    if (r.local_quota_fallback === true) {
      if (type !== 'quota') issue('local_quota_fallback', `local_quota_fallback: applies to provider_type: quota routes; this route is ${type}`);
      if (r.quota_source !== undefined) issue('local_quota_fallback', 'local_quota_fallback counts locally instead of a quota_source; set one or the other');
      const ws = r.quota === undefined ? [] : Array.isArray(r.quota) ? r.quota : [r.quota];
      if (ws.length > 0 && (ws.length !== 1 || ws[0]!.unit !== 'requests' || ws[0]!.window_sec !== 86_400)) {
        issue('local_quota_fallback', 'the local daily counter states one daily request allowance only: quota: {limit: <requests>, window_sec: 86400}; 4-hour or monthly windows, token or spend caps need a quota_source');
      }
    }
    if (type !== 'concurrency') {
      if (r.concurrency !== undefined) issue('concurrency', `concurrency: applies to provider_type: concurrency routes; this route is ${type}`);
      if (r.concurrency_pool !== undefined) issue('concurrency_pool', `concurrency_pool: applies to provider_type: concurrency routes; this route is ${type}`);
    }
  });

/**
 * One target of a multi-target model (seed 003 "targets"): an existing direct model with exactly
 * one route. `weight` feeds round_robin, consistent_hash and least_busy; `priority` splits targets
 * into tiers (higher first); `tags` match the request's routing tags; `retries` overrides the
 * block's; `rate_limit` skips the target when exceeded; `allowed_cidrs` admits only those callers.
 */
export const TargetSchema = z
  .object({
    /** Id or alias of a direct model. */
    model: z.string().min(1),
    weight: z.number().positive().default(1),
    priority: z.number().int().default(0),
    tags: z.array(z.string().min(1)).default([]),
    retries: z.number().int().min(0).max(10).optional(),
    rate_limit: z
      .object({
        requests_per_minute: z.number().positive(),
        /** Requests that may go at once after idling; default one minute's worth. */
        burst: z.number().int().positive().optional(),
      })
      .strict()
      .optional(),
    /** Caller IPs admitted (IPv4/IPv6 CIDR blocks); absent ⇒ everyone. */
    allowed_cidrs: z.array(z.string().min(1)).min(1).optional(),
  })
  .strict();

/**
 * The `routing:` block of a multi-target model (seed 003): a strategy that orders targets within
 * a priority tier, and the retry / fallback rules. Statuses are range-checked by
 * `ModelsConfigSchema` so the error names the model.
 */
export const MultiTargetSchema = z
  .object({
    /** A registered strategy name; checked against the registry when the core is built. */
    strategy: z.string().min(1).default('failover'),
    /** The strategy's own parameters (e.g. consistent_hash `virtual_nodes`). */
    params: z.record(z.string(), z.unknown()).default({}),
    targets: z.array(TargetSchema).min(1),
    /** Same-target retries after a retryable failure (each target's default). */
    retries: z.number().int().min(0).max(10).optional(),
    /** Extra targets a request may try across all tiers; absent ⇒ all; 0 ⇒ choose only. */
    max_fallbacks: z.number().int().min(0).optional(),
    retry_on_429: z.boolean().default(false),
    /** More statuses (400–599) that retry and fail over. */
    fallback_on_statuses: z.array(z.number().int()).default([]),
    /** When runtime filters (cooldown) leave no target: `fail` ⇒ 503, `try_anyway` ⇒ try one. */
    when_all_unavailable: z.enum(['fail', 'try_anyway']).default('fail'),
    /** consistent_hash key sources, first non-empty wins; absent ⇒ routing-key header, then API key. */
    hash_on: z.array(HashSourceSchema).min(1).optional(),
    /** Streams: wait at most this long for the first token; until then a failure can move the request. */
    stream_timeout_ms: z.number().positive().optional(),
    /**
     * The model's own timeout, ms: bounds a non-stream attempt, and is a stream's first-chunk
     * wait when `stream_timeout_ms` is absent (seed 003).
     */
    timeout_ms: z.number().positive().optional(),
    /**
     * Extension, off by default: backoff before a same-target retry. Absent ⇒ the deployment
     * defaults (200 ms doubling to 5 s, equal jitter). `jitter`: `equal` (half fixed, half drawn),
     * `full` (all drawn), `none`. An upstream Retry-After is honoured whatever these say.
     */
    backoff: z
      .object({
        base_ms: z.number().positive(),
        max_ms: z.number().positive(),
        jitter: z.enum(['equal', 'full', 'none']).default('equal'),
      })
      .strict()
      .refine((b) => b.max_ms >= b.base_ms, { message: 'backoff.max_ms must be >= backoff.base_ms' })
      .optional(),
    /**
     * Extension, off by default: the causes for which a retryable failure is retried on the same
     * target; any other cause fails over at once (e.g. `[server_error]` fails over on a timeout
     * instead of retrying the same silent target). Absent ⇒ every retryable cause.
     */
    retry_same_target_on: z.array(z.enum(['server_error', 'timeout', 'transport', 'rate_limited', 'listed_status'])).optional(),
  })
  .strict();

/**
 * Opt-in cooldown of a direct model when it serves as a multi-target target (seed 003): after
 * `consecutive_failures` triggering failures the target leaves rotation for `duration_sec`.
 * Transport errors and timeouts always trigger; statuses trigger when listed.
 */
export const CooldownSchema = z
  .object({
    enabled: z.boolean().default(false),
    duration_sec: z.number().positive().default(30),
    trigger_statuses: z.array(z.number().int()).default([429, 500, 502, 503, 504]),
    consecutive_failures: z.number().int().min(1).default(3),
  })
  .strict();

/** One model of the registry. */
/**
 * A model's offload policy (seed 000 "排队等待卸载", "引擎队列上限", "最大卸载输入"): the route
 * that takes requests which waited too long elsewhere. `route` names one of the model's routes by
 * endpoint id (`model:location`) or provider label. `wait_sec` bounds both the wait for an
 * outbound slot / engine-hold place and, for streams, the wait for the engine's first token.
 * `engine_queue_limit` caps streaming requests without a first token per local engine;
 * `max_input_tokens` keeps larger prompts off the offload route. Whether the route exists and
 * has weight is checked when the core resolves the model (an inactive policy, not a config error).
 */
export const OffloadSchema = z
  .object({
    route: z.string().min(1),
    wait_sec: z.number().positive().max(MAX_OFFLOAD_WAIT_SEC, `must be at most ${MAX_OFFLOAD_WAIT_SEC} seconds (one day)`),
    engine_queue_limit: z.number().int().min(1).optional(),
    max_input_tokens: z.number().int().min(1).optional(),
  })
  .strict();

/** One model of the registry: either a per-model `router:` over its own `route:` list, or a multi-target `routing:` block over other models. */
export const ModelSchema = z
  .object({
    id: z.string().min(1),
    aliases: z.array(z.string().min(1)).default([]),
    /** Strategy name; absent ⇒ the routing file's `default_router`. */
    router: z.string().min(1).optional(),
    router_params: z.record(z.string(), z.unknown()).default({}),
    /** False hides the model (routes unpublished ⇒ 404). */
    published: z.boolean().default(true),
    route: z.array(RouteSchema).default([]),
    /** Multi-target model: targets and strategy instead of `route:` / `router:`. */
    routing: MultiTargetSchema.optional(),
    /** Cooldown of this direct model as a multi-target target (opt-in). */
    cooldown: CooldownSchema.optional(),
    /** Background health check of every route of this direct model (opt-in; a route's own wins). */
    health_check: HealthCheckSchema.optional(),
    /** Queue-wait offload policy of a per-model router (seed 000 "排队等待卸载"). */
    offload: OffloadSchema.optional(),
    /** Whether the model takes `tools` (auto profiles skip it for requests with tools when false); absent ⇒ true. */
    supports_tools: z.boolean().optional(),
    /**
     * The `reasoning_effort` values the model accepts; absent ⇒ undeclared (auto profiles do not
     * guess and let any effort through, as an undeclared context window fits any request).
     */
    reasoning_efforts: z.array(z.enum(['minimal', 'low', 'medium', 'high'])).optional(),
    /** The model's output limit, tokens: auto profiles cap a request's `max_tokens` at it when sizing the prompt. */
    max_output_tokens: z.number().int().positive().optional(),
  })
  .strict();

/** The routing file: default strategy and an optional local/remote weight split. */
export const RoutingFileSchema = z
  .object({
    default_router: z.string().min(1).default('fixed'),
    /** Fraction of traffic for local routes, applied once at start (0..1); remote get the rest. */
    local_weight_share: z.number().min(0).max(1).optional(),
  })
  .strict();

const isErrorStatus = (n: number) => n >= 400 && n <= 599;

/**
 * Cross-model checks of multi-target models; every message names the model. A multi-target
 * model has no `route:` / `router:` / `cooldown:` of its own; each target names a direct model
 * (id or alias) with exactly one route, at most once per model; statuses are 400–599; CIDR blocks
 * parse.
 */
function checkMultiTargets(cfg: { models: Array<z.infer<typeof ModelSchema>> }, ctx: z.RefinementCtx): void {
  const byName = new Map<string, z.infer<typeof ModelSchema>>();
  for (const m of cfg.models) for (const n of [m.id, ...m.aliases]) if (!byName.has(n)) byName.set(n, m);
  cfg.models.forEach((m, mi) => {
    const at = (...path: Array<string | number>) => ['models', mi, ...path];
    const cd = m.cooldown;
    if (cd) {
      cd.trigger_statuses.forEach((st, k) => {
        if (!isErrorStatus(st)) ctx.addIssue({ code: 'custom', path: at('cooldown', 'trigger_statuses', k), message: `model '${m.id}': cooldown.trigger_statuses entries must be HTTP error statuses 400-599, got ${st}` });
      });
    }
    const r = m.routing;
    if (!r) return;
    if (m.route.length > 0 || m.router !== undefined || Object.keys(m.router_params).length > 0) {
      ctx.addIssue({ code: 'custom', path: at('routing'), message: `model '${m.id}' has a routing: block (a multi-target model), so it cannot also have route:, router: or router_params:` });
    }
    if (cd) {
      ctx.addIssue({ code: 'custom', path: at('cooldown'), message: `model '${m.id}' is a multi-target model; cooldown: belongs on its target (direct) models` });
    }
    if (m.health_check) {
      ctx.addIssue({ code: 'custom', path: at('health_check'), message: `model '${m.id}' is a multi-target model; health_check: belongs on its target (direct) models, which its targets' checks then cover` });
    }
    r.fallback_on_statuses.forEach((st, k) => {
      if (!isErrorStatus(st)) ctx.addIssue({ code: 'custom', path: at('routing', 'fallback_on_statuses', k), message: `model '${m.id}': fallback_on_statuses entries must be HTTP error statuses 400-599, got ${st}` });
    });
    const seen = new Map<string, number>();
    r.targets.forEach((t, ti) => {
      const target = byName.get(t.model);
      const where = `model '${m.id}': routing.targets[${ti}]`;
      if (!target) {
        const known = cfg.models.filter((x) => !x.routing).map((x) => x.id);
        ctx.addIssue({ code: 'custom', path: at('routing', 'targets', ti, 'model'), message: `${where}.model '${t.model}' is not a model id or alias; direct models: ${known.join(', ')}` });
      } else if (target.routing) {
        ctx.addIssue({ code: 'custom', path: at('routing', 'targets', ti, 'model'), message: `${where}.model '${t.model}' is itself a multi-target model; targets must be direct models` });
      } else if (target.route.length !== 1) {
        ctx.addIssue({ code: 'custom', path: at('routing', 'targets', ti, 'model'), message: `${where}.model '${t.model}' has ${target.route.length} routes; a target must be a direct model with exactly one route` });
      } else {
        const prev = seen.get(target.id);
        if (prev !== undefined) ctx.addIssue({ code: 'custom', path: at('routing', 'targets', ti, 'model'), message: `${where}.model '${t.model}' repeats routing.targets[${prev}] (model '${target.id}')` });
        else seen.set(target.id, ti);
      }
      t.allowed_cidrs?.forEach((c, k) => {
        try {
          parseCidr(c);
        } catch (err) {
          ctx.addIssue({ code: 'custom', path: at('routing', 'targets', ti, 'allowed_cidrs', k), message: `${where}.allowed_cidrs: ${(err as Error).message}` });
        }
      });
    });
  });
}

/** Whole configuration: `models:` plus the routing file. */
export const ModelsConfigSchema = z
  .object({
    models: z.array(ModelSchema).min(1),
    routing: RoutingFileSchema.default({ default_router: 'fixed' }),
    /**
     * The auto profiles (seed 000 "Auto 模型"), kept raw: `core/auto/auto-config.ts` checks them
     * against the registry, and a bad block turns auto models off instead of refusing the file.
     */
    auto: z.unknown().optional(),
  })
  .strict()
  .superRefine(checkMultiTargets);

/** A validated `route:` entry (defaults applied). */
export type RouteConfig = z.infer<typeof RouteSchema>;
/** A validated multi-target `targets:` entry. */
export type TargetConfig = z.infer<typeof TargetSchema>;
/** A validated multi-target `routing:` block. */
export type MultiTargetConfig = z.infer<typeof MultiTargetSchema>;
/** A validated opt-in `cooldown:` block of a direct model. */
export type CooldownConfig = z.infer<typeof CooldownSchema>;
/** A validated `health_check:` block (route or direct model). */
export type HealthCheckConfig = z.infer<typeof HealthCheckSchema>;
/** A validated per-model `offload:` block. */
export type OffloadConfig = z.infer<typeof OffloadSchema>;
/** A validated model entry. */
export type ModelConfig = z.infer<typeof ModelSchema>;
/** The validated routing file. */
export type RoutingFileConfig = z.infer<typeof RoutingFileSchema>;
/** The whole validated configuration (`models:` + routing file). */
export type ModelsConfig = z.infer<typeof ModelsConfigSchema>;

/**
 * Formats a zod error as `path.to.field: message` lines, so a bad config names the field.
 * @param where label of the file or block, e.g. `models.yaml`.
 */
export function formatConfigError(where: string, error: z.ZodError): string {
  const lines = error.issues.map((i) => {
    const path = i.path.length > 0 ? i.path.join('.') : '(root)';
    return `  ${path}: ${i.message}`;
  });
  return `${where} is invalid:\n${lines.join('\n')}`;
}

/**
 * Validates a parsed models configuration (YAML already parsed, env already interpolated).
 * @throws Error listing each bad field by path and what is allowed.
 */
export function parseModelsConfig(raw: unknown, where = 'models config'): ModelsConfig {
  const r = ModelsConfigSchema.safeParse(raw);
  if (!r.success) throw new Error(formatConfigError(where, r.error));
  return r.data;
}
