/**
 * The wait before a same-target retry: exponential backoff with jitter, never shorter than the
 * upstream's Retry-After. Seed 003 fixes neither constant; the deployment defaults live in
 * `multi-target-options.ts` and a model may set `routing.backoff` (`base_ms`, `max_ms`, `jitter`),
 * an extension off by default. Source: AWS Architecture Blog, "Exponential Backoff And Jitter".
 */
import type { Rng } from '../../rng.ts';

/** Backoff before a same-target retry (YAML extension `routing.backoff`); ms. */
export interface BackoffPolicy {
  readonly baseMs: number;
  readonly maxMs: number;
  readonly jitter: 'equal' | 'full' | 'none';
}

/**
 * Backoff before same-target retry number `retry` (1 = first), ms: exponential from `baseMs`,
 * capped at `maxMs`, with `jitter` (`equal`: half fixed, half drawn; `full`: all drawn; `none`;
 * one `rng.float()` unless `none`), and never less than the upstream's Retry-After when it gave
 * one — the hint is honoured in full, beyond `maxMs` (the life returns the error instead when
 * the request cannot wait that long).
 */
export function backoffMs(retry: number, baseMs: number, maxMs: number, retryAfterMs: number | null, rng: Rng, jitter: BackoffPolicy['jitter'] = 'equal'): number {
  const ceiling = Math.min(maxMs, baseMs * 2 ** Math.max(0, retry - 1));
  const jittered = jitter === 'none' ? ceiling : jitter === 'full' ? rng.float() * ceiling : ceiling / 2 + rng.float() * (ceiling / 2);
  const floor = retryAfterMs === null ? 0 : Math.max(0, retryAfterMs);
  return Math.max(jittered, floor);
}
