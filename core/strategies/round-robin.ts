/**
 * `round_robin`: smooth weighted round robin (nginx's `ngx_http_upstream_get_peer`): each pick
 * adds every candidate's weight to its running score, takes the highest score, and subtracts the
 * total from the winner. Over any window of Σw picks each candidate is chosen w times, spread
 * evenly rather than in bursts. Ties go to declaration order. Deterministic; draws no randomness.
 */
import { z } from 'zod';
import type { Candidate, StrategyDefinition } from './planner.ts';

/** `round_robin` takes no parameters. */
export const RoundRobinParamsSchema = z.object({}).strict();

/** The `round_robin` strategy definition. State: one running score per endpoint. */
export const roundRobinStrategy: StrategyDefinition<Record<string, never>> = {
  name: 'round_robin',
  description: 'smooth weighted round robin over admitted routes',
  paramsSchema: RoundRobinParamsSchema as z.ZodType<Record<string, never>>,
  create() {
    const score = new Map<string, number>();
    return {
      pick(candidates: readonly Candidate[]) {
        let total = 0;
        let best = 0;
        let bestScore = -Infinity;
        for (let i = 0; i < candidates.length; i++) {
          const c = candidates[i]!;
          total += c.weight;
          const s = (score.get(c.endpointId) ?? 0) + c.weight;
          score.set(c.endpointId, s);
          if (s > bestScore) {
            bestScore = s;
            best = i;
          }
        }
        const winner = candidates[best]!.endpointId;
        score.set(winner, bestScore - total);
        return { candidate: best, reason: 'round_robin' };
      },
    };
  },
};
