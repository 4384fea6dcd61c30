/**
 * The validated model registry the core routes with (`models.yaml` + `routing.yaml`).
 * Drivers parse YAML, interpolate `${ENV}` and call `parseModelsConfig`; the core receives only
 * validated values. Field names follow the YAML (snake_case); seed 000 "choosing a router",
 * "adding a model".
 */
import { z } from 'zod';

/** Prices in USD per 1M tokens. `cached_input` defaults to `input` when absent. */
export const PricingSchema = z
  .object({
    input_usd_per_1m: z.number().nonnegative().default(0),
    output_usd_per_1m: z.number().nonnegative().default(0),
    cached_input_usd_per_1m: z.number().nonnegative().optional(),
  })
  .strict();

/** One `route:` entry of a model. */
export const RouteSchema = z
  .object({
    kind: z.string().min(1).default('openai_compat'),
    weight: z.number().nonnegative().default(1),
    base_url: z.string().min(1),
    provider: z.string().min(1).optional(),
    provider_model_id: z.string().min(1).optional(),
    api_key: z.string().optional(),
    input_modalities: z.array(z.enum(['text', 'image', 'audio'])).default(['text']),
    context_length: z.number().int().positive().optional(),
    pricing: PricingSchema.optional(),
    /** Overrides the loopback test for local/remote splits. */
    local: z.boolean().optional(),
  })
  .strict();

/** One model of the registry. */
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

/** Whole configuration: `models:` plus the routing file. */
export const ModelsConfigSchema = z
  .object({
    models: z.array(ModelSchema).min(1),
    routing: RoutingFileSchema.default({ default_router: 'fixed' }),
  })
  .strict();

export type RouteConfig = z.infer<typeof RouteSchema>;
export type ModelConfig = z.infer<typeof ModelSchema>;
export type RoutingFileConfig = z.infer<typeof RoutingFileSchema>;
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
