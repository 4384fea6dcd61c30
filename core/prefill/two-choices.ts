/**
 * Pure scoring for prefill-aware selection (seed 000, "prefill 感知的选路"): which of two
 * weighted draws to keep, and which endpoints an elephant prompt should avoid. The `fixed`
 * planner only draws and calls these; the loads come from `PrefillLoad`.
 *
 * Power of two choices: Mitzenmacher, "The Power of Two Choices in Randomized Load Balancing"
 * (IEEE TPDS 2001); Envoy's least-request balancer draws two hosts the same way. The twist from
 * the spec: load overrides the first draw only once the heavier endpoint's backlog reaches an
 * intervention threshold, because below it the weights (capacity, cost, provider preference)
 * are the better signal.
 */

/**
 * Which of two drawn endpoints to keep: `1` (the second) when the heavier of the two has a
 * prefill backlog ≥ `interveneTokens` and the second is strictly lighter; otherwise `0` (the
 * first draw, so ties and light loads follow the weights). Backlogs and threshold are uncached
 * prompt tokens, ≥ 0. Pure.
 */
export function chooseOfTwo(firstBacklogTokens: number, secondBacklogTokens: number, interveneTokens: number): 0 | 1 {
  const heavier = firstBacklogTokens > secondBacklogTokens ? firstBacklogTokens : secondBacklogTokens;
  return heavier >= interveneTokens && secondBacklogTokens < firstBacklogTokens ? 1 : 0;
}

/**
 * Whether a request should avoid an endpoint because it would be an elephant there
 * (`uncachedTokens ≥ elephantTokens`) and the endpoint already has `elephantLimit` elephants in
 * prefill. The caller lifts the rule when it would exclude every candidate. Pure.
 */
export function elephantAvoids(uncachedTokens: number, elephantsInFlight: number, elephantTokens: number, elephantLimit: number): boolean {
  return uncachedTokens >= elephantTokens && elephantsInFlight >= elephantLimit;
}

/**
 * Share of traffic P2C gives each endpoint when only endpoint `busy` is backlogged past the
 * intervention threshold and every other endpoint is idle: with normalised weights p, the busy
 * endpoint wins only when both draws hit it (p_busy²); any other endpoint i wins when drawn
 * first, or drawn second against the busy one: p_i·(1 + p_busy). Used by the statistical tests
 * and the docs. @throws RangeError when `busy` is out of range or weights are not all > 0.
 */
export function p2cSharesOneBusy(weights: readonly number[], busy: number): number[] {
  if (!Number.isInteger(busy) || busy < 0 || busy >= weights.length) throw new RangeError(`busy must index weights (0..${weights.length - 1}), got ${busy}`);
  let total = 0;
  for (const w of weights) {
    if (!(w > 0)) throw new RangeError(`weights must all be > 0, got ${w}`);
    total += w;
  }
  const pb = weights[busy]! / total;
  return weights.map((w, i) => (i === busy ? pb * pb : (w / total) * (1 + pb)));
}
