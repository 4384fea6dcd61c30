/**
 * `consistent_hash`: a weighted hash ring with virtual nodes (Karger et al. 1997; ketama's
 * weighted points). Each route or target owns `round(virtual_nodes · n · w / Σw)` points (at
 * least one) at MurmurHash3 positions of `"{endpointId}#{k}"`. A request's key (the `hash_on`
 * chain, seed 003) hashes to a point; walking clockwise, the first point owned by an admitted
 * candidate wins and the walk's next distinct owners are the fallback order.
 *
 * The ring is built once from every configured route; candidates that are not admitted (another
 * tier, cooling down, already tried) are skipped, not removed. So a key stays on its target
 * while that target stays admitted, and when a target leaves only the keys it owned move — each
 * to its ring successor among the candidates, which the lifecycle restricts to one priority tier.
 * Weight sets the approximate share of keys, not of requests. With no key in the chain the
 * request lands on a random ring point (one `rng.int` draw), i.e. a weighted random choice.
 */
import { z } from 'zod';
import type { Candidate, Ordering, StrategyDefinition } from './planner.ts';
import { murmur3 } from '../hashing/hash.ts';
import { DEFAULT_HASH_ON, HashSourceSchema, resolveHashKey } from '../hashing/hash-key.ts';
import type { Rng } from '../rng.ts';
import type { RouteRequest } from '../lifecycle/seam.ts';

/** `router_params` of `consistent_hash` (also `routing.params` + `routing.hash_on` of a multi-target model). */
export const ConsistentHashParamsSchema = z
  .object({
    /** Key sources, first non-empty wins; default the routing-key header, then the API key. */
    hash_on: z.array(HashSourceSchema).min(1).optional(),
    /**
     * Average points per target. 160 is ketama's figure (40 hashes × 4 points per server): the
     * share of a target then deviates by about 1/√160 ≈ 8 % of its nominal share.
     */
    virtual_nodes: z.number().int().min(1).max(1_000).default(160),
  })
  .strict();

/** Parameters of `consistent_hash` after defaults. */
export type ConsistentHashParams = z.infer<typeof ConsistentHashParamsSchema>;

/** A built ring: point positions ascending and, for each, the owner's endpoint id. */
export interface HashRing {
  readonly positions: Uint32Array;
  readonly owners: readonly string[];
}

/**
 * Builds the ring for `routes` (endpoint id and weight > 0; weight-0 routes get no points).
 * Points tie-break by owner id so the ring is the same whatever the route order.
 */
export function buildRing(routes: ReadonlyArray<{ endpointId: string; weight: number }>, virtualNodes: number): HashRing {
  const live = routes.filter((r) => r.weight > 0);
  const total = live.reduce((a, r) => a + r.weight, 0);
  const points: Array<{ pos: number; owner: string }> = [];
  for (const r of live) {
    const count = Math.max(1, Math.round((virtualNodes * live.length * r.weight) / total));
    for (let k = 0; k < count; k++) points.push({ pos: murmur3(`${r.endpointId}#${k}`), owner: r.endpointId });
  }
  points.sort((a, b) => a.pos - b.pos || (a.owner < b.owner ? -1 : a.owner > b.owner ? 1 : 0));
  return { positions: Uint32Array.from(points.map((p) => p.pos)), owners: points.map((p) => p.owner) };
}

/** Index of the first ring point at or after `h` (wrapping to 0). */
function firstAtOrAfter(positions: Uint32Array, h: number): number {
  let lo = 0;
  let hi = positions.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (positions[mid]! < h) lo = mid + 1;
    else hi = mid;
  }
  return lo === positions.length ? 0 : lo;
}

/**
 * The candidates in ring order from point `h`: distinct owners clockwise, restricted to
 * `candidates`; candidates with no point on the ring follow in declaration order.
 */
export function ringOrder(ring: HashRing, candidates: readonly Candidate[], h: number): number[] {
  const index = new Map<string, number>();
  candidates.forEach((c, i) => index.set(c.endpointId, i));
  const order: number[] = [];
  const taken = new Uint8Array(candidates.length);
  const n = ring.positions.length;
  if (n > 0) {
    const start = firstAtOrAfter(ring.positions, h);
    for (let s = 0; s < n && order.length < candidates.length; s++) {
      const i = index.get(ring.owners[(start + s) % n]!);
      if (i !== undefined && !taken[i]) {
        taken[i] = 1;
        order.push(i);
      }
    }
  }
  for (let i = 0; i < candidates.length; i++) if (!taken[i]) order.push(i);
  return order;
}

/** `ringOrder(ring, candidates, h)[0]` without building the whole order (the per-model router's pick). */
export function ringFirst(ring: HashRing, candidates: readonly Candidate[], h: number): number {
  const n = ring.positions.length;
  if (n > 0) {
    const start = firstAtOrAfter(ring.positions, h);
    for (let s = 0; s < n; s++) {
      const owner = ring.owners[(start + s) % n]!;
      for (let i = 0; i < candidates.length; i++) if (candidates[i]!.endpointId === owner) return i;
    }
  }
  return 0;
}

/** The `consistent_hash` strategy definition. State: the ring, fixed at creation. */
export const consistentHashStrategy: StrategyDefinition<ConsistentHashParams> = {
  name: 'consistent_hash',
  description: 'weighted hash ring with virtual nodes; key from the hash_on chain',
  paramsSchema: ConsistentHashParamsSchema as z.ZodType<ConsistentHashParams>,
  create(params, routes) {
    const ring = buildRing(routes.map((r) => ({ endpointId: r.endpointId, weight: r.configuredWeight })), params.virtual_nodes);
    const chain = params.hash_on ?? DEFAULT_HASH_ON;
    const point = (request: RouteRequest, rng: Rng): { h: number; reason: string } => {
      const key = resolveHashKey(chain, request);
      return key === null ? { h: rng.int(0x1_0000_0000), reason: 'hash_random' } : { h: murmur3(key), reason: 'hash' };
    };
    const order = (candidates: readonly Candidate[], request: RouteRequest, _nowMs: number, rng: Rng): Ordering => {
      const { h, reason } = point(request, rng);
      return { order: ringOrder(ring, candidates, h), reason };
    };
    return {
      order,
      pick(candidates, request, _nowMs, rng) {
        const { h, reason } = point(request, rng);
        return { candidate: ringFirst(ring, candidates, h), reason };
      },
    };
  },
};
