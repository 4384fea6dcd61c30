/**
 * `least_latency`: fastest recent upstream first (seed 003 "route by latency"): the core's EWMA
 * of each endpoint's recent latency (time to first token for streams, to the end of the
 * response otherwise), lowest first. Targets with no sample come first so each gets measured —
 * but only while nothing is already measuring them: an unmeasured target with an attempt in
 * flight ranks after the measured ones, or a burst of arrivals before the first answer would all
 * pile onto the first unmeasured target. Ties are broken by the request's seeded draw (draws only
 * on a tie); weight is accepted and unused.
 */
import { z } from 'zod';
import type { Candidate, StrategyDefinition } from './planner.ts';
import type { EndpointStatsView } from '../stats/endpoint-stats.ts';
import { argMin, rankBy } from './rank.ts';

/** `least_latency` takes no parameters (the EWMA weight is a core option shared by all models). */
export const LeastLatencyParamsSchema = z.object({}).strict();

/**
 * The least_latency score of an endpoint, lower first: −1 when unmeasured and idle (probe it),
 * its latency EWMA in ms when measured, +∞ when unmeasured but already being measured (after
 * every measured endpoint; such endpoints tie).
 */
export function latencyScore(stats: EndpointStatsView | undefined, endpointId: string): number {
  const ms = stats?.latencyMs(endpointId) ?? null;
  if (ms !== null) return ms;
  return (stats?.inFlight(endpointId) ?? 0) > 0 ? Number.POSITIVE_INFINITY : -1;
}

/** The `least_latency` strategy definition. Without `context.endpoints` every target is unmeasured and idle. */
export const leastLatencyStrategy: StrategyDefinition<Record<string, never>> = {
  name: 'least_latency',
  description: 'lowest recent latency (TTFT for streams) first; unmeasured targets first',
  paramsSchema: LeastLatencyParamsSchema as z.ZodType<Record<string, never>>,
  create(_params, _routes, context) {
    const stats = context?.endpoints;
    const score = (c: Candidate) => latencyScore(stats, c.endpointId);
    const reason = (c: Candidate) => (stats?.latencyMs(c.endpointId) ?? null) === null ? 'unmeasured' : 'least_latency';
    return {
      readsEndpointStats: true,
      pick(candidates, _request, _nowMs, rng) {
        const i = argMin(candidates, score, rng);
        return { candidate: i, reason: reason(candidates[i]!) };
      },
      order(candidates, _request, _nowMs, rng) {
        const order = rankBy(candidates, score, rng);
        return { order, reason: reason(candidates[order[0]!]!) };
      },
    };
  },
};
