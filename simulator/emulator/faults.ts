/**
 * Fault knobs of the engine emulator: what a misbehaving upstream does to a request, drawn per
 * request from the emulator's own seeded stream. The failures are the ones a gateway meets in
 * production — an error status, a 429 with `Retry-After`, a connection reset before any byte, a
 * stall before the first token, a stall / disconnect / in-band error / malformed event in the middle
 * of a stream —
 * plus a latency scale that slows or speeds the modelled engine (wall ms = engine ms × scale).
 * The knobs can be changed while the emulator runs (`PUT /emulator/faults`, `setFaults`).
 */
import { z } from 'zod';
import type { Rng } from '../../core/index.ts';

/** The knobs, as written in YAML / JSON (snake_case, units in the names). */
export const FaultKnobsSchema = z
  .object({
    /** Wall-clock ms per modelled engine ms (0.1 = ten times faster than the profile). */
    latency_scale: z.number().positive().default(1),
    /** Fraction of requests answered at once with `error_status`. */
    error_rate: z.number().min(0).max(1).default(0),
    error_status: z.number().int().min(400).max(599).default(500),
    /** Fraction of requests answered at once with 429 and `Retry-After: retry_after_sec`. */
    rate_limit_rate: z.number().min(0).max(1).default(0),
    retry_after_sec: z.number().int().nonnegative().default(1),
    /** Fraction of requests whose connection is closed before any response byte. */
    reset_rate: z.number().min(0).max(1).default(0),
    /** Extra wall ms before the request reaches the engine (stream headers go out at once). */
    first_token_stall_ms: z.number().nonnegative().default(0),
    /** Fraction of requests the mid-stream faults below apply to. */
    midstream_rate: z.number().min(0).max(1).default(1),
    /** After this many output tokens, hold the stream for `stall_ms` (null = never). */
    stall_after_tokens: z.number().int().nonnegative().nullable().default(null),
    stall_ms: z.number().nonnegative().default(0),
    /**
     * After this many output tokens, drop the connection (0 = right after the role preamble,
     * before any content; null = never).
     */
    disconnect_after_tokens: z.number().int().nonnegative().nullable().default(null),
    /** After this many output tokens, send an in-band `{"error":…}` event and end (null = never). */
    error_after_tokens: z.number().int().nonnegative().nullable().default(null),
    /**
     * After this many output tokens, send bytes that are not a valid answer and end: a stream gets
     * an event whose `data:` is JSON cut short, a non-stream answer a 200 whose body is JSON cut
     * short (null = never).
     */
    malformed_after_tokens: z.number().int().nonnegative().nullable().default(null),
  })
  .strict();

/** Validated knobs. */
export type FaultKnobs = z.infer<typeof FaultKnobsSchema>;

/** The knobs with every default (no fault, real-time latency). */
export const NO_FAULTS: Readonly<FaultKnobs> = Object.freeze(FaultKnobsSchema.parse({}));

/** What happens to one request, decided when it arrives. */
export type FaultPlan =
  | { kind: 'reset' }
  | { kind: 'error'; status: number }
  | { kind: 'rate_limited'; retryAfterSec: number }
  | {
      kind: 'serve';
      firstTokenStallMs: number;
      /** Mid-stream faults, or null when this request is spared. */
      midstream: { stallAfterTokens: number | null; stallMs: number; disconnectAfterTokens: number | null; errorAfterTokens: number | null; malformedAfterTokens: number | null } | null;
    };

/**
 * Draws the plan of one request. Always takes exactly four draws from `rng`, whatever the knobs,
 * so changing one knob does not shift the draws of the others.
 */
export function planFaults(knobs: FaultKnobs, rng: Rng): FaultPlan {
  const uReset = rng.float();
  const uError = rng.float();
  const uRate = rng.float();
  const uMid = rng.float();
  if (uReset < knobs.reset_rate) return { kind: 'reset' };
  if (uError < knobs.error_rate) return { kind: 'error', status: knobs.error_status };
  if (uRate < knobs.rate_limit_rate) return { kind: 'rate_limited', retryAfterSec: knobs.retry_after_sec };
  const anyMid = knobs.stall_after_tokens !== null || knobs.disconnect_after_tokens !== null || knobs.error_after_tokens !== null || knobs.malformed_after_tokens !== null;
  return {
    kind: 'serve',
    firstTokenStallMs: knobs.first_token_stall_ms,
    midstream:
      anyMid && uMid < knobs.midstream_rate
        ? {
            stallAfterTokens: knobs.stall_after_tokens,
            stallMs: knobs.stall_ms,
            disconnectAfterTokens: knobs.disconnect_after_tokens,
            errorAfterTokens: knobs.error_after_tokens,
            malformedAfterTokens: knobs.malformed_after_tokens,
          }
        : null,
  };
}
