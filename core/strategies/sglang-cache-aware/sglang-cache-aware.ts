/**
 * `sglang_cache_aware`: the cache-aware policy of SGLang's router (`sgl-router`,
 * `policies/cache_aware`), with its defaults `cache_threshold` 0.3, `balance_abs_threshold` 64,
 * `balance_rel_threshold` 1.5 (the router's CLI defaults; older releases used 0.5 / 32 / 1.0001).
 *
 * Per request, over the candidates' loads (the core's in-flight attempts to each, SGLang's
 * per-worker running-request counter):
 * 1. Imbalanced — `max − min > balance_abs_threshold` and `max > balance_rel_threshold · min` —
 *    ⇒ the least-loaded candidate (reason `sglang_balance`).
 * 2. Otherwise match the request's prefix blocks in the approximate tree. If the best candidate's
 *    match rate (matched blocks / request blocks) exceeds `cache_threshold` ⇒ that candidate
 *    (`sglang_cache_hit`); else ⇒ the candidate with the smallest tree, the one with most room
 *    for a new prefix (`sglang_cache_miss`).
 * Either way the request's blocks are inserted under the chosen candidate. Ties (equal loads,
 * equal depths, equal trees) go to the request's seeded draw. The tree's per-worker bound is in
 * blocks: `max_tree_blocks` 131 072 = SGLang's `max_tree_size` of 2^26 tokens at 512-token blocks
 * (the Mooncake trace's block size, and about the gateway's 2 048-byte blocks at 4 bytes a token).
 * Route weights are not used (SGLang's workers have none).
 */
import { z } from 'zod';
import type { Candidate, Ordering, Planner, PlannerContext, StrategyDefinition } from '../planner.ts';
import type { RouteRequest } from '../../lifecycle/seam.ts';
import type { Rng } from '../../rng.ts';
import { argMin, rankBy } from '../rank.ts';
import { ApproximateTree } from './approximate-tree.ts';

/** `router_params` of `sglang_cache_aware`. Defaults are SGLang router's (see the module comment). */
export const SglangCacheAwareParamsSchema = z
  .object({
    cache_threshold: z.number().min(0).max(1).default(0.3),
    balance_abs_threshold: z.number().min(0).default(64),
    balance_rel_threshold: z.number().min(1).default(1.5),
    max_tree_blocks: z.number().int().min(1).default(131_072),
  })
  .strict();

/** Parameters of `sglang_cache_aware` after defaults. */
export type SglangCacheAwareParams = z.infer<typeof SglangCacheAwareParamsSchema>;

/** Which branch of the policy decided. */
export type SglangBranch = 'sglang_balance' | 'sglang_cache_hit' | 'sglang_cache_miss';

/**
 * SGLang's imbalance test over candidate loads: `max − min > abs` and `max > rel · min`. Pure.
 */
export function isImbalanced(loads: readonly number[], absThreshold: number, relThreshold: number): boolean {
  let min = Number.POSITIVE_INFINITY;
  let max = Number.NEGATIVE_INFINITY;
  for (const l of loads) {
    if (l < min) min = l;
    if (l > max) max = l;
  }
  return max - min > absThreshold && max > relThreshold * min;
}

/** The `sglang_cache_aware` planner: one approximate tree per model, loads from the core. */
export class SglangCacheAwarePlanner implements Planner {
  readonly readsEndpointStats = true;
  readonly readsPrefixHashes = true;
  tree: ApproximateTree;

  constructor(
    readonly params: SglangCacheAwareParams,
    private readonly context: PlannerContext | undefined,
  ) {
    this.tree = new ApproximateTree(params.max_tree_blocks);
  }

  /**
   * The policy's branch and a score per candidate, lower better, whose minimum is the choice:
   * load for `sglang_balance`, −depth for `sglang_cache_hit`, tree size for `sglang_cache_miss`.
   */
  decide(candidates: readonly Candidate[], request: RouteRequest): { branch: SglangBranch; score: number[] } {
    const p = this.params;
    const stats = this.context?.endpoints;
    const loads = candidates.map((c) => stats?.inFlight(c.endpointId) ?? 0);
    if (isImbalanced(loads, p.balance_abs_threshold, p.balance_rel_threshold)) return { branch: 'sglang_balance', score: loads };
    const hashes = request.prefixHashes ?? [];
    const depths = this.tree.matchDepths(hashes, candidates.map((c) => c.endpointId));
    const best = depths.reduce((a, b) => Math.max(a, b), 0);
    if (hashes.length > 0 && best / hashes.length > p.cache_threshold) return { branch: 'sglang_cache_hit', score: depths.map((d) => -d) };
    return { branch: 'sglang_cache_miss', score: candidates.map((c) => this.tree.size(c.endpointId)) };
  }

  pick(candidates: readonly Candidate[], request: RouteRequest, _nowMs: number, rng: Rng) {
    const { branch, score } = this.decide(candidates, request);
    const best = argMin(score, (s) => s, rng);
    this.insert(candidates[best]!, request);
    return { candidate: best, reason: branch };
  }

  order(candidates: readonly Candidate[], request: RouteRequest, _nowMs: number, rng: Rng): Ordering {
    const { branch, score } = this.decide(candidates, request);
    const order = rankBy(score, (s) => s, rng);
    this.insert(candidates[order[0]!]!, request);
    return { order, reason: branch };
  }

  /** Takes over the previous generation's tree when it was this strategy with the same bound. */
  carryFrom(previous: Planner): void {
    if (previous instanceof SglangCacheAwarePlanner && previous.params.max_tree_blocks === this.params.max_tree_blocks) this.tree = previous.tree;
  }

  private insert(c: Candidate, request: RouteRequest): void {
    if (request.prefixHashes) this.tree.insert(c.endpointId, request.prefixHashes);
  }
}

/** The `sglang_cache_aware` strategy definition. Without `context`, every load reads 0. */
export const sglangCacheAwareStrategy: StrategyDefinition<SglangCacheAwareParams> = {
  name: 'sglang_cache_aware',
  description: "SGLang router's cache-aware policy: approximate radix tree per worker, balance thresholds",
  paramsSchema: SglangCacheAwareParamsSchema as z.ZodType<SglangCacheAwareParams>,
  create: (params, _routes, context) => new SglangCacheAwarePlanner(params, context),
};
