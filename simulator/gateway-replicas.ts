/**
 * The `gateway_replicas:` block of an experiment: how many gateway processes stand in front of the
 * same endpoints, how the client's load balancer spreads requests over them, and whether they
 * share routing state (breakers, the half-open probe, affinity pins, outbound limits per provider
 * key) with a propagation delay — the staleness the llm-d and BLIS studies measure. A run entry
 * may override any field (`runs[i].gateway_replicas`), so one experiment compares set-ups paired
 * by seed.
 *
 * | field | default | meaning |
 * | --- | --- | --- |
 * | `count` | 1 | gateway replicas, each with its own routing core |
 * | `load_balancer` | `round_robin` | `random` (seeded, keyed by request), `round_robin` (arrival order), `sticky_caller` (a hash of the caller id) |
 * | `state` | `local` | `local`: nothing shared, each replica takes a key's full outbound limit; `shared`: sync events between replicas |
 * | `propagation_delay_ms` | 0 | `shared` only: virtual ms from one replica's fact to the others applying it |
 */
import { z } from 'zod';

/** The load balancer policies in front of the gateway replicas. */
export const LOAD_BALANCERS = ['random', 'round_robin', 'sticky_caller'] as const;

/** A load balancer policy. */
export type LoadBalancer = (typeof LOAD_BALANCERS)[number];

const fields = {
  count: z.number().int().min(1).max(64),
  load_balancer: z.enum(LOAD_BALANCERS),
  state: z.enum(['local', 'shared']),
  propagation_delay_ms: z.number().nonnegative(),
};

/** A validated `gateway_replicas:` block. */
export interface GatewayReplicas {
  readonly count: number;
  readonly load_balancer: LoadBalancer;
  readonly state: 'local' | 'shared';
  readonly propagation_delay_ms: number;
}

/** Checks a complete block (see `gatewayReplicasProblems`). */
function refineBlock(b: GatewayReplicas, ctx: z.RefinementCtx): void {
  for (const [path, message] of gatewayReplicasProblems(b)) ctx.addIssue({ code: 'custom', path: [path], message });
}

/** The experiment-level block, defaults filled. */
export const GatewayReplicasSchema = z
  .object({
    count: fields.count.default(1),
    load_balancer: fields.load_balancer.default('round_robin'),
    state: fields.state.default('local'),
    propagation_delay_ms: fields.propagation_delay_ms.default(0),
  })
  .strict()
  .superRefine(refineBlock)
  .default({ count: 1, load_balancer: 'round_robin', state: 'local', propagation_delay_ms: 0 });

/** A run entry's overrides of the experiment's block (any subset of its fields). */
export const RunGatewayReplicasSchema = z.object(fields).partial().strict();


/** The block a run uses: the experiment's with the run entry's overrides laid over it. */
export function effectiveGatewayReplicas(base: GatewayReplicas, override: z.infer<typeof RunGatewayReplicasSchema> | undefined): GatewayReplicas {
  return override === undefined ? base : { ...base, ...override };
}

/**
 * Problems of a run's effective block (the run-level overrides can combine into a bad one), as
 * `[path under the block, message]` pairs.
 */
export function gatewayReplicasProblems(b: GatewayReplicas): Array<[string, string]> {
  if (b.state !== 'shared' && b.propagation_delay_ms > 0) return [['propagation_delay_ms', 'applies to state: shared only; set state: shared or remove propagation_delay_ms']];
  return [];
}
