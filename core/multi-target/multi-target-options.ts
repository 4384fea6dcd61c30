/**
 * Deployment-wide defaults of multi-target routing: what applies when a model's `routing:` block
 * is silent. Validated once at construction of the core.
 */
import { DEFAULT_LATENCY_EWMA_ALPHA } from '../stats/endpoint-stats.ts';

/** Deployment defaults for multi-target models. */
export interface MultiTargetOptions {
  /**
   * Retries on the last remaining target when neither the target nor the block sets `retries`
   * (seed 003: without `retries`, move on rather than repeat, and use the deployment default on
   * the last target). Integer 0..10. Default 1.
   */
  lastTargetRetries: number;
  /** Backoff before the first same-target retry, ms > 0; doubles per retry. Default 200. */
  backoffBaseMs: number;
  /** Cap of one backoff, ms ≥ `backoffBaseMs`. An upstream Retry-After is honoured beyond it. Default 5 000. */
  backoffMaxMs: number;
  /** EWMA weight of a new latency sample for `least_latency`, in (0, 1]. Default 0.2. */
  latencyEwmaAlpha: number;
}

/**
 * Defaults. The backoff follows the exponential-backoff-with-jitter shape (AWS Architecture Blog,
 * "Exponential Backoff And Jitter"): 200 ms then 400, 800 … capped at 5 s, so one retry costs a
 * fraction of a typical TTFT. A longer upstream Retry-After is honoured in full: the request waits
 * for it when its overall deadline allows, else the caller gets the error with the hint.
 */
export const DEFAULT_MULTI_TARGET_OPTIONS: Readonly<MultiTargetOptions> = Object.freeze({
  lastTargetRetries: 1,
  backoffBaseMs: 200,
  backoffMaxMs: 5_000,
  latencyEwmaAlpha: DEFAULT_LATENCY_EWMA_ALPHA,
});

/**
 * Fills defaults and validates.
 * @throws RangeError naming the option and its allowed range.
 */
export function resolveMultiTargetOptions(over: Partial<MultiTargetOptions> = {}): Readonly<MultiTargetOptions> {
  const o = { ...DEFAULT_MULTI_TARGET_OPTIONS, ...over };
  if (!Number.isInteger(o.lastTargetRetries) || o.lastTargetRetries < 0 || o.lastTargetRetries > 10) {
    throw new RangeError(`multiTarget.lastTargetRetries must be an integer 0..10, got ${o.lastTargetRetries}`);
  }
  if (!(Number.isFinite(o.backoffBaseMs) && o.backoffBaseMs > 0)) throw new RangeError(`multiTarget.backoffBaseMs must be > 0, got ${o.backoffBaseMs}`);
  if (!(Number.isFinite(o.backoffMaxMs) && o.backoffMaxMs >= o.backoffBaseMs)) {
    throw new RangeError(`multiTarget.backoffMaxMs must be >= backoffBaseMs (${o.backoffBaseMs}), got ${o.backoffMaxMs}`);
  }
  if (!(o.latencyEwmaAlpha > 0 && o.latencyEwmaAlpha <= 1)) throw new RangeError(`multiTarget.latencyEwmaAlpha must be in (0, 1], got ${o.latencyEwmaAlpha}`);
  return Object.freeze(o);
}
