/**
 * The plug-in contract for routing strategies (Envoy's load-balancing-policy extensions).
 * A planner only *chooses*: the lifecycle filters candidates (publish, modality, pin, weight,
 * breaker admission), asks the planner for the primary, and executes fallbacks. Planners learn
 * from outcomes through `observe`. They never read clocks or global randomness.
 */
import type { z } from 'zod';
import type { Rng } from '../rng.ts';
import type { Outcome } from '../lifecycle/outcome.ts';
import type { LifecycleAction, RequestLife, RouteRequest } from '../lifecycle/seam.ts';
import type { RouteConfig } from '../config/models-config.ts';
import type { RoutingSettings } from '../config/routing-settings.ts';
import type { PrefillLoadView } from '../prefill/prefill-load.ts';
import type { EndpointStatsView } from '../stats/endpoint-stats.ts';
import type { EngineSignalsView } from '../stats/engine-signals.ts';

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
  /**
   * Optional hedge order for this primary (RouteWise, seed 000 hedging): if the primary has not
   * produced its first token `afterMs` after its dispatch, the lifecycle sends a second attempt
   * to `endpointId` (when it is still admissible); the first to answer wins and the other is
   * cancelled. At most one hedge per request; never for pinned or fallback attempts.
   */
  readonly hedge?: HedgeOrder | null;
}

/** When and where to hedge: `afterMs` ms after the primary's dispatch, to `endpointId`. */
export interface HedgeOrder {
  readonly afterMs: number;
  readonly endpointId: string;
}

/**
 * A full preference order over candidates: a permutation of candidate indices, best first, and
 * the reason code of the first. Multi-target models walk it within a priority tier.
 */
export interface Ordering {
  readonly order: readonly number[];
  readonly reason: string;
}

/** A strategy instance bound to one model (aliases share it). */
export interface Planner {
  /**
   * Chooses the primary among `candidates` (non-empty, in declaration order).
   * Must be deterministic given its own state and `rng`.
   */
  pick(candidates: readonly Candidate[], request: RouteRequest, nowMs: number, rng: Rng): Pick;
  /**
   * Takes over what `previous` — the same model's planner in the previous configuration
   * generation, possibly of another strategy — learnt about routes whose endpoint id is
   * unchanged (optional; planners that learn nothing of their own omit it). Called once, right
   * after construction, before any `pick`.
   */
  carryFrom?(previous: Planner): void;
  /** Learns from one finished attempt (optional; stateless planners omit it). */
  observe?(endpointId: string, outcome: Outcome, nowMs: number): void;
  /**
   * Whether the lifecycle applies session affinity before `pick` for this planner's model
   * (seed 000: a step of the `fixed` pipeline). Absent ⇒ false. A wrapper that spreads a
   * planner (`{...inner, pick}`) keeps it.
   */
  readonly sessionAffinity?: boolean;
  /**
   * Orders every candidate, best first (multi-target models try targets in this order within a
   * tier). Optional: `planOrder` derives one from a single `pick` when absent. When present,
   * `order(...).order[0]` is what `pick` would choose, and it advances the planner's state
   * exactly as one `pick` does (round robin moves one step per request, not per candidate).
   */
  order?(candidates: readonly Candidate[], request: RouteRequest, nowMs: number, rng: Rng): Ordering;
  /**
   * Optional: wrap each request's life so the planner sees every attempt's dispatch, first token
   * and outcome (RouteWise). `RoutingCore.start` installs it before the life begins.
   */
  tapLife?(life: RequestLife, request: RouteRequest, nowMs: number): PlannerLifeTap;
  /**
   * True when the planner reads `PlannerContext.endpoints` (in-flight counts, latency); the core
   * then feeds those signals from this model's per-model lives too. Absent ⇒ false.
   */
  readonly readsEndpointStats?: boolean;
  /**
   * True when the planner scores `RouteRequest.prefixHashes` (the cache-aware strategies); a
   * driver that must compute them (the gateway hashes the prompt) does so only then. Absent ⇒ false.
   */
  readonly readsPrefixHashes?: boolean;
  /**
   * True when the planner reads `PlannerContext.engines` (engine load reports); a driver that
   * polls its engines for them (the simulator) does so before this planner's decisions only.
   * Absent ⇒ false.
   */
  readonly readsEngineSignals?: boolean;
  /**
   * True when `pick` may return a `hedge` order; the lifecycle then reports `hedgeEndpointId` in
   * the metadata (null when no hedge was sent). Absent ⇒ false.
   */
  readonly plansHedges?: boolean;
}

/**
 * What the request life asks of a model's planner on every request, read once when the model
 * is resolved (`plannerTraits`). Every model's traits have one shape, while planners differ in
 * shape per strategy: a life that reads these flags reads one kind of object.
 */
export interface PlannerTraits {
  /** `Planner.sessionAffinity === true`. */
  readonly sessionAffinity: boolean;
  /** `Planner.readsEndpointStats === true`. */
  readonly readsEndpointStats: boolean;
  /** `Planner.plansHedges === true`. */
  readonly plansHedges: boolean;
  /** The planner has `tapLife`. */
  readonly tapsLives: boolean;
  /** The planner has `observe`. */
  readonly observes: boolean;
}

/** The traits of `planner` (its optional flags and hooks, as booleans). */
export function plannerTraits(planner: Planner): PlannerTraits {
  return {
    sessionAffinity: planner.sessionAffinity === true,
    readsEndpointStats: planner.readsEndpointStats === true,
    plansHedges: planner.plansHedges === true,
    tapsLives: typeof planner.tapLife === 'function',
    observes: typeof planner.observe === 'function',
  };
}

/**
 * What a `RoutingCore` gives each planner it creates: the validated routing settings and a
 * read-only view of the process's prefill load (shared with the lifecycle, which takes and
 * releases the leases).
 */
export interface PlannerContext {
  readonly settings: Readonly<RoutingSettings>;
  readonly prefill: PrefillLoadView;
  /**
   * Per-endpoint in-flight attempts and latency average (`least_busy`, `least_latency`). Always
   * passed by `RoutingCore`; a strategy built without it sees every endpoint idle and unmeasured.
   */
  readonly endpoints?: EndpointStatsView;
  /**
   * The gateway-side outbound slots (seed 000 "出站并发"): `slotFree(endpointId)` is true when a
   * request to that endpoint would be sent at once rather than queue for a slot (always true for
   * exempt routes, unknown endpoints, or with the limiter off). RouteWise spills to its next-best
   * route instead of queueing behind a full one. Absent ⇒ every slot reads free.
   */
  readonly outbound?: { slotFree(endpointId: string): boolean };
  /**
   * What engines report about themselves (load, KV-cache usage, KV events), when the driver
   * forwards it (`RoutingCore.engineSignals`). The cache-aware strategies read it and fall back to
   * in-flight counts and routed prefixes for endpoints that report nothing. Absent ⇒ none report.
   */
  readonly engines?: EngineSignalsView;
}

/** The static description of a route a planner is created with. */
export interface PlannerRoute {
  readonly endpointId: string;
  readonly configuredWeight: number;
  /**
   * Input + output list price in USD per 1k tokens (first tier of tiered pricing), or null when
   * the route has no `pricing` block (`least_cost` ranks unpriced routes last). Absent ⇒ null.
   */
  readonly costUsdPer1kTokens?: number | null;
  /** The validated `route:` entry (provider type, quota, concurrency, pricing) for planners that need it. */
  readonly route?: RouteConfig;
}

/** A life wrapper a planner installs to observe every attempt (RouteWise's TTFT profiles). */
export interface PlannerLifeTap extends RequestLife {
  /** Passes the wrapped life's first actions through the tap; returns them (possibly amended). */
  absorb(actions: LifecycleAction[], nowMs: number): LifecycleAction[];
}

/** A registered strategy: its name, the schema of its `router_params`, and a factory. */
export interface StrategyDefinition<P = unknown> {
  readonly name: string;
  /** Strict schema: unknown keys are rejected so typos fail at start. */
  readonly paramsSchema: z.ZodType<P>;
  /** One-line description for help output. */
  readonly description: string;
  /**
   * Builds a planner for one model. `context` is always passed by `RoutingCore`; it is optional
   * only so a planner can be built bare in a test or wrapped by a benchmark. A strategy that
   * needs it degrades to its context-free behaviour without it (documented per strategy).
   */
  create(params: P, routes: readonly PlannerRoute[], context?: PlannerContext): Planner;
}

/**
 * Weighted random draw over candidate weights (renormalised), one `rng.float()` per call.
 * Returns the index of the drawn candidate. Weights must be finite and > 0 and `candidates`
 * non-empty. Configured weights are at most `MAX_ROUTE_WEIGHT` (1e6), so the sum is finite; a
 * sum that overflows anyway (weights near `Number.MAX_VALUE`) is drawn over the weights divided
 * by the largest, which keeps their ratios instead of always answering the last candidate.
 */
export function weightedDraw(candidates: readonly Candidate[], rng: Rng): number {
  let total = 0;
  for (const c of candidates) total += c.weight;
  let scale = 1;
  if (!Number.isFinite(total)) {
    let max = 0;
    for (const c of candidates) max = Math.max(max, c.weight);
    scale = 1 / max;
    total = 0;
    for (const c of candidates) total += c.weight * scale;
  }
  let r = rng.float() * total;
  for (let i = 0; i < candidates.length; i++) {
    r -= candidates[i]!.weight * scale;
    if (r < 0) return i;
  }
  return candidates.length - 1; // float rounding at the top edge
}

/**
 * The planner's full order over `candidates` (non-empty): its own `order` when it has one, else
 * its `pick` for the first place and the rest in declaration order — the fallback order of the
 * per-model lifecycle. Calls the planner once either way, so stateful planners advance one step.
 */
export function planOrder(planner: Planner, candidates: readonly Candidate[], request: RouteRequest, nowMs: number, rng: Rng): Ordering {
  if (planner.order) return planner.order(candidates, request, nowMs, rng);
  const pick = planner.pick(candidates, request, nowMs, rng);
  const order = [pick.candidate];
  for (let i = 0; i < candidates.length; i++) if (i !== pick.candidate) order.push(i);
  return { order, reason: pick.reason };
}
