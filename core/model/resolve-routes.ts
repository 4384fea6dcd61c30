/**
 * A `router:` model's `route:` list resolved once at core construction: endpoint ids, the
 * `routing.yaml` local/remote weight share (seed 000 "routing.yaml 权重"), pricing per 1M tokens,
 * the local/remote split and the outbound-limiter key per provider and API key (seed 000
 * "出站并发": local engines and loopback hosts are exempt).
 */
import type { RouteConfig } from '../config/models-config.ts';
import { endpointId as makeEndpointId, endpointLocation } from '../config/endpoint-id.ts';
import { routeKeyDeclarations } from '../keys/route-keys.ts';
import { fnv1a64Hex } from '../affinity/affinity-key.ts';
import type { ExclusionReason, ResolvedRoute } from './resolved-model.ts';
import { routeEndpointFamilies, type DefaultEndpoints } from './route-endpoints.ts';
import { overlaidWeight, type RouteOverlay } from '../config/route-overlay.ts';

const LIMITER_EXEMPT_HOST = /^(localhost|127(\.\d{1,3}){3}|0\.0\.0\.0|host\.docker\.internal|\[::1\])$/i;

/** Whether the outbound limiter leaves a route alone (see `ResolvedRoute.outboundKey`). */
function limiterExempt(r: RouteConfig): boolean {
  if (r.local === false) return false;
  if (r.local === true) return true;
  try {
    const u = new URL(r.base_url);
    return u.protocol === 'sim:' || LIMITER_EXEMPT_HOST.test(u.hostname);
  } catch {
    return false;
  }
}

function isLocalRoute(r: RouteConfig): boolean {
  if (r.local !== undefined) return r.local;
  return endpointLocation(r.kind, r.base_url).startsWith('local-') || r.base_url.startsWith('sim://local');
}

/**
 * Resolves the routes of model `modelId`; `share` is `routing.local_weight_share` (0–1) or
 * undefined. `where` names the model in errors. `overlay` (weight overrides, disabled
 * providers) is laid over the result and may turn the `routing.yaml` split off;
 * `defaultEndpoints` gives the endpoint families of a route that lists none.
 * @throws Error naming `where.route[i]` when two routes resolve to the same endpoint id.
 */
export function resolveRoutes(
  modelId: string,
  routes: readonly RouteConfig[],
  share: number | undefined,
  where: string,
  overlay?: RouteOverlay,
  defaultEndpoints?: DefaultEndpoints,
): ResolvedRoute[] {
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
    if (share !== undefined && r.weight > 0 && !overlay?.ignoreLocalWeightShare) {
      const local = locals[i]!;
      const groupSum = local ? localSum : remoteSum;
      const groupShare = local ? share : 1 - share;
      const otherSum = local ? remoteSum : localSum;
      if (otherSum > 0 || groupShare === 0) effective = groupSum > 0 ? (r.weight / groupSum) * groupShare : 0;
      if (effective === 0) reasons.push('routing_yaml');
    }
    effective = overlaidWeight(overlay, id, r.provider ?? endpointLocation(r.kind, r.base_url), effective, reasons);
    const price = r.pricing;
    const declared = routeKeyDeclarations(r);
    return {
      endpointId: id,
      routeIndex: i,
      kind: r.kind,
      baseUrl: r.base_url,
      provider: r.provider ?? endpointLocation(r.kind, r.base_url),
      providerModelId: r.provider_model_id ?? null,
      modalities: r.input_modalities,
      acceptsText: r.input_modalities.includes('text'),
      endpoints: routeEndpointFamilies(r.kind, r.endpoints, defaultEndpoints),
      contextLength: r.context_length ?? null,
      pricing: {
        inputUsdPer1M: price?.input_usd_per_1m ?? 0,
        outputUsdPer1M: price?.output_usd_per_1m ?? 0,
        cachedInputUsdPer1M: price?.cached_input_usd_per_1m ?? price?.input_usd_per_1m ?? 0,
      },
      costUsdPer1kTokens: price ? (price.input_usd_per_1m + price.output_usd_per_1m) / 1000 : null,
      local: locals[i]!,
      outboundKey: limiterExempt(r) ? null : `${r.provider ?? endpointLocation(r.kind, r.base_url)}|${r.api_key ? fnv1a64Hex(r.api_key) : '-'}`,
      keys: declared.keys,
      keysListed: declared.listed,
      configuredWeight: r.weight,
      effectiveWeight: effective,
      exclusionReasons: reasons,
      candidate: { endpointId: id, weight: effective, routeIndex: i },
    };
  });
}
