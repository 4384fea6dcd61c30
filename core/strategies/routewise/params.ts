/**
 * Every `router_params` key of `router: routewise`, in one strict zod schema with defaults
 * (seed 000 "RouteWise": the per-model keys are algorithm parameters only —
 * budget interpolation, hedging mode, latency SLO and window, cost-envelope quantiles / window /
 * minimum samples, the output-length predictor and the prefix-cache switch). Resource semantics
 * (provider type, prices, quota, concurrency, pools) live on the route entries; naming one of
 * them here fails at start with the route-level replacement in the message.
 */
import { z } from 'zod';

/**
 * Keys that used to carry resource limits in `router_params`, and the route-level field that
 * replaces each (seed 000: stale registries fail loudly instead of silently taking defaults).
 */
export const MOVED_TO_ROUTE: Readonly<Record<string, string>> = {
  provider_type: 'route[].provider_type: on_demand | quota | concurrency',
  pricing: 'route[].pricing: {input_usd_per_1m, output_usd_per_1m, cached_input_usd_per_1m}',
  prices: 'route[].pricing: {input_usd_per_1m, output_usd_per_1m, cached_input_usd_per_1m}',
  quota: 'route[].quota: {limit, window_sec}',
  quota_limit: 'route[].quota: {limit, window_sec}',
  quota_limits: 'route[].quota: {limit, window_sec}',
  quota_window_sec: 'route[].quota: {limit, window_sec}',
  quota_windows: 'route[].quota: [{limit, window_sec}, …]',
  quota_pool: 'route[].quota_pool: <pool id>',
  concurrency: 'route[].concurrency: {limit}',
  concurrency_limit: 'route[].concurrency: {limit}',
  concurrency_limits: 'route[].concurrency: {limit}',
  max_concurrency: 'route[].concurrency: {limit}',
  concurrency_pool: 'route[].concurrency_pool: <pool id>',
};

const fraction = z.number().min(0).max(1);

/** The strict parameter object; every key has a default. */
export const RouteWiseParamsObject = z
  .object({
    /** α of the budget B = c_min + α·(c_max − c_min); 0 = cheapest, 1 = no cost limit. */
    budget_alpha: fraction.default(0.75),
    /** `probability`: plan one latest-safe backup per request (needs lifecycle hedge support). */
    hedge: z.enum(['off', 'probability']).default('off'),
    /** Time-to-first-token SLO S, ms. */
    slo_ms: z.number().positive().default(3_000),
    /** ρ: a backup is feasible when the request meets the SLO with at least this probability. */
    hedge_target_probability: z.number().gt(0).max(1).default(0.99),
    /** δ: dispatch overhead subtracted from the backup's remaining time, ms. */
    hedge_delta_ms: z.number().nonnegative().default(5),
    /** First hedge checkpoint as a fraction of S. */
    hedge_checkpoint_start: z.number().gt(0).lt(1).default(0.25),
    /** Last hedge checkpoint as a fraction of S. */
    hedge_checkpoint_end: z.number().gt(0).lt(1).default(0.9),
    /** Spacing of hedge checkpoints as a fraction of S. */
    hedge_checkpoint_step: z.number().gt(0).lt(1).default(0.025),
    /** Rolling window of the latency profiles, seconds (causal: only past observations). */
    latency_window_sec: z.number().positive().default(900),
    /** TTFT charged to a failure before the first token in the mean T̄, ms. */
    error_penalty_ms: z.number().nonnegative().default(60_000),
    /** Observations a route needs in its window to count as profiled and to take part in hedging. */
    min_samples: z.number().int().min(1).default(5),
    /** Low quantile of the cost envelope (L). */
    envelope_low_quantile: fraction.default(0.1),
    /** High quantile of the cost envelope (U). */
    envelope_high_quantile: fraction.default(0.9),
    /** Rolling window of the cost envelope, seconds. */
    envelope_window_sec: z.number().positive().default(86_400),
    /** Requests the envelope needs in its window before quota routes are unmasked. */
    envelope_min_samples: z.number().int().min(1).default(20),
    /** Samples a ⌊log2(input tokens)⌋ bucket needs before its mean is used. */
    output_length_bucket_min_samples: z.number().int().min(1).default(5),
    /** Samples the global mean needs before it is used. */
    output_length_global_min_samples: z.number().int().min(1).default(20),
    /** Output tokens assumed before any estimate is available. */
    output_length_default_tokens: z.number().nonnegative().default(500),
    /** Whether the caller's own estimate (`outputTokensHint`) overrides the predictor. */
    output_length_use_hint: z.boolean().default(true),
    /** Price cached prompt tokens at the cached rate, using each route's observed cached fraction. */
    prefix_cache: z.boolean().default(true),
    /** `explore`: try unprofiled routes within the budget; `require_observations`: exclude them. */
    cold_start: z.enum(['explore', 'require_observations']).default('explore'),
    /** How long an explored route stays off the exploration list, seconds (a burst does not pile on). */
    cold_start_lease_sec: z.number().nonnegative().default(60),
    /** Whether the driver should run the idle-route prober. */
    probe_enabled: z.boolean().default(false),
    /** A route is probed after this long without an observation, seconds. */
    probe_idle_sec: z.number().positive().default(900),
    /** At most one probe round per this many seconds, seconds. */
    probe_interval_sec: z.number().positive().default(300),
    /** Probes in flight per process (the smallest value over a process's models applies). */
    probe_max_concurrency: z.number().int().min(1).default(1),
    /**
     * Warm start: at start the driver replays its recent request log into the latency profiles,
     * the cost envelope and the output-length predictor, so a restart does not cold-start.
     */
    db_bootstrap_enabled: z.boolean().default(true),
    /** Refuse quota / concurrency routes when more than one gateway worker runs. */
    stateful_providers_single_worker_only: z.boolean().default(true),
  })
  .strict()
  .superRefine((p, ctx) => {
    if (p.envelope_low_quantile >= p.envelope_high_quantile) {
      ctx.addIssue({ code: 'custom', path: ['envelope_low_quantile'], message: `must be below envelope_high_quantile (${p.envelope_high_quantile}), got ${p.envelope_low_quantile}` });
    }
    if (p.hedge_checkpoint_start > p.hedge_checkpoint_end) {
      ctx.addIssue({ code: 'custom', path: ['hedge_checkpoint_start'], message: `must be ≤ hedge_checkpoint_end (${p.hedge_checkpoint_end}), got ${p.hedge_checkpoint_start}` });
    }
  });

/** Validated RouteWise parameters (snake_case, as in `router_params`). */
export type RouteWiseParams = z.infer<typeof RouteWiseParamsObject>;

/**
 * The `router_params` schema registered for `routewise`: rejects resource keys naming their
 * route-level replacement, then validates strictly (unknown keys rejected by name).
 */
export const RouteWiseParamsSchema: z.ZodType<RouteWiseParams> = z
  .record(z.string(), z.unknown())
  .superRefine((raw, ctx) => {
    for (const key of Object.keys(raw)) {
      const replacement = MOVED_TO_ROUTE[key];
      if (replacement !== undefined) {
        ctx.addIssue({ code: 'custom', path: [key], message: `resource limits are not router_params; move '${key}' to the route entry as ${replacement}` });
      }
    }
  })
  .pipe(RouteWiseParamsObject) as unknown as z.ZodType<RouteWiseParams>;

/**
 * Parses `router_params` for RouteWise with every default filled in.
 * @throws Error listing each bad key (unknown, moved to the route, or out of range).
 */
export function parseRouteWiseParams(raw: unknown = {}): RouteWiseParams {
  const r = RouteWiseParamsSchema.safeParse(raw ?? {});
  if (r.success) return r.data;
  throw new Error(`routewise router_params are invalid: ${r.error.issues.map((i) => `${i.path.join('.') || '(params)'}: ${i.message}`).join('; ')}`);
}

/** The request header that overrides `budget_alpha` for one request (a number in [0, 1]). */
export const BUDGET_ALPHA_HEADER = 'x-switchyard-budget-alpha';
