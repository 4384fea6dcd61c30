/**
 * The routing core: the resolved model registry, the shared endpoint health, and the entry
 * point `start()` that begins a request's life. One instance per process (gateway) or per run
 * (simulator). Sans-I/O: no clock, no randomness of its own, no environment.
 */
import type { Rng } from './rng.ts';
import type { ModelsConfig, RouteConfig } from './config/models-config.ts';
import { endpointId as makeEndpointId, endpointLocation } from './config/endpoint-id.ts';
import type { Planner } from './strategies/planner.ts';
import { StrategyRegistry } from './strategies/registry.ts';
import { HealthRegistry, type HealthOptions } from './health/health-registry.ts';
import type { LifecycleAction, Modality, RequestLife, RouteRequest } from './lifecycle/seam.ts';
import { RequestLifecycle } from './lifecycle/request-lifecycle.ts';

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
  readonly contextLength: number | null;
  readonly pricing: RoutePricing;
  readonly local: boolean;
  readonly configuredWeight: number;
  readonly effectiveWeight: number;
  readonly exclusionReasons: readonly ExclusionReason[];
}

/** A model with its planner. Aliases resolve to the same object (and so the same planner). */
export interface ResolvedModel {
  readonly id: string;
  readonly aliases: readonly string[];
  readonly strategy: string;
  readonly planner: Planner;
  readonly published: boolean;
  readonly routes: readonly ResolvedRoute[];
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

/** Options of the core. */
export interface RoutingCoreOptions {
  health?: Partial<HealthOptions>;
  /** Routing tunables (prefill-aware P2C, affinity, …) as given by the driver; validated by the core. */
  settings?: Record<string, unknown>;
  registry?: StrategyRegistry;
}

function isLocalRoute(r: RouteConfig): boolean {
  if (r.local !== undefined) return r.local;
  return endpointLocation(r.kind, r.base_url).startsWith('local-') || r.base_url.startsWith('sim://local');
}

/** The core. Construct once from a validated config; throws on unknown strategies or params. */
export class RoutingCore {
  /** Endpoint health shared by every model's router. */
  readonly health: HealthRegistry;
  private readonly models = new Map<string, ResolvedModel>();
  private readonly ordered: ResolvedModel[] = [];

  /**
   * @throws Error naming the model and field for an unknown router, bad router_params, a
   *   duplicate model id/alias, or two routes of one model with the same endpoint id.
   */
  constructor(config: ModelsConfig, options: RoutingCoreOptions = {}) {
    this.health = new HealthRegistry(options.health ?? {});
    const registry = options.registry ?? new StrategyRegistry();
    const share = config.routing.local_weight_share;
    config.models.forEach((m, mi) => {
      const where = `models[${mi}] (id '${m.id}')`;
      const routes = this.resolveRoutes(m.id, m.route, share, where);
      const strategy = m.router ?? config.routing.default_router;
      const planner = registry.create(
        strategy,
        m.router_params,
        routes.map((r) => ({ endpointId: r.endpointId, configuredWeight: r.configuredWeight })),
        where,
      );
      const model: ResolvedModel = { id: m.id, aliases: m.aliases, strategy, planner, published: m.published, routes };
      for (const name of [m.id, ...m.aliases]) {
        if (this.models.has(name)) throw new Error(`${where}: model id or alias '${name}' is used twice`);
        this.models.set(name, model);
      }
      this.ordered.push(model);
    });
  }

  private resolveRoutes(modelId: string, routes: readonly RouteConfig[], share: number | undefined, where: string): ResolvedRoute[] {
    const seen = new Set<string>();
    const locals = routes.map(isLocalRoute);
    let localSum = 0;
    let remoteSum = 0;
    routes.forEach((r, i) => (locals[i] ? (localSum += r.weight) : (remoteSum += r.weight)));
    return routes.map((r, i) => {
      const id = makeEndpointId(modelId, r.kind, r.base_url);
      if (seen.has(id)) throw new Error(`${where}.route[${i}]: endpoint id '${id}' repeats an earlier route; give it another base_url`);
      seen.add(id);
      const reasons: ExclusionReason[] = [];
      let effective = r.weight;
      if (r.weight === 0) reasons.push('configured_zero');
      // routing.yaml split: scale local and remote groups to the configured share, once, at start.
      if (share !== undefined && r.weight > 0) {
        const local = locals[i]!;
        const groupSum = local ? localSum : remoteSum;
        const groupShare = local ? share : 1 - share;
        const otherSum = local ? remoteSum : localSum;
        if (otherSum > 0 || groupShare === 0) effective = groupSum > 0 ? (r.weight / groupSum) * groupShare : 0;
        if (effective === 0) reasons.push('routing_yaml');
      }
      const price = r.pricing;
      return {
        endpointId: id,
        routeIndex: i,
        kind: r.kind,
        baseUrl: r.base_url,
        provider: r.provider ?? endpointLocation(r.kind, r.base_url),
        providerModelId: r.provider_model_id ?? null,
        modalities: r.input_modalities,
        contextLength: r.context_length ?? null,
        pricing: {
          inputUsdPer1M: price?.input_usd_per_1m ?? 0,
          outputUsdPer1M: price?.output_usd_per_1m ?? 0,
          cachedInputUsdPer1M: price?.cached_input_usd_per_1m ?? price?.input_usd_per_1m ?? 0,
        },
        local: locals[i]!,
        configuredWeight: r.weight,
        effectiveWeight: effective,
        exclusionReasons: reasons,
      };
    });
  }

  /** The model for an id or alias, or undefined. */
  model(idOrAlias: string): ResolvedModel | undefined {
    return this.models.get(idOrAlias);
  }

  /** Every model once, in configuration order. */
  allModels(): readonly ResolvedModel[] {
    return this.ordered;
  }

  /** Routes with effective weight 0 or a weight different from the configured one, with reasons. */
  routeExclusions(): RouteExclusion[] {
    const out: RouteExclusion[] = [];
    for (const m of this.ordered) {
      for (const r of m.routes) {
        if (r.exclusionReasons.length === 0) continue;
        out.push({
          modelId: m.id,
          endpointId: r.endpointId,
          baseUrl: r.baseUrl,
          configuredWeight: r.configuredWeight,
          effectiveWeight: r.effectiveWeight,
          reasons: [...r.exclusionReasons],
        });
      }
    }
    return out;
  }

  /**
   * Begins a request's life at `nowMs`. `rng` is the caller's stream for this strategy; the
   * life keeps it for later draws. Returns the life and its first actions.
   */
  start(request: RouteRequest, nowMs: number, rng: Rng): { life: RequestLife; actions: LifecycleAction[] } {
    const life = new RequestLifecycle(this.models.get(request.model) ?? null, request, this.health, rng);
    return { life, actions: life.begin(nowMs) };
  }
}
