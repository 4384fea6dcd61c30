/**
 * The resolved model registry's types: a model and its routes after validation, endpoint-id
 * derivation and weight resolution, and a multi-target model's targets and `routing:` block
 * (seed 003), as every part of the core reads them. Types only, so that
 * the composition root (`routing-core.ts`), the lifecycles and the multi-target resolution all
 * depend on this file and not on each other.
 */
import type { PoolKeyDeclaration } from '../keys/key-pool.ts';
import type { EndpointFamilyName, Modality } from '../lifecycle/seam.ts';
import type { Candidate, Planner, PlannerTraits } from '../strategies/planner.ts';
import type { CidrBlock } from '../multi-target/cidr.ts';
import type { RetryRules } from '../request/policy/retry-policy.ts';
import type { BackoffPolicy } from '../request/policy/backoff.ts';
import type { TargetRateLimit } from '../multi-target/target-rate-limit.ts';
import type { OffloadPolicy } from '../offload/offload-policy.ts';

/** Why a route's effective weight is 0 (seed 000, "routes excluded from selection"). */
export type ExclusionReason = 'weight_override' | 'provider_disabled' | 'routing_yaml' | 'configured_zero';

/** Prices in USD per 1M tokens. */
export interface RoutePricing {
  inputUsdPer1M: number;
  outputUsdPer1M: number;
  cachedInputUsdPer1M: number;
}

/** A route after validation, id derivation and weight resolution. */
export interface ResolvedRoute {
  readonly endpointId: string;
  /** Position in the model's `route:` list (fallback order). */
  readonly routeIndex: number;
  readonly kind: string;
  readonly baseUrl: string;
  /** Provider label (config `provider`, else the endpoint location). */
  readonly provider: string;
  readonly providerModelId: string | null;
  readonly modalities: readonly Modality[];
  /** `modalities` includes text (every request carries text), precomputed for the decision path. */
  readonly acceptsText: boolean;
  /** Endpoint families the route serves: its `endpoints:`, else its kind's default. */
  readonly endpoints: readonly EndpointFamilyName[] | null;
  readonly contextLength: number | null;
  readonly pricing: RoutePricing;
  /** Input + output price per 1k tokens, or null when the route has no `pricing` block (`least_cost`). */
  readonly costUsdPer1kTokens: number | null;
  readonly local: boolean;
  /**
   * Outbound-limiter key `provider|key-hash` (seed 000 "出站并发"), or null when the route is
   * exempt: a loopback / 0.0.0.0 / host.docker.internal server, or a simulated `sim://` engine,
   * unless the route sets `local: false`.
   */
  readonly outboundKey: string | null;
  /**
   * The route's own upstream keys as its key pool declares them (`keys/route-keys.ts`): from
   * `api_keys:` (`keysListed` true: always a pool) or the single `api_key` (a pool only while a
   * reservation applies); empty without a key.
   */
  readonly keys: readonly PoolKeyDeclaration[];
  readonly keysListed: boolean;
  readonly configuredWeight: number;
  readonly effectiveWeight: number;
  readonly exclusionReasons: readonly ExclusionReason[];
  /** This route as a planner candidate (built once so a decision allocates no candidate objects). */
  readonly candidate: Candidate;
}

/** A model with its planner. Aliases resolve to the same object (and so the same planner). */
export interface ResolvedModel {
  readonly id: string;
  readonly aliases: readonly string[];
  readonly strategy: string;
  readonly planner: Planner;
  /** What the request life asks of `planner` on every request (`plannerTraits(planner)`). */
  readonly traits: PlannerTraits;
  readonly published: boolean;
  /** For a multi-target model: its targets' routes, in target order (`routeIndex` = target index). */
  readonly routes: readonly ResolvedRoute[];
  /**
   * Every route's `candidate`, in route order, built once: a decision in which every route is
   * eligible hands the planner this shared array instead of building one.
   */
  readonly candidates: readonly Candidate[];
  /**
   * Every route by its endpoint id (unique within a model), for stages that look one route up
   * (a session-affinity pin). Absent = not built: search `routes`.
   */
  readonly routeById?: ReadonlyMap<string, ResolvedRoute>;
  /**
   * Every route accepts text: a request with no other input modality passes the modality stage
   * on every route (the stage is skipped). Absent = not known.
   */
  readonly textRoutes?: boolean;
  /** No route declares a `context_length`: the context-window stage passes every route. Absent = not known. */
  readonly windowless?: boolean;
  /** Present only for a multi-target model (seed 003): its resolved `routing:` block. */
  readonly multiTarget?: ResolvedMultiTarget;
  /** The model's offload policy when configured (possibly inactive, with a reason). */
  readonly offload?: OffloadPolicy;
}

/** One row of `route_exclusions` (GET /health/deep). */
export interface RouteExclusion {
  modelId: string;
  endpointId: string;
  baseUrl: string;
  configuredWeight: number;
  effectiveWeight: number;
  reasons: ExclusionReason[];
}

/** One target after resolution. */
export interface ResolvedTarget {
  /** Position in the model's `targets:` list (declaration order; the planner's `routeIndex`). */
  readonly index: number;
  /** The direct model's id (what `x-switchyard-served-by` names). */
  readonly model: string;
  /** The direct model's single route (`routeIndex` renumbered to `index`). */
  readonly route: ResolvedRoute;
  readonly endpointId: string;
  /** > 0. */
  readonly weight: number;
  /** Higher tiers are tried first. */
  readonly priority: number;
  /** Lower-cased. */
  readonly tags: readonly string[];
  /** Same-target retries, overriding the block's; null = not set. */
  readonly retries: number | null;
  /** The target's own request-rate limit (state owned by the core), or null. */
  readonly rateLimit: TargetRateLimit | null;
  /** Caller IPs admitted, or null = everyone. */
  readonly allowedCidrs: readonly CidrBlock[] | null;
}

/** A multi-target model's `routing:` block after resolution. */
export interface ResolvedMultiTarget {
  readonly targets: readonly ResolvedTarget[];
  /** The block's default same-target retries, or null (then: move on; deployment default on the last target). */
  readonly retries: number | null;
  /** Extra targets a request may try across all tiers; null = unlimited. */
  readonly maxFallbacks: number | null;
  readonly rules: RetryRules;
  readonly whenAllUnavailable: 'fail' | 'try_anyway';
  /**
   * First-token wait for streams, ms (`stream_timeout_ms`, else the model's `timeout_ms`), or
   * null (commit when the upstream response starts).
   */
  readonly streamTimeoutMs: number | null;
  /** The model's own `timeout_ms` (non-stream attempt bound), or null. */
  readonly timeoutMs: number | null;
  /** The block's backoff (extension), or null for the deployment defaults. */
  readonly backoff: BackoffPolicy | null;
  /** Whether any target carries the `default` tag. */
  readonly hasDefaultTag: boolean;
}
