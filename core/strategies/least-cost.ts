/**
 * `least_cost`: cheapest first (seed 003 "route by cost"). A target's price is its input plus
 * output list price per 1k tokens (the first tier of tiered pricing — Switchyard's `pricing`
 * block is flat, which is that tier); targets without a `pricing` block rank last. Ties keep
 * declaration order. Stateless; draws nothing. Weight is accepted and unused.
 */
import { z } from 'zod';
import type { Candidate, StrategyDefinition } from './planner.ts';
import { argMin, rankBy } from './rank.ts';

/** `least_cost` takes no parameters. */
export const LeastCostParamsSchema = z.object({}).strict();

/** Cost score of a route: USD per 1k tokens, or +∞ when unpriced (so it sorts last). */
export function costScore(costUsdPer1kTokens: number | null | undefined): number {
  return costUsdPer1kTokens === null || costUsdPer1kTokens === undefined ? Number.POSITIVE_INFINITY : costUsdPer1kTokens;
}

/** The `least_cost` strategy definition. Prices are fixed when the planner is created. */
export const leastCostStrategy: StrategyDefinition<Record<string, never>> = {
  name: 'least_cost',
  description: 'lowest input+output price per 1k tokens first; unpriced last',
  paramsSchema: LeastCostParamsSchema as z.ZodType<Record<string, never>>,
  create(_params, routes) {
    const price = new Map(routes.map((r) => [r.endpointId, costScore(r.costUsdPer1kTokens)]));
    const score = (c: Candidate) => price.get(c.endpointId) ?? Number.POSITIVE_INFINITY;
    return {
      pick: (candidates) => ({ candidate: argMin(candidates, score), reason: 'least_cost' }),
      order: (candidates) => ({ order: rankBy(candidates, score), reason: 'least_cost' }),
    };
  },
};
