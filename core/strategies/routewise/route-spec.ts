/**
 * RouteWise's view of one route: how it is paid for and what it may hold (seed 000 "RouteWise":
 * route entries carry the resource semantics — `provider_type`, `pricing`, `quota`,
 * `concurrency`, `quota_pool`, `concurrency_pool`). Built from a validated `route:` entry.
 */
import type { RouteConfig } from '../../config/models-config.ts';
import type { PlannerRoute } from '../planner.ts';
import type { ProviderType, TokenPricing } from './effective-cost.ts';
import type { QuotaWindow, RouteResources } from './resources.ts';

/** One route as RouteWise prices and reserves it. */
export interface RouteWiseRoute {
  readonly endpointId: string;
  readonly providerType: ProviderType;
  /** USD per 1M tokens (on-demand routes; 0 for routes without a `pricing` block). */
  readonly pricing: TokenPricing;
  /** Whether the route had a `pricing` block (only priced on-demand routes define API-equivalent cost). */
  readonly priced: boolean;
  readonly resources: RouteResources;
}

/**
 * A `PlannerRoute` that also carries its validated `route:` entry. `RoutingCore` passes the entry
 * once it forwards it (see the RouteWise report); without it RouteWise treats the route as
 * on-demand priced from `costUsdPer1kTokens` (half input, half output).
 */
export type RouteWisePlannerRoute = PlannerRoute & { readonly route?: RouteConfig };

/** The route-level fields RouteWise reads (a subset of `RouteConfig`). */
export type RouteResourceFields = Pick<RouteConfig, 'pricing' | 'provider_type' | 'quota' | 'quota_pool' | 'concurrency' | 'concurrency_pool'> & Partial<Pick<RouteConfig, 'quota_source' | 'local_quota_fallback'>>;

/**
 * RouteWise's view of a validated route entry. Pools default to the route's own endpoint id.
 * Quota windows convert `window_sec` to ms; `quota_source` becomes the pool's selector and
 * `local_quota_fallback` its local daily counter.
 */
export function routeWiseRoute(endpointId: string, route: RouteResourceFields): RouteWiseRoute {
  const p = route.pricing;
  const pricing: TokenPricing = {
    inputUsdPer1M: p?.input_usd_per_1m ?? 0,
    outputUsdPer1M: p?.output_usd_per_1m ?? 0,
    cachedInputUsdPer1M: p?.cached_input_usd_per_1m ?? p?.input_usd_per_1m ?? 0,
  };
  const type: ProviderType = route.provider_type ?? 'on_demand';
  const windows: QuotaWindow[] = route.quota === undefined ? [] : (Array.isArray(route.quota) ? route.quota : [route.quota]).map((w) => ({ limit: w.limit, windowMs: w.window_sec * 1000, unit: w.unit }));
  return {
    endpointId,
    providerType: type,
    pricing,
    priced: p !== undefined,
    resources: {
      quota:
        type === 'quota' && windows.length > 0
          ? {
              poolId: route.quota_pool ?? endpointId,
              windows,
              ...(route.quota_source && { source: { provider: route.quota_source.provider, usageLabel: route.quota_source.usage_label, unit: route.quota_source.unit } }),
              ...(route.local_quota_fallback === true && { localDaily: true }),
            }
          : null,
      concurrency: type === 'concurrency' && route.concurrency ? { poolId: route.concurrency_pool ?? endpointId, limit: route.concurrency.limit } : null,
    },
  };
}

/** RouteWise's view of a planner route: from its `route` entry when present, else on-demand from its list price. */
export function routeWiseRouteFromPlanner(r: RouteWisePlannerRoute): RouteWiseRoute {
  if (r.route) return routeWiseRoute(r.endpointId, r.route);
  const per1k = r.costUsdPer1kTokens ?? null;
  const perM = per1k === null ? 0 : (per1k * 1000) / 2;
  return {
    endpointId: r.endpointId,
    providerType: 'on_demand',
    pricing: { inputUsdPer1M: perM, outputUsdPer1M: perM, cachedInputUsdPer1M: perM },
    priced: per1k !== null,
    resources: { quota: null, concurrency: null },
  };
}
