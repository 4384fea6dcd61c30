/**
 * Why the core made an attempt, as the request log's attempt rows and the attempt spans name it:
 * the first attempt is the `primary`; a later one is the `offload` when it went to the model's
 * offload route while an offload reason is set, a `retry` when it repeats the previous attempt's
 * endpoint, else a `fallback`.
 */
import type { RoutingMetadata } from '../../core/index.ts';

/** Why attempt `i` of a request was made. */
export type AttemptReason = 'primary' | 'retry' | 'fallback' | 'offload';

/** The reason of attempt `i` of `md.attempts`. */
export function attemptReason(md: RoutingMetadata, i: number): AttemptReason {
  if (i === 0) return 'primary';
  const a = md.attempts[i]!;
  if (md.offloadReason !== null && a.endpointId === md.offloadEndpointId) return 'offload';
  return a.endpointId === md.attempts[i - 1]!.endpointId ? 'retry' : 'fallback';
}
