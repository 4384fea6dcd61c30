/**
 * What the clients of a trace do beyond arriving: stream or not, give up, retry. Public traces
 * record none of it, so the experiment's `client:` block sets it and each request draws its own
 * values from the workload streams in request order — the same for every strategy of a run.
 *
 * - `stream`: `trace` (the trace's flag) or a fraction of streaming requests.
 * - `timeout_ms`: the client's per-try request timeout (an SDK timeout): when it fires the
 *   client disconnects; with retries left and `timeout` in `retries.on`, it tries again.
 * - `abandon`: a person's patience for the first visible output (first token when streaming,
 *   the whole answer otherwise), log-normal with `median_ms` and `sigma`, counted from the
 *   original arrival; an abandoned request is not retried.
 * - `retries`: up to `max` new tries after a retryable failure (the final HTTP status, or the
 *   timeout), after an exponential back-off with jitter (OpenAI's SDK: 0.5 s doubling to 8 s,
 *   up to 25 % jitter) or the server's Retry-After when longer.
 * A request's final status is `ok`, the core's error code of its last try, `client_timeout` or
 * `client_abandoned` — so "nothing lost" is `status = 'ok'` for every request.
 */
import { z } from 'zod';
import { deriveRng } from '../core/rng.ts';
import { keyedBase, keyedUniform } from './crn.ts';
import { normalQuantile } from './providers/quantile-function.ts';

/** The `client:` block. */
export const ClientSchema = z
  .object({
    stream: z.union([z.literal('trace'), z.number().min(0).max(1)]).default('trace'),
    timeout_ms: z.number().positive().optional(),
    abandon: z.object({ median_ms: z.number().positive(), sigma: z.number().nonnegative().default(1) }).strict().optional(),
    retries: z
      .object({
        max: z.number().int().min(0).default(0),
        backoff_ms: z.number().nonnegative().default(500),
        max_backoff_ms: z.number().nonnegative().default(8000),
        jitter: z.number().min(0).max(1).default(0.25),
        /** Final HTTP statuses (400-599) and `timeout` that trigger a retry. */
        on: z.array(z.union([z.number().int().min(400).max(599), z.literal('timeout')])).default([429, 500, 502, 503, 504, 'timeout']),
        honour_retry_after: z.boolean().default(true),
      })
      .strict()
      .prefault({}),
  })
  .strict()
  .prefault({});

/** A validated `client:` block. */
export type ClientConfig = z.infer<typeof ClientSchema>;

/** Per-request client draws, indexed like the replayed rows. */
export interface ClientPlan {
  /** 1 when request i streams. */
  readonly stream: Uint8Array;
  /** Patience of request i from its arrival, ms; Infinity when nobody abandons. */
  readonly patienceMs: Float64Array;
  /** Base of the keyed back-off jitter stream. */
  readonly backoffBase: number;
}

/**
 * Draws every request's stream flag and patience, in request order, from the streams
 * `client/stream` and `client/patience` under `seed`.
 */
export function planClients(traceStream: readonly boolean[], client: ClientConfig, seed: number): ClientPlan {
  const n = traceStream.length;
  const stream = new Uint8Array(n);
  const patienceMs = new Float64Array(n).fill(Infinity);
  if (client.stream === 'trace') {
    for (let i = 0; i < n; i++) stream[i] = traceStream[i] ? 1 : 0;
  } else {
    const rng = deriveRng(seed, 'client/stream');
    for (let i = 0; i < n; i++) stream[i] = rng.float() < client.stream ? 1 : 0;
  }
  if (client.abandon) {
    const rng = deriveRng(seed, 'client/patience');
    const { median_ms, sigma } = client.abandon;
    for (let i = 0; i < n; i++) {
      const u = rng.float();
      patienceMs[i] = sigma === 0 || u === 0 ? median_ms : median_ms * Math.exp(sigma * normalQuantile(u));
    }
  }
  return { stream, patienceMs, backoffBase: keyedBase(seed, 'client/backoff') };
}

/** Whether a try that ended with HTTP `status` (or the client's own timeout) is retried. */
export function isRetryable(client: ClientConfig, status: number | 'timeout'): boolean {
  return client.retries.on.includes(status);
}

/**
 * Delay before the next try, ms: min(max_backoff, backoff·2^tryNo) × (1 − jitter·u), u a keyed
 * draw on (request, try); at least the server's Retry-After when `honour_retry_after`.
 * @param tryNo the try that just failed, 0-based.
 */
export function retryDelayMs(client: ClientConfig, plan: ClientPlan, reqIndex: number, tryNo: number, retryAfterMs: number | null): number {
  const r = client.retries;
  const exp = Math.min(r.max_backoff_ms, r.backoff_ms * 2 ** tryNo);
  const delay = exp * (1 - r.jitter * keyedUniform(plan.backoffBase, reqIndex, tryNo, 0));
  return r.honour_retry_after && retryAfterMs !== null ? Math.max(delay, retryAfterMs) : delay;
}
