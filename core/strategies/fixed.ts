/**
 * `fixed`: weighted random choice among admitted routes, with automatic fallback (done by the
 * lifecycle). The default strategy (seed 000, "how FixedRouter picks an endpoint": the weights
 * are renormalised over what admission left, then one route is drawn).
 *
 * Two seed-000 refinements, each switchable globally (routing settings) and per model
 * (`router_params`):
 * - prefill-aware power-of-two-choices ("prefill 感知的选路"): two independent weighted draws;
 *   the lighter one (by uncached prompt tokens in prefill) replaces the first only once the
 *   heavier has `prefillInterveneTokens` queued (`chooseOfTwo`); elephant prompts first avoid
 *   endpoints already at the elephant limit, unless every candidate is. Never blocks or rejects.
 * - session affinity ("会话亲和"): applied by the lifecycle before `pick` when the planner says
 *   `sessionAffinity`.
 */
import { z } from 'zod';
import type { Candidate, Pick, Planner, StrategyDefinition } from './planner.ts';
import { weightedDraw } from './planner.ts';
import { chooseOfTwo, elephantAvoids } from '../prefill/two-choices.ts';
import type { RouteRequest } from '../lifecycle/seam.ts';
import type { Rng } from '../rng.ts';

/**
 * Why `router_params.hybrid_composition: true` is refused at config load (and what to do); the
 * message follows the field path, which already names `hybrid_composition`.
 */
export const HYBRID_COMPOSITION_REFUSED =
  'true is refused: the seeds do not specify what hybrid composition does, so Switchyard has no behaviour to give it; remove hybrid_composition from router_params';

/** `router_params` of `fixed`. */
export const FixedParamsSchema = z
  .object({
    /**
     * Named by seed 000 without any behaviour: the seeds do not say what a hybrid composition
     * does, so `true` is refused (with that reason and the fix) rather than accepted and
     * ignored. `false`, the only meaning it can have here, is accepted so existing files load.
     */
    hybrid_composition: z.literal(false, { error: HYBRID_COMPOSITION_REFUSED }).optional(),
    /** Overrides `prefill_aware_enabled` of the routing settings for this model. */
    prefill_aware: z.boolean().optional(),
    /** Overrides `affinity_enabled` of the routing settings for this model. */
    affinity: z.boolean().optional(),
  })
  .strict();

/** Parameters of the `fixed` strategy after defaults. */
export type FixedParams = z.infer<typeof FixedParamsSchema>;

const WEIGHTED: Pick = Object.freeze({ candidate: 0, reason: 'weighted' });

/**
 * The `fixed` strategy definition. Reasons it reports: `weighted` (the first draw, or the plain
 * draw), `p2c` (load replaced the first draw), `elephant_spread` (the elephant rule narrowed the
 * candidates, first draw kept). Built without a `PlannerContext` it is plain weighted random
 * with no affinity (there is no load to read).
 */
export const fixedStrategy: StrategyDefinition<FixedParams> = {
  name: 'fixed',
  description: 'weighted random over admitted routes (prefill-aware two choices, session affinity), fallback in declaration order',
  paramsSchema: FixedParamsSchema,
  create(params, _routes, context) {
    const plain = (candidates: readonly Candidate[], _request: RouteRequest, _nowMs: number, rng: Rng): Pick => ({
      candidate: weightedDraw(candidates, rng),
      reason: 'weighted',
    });
    if (context === undefined) return { pick: plain };
    const { settings, prefill } = context;
    const sessionAffinity = params.affinity ?? settings.affinityEnabled;
    if (!(params.prefill_aware ?? settings.prefillAwareEnabled)) return { pick: plain, sessionAffinity };

    const interveneTokens = settings.prefillInterveneTokens;
    const elephantTokens = settings.prefillElephantTokens;
    const elephantLimit = settings.prefillElephantLimit;
    const planner: Planner = {
      sessionAffinity,
      pick(candidates, request, nowMs, rng) {
        const n = candidates.length;
        if (n === 1) return WEIGHTED;
        let pool = candidates;
        let original: number[] | null = null;
        // Only a prompt that is big in full can be an elephant anywhere (uncached ≤ input).
        if (request.inputTokens >= elephantTokens) {
          let kept: Candidate[] | null = null;
          for (let i = 0; i < n; i++) {
            const c = candidates[i]!;
            const uncached = prefill.uncachedTokens(c.endpointId, request.callerId, request.inputTokens, nowMs);
            if (elephantAvoids(uncached, prefill.elephantsInFlight(c.endpointId), elephantTokens, elephantLimit)) {
              if (kept === null) {
                kept = candidates.slice(0, i);
                original = kept.map((_, j) => j);
              }
            } else if (kept !== null) {
              kept.push(c);
              original!.push(i);
            }
          }
          // Every candidate at its limit ⇒ the rule is lifted: the worst case is plain P2C.
          if (kept !== null && kept.length > 0) pool = kept;
          else original = null;
        }
        const first = weightedDraw(pool, rng);
        const second = weightedDraw(pool, rng);
        const which =
          first === second ? 0 : chooseOfTwo(prefill.backlogTokens(pool[first]!.endpointId), prefill.backlogTokens(pool[second]!.endpointId), interveneTokens);
        const chosen = which === 0 ? first : second;
        return {
          candidate: original === null ? chosen : original[chosen]!,
          reason: which === 1 ? 'p2c' : original === null ? 'weighted' : 'elephant_spread',
        };
      },
    };
    return planner;
  },
};
