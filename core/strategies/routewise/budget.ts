/**
 * The per-request cost budget (RouteWise paper §4): B = c_min + α·(c_max − c_min)
 * over the effective costs of the routes eligible for this request. α = 0 asks for the cheapest
 * route's cost, α = 1 puts no cost limit on the choice; in between the budget interpolates, so it
 * follows the request's size and the routes' current prices instead of being a fixed dollar cap.
 */

/** The budget and the cost range it interpolates, USD. */
export interface Budget {
  readonly budgetUsd: number;
  readonly minCostUsd: number;
  readonly maxCostUsd: number;
}

/**
 * B = c_min + α·(c_max − c_min) over `costUsd[0..count)` (entries that are not finite are skipped:
 * they mark ineligible routes). α is clamped to [0, 1].
 * @returns the budget, or null when no entry is finite (no eligible route).
 */
export function budgetUsd(costUsd: ArrayLike<number>, count: number, alpha: number): Budget | null {
  let lo = Number.POSITIVE_INFINITY;
  let hi = Number.NEGATIVE_INFINITY;
  for (let i = 0; i < count; i++) {
    const c = costUsd[i]!;
    if (!Number.isFinite(c)) continue;
    if (c < lo) lo = c;
    if (c > hi) hi = c;
  }
  if (lo === Number.POSITIVE_INFINITY) return null;
  const a = alpha <= 0 ? 0 : alpha >= 1 ? 1 : alpha;
  // At α = 1 return c_max itself, not c_min + (c_max − c_min), which can round below c_max.
  return { budgetUsd: a === 1 ? hi : lo + a * (hi - lo), minCostUsd: lo, maxCostUsd: hi };
}
