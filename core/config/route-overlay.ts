/**
 * Operator changes laid over the configured routes (seed 000, "routes excluded from selection"):
 * per-(model, endpoint) weight overrides and disabled provider labels, plus whether the
 * `routing.yaml` local/remote split applies at all (it does not on a gateway with a store). The
 * gateway reads them from its store and hands them to the core at construction; the core only
 * applies them, so one overlay always yields the same effective weights.
 */
import type { ExclusionReason } from '../model/resolved-model.ts';

/** What the core applies on top of the configured weights. */
export interface RouteOverlay {
  /** Effective weight (≥ 0) by endpoint id; 0 drains the route. */
  readonly weightOverrides?: ReadonlyMap<string, number>;
  /** Provider labels (`ResolvedRoute.provider`) whose routes get effective weight 0. */
  readonly disabledProviders?: ReadonlySet<string>;
  /**
   * When true, `routing.local_weight_share` is not applied (a gateway with a store). Default
   * false. (The split applies at all only when `routing.default_router` is `fixed`.)
   */
  readonly ignoreLocalWeightShare?: boolean;
  /**
   * RouteWise parameters set at run time (seed 000, "RouteWise", run-time tuning): `perModel`
   * by canonical model id, and `fallback` for a key that neither a model's own override nor its
   * `router_params:` sets. Values are `router_params` values (snake_case keys), validated by the
   * RouteWise schema when the planner is built.
   */
  readonly routewise?: {
    readonly perModel: ReadonlyMap<string, Readonly<Record<string, unknown>>>;
    readonly fallback: Readonly<Record<string, unknown>>;
  };
}

/** The strategy id whose parameters `RouteOverlay.routewise` tunes. */
export const ROUTEWISE_STRATEGY = 'routewise';

/**
 * The `router_params` a model's planner is built with: for a RouteWise model, key by key, the
 * model's run-time override, else its `router_params:` value, else the fallback layer (a key set
 * nowhere takes the schema's default); any other strategy gets `params` unchanged.
 */
export function overlaidRouterParams(overlay: RouteOverlay | undefined, modelId: string, strategy: string, params: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const rw = overlay?.routewise;
  if (!rw || strategy !== ROUTEWISE_STRATEGY) return { ...params };
  return { ...rw.fallback, ...params, ...(rw.perModel.get(modelId) ?? {}) };
}

/**
 * The effective weight of one route after the overlay, appending the reasons that apply.
 * Precedence: a disabled provider zeroes the route whatever its override; otherwise an override
 * replaces the weight computed from the configuration.
 * @param weight the weight after the configuration (configured, or scaled by the split).
 */
export function overlaidWeight(overlay: RouteOverlay | undefined, endpointId: string, provider: string, weight: number, reasons: ExclusionReason[]): number {
  if (!overlay) return weight;
  let w = weight;
  const o = overlay.weightOverrides?.get(endpointId);
  if (o !== undefined) {
    w = o;
    reasons.push('weight_override');
  }
  if (overlay.disabledProviders?.has(provider)) {
    w = 0;
    reasons.push('provider_disabled');
  }
  return w;
}
