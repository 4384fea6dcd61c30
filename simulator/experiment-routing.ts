/**
 * Experiment blocks that shape the simulated models config beyond one plain model: `offload:`
 * (the model's offload policy, naming a provider instead of an endpoint id) and `multi_target:`
 * (how `style: multi_target` runs build one direct model per endpoint plus a multi-target alias).
 */
import { z } from 'zod';
import { CooldownSchema, MultiTargetSchema, TargetSchema } from '../core/config/models-config.ts';

/** `offload:` — the model's offload route is `provider`'s endpoint. */
export const OffloadBlockSchema = z
  .object({
    /** Name of a hosted provider of the experiment (its route takes offloaded requests). */
    provider: z.string().min(1),
    /** Longest wait for a slot or, for streams, the engine's first token, seconds. */
    wait_sec: z.number().positive(),
    /** Streaming requests without a first token per local engine; 0 or null ⇒ no limit. */
    engine_queue_limit: z.number().int().min(0).nullable().optional(),
    /** Larger prompts stay off the offload route. */
    max_input_tokens: z.number().int().min(1).optional(),
  })
  .strict();

/** One target of the alias: an endpoint name plus any target field except `model`. */
export const MultiTargetEntrySchema = TargetSchema.omit({ model: true })
  .extend({ endpoint: z.string().min(1) })
  .strict();

/** The alias's `routing:` fields other than strategy, params (from the run) and targets. */
export const MultiTargetRoutingSchema = MultiTargetSchema.omit({ strategy: true, params: true, targets: true }).partial().strict();

/** `multi_target:` — targets in order, the rest of the routing block, per-endpoint cooldowns. */
export const MultiTargetBlockSchema = z
  .object({
    targets: z.array(MultiTargetEntrySchema).min(1),
    routing: MultiTargetRoutingSchema.default({}),
    /** Endpoint name → `cooldown:` of its direct model. */
    cooldown: z.record(z.string(), CooldownSchema).default({}),
  })
  .strict();

/** A run's `multi_target:` overrides: cooldowns merged over the block's, routing fields over its. */
export const RunMultiTargetSchema = z
  .object({
    routing: MultiTargetRoutingSchema.optional(),
    cooldown: z.record(z.string(), CooldownSchema).optional(),
  })
  .strict();

/** The validated `OffloadBlockSchema` value (defaults applied). */
export type OffloadBlock = z.infer<typeof OffloadBlockSchema>;
/** The validated `MultiTargetBlockSchema` value (defaults applied). */
export type MultiTargetBlock = z.infer<typeof MultiTargetBlockSchema>;
/** The validated `RunMultiTargetSchema` value (defaults applied). */
export type RunMultiTarget = z.infer<typeof RunMultiTargetSchema>;
