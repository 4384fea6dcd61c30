/**
 * The `providers:` block of an experiment: hosted APIs routed beside (or instead of) the local
 * replicas. Each entry names a committed profile (TTFT summary, prices, plan limits) and may
 * override what the profile says or does not know (per-token time, rate limits, prices).
 * `resolveProvider` merges profile and entry into the `ResolvedProvider` the simulator runs.
 */
import { CALLER_ROLES } from '../../core/index.ts';
import { z } from 'zod';
import { fitQuantileFunction, type QuantileFunction } from './quantile-function.ts';
import { loadProviderProfile, ProviderTypeSchema, QuotaWindowSchema, TtftSummarySchema, type ProviderType } from './provider-profile.ts';
import type { ProviderLimits } from './rate-limiter.ts';

/** Per-output-token time as a log-normal through two quantiles, ms. */
export const TpotSchema = z
  .object({ p50_ms: z.number().positive(), p90_ms: z.number().positive() })
  .strict()
  .refine((t) => t.p90_ms >= t.p50_ms, { message: 'p90_ms must be ≥ p50_ms' });

/**
 * Default per-token time: p50 20 ms, p90 40 ms (≈ 50 tokens/s median). An assumption — the
 * RouteWise summaries carry TTFT only — in the range OpenRouter lists for MiniMax-M2.5 hosts.
 */
export const DEFAULT_TPOT = { p50_ms: 20, p90_ms: 40 } as const;

/** Rate limits of a provider entry (RPM / TPM / concurrency / quota windows). */
export const LimitsSchema = z
  .object({
    rpm: z.number().int().positive().optional(),
    tpm: z.number().int().positive().optional(),
    concurrency: z.number().int().positive().optional(),
    /** Replaces the profile's quota windows when given. */
    quota: z.array(QuotaWindowSchema).optional(),
    /** Retry-After sent with a concurrency refusal, ms (rounded up to whole seconds). */
    retry_after_ms: z.number().positive().default(1000),
  })
  .strict();

/** One `providers:` entry. */
export const ProviderEntrySchema = z
  .object({
    /** Endpoint name: route `sim://<name>`, endpoint id `<model>:<name>`, fault target `<name>`. */
    name: z.string().regex(/^[a-z][a-z0-9_-]*$/, 'use lower-case letters, digits, - and _ (starting with a letter)'),
    /** `<profile file>/<provider>`, e.g. `minimax-m2.5-openrouter/deepinfra`. */
    profile: z.string().min(1),
    /** Defaults to the profile's type. */
    type: ProviderTypeSchema.optional(),
    /** Route weight (fixed / round_robin). */
    weight: z.number().nonnegative().default(1),
    /** USD per 1M tokens; each field overrides the profile's. */
    pricing: z
      .object({
        input_usd_per_1m: z.number().nonnegative().optional(),
        output_usd_per_1m: z.number().nonnegative().optional(),
        cached_input_usd_per_1m: z.number().nonnegative().optional(),
      })
      .strict()
      .default({}),
    /** Flat plan fee (subscriptions), USD per hour of simulated time. */
    fixed_usd_per_hour: z.number().nonnegative().default(0),
    limits: LimitsSchema.default({ retry_after_ms: 1000 }),
    tpot: TpotSchema.default(DEFAULT_TPOT),
    /** Replaces the profile's TTFT summary (e.g. measured in a gateway log by `switchyard calibrate --fit`). */
    ttft: TtftSummarySchema.optional(),
    /** Multiplies every TTFT draw (a provider slower or faster than when it was profiled). */
    ttft_scale: z.number().positive().default(1),
    /** Added TTFT per 1,000 prompt tokens, ms. Default 0: the profiles do not say how TTFT grows with the prompt. */
    ttft_ms_per_1k_input: z.number().nonnegative().default(0),
    /**
     * A key pool on this provider's route (seed 000 "为某个层级预留上游 key"): each key's `id`,
     * the lowest caller role that may use it (`min_role`, default free) and its own request
     * limit (`rpm`; absent = only the provider's limits). The core picks the key per attempt
     * exactly as in the gateway; a key over its `rpm` answers 429 with Retry-After.
     */
    api_keys: z
      .array(
        z
          .object({
            id: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, 'a key id is 1-64 letters, digits, . _ -'),
            min_role: z.enum(CALLER_ROLES).default('free'),
            rpm: z.number().int().positive().optional(),
          })
          .strict(),
      )
      .min(1)
      .optional(),
    /** Virtual ms until a 429 (or other refusal) reaches the client. */
    reject_latency_ms: z.number().nonnegative().default(50),
    /**
     * Provider-side prompt cache over the trace's prefix blocks, with a time-to-live since last
     * use (OpenAI and Anthropic keep prompt prefixes ~5 min); `false` disables it. Prices only:
     * cached tokens are billed at the cached price; TTFT is not reduced (the profiles do not say by how much).
     */
    prompt_cache: z.union([z.literal(false), z.object({ ttl_ms: z.number().positive().default(300_000) }).strict()]).default({ ttl_ms: 300_000 }),
  })
  .strict();

/** A validated `providers:` entry. */
export type ProviderEntry = z.infer<typeof ProviderEntrySchema>;

/** Prices in USD per 1M tokens, after merging profile and entry. */
export interface ProviderPricing {
  readonly inputUsdPer1M: number;
  readonly outputUsdPer1M: number;
  readonly cachedInputUsdPer1M: number;
}

/** A provider ready to simulate. */
export interface ResolvedProvider {
  readonly name: string;
  readonly profile: string;
  readonly type: ProviderType;
  readonly weight: number;
  readonly pricing: ProviderPricing;
  readonly fixedUsdPerHour: number;
  readonly limits: ProviderLimits;
  readonly ttft: QuantileFunction;
  readonly tpot: QuantileFunction;
  readonly ttftScale: number;
  readonly ttftMsPer1kInput: number;
  readonly rejectLatencyMs: number;
  /** Prompt-cache TTL in ms, or null when disabled. */
  readonly promptCacheTtlMs: number | null;
  readonly contextLength: number | null;
}

/**
 * Merges a `providers:` entry with its profile.
 * - pricing: entry fields over profile fields; `quota` and `concurrency` types default to 0 per
 *   token (subscriptions are paid by the plan fee); cached input defaults to the input price.
 * - limits: entry over profile (quota windows replaced as a whole); `ttft`: entry over profile.
 * @param where label for errors, e.g. `providers[1] (deepinfra)`.
 * @throws Error naming `where` when the profile is missing, an `on_demand` provider has no price,
 *   a `quota` provider has no quota window, or a `concurrency` provider has no concurrency limit.
 */
export function resolveProvider(entry: ProviderEntry, where: string): ResolvedProvider {
  let profile;
  try {
    profile = loadProviderProfile(entry.profile);
  } catch (err) {
    throw new Error(`${where}.profile: ${(err as Error).message}`);
  }
  const type = entry.type ?? profile.type;
  const base = profile.pricing ?? (type === 'on_demand' ? null : { input_usd_per_1m: 0, output_usd_per_1m: 0, cached_input_usd_per_1m: 0 });
  const input = entry.pricing.input_usd_per_1m ?? base?.input_usd_per_1m;
  const output = entry.pricing.output_usd_per_1m ?? base?.output_usd_per_1m;
  if (input === undefined || output === undefined) {
    throw new Error(`${where}.pricing: profile '${entry.profile}' lists no prices; give input_usd_per_1m and output_usd_per_1m`);
  }
  const cached = entry.pricing.cached_input_usd_per_1m ?? base?.cached_input_usd_per_1m ?? input;
  const quota = (entry.limits.quota ?? profile.limits.quota ?? []).map((w) => ({ windowMs: w.window_ms, requests: w.requests, tokens: w.tokens }));
  const concurrency = entry.limits.concurrency ?? profile.limits.concurrency;
  if (type === 'quota' && quota.length === 0) throw new Error(`${where}.limits.quota: a quota provider needs at least one window, e.g. [{ window_ms: 18000000, requests: 4500 }]`);
  if (type === 'concurrency' && concurrency === undefined) throw new Error(`${where}.limits.concurrency: a concurrency provider needs a slot count, e.g. 2`);
  const t = entry.ttft ?? profile.ttft;
  return {
    name: entry.name,
    profile: entry.profile,
    type,
    weight: entry.weight,
    pricing: { inputUsdPer1M: input, outputUsdPer1M: output, cachedInputUsdPer1M: cached },
    fixedUsdPerHour: entry.fixed_usd_per_hour,
    limits: { rpm: entry.limits.rpm, tpm: entry.limits.tpm, concurrency, quota, concurrencyRetryAfterMs: entry.limits.retry_after_ms },
    ttft: fitQuantileFunction(
      { quantiles: [{ p: 0.5, ms: t.p50_ms }, { p: 0.9, ms: t.p90_ms }, { p: 0.99, ms: t.p99_ms }], n: t.n_samples, maxMs: t.max_ms },
      `${where} (${entry.profile}) ttft`,
    ),
    tpot: fitQuantileFunction({ quantiles: [{ p: 0.5, ms: entry.tpot.p50_ms }, { p: 0.9, ms: entry.tpot.p90_ms }] }, `${where}.tpot`),
    ttftScale: entry.ttft_scale,
    ttftMsPer1kInput: entry.ttft_ms_per_1k_input,
    rejectLatencyMs: entry.reject_latency_ms,
    promptCacheTtlMs: entry.prompt_cache === false ? null : entry.prompt_cache.ttl_ms,
    contextLength: profile.context_length,
  };
}
