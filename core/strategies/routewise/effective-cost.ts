/**
 * Effective cost of one request on one route, in USD (seed 000 "RouteWise";
 * RouteWise paper §4, EuroSys '27). Three provider types price differently:
 * - on-demand APIs bill tokens: (p_in·(n_in − n_cached) + p_cached·n_cached + p_out·L̂) / 1e6, with
 *   prices in USD per 1M tokens and L̂ the predicted output length;
 * - quota subscriptions are prepaid, so their marginal price is a *shadow* price that rises with
 *   use: ψ(z) = L·(U/L)^z, z the used fraction of the tightest quota window, (L, U) the cost
 *   envelope — cheap while the quota is fresh, as dear as a costly API call when nearly spent;
 * - concurrency subscriptions cost nothing extra while a slot is free and are unusable when full.
 * A route that cannot take the request (quota exhausted, slots full) has cost `null` (excluded).
 */

/** How a route is paid for (seed 000 route entries: `provider_type`). */
export type ProviderType = 'on_demand' | 'quota' | 'concurrency';

/** Token prices in USD per 1M tokens. */
export interface TokenPricing {
  readonly inputUsdPer1M: number;
  readonly cachedInputUsdPer1M: number;
  readonly outputUsdPer1M: number;
}

/**
 * The highest used fraction ψ is evaluated at: at z = 1 the quota is exhausted and the route is
 * excluded; just below it the price is (almost) U rather than jumping.
 */
export const QUOTA_Z_CAP = 0.9999;

/**
 * On-demand cost of one request, USD: (p_in·(n_in − n_cached) + p_cached·n_cached + p_out·L̂) / 1e6.
 * `cachedTokens` is clamped to [0, inputTokens]; negative token counts read as 0.
 * @param inputTokens prompt tokens n_in.
 * @param cachedTokens prompt tokens expected to hit the provider's prompt cache, n_cached.
 * @param outputTokens predicted output tokens L̂.
 */
export function onDemandCostUsd(pricing: TokenPricing, inputTokens: number, cachedTokens: number, outputTokens: number): number {
  const nIn = inputTokens > 0 ? inputTokens : 0;
  const nCached = cachedTokens <= 0 ? 0 : cachedTokens >= nIn ? nIn : cachedTokens;
  const out = outputTokens > 0 ? outputTokens : 0;
  return (pricing.inputUsdPer1M * (nIn - nCached) + pricing.cachedInputUsdPer1M * nCached + pricing.outputUsdPer1M * out) / 1e6;
}

/**
 * The quota shadow price ψ(z) = L·(U/L)^z in USD, or null when the quota is exhausted (z ≥ 1).
 * z is clamped to [0, QUOTA_Z_CAP]; ψ(0) = L, ψ(0.5) = √(L·U), ψ(0.9999) ≈ U.
 * @param lowUsd L > 0 of the cost envelope.
 * @param highUsd U > L of the cost envelope.
 * @param usedFraction z: the largest used fraction over the route's quota windows.
 * @throws RangeError when L ≤ 0 or U < L (callers pass a calibrated envelope).
 */
export function quotaShadowCostUsd(lowUsd: number, highUsd: number, usedFraction: number): number | null {
  if (!(lowUsd > 0) || !(highUsd >= lowUsd)) throw new RangeError(`quota envelope needs 0 < L ≤ U, got L=${lowUsd}, U=${highUsd}`);
  if (usedFraction >= 1) return null;
  const z = usedFraction <= 0 ? 0 : usedFraction > QUOTA_Z_CAP ? QUOTA_Z_CAP : usedFraction;
  return lowUsd * Math.pow(highUsd / lowUsd, z);
}

/** Concurrency-subscription cost: 0 USD while a slot is free, null (excluded) when all are taken. */
export function concurrencyCostUsd(slotFree: boolean): number | null {
  return slotFree ? 0 : null;
}
