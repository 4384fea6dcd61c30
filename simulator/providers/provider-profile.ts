/**
 * Provider profiles: what is known about hosted APIs serving one model family, as committed
 * JSON files under `simulator/providers/profiles/` (derived from RouteWise's published
 * summaries by `derive-profiles.ts`; see the SOURCE note there). A profile gives, per provider,
 * the TTFT summary (n, p50/p90/p99/mean/max in ms), prices per 1M tokens and, where the source
 * states them, the plan's limits. Experiments refer to one provider as `<file>/<provider>`,
 * e.g. `minimax-m2.5-openrouter/deepinfra`.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { formatConfigError } from '../../core/config/models-config.ts';

/** Folder of the committed profile files. */
export const PROFILES_DIR = join(import.meta.dirname, 'profiles');

/** The three provider types (seed 000 `provider_type`): pay per token, window quota, or slots. */
export const ProviderTypeSchema = z.enum(['on_demand', 'quota', 'concurrency']);

/** A provider type: `on_demand` (metered), `quota` (requests/tokens per window), `concurrency` (slots). */
export type ProviderType = z.infer<typeof ProviderTypeSchema>;

/** TTFT summary of real requests, ms, as the source publishes it. */
export const TtftSummarySchema = z
  .object({
    n_samples: z.number().int().positive(),
    p50_ms: z.number().positive(),
    p90_ms: z.number().positive(),
    p99_ms: z.number().positive(),
    mean_ms: z.number().positive(),
    max_ms: z.number().positive(),
  })
  .strict();

/** Prices in USD per 1M tokens (cached input = prompt tokens served from the provider's cache). */
export const ProfilePricingSchema = z
  .object({
    input_usd_per_1m: z.number().nonnegative(),
    output_usd_per_1m: z.number().nonnegative(),
    cached_input_usd_per_1m: z.number().nonnegative().nullable(),
  })
  .strict();

/** One fixed window of a quota plan: at most `requests` and/or `tokens` per `window_ms`. */
export const QuotaWindowSchema = z
  .object({
    window_ms: z.number().positive(),
    requests: z.number().int().positive().optional(),
    tokens: z.number().int().positive().optional(),
  })
  .strict()
  .refine((w) => w.requests !== undefined || w.tokens !== undefined, { message: 'a quota window needs requests or tokens' });

/** Limits a plan states (all optional; absent = unlimited). */
export const ProfileLimitsSchema = z
  .object({
    concurrency: z.number().int().positive().optional(),
    quota: z.array(QuotaWindowSchema).optional(),
  })
  .strict();

/** One provider of a profile file. */
export const ProviderProfileSchema = z
  .object({
    /** Human label: vendor, route and quantisation. */
    label: z.string(),
    type: ProviderTypeSchema,
    ttft: TtftSummarySchema,
    /** Null when the source lists no price (the experiment must then give one). */
    pricing: ProfilePricingSchema.nullable(),
    context_length: z.number().int().positive().nullable(),
    limits: ProfileLimitsSchema.default({}),
    /** Where in the source file the numbers come from. */
    source: z.string(),
    notes: z.string().default(''),
  })
  .strict();

/** A profile file. */
export const ProfileFileSchema = z
  .object({
    family: z.string(),
    description: z.string(),
    source: z.string(),
    licence: z.string(),
    observed: z.string(),
    providers: z.record(z.string().regex(/^[a-z0-9][a-z0-9_-]*$/), ProviderProfileSchema),
  })
  .strict();

/** A validated provider profile. */
export type ProviderProfile = z.infer<typeof ProviderProfileSchema>;
/** A validated profile file. */
export type ProfileFile = z.infer<typeof ProfileFileSchema>;

const cache = new Map<string, ProfileFile>();

/**
 * Reads and validates `profiles/<file>.json` (cached per process).
 * @throws Error naming the file when it is missing or invalid (field paths listed).
 */
export function loadProfileFile(file: string, dir: string = PROFILES_DIR): ProfileFile {
  const path = join(dir, `${file}.json`);
  const hit = cache.get(path);
  if (hit) return hit;
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new Error(`provider profile '${file}': cannot read ${path}: ${(err as Error).message}`);
  }
  const r = ProfileFileSchema.safeParse(raw);
  if (!r.success) throw new Error(formatConfigError(path, r.error));
  cache.set(path, r.data);
  return r.data;
}

/**
 * Looks up `<file>/<provider>` (e.g. `minimax-m2.5-openrouter/deepinfra`).
 * @throws Error naming the reference and listing the providers the file has when absent.
 */
export function loadProviderProfile(ref: string, dir: string = PROFILES_DIR): ProviderProfile {
  const slash = ref.lastIndexOf('/');
  if (slash <= 0) throw new Error(`provider profile '${ref}': write <profile file>/<provider>, e.g. minimax-m2.5-openrouter/deepinfra`);
  const file = loadProfileFile(ref.slice(0, slash), dir);
  const name = ref.slice(slash + 1);
  const p = file.providers[name];
  if (!p) throw new Error(`provider profile '${ref}': no provider '${name}'; the file has ${Object.keys(file.providers).join(', ')}`);
  return p;
}
