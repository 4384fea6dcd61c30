/**
 * `dynamo_kv`: a KV router in the manner of NVIDIA Dynamo's (`--router-mode kv`). For each
 * candidate it projects the blocks the request would cost there and picks the cheapest:
 *
 *   cost = kv_overlap_score_weight · prefill_blocks + decode_blocks        (lower wins)
 *
 * (Dynamo router docs, "Cost Calculation": `cost = overlap_score_weight * prefill_blocks +
 * decode_blocks`, weight default 1.0, temperature 0 = the minimum, no sampling.) Here
 * - `prefill_blocks` = the endpoint's prompt tokens still in prefill (the core's prefill backlog)
 *   / `block_tokens`, plus the request's blocks not already cached there (request blocks −
 *   overlap blocks): Dynamo's "new prefill tokens = input tokens − overlap blocks × block size";
 * - `decode_blocks` = the endpoint's active blocks plus the request's own. Active blocks are
 *   estimated as in-flight attempts × the mean block count of requests routed there (Dynamo
 *   counts them exactly per request; a planner sees attempts end but not which request's).
 * Overlap blocks come from the engine's KV events when its driver forwards them
 * (`PlannerContext.engines`, Dynamo's KvIndexer), else from the prefix hashes this planner sent
 * there, forgotten after `ttl_ms` = 120 s (Dynamo's `--router-ttl-secs` default without KV events)
 * and bounded per endpoint by `max_tree_blocks` = 1 048 576 (`--router-max-tree-size`).
 * Request blocks are its prefix hashes when it carries them, else ⌈input tokens / block_tokens⌉;
 * `block_tokens` 512 is the Mooncake trace's block size and about the gateway's 2 048-byte blocks.
 * Ties go to the request's seeded draw. Route weights are not used.
 */
import { z } from 'zod';
import type { Candidate, Ordering, Planner, PlannerContext, StrategyDefinition } from '../planner.ts';
import type { RouteRequest } from '../../lifecycle/seam.ts';
import type { Rng } from '../../rng.ts';
import { PrefixBlockIndex } from '../../stats/prefix-block-index.ts';
import { argMin, rankBy } from '../rank.ts';

/** `router_params` of `dynamo_kv`. Defaults are Dynamo's (see the module comment). */
export const DynamoKvParamsSchema = z
  .object({
    kv_overlap_score_weight: z.number().min(0).default(1),
    block_tokens: z.number().int().min(1).default(512),
    ttl_ms: z.number().positive().default(120_000),
    max_tree_blocks: z.number().int().min(1).default(1_048_576),
  })
  .strict();

/** Parameters of `dynamo_kv` after defaults. */
export type DynamoKvParams = z.infer<typeof DynamoKvParamsSchema>;

/** Weight of a new request's block count in an endpoint's mean (an EWMA; the last ~20 routed carry 90 %). */
const MEAN_BLOCKS_ALPHA = 0.1;

/** Dynamo's cost of one worker: `weight · prefillBlocks + decodeBlocks`. Pure; lower is better. */
export function dynamoCost(prefillBlocks: number, decodeBlocks: number, overlapWeight: number): number {
  return overlapWeight * prefillBlocks + decodeBlocks;
}

/** One candidate's projection (for tests and explanations). */
export interface DynamoProjection {
  readonly overlapBlocks: number;
  readonly prefillBlocks: number;
  readonly decodeBlocks: number;
  readonly cost: number;
}

/** The `dynamo_kv` planner. */
export class DynamoKvPlanner implements Planner {
  readonly readsEndpointStats = true;
  readonly readsPrefixHashes = true;
  readonly readsEngineSignals = true;
  index: PrefixBlockIndex;
  /** EWMA of the block counts of requests routed to each endpoint. */
  meanBlocks = new Map<string, number>();

  constructor(
    readonly params: DynamoKvParams,
    private readonly context: PlannerContext | undefined,
  ) {
    this.index = new PrefixBlockIndex({ capacityBlocks: params.max_tree_blocks, ttlMs: params.ttl_ms });
  }

  /** The request's block count: its prefix hashes, else ⌈inputTokens / block_tokens⌉. */
  requestBlocks(request: RouteRequest): number {
    const n = request.prefixHashes?.length ?? 0;
    return n > 0 ? n : Math.ceil(request.inputTokens / this.params.block_tokens);
  }

  /** Each candidate's projection for `request` at `nowMs`, in candidate order. Pure. */
  project(candidates: readonly Candidate[], request: RouteRequest, nowMs: number): DynamoProjection[] {
    const p = this.params;
    const blocks = this.requestBlocks(request);
    const hashes = request.prefixHashes ?? [];
    const engines = this.context?.engines;
    return candidates.map((c) => {
      const id = c.endpointId;
      const fromEvents = engines?.reportsKvEvents(id) ?? false;
      const overlapBlocks = Math.min(blocks, fromEvents ? engines!.cachedPrefixBlocks(id, hashes) : this.index.matchedBlocks(id, hashes, nowMs));
      const backlog = this.context?.prefill.backlogTokens(id) ?? 0;
      const prefillBlocks = backlog / p.block_tokens + (blocks - overlapBlocks);
      const active = (this.context?.endpoints?.inFlight(id) ?? 0) * (this.meanBlocks.get(id) ?? blocks);
      const decodeBlocks = active + blocks;
      return { overlapBlocks, prefillBlocks, decodeBlocks, cost: dynamoCost(prefillBlocks, decodeBlocks, p.kv_overlap_score_weight) };
    });
  }

  pick(candidates: readonly Candidate[], request: RouteRequest, nowMs: number, rng: Rng) {
    const s = this.project(candidates, request, nowMs);
    const best = argMin(s, (x) => x.cost, rng);
    this.recordChoice(candidates[best]!, request, nowMs);
    return { candidate: best, reason: 'dynamo_kv' };
  }

  order(candidates: readonly Candidate[], request: RouteRequest, nowMs: number, rng: Rng): Ordering {
    const s = this.project(candidates, request, nowMs);
    const order = rankBy(s, (x) => x.cost, rng);
    this.recordChoice(candidates[order[0]!]!, request, nowMs);
    return { order, reason: 'dynamo_kv' };
  }

  /** Takes over the previous generation's routed-prefix index and block means when it was this strategy. */
  carryFrom(previous: Planner): void {
    if (!(previous instanceof DynamoKvPlanner)) return;
    this.meanBlocks = previous.meanBlocks;
    const o = previous.index.options;
    if (o.capacityBlocks === this.params.max_tree_blocks && o.ttlMs === this.params.ttl_ms) this.index = previous.index;
  }

  private recordChoice(c: Candidate, request: RouteRequest, nowMs: number): void {
    const blocks = this.requestBlocks(request);
    const m = this.meanBlocks.get(c.endpointId);
    this.meanBlocks.set(c.endpointId, m === undefined ? blocks : m + MEAN_BLOCKS_ALPHA * (blocks - m));
    if (request.prefixHashes) this.index.record(c.endpointId, request.prefixHashes, nowMs);
  }
}

/** The `dynamo_kv` strategy definition. Without `context`, every endpoint reads idle and without KV events. */
export const dynamoKvStrategy: StrategyDefinition<DynamoKvParams> = {
  name: 'dynamo_kv',
  description: "Dynamo's KV router: lowest overlap-weighted prefill blocks + decode blocks",
  paramsSchema: DynamoKvParamsSchema as z.ZodType<DynamoKvParams>,
  create: (params, _routes, context) => new DynamoKvPlanner(params, context),
};
