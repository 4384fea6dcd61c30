/**
 * Faults as data: the `faults:` list of an experiment (and of each named scenario). Every fault
 * targets one endpoint by name — a local replica (`replica-<i>`) or a provider — during a window
 * [from_ms, to_ms) of virtual time, and applies to engines and providers alike:
 *
 * | kind | effect |
 * | --- | --- |
 * | `crash` | at from_ms every attempt in flight fails with a transport reset; until to_ms new attempts are refused (transport `refused` after `latency_ms`); at to_ms the endpoint is back, a replica with an empty cache |
 * | `slow` | replica: every step takes `factor`× as long while the window is open; provider: TTFT and per-token time × `factor` for attempts sent in the window |
 * | `error_burst` | attempts sent in the window fail with HTTP `status` (probability `rate`), after `latency_ms`, with an optional Retry-After |
 * | `rate_limit_storm` | attempts sent in the window get 429 with Retry-After `retry_after_ms` (probability `rate`) |
 * | `stall_first_token` | attempts sent in the window deliver their first token (and everything after) `stall_ms` late |
 * | `stall_mid_stream` | attempts sent in the window deliver their last token `stall_ms` late (the stream stops after the first token) |
 * | `disconnect_mid_stream` | attempts sent in the window lose the connection `after_ms` after their first token, unless they finished before (transport reset) |
 * | `latency_spike` | attempts sent in the window see TTFT × `factor` + `add_ms` (later tokens shift with it) |
 *
 * Per-attempt faults draw "does it hit this attempt?" with probability `rate` from keyed draws
 * (request, client try, fault): two strategies sending the same request to the same endpoint
 * under the same fault see the same outcome. An entry without `kind` is an `error_burst`
 * (the format of the first simulator's `faults:`).
 */
import { z } from 'zod';

const window = {
  /** Endpoint name: `replica-<i>` or a provider's `name`. */
  endpoint: z.string().min(1),
  /** Window start, virtual ms (arrival times are divided by rate_scale; fault times are not). */
  from_ms: z.number().nonnegative(),
  /** Window end (exclusive), virtual ms; > from_ms. */
  to_ms: z.number().nonnegative(),
};
const rate = z.number().min(0).max(1).default(1);

/** The fault kinds and their parameters. */
export const FaultSchema = z
  .preprocess(
    (v) => (v !== null && typeof v === 'object' && !Array.isArray(v) && !('kind' in v) ? { kind: 'error_burst', ...v } : v),
    z.discriminatedUnion('kind', [
      z.object({ kind: z.literal('crash'), ...window, latency_ms: z.number().nonnegative().default(1) }).strict(),
      z.object({ kind: z.literal('slow'), ...window, factor: z.number().positive() }).strict(),
      z
        .object({
          kind: z.literal('error_burst'),
          ...window,
          status: z.number().int().min(400).max(599).default(503),
          rate,
          latency_ms: z.number().nonnegative().default(20),
          retry_after_ms: z.number().positive().optional(),
        })
        .strict(),
      z
        .object({
          kind: z.literal('rate_limit_storm'),
          ...window,
          rate,
          retry_after_ms: z.number().positive().default(1000),
          latency_ms: z.number().nonnegative().default(20),
        })
        .strict(),
      z.object({ kind: z.literal('stall_first_token'), ...window, stall_ms: z.number().positive(), rate }).strict(),
      z.object({ kind: z.literal('stall_mid_stream'), ...window, stall_ms: z.number().positive(), rate }).strict(),
      z.object({ kind: z.literal('disconnect_mid_stream'), ...window, after_ms: z.number().nonnegative().default(0), rate }).strict(),
      z
        .object({ kind: z.literal('latency_spike'), ...window, factor: z.number().min(1).default(1), add_ms: z.number().nonnegative().default(0), rate })
        .strict(),
    ]),
  )
  .refine((f) => f.to_ms > f.from_ms, { message: 'to_ms must be greater than from_ms', path: ['to_ms'] });

/** A validated fault. */
export type Fault = z.infer<typeof FaultSchema>;

/** A fault kind. */
export type FaultKind = Fault['kind'];

/** Fault kinds that act on each attempt sent during the window (the others change the endpoint). */
export const PER_ATTEMPT_KINDS: ReadonlySet<FaultKind> = new Set([
  'error_burst',
  'rate_limit_storm',
  'stall_first_token',
  'stall_mid_stream',
  'disconnect_mid_stream',
  'latency_spike',
]);

/** The fault's parameters without its kind, window and target, for the `events` table. */
export function faultParams(f: Fault): Record<string, unknown> {
  const { kind: _k, endpoint: _e, from_ms: _f, to_ms: _t, ...rest } = f;
  return rest;
}
