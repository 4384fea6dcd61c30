/**
 * The plug-in contract for routing strategies (Envoy's load-balancing-policy extensions).
 * A planner only *chooses*: the lifecycle filters candidates (publish, modality, pin, weight,
 * breaker admission), asks the planner for the primary, and executes fallbacks. Planners learn
 * from outcomes through `observe`. They never read clocks or global randomness.
 */
import type { z } from 'zod';
import type { Rng } from '../rng.ts';
import type { Outcome } from '../lifecycle/outcome.ts';
import type { RouteRequest } from '../lifecycle/seam.ts';

/** A route the planner may choose, already admitted. `weight` > 0 (effective weight). */
export interface Candidate {
  readonly endpointId: string;
  readonly weight: number;
  /** Position of the route in the model's declaration order. */
  readonly routeIndex: number;
}

/** The planner's choice: an index into the candidate array and a reason code for metadata. */
export interface Pick {
  readonly candidate: number;
  readonly reason: string;
}

/** A strategy instance bound to one model (aliases share it). */
export interface Planner {
  /**
   * Chooses the primary among `candidates` (non-empty, in declaration order).
   * Must be deterministic given its own state and `rng`.
   */
  pick(candidates: readonly Candidate[], request: RouteRequest, nowMs: number, rng: Rng): Pick;
  /** Learns from one finished attempt (optional; stateless planners omit it). */
  observe?(endpointId: string, outcome: Outcome, nowMs: number): void;
}

/** The static description of a route a planner is created with. */
export interface PlannerRoute {
  readonly endpointId: string;
  readonly configuredWeight: number;
}

/** A registered strategy: its name, the schema of its `router_params`, and a factory. */
export interface StrategyDefinition<P = unknown> {
  readonly name: string;
  /** Strict schema: unknown keys are rejected so typos fail at start. */
  readonly paramsSchema: z.ZodType<P>;
  /** One-line description for help output. */
  readonly description: string;
  create(params: P, routes: readonly PlannerRoute[]): Planner;
}

/**
 * Weighted random draw over candidate weights (renormalised), one `rng.float()` per call.
 * Returns the index of the drawn candidate. Weights must be > 0 and `candidates` non-empty.
 */
export function weightedDraw(candidates: readonly Candidate[], rng: Rng): number {
  let total = 0;
  for (const c of candidates) total += c.weight;
  let r = rng.float() * total;
  for (let i = 0; i < candidates.length; i++) {
    r -= candidates[i]!.weight;
    if (r < 0) return i;
  }
  return candidates.length - 1; // float rounding at the top edge
}
