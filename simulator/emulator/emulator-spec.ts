/**
 * A list of emulators to start together (`emulators.yaml` beside a demo configuration, read by
 * `switchyard demo`): each entry is one `startEmulator` call in YAML, snake_case like the other
 * configuration files. The gateway never reads this file: emulators are the demo's upstreams,
 * not part of a gateway configuration.
 */
import { z } from 'zod';
import type { EmulatorOptions } from './emulator.ts';
import { FaultKnobsSchema } from './faults.ts';

/** One emulator: listener, mode, replica and fault knobs. */
export const EmulatorSpecSchema = z
  .object({
    port: z.number().int().min(1).max(65535),
    host: z.string().min(1).default('127.0.0.1'),
    mode: z.enum(['engine', 'echo']).default('engine'),
    engine_profile: z.string().min(1).optional(),
    /** The replica as a `replicas:` block without `count` (engine limits, or a calibrated engine); checked when it starts. */
    engine: z.record(z.string(), z.unknown()).optional(),
    /** When set, callers must send `Authorization: Bearer <api_key>` (a hosted API's behaviour; Anthropic's routes also take `x-api-key`). */
    api_key: z.string().min(1).optional(),
    default_output_tokens: z.number().int().positive().optional(),
    faults: FaultKnobsSchema.partial().default({}),
    /** The quota report of GET /v1/usage (a request allowance), for quota fetchers; absent ⇒ none. */
    usage: z.object({ provider: z.string().min(1), usage_label: z.string().min(1), limit: z.number().positive(), window_sec: z.number().positive().optional() }).strict().optional(),
  })
  .strict();

/** The whole `emulators.yaml`: `emulators:`, a list whose ports are all different. */
export const EmulatorListSchema = z
  .object({ emulators: z.array(EmulatorSpecSchema).min(1) })
  .strict()
  .superRefine((v, ctx) => {
    const seen = new Map<number, number>();
    v.emulators.forEach((e, i) => {
      const first = seen.get(e.port);
      if (first !== undefined) ctx.addIssue({ code: 'custom', path: ['emulators', i, 'port'], message: `port ${e.port} is already used by emulators.${first}; give each emulator its own port` });
      else seen.set(e.port, i);
    });
  });

/** The validated `EmulatorSpecSchema` value (defaults applied). */
export type EmulatorSpec = z.infer<typeof EmulatorSpecSchema>;

/** `startEmulator` options of one spec (keys camelCased, absent fields left to the emulator's defaults). */
export function emulatorOptions(e: EmulatorSpec): EmulatorOptions {
  return {
    host: e.host,
    port: e.port,
    mode: e.mode,
    faults: e.faults,
    apiKey: e.api_key ?? null,
    ...(e.engine_profile !== undefined && { engineProfile: e.engine_profile }),
    ...(e.engine !== undefined && { engine: e.engine }),
    ...(e.default_output_tokens !== undefined && { defaultOutputTokens: e.default_output_tokens }),
    ...(e.usage !== undefined && { usage: { provider: e.usage.provider, usageLabel: e.usage.usage_label, limit: e.usage.limit, windowSec: e.usage.window_sec ?? null } }),
  };
}
