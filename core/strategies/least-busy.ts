/**
 * `least_busy`: fewest weighted in-flight requests first (seed 003 "route by load"): score
 * (1 + in-flight) / max(weight, 1), lowest first, ties broken by the request's seeded draw. The +1 lets weight
 * break ties between idle targets and gives heavier targets proportionally more concurrency.
 * In-flight counts come from the core's `EndpointStats` (every attempt any lifecycle has
 * dispatched to the endpoint and not yet ended). Draws only on a tie.
 */
import { z } from 'zod';
import type { Candidate, StrategyDefinition } from './planner.ts';
import { argMin, rankBy } from './rank.ts';

/** `least_busy` takes no parameters. */
export const LeastBusyParamsSchema = z.object({}).strict();

/** The least_busy score of one candidate: (1 + inFlight) / max(weight, 1). Lower is better. */
export function busyScore(inFlight: number, weight: number): number {
  return (1 + inFlight) / Math.max(weight, 1);
}

/** The `least_busy` strategy definition. Without `context.endpoints` every target reads idle. */
export const leastBusyStrategy: StrategyDefinition<Record<string, never>> = {
  name: 'least_busy',
  description: 'lowest (1 + in-flight) / max(weight, 1) first',
  paramsSchema: LeastBusyParamsSchema as z.ZodType<Record<string, never>>,
  create(_params, _routes, context) {
    const stats = context?.endpoints;
    const score = (c: Candidate) => busyScore(stats?.inFlight(c.endpointId) ?? 0, c.weight);
    return {
      readsEndpointStats: true,
      pick: (candidates, _request, _nowMs, rng) => ({ candidate: argMin(candidates, score, rng), reason: 'least_busy' }),
      order: (candidates, _request, _nowMs, rng) => ({ order: rankBy(candidates, score, rng), reason: 'least_busy' }),
    };
  },
};
