/**
 * The multi-target family's same-target retry budget and wait (seed 003 "retries"): how many
 * times a retryable failure is repeated on the target that gave it, and how long to wait before
 * each repeat (`backoff.ts`, under the model's `routing.backoff` or the deployment defaults).
 */
import type { Rng } from '../../rng.ts';
import type { ResolvedMultiTarget, ResolvedTarget } from '../../model/resolved-model.ts';
import type { MultiTargetOptions } from '../../multi-target/multi-target-options.ts';
import { backoffMs } from './backoff.ts';

/**
 * Same-target retries allowed on `t`: its own `retries`, else the block's; when neither is set,
 * none while another target is left (`anotherLeft`, asked only then) and the deployment's
 * `lastTargetRetries` on the last one.
 */
export function sameTargetRetries(t: ResolvedTarget, mt: ResolvedMultiTarget, options: Readonly<MultiTargetOptions>, anotherLeft: () => boolean): number {
  return t.retries ?? mt.retries ?? (anotherLeft() ? 0 : options.lastTargetRetries);
}

/**
 * Wait before same-target retry number `retry` (1 = first), ms: the block's backoff, else the
 * deployment's base, cap and equal jitter; never less than the upstream's Retry-After
 * (`retryAfterMs`, ms or null). Draws one `rng.float()` unless jitter is `none`.
 */
export function sameTargetDelayMs(retry: number, mt: ResolvedMultiTarget, options: Readonly<MultiTargetOptions>, retryAfterMs: number | null, rng: Rng): number {
  const b = mt.backoff;
  return backoffMs(retry, b?.baseMs ?? options.backoffBaseMs, b?.maxMs ?? options.backoffMaxMs, retryAfterMs, rng, b?.jitter ?? 'equal');
}
