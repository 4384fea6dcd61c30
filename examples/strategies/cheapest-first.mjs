/**
 * `cheapest-first` — an example routing strategy registered from outside the repository
 * (README "Adding a strategy"; contract: core/strategies/strategy-module.ts).
 *
 * Orders a model's admitted routes by their configured list price (input + output USD per 1k
 * tokens of the route's `pricing:` block), cheapest first; equal prices are ordered by endpoint
 * id, so the choice does not depend on the order the routes are written in. Routes without
 * `pricing:` rank after every priced one, unless `unpriced_first: true` (treat them as free, e.g.
 * local replicas). The lifecycle falls back along the same order when an attempt fails.
 *
 * Stateless and draws nothing from the rng, so every gateway worker makes the same choice
 * (`workerSafe`). Plain JavaScript with no imports: the module can live anywhere.
 */

/** The `router:` name models use. */
export const name = 'cheapest-first';

/** One line for help output. */
export const description = 'lowest configured price per 1k tokens first, ties by endpoint id; unpriced last (or first)';

/** `router_params`: a key → { type, default } description; any other key is refused at start. */
export const params = {
  unpriced_first: { type: 'boolean', default: false },
};

/** Holds no per-process state, so N gateway workers behave as one. */
export const workerSafe = true;

/**
 * Builds the planner of one model.
 * @param {{ unpriced_first: boolean }} p validated `router_params` (defaults applied)
 * @param {ReadonlyArray<{ endpointId: string, costUsdPer1kTokens?: number | null }>} routes the model's routes
 * @returns a planner: `pick` chooses the primary, `order` ranks every candidate (fallback order)
 */
export function create(p, routes) {
  const unpricedScore = p.unpriced_first ? -1 : Number.POSITIVE_INFINITY;
  const price = new Map(routes.map((r) => [r.endpointId, r.costUsdPer1kTokens ?? unpricedScore]));
  const score = (c) => price.get(c.endpointId) ?? Number.POSITIVE_INFINITY;
  const rank = (candidates) =>
    candidates
      .map((c, i) => i)
      .sort((a, b) => score(candidates[a]) - score(candidates[b]) || (candidates[a].endpointId < candidates[b].endpointId ? -1 : candidates[a].endpointId > candidates[b].endpointId ? 1 : 0));
  return {
    pick: (candidates) => ({ candidate: rank(candidates)[0], reason: 'cheapest_first' }),
    order: (candidates) => ({ order: rank(candidates), reason: 'cheapest_first' }),
  };
}
