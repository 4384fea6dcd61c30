/**
 * `fixed`: weighted random choice among admitted routes, with automatic fallback (done by the
 * lifecycle). The default strategy (seed 000, "how FixedRouter picks an endpoint": the weights
 * are renormalised over what admission left, then one route is drawn).
 */
import { z } from 'zod';
import type { StrategyDefinition } from './planner.ts';
import { weightedDraw } from './planner.ts';

/** `router_params` of `fixed`. */
export const FixedParamsSchema = z
  .object({
    /** Experimental local/remote composition (seed 000); accepted, not yet used. */
    hybrid_composition: z.boolean().default(false),
  })
  .strict();

/** Parameters of the `fixed` strategy after defaults. */
export type FixedParams = z.infer<typeof FixedParamsSchema>;

/** The `fixed` strategy definition. Stateless: one weighted draw per request. */
export const fixedStrategy: StrategyDefinition<FixedParams> = {
  name: 'fixed',
  description: 'weighted random over admitted routes, fallback in declaration order',
  paramsSchema: FixedParamsSchema,
  create() {
    return {
      pick: (candidates, _request, _nowMs, rng) => ({
        candidate: weightedDraw(candidates, rng),
        reason: 'weighted',
      }),
    };
  },
};
