/**
 * `llm_d`: llm-d's endpoint picker in its default "inference scheduling" profile — a weighted
 * sum of three scorers, highest total wins (`max-score-picker`; ties broken by the request's
 * seeded draw). Weights as llm-d's guide configures the default scheduling profile:
 * `prefix-cache-scorer` 3, `queue-scorer` 2, `kv-cache-utilization-scorer` 2
 * (llm-d `guides/inference-scheduling`, the `EndpointPickerConfig` of its GAIE values).
 *
 * - Prefix cache (`scorers.ts`): the fraction of the request's leading prefix blocks (its
 *   `prefixHashes`, at most `max_prefix_blocks_to_match` = 256, the plugin's
 *   `maxPrefixBlocksToMatch` default) the endpoint is believed to hold. Belief comes from routing,
 *   as in the plugin's estimated mode: the chosen endpoint records the request's blocks in an LRU
 *   of `lru_capacity_per_server` = 31 250 hashes (the plugin's `lruCapacityPerServer` default).
 * - Queue: the engine's reported waiting requests when it reports load, else the core's in-flight
 *   attempts to the endpoint; min-max normalised over the candidates.
 * - KV utilisation: `1 − kvUsage` from the engine's load report; an endpoint that reports none
 *   scores 1 (nothing known to be full).
 *
 * Requests without prefix hashes score 0 on the prefix term everywhere, so the picker then
 * balances on load alone. Routes' weights are not used (llm-d's pool has none).
 */
import { z } from 'zod';
import type { Candidate, Ordering, Planner, PlannerContext, StrategyDefinition } from '../planner.ts';
import type { RouteRequest } from '../../lifecycle/seam.ts';
import type { Rng } from '../../rng.ts';
import { PrefixBlockIndex } from '../../stats/prefix-block-index.ts';
import { argMin, rankBy } from '../rank.ts';
import { kvUtilizationScore, prefixCacheScore, queueScores } from './scorers.ts';

/** `router_params` of `llm_d`. Defaults are llm-d's (see the module comment). */
export const LlmDParamsSchema = z
  .object({
    prefix_cache_weight: z.number().min(0).default(3),
    queue_weight: z.number().min(0).default(2),
    kv_cache_utilization_weight: z.number().min(0).default(2),
    max_prefix_blocks_to_match: z.number().int().min(1).default(256),
    lru_capacity_per_server: z.number().int().min(1).default(31_250),
  })
  .strict();

/** Parameters of `llm_d` after defaults. */
export type LlmDParams = z.infer<typeof LlmDParamsSchema>;

/** One candidate's three scores and their weighted total (for tests and explanations). */
export interface LlmDScores {
  readonly prefix: number;
  readonly queue: number;
  readonly kvUtilization: number;
  readonly total: number;
}

/** The `llm_d` planner: scores, picks the best and records the request's blocks there. */
export class LlmDPlanner implements Planner {
  readonly readsEndpointStats = true;
  readonly readsPrefixHashes = true;
  readonly readsEngineSignals = true;
  /** Routed prefix blocks per endpoint (the prefix scorer's indexer). */
  index: PrefixBlockIndex;

  constructor(
    readonly params: LlmDParams,
    private readonly context: PlannerContext | undefined,
  ) {
    this.index = new PrefixBlockIndex({ capacityBlocks: params.lru_capacity_per_server, ttlMs: null });
  }

  /** Each candidate's scores for `request` at `nowMs`, in candidate order. Pure. */
  scores(candidates: readonly Candidate[], request: RouteRequest, nowMs: number): LlmDScores[] {
    const p = this.params;
    const hashes = request.prefixHashes ?? [];
    const total = Math.min(hashes.length, p.max_prefix_blocks_to_match);
    const engines = this.context?.engines;
    const stats = this.context?.endpoints;
    const queues = candidates.map((c) => engines?.load(c.endpointId)?.waiting ?? stats?.inFlight(c.endpointId) ?? 0);
    const q = queueScores(queues);
    return candidates.map((c, i) => {
      const prefix = prefixCacheScore(this.index.matchedBlocks(c.endpointId, hashes, nowMs, total), total);
      const kvUtilization = kvUtilizationScore(engines?.load(c.endpointId)?.kvUsage ?? 0);
      const queue = q[i]!;
      return { prefix, queue, kvUtilization, total: p.prefix_cache_weight * prefix + p.queue_weight * queue + p.kv_cache_utilization_weight * kvUtilization };
    });
  }

  pick(candidates: readonly Candidate[], request: RouteRequest, nowMs: number, rng: Rng) {
    const s = this.scores(candidates, request, nowMs);
    const best = argMin(s, (x) => -x.total, rng);
    this.recordChoice(candidates[best]!, request, nowMs);
    return { candidate: best, reason: 'llm_d' };
  }

  order(candidates: readonly Candidate[], request: RouteRequest, nowMs: number, rng: Rng): Ordering {
    const s = this.scores(candidates, request, nowMs);
    const order = rankBy(s, (x) => -x.total, rng);
    this.recordChoice(candidates[order[0]!]!, request, nowMs);
    return { order, reason: 'llm_d' };
  }

  /** Takes over the previous generation's prefix index when it was an `llm_d` planner with the same capacity. */
  carryFrom(previous: Planner): void {
    if (previous instanceof LlmDPlanner && previous.params.lru_capacity_per_server === this.params.lru_capacity_per_server) this.index = previous.index;
  }

  private recordChoice(c: Candidate, request: RouteRequest, nowMs: number): void {
    if (request.prefixHashes) this.index.record(c.endpointId, request.prefixHashes, nowMs, this.params.max_prefix_blocks_to_match);
  }
}

/** The `llm_d` strategy definition. Without `context`, queues read as the same and KV usage as 0. */
export const llmDStrategy: StrategyDefinition<LlmDParams> = {
  name: 'llm_d',
  description: "llm-d's endpoint picker: 3·prefix-cache + 2·queue + 2·kv-utilisation, highest first",
  paramsSchema: LlmDParamsSchema as z.ZodType<LlmDParams>,
  create: (params, _routes, context) => new LlmDPlanner(params, context),
};
