/**
 * The three scorers of llm-d's default endpoint-picker profile, as pure functions. Each maps an
 * endpoint to a value in [0, 1], higher better; the profile sums them with weights
 * (`llm-d.ts`). Sources: llm-d-inference-scheduler / Gateway API Inference Extension scorer
 * plugins `prefix-cache-scorer`, `queue-scorer`, `kv-cache-utilization-scorer`.
 */

/**
 * `prefix-cache-scorer`: the fraction of the request's leading blocks the endpoint holds —
 * `matchedBlocks / totalBlocks`, where `totalBlocks` is the request's block count capped at
 * `maxPrefixBlocksToMatch`. 0 for a request without blocks. In [0, 1].
 */
export function prefixCacheScore(matchedBlocks: number, totalBlocks: number): number {
  if (!(totalBlocks > 0)) return 0;
  return Math.min(1, Math.max(0, matchedBlocks / totalBlocks));
}

/**
 * `queue-scorer`: min-max normalised queue depth, `(max − q) / (max − min)` over the candidates,
 * so the shortest queue scores 1 and the longest 0; every candidate scores 1 when all queues are
 * equal. Returns one score per entry of `queues` (each ≥ 0).
 */
export function queueScores(queues: readonly number[]): number[] {
  let min = Number.POSITIVE_INFINITY;
  let max = Number.NEGATIVE_INFINITY;
  for (const q of queues) {
    if (q < min) min = q;
    if (q > max) max = q;
  }
  const span = max - min;
  return queues.map((q) => (span > 0 ? (max - q) / span : 1));
}

/** `kv-cache-utilization-scorer`: `1 − kvUsage`, `kvUsage` the fraction of KV blocks in use (clamped to [0, 1]). */
export function kvUtilizationScore(kvUsage: number): number {
  return 1 - Math.min(1, Math.max(0, kvUsage));
}
