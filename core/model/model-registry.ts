/**
 * The model registry built from a validated config: every `router:` model with its resolved
 * routes, planner and offload policy, then every multi-target alias over them (an alias may name
 * only models resolved before it), each under its id and aliases, in configuration order.
 */
import type { ModelsConfig } from '../config/models-config.ts';
import type { StrategyRegistry } from '../strategies/registry.ts';
import { plannerTraits, type PlannerContext } from '../strategies/planner.ts';
import { resolveOffloadPolicy } from '../offload/offload-policy.ts';
import { resolveMultiTargetModel } from '../multi-target/multi-target-model.ts';
import { resolveRoutes } from './resolve-routes.ts';
import type { ResolvedModel } from './resolved-model.ts';
import { overlaidRouterParams, type RouteOverlay } from '../config/route-overlay.ts';
import type { DefaultEndpoints } from './route-endpoints.ts';

/**
 * Resolves every model of `config` into `models` (by id and alias) and `ordered` (once each, in
 * configuration order), recording each route's outbound key in `outboundKeys`; `overlay`
 * (weight overrides, disabled providers) is laid over every direct model's routes, and its
 * RouteWise settings over a RouteWise model's `router_params`;
 * `defaultEndpoints` gives the endpoint families of a route that lists none.
 * @throws Error naming the model and field for an unknown router, bad router_params, a duplicate
 *   model id/alias, two routes with one endpoint id, or a bad multi-target block.
 */
export function resolveModels(
  config: ModelsConfig,
  registry: StrategyRegistry,
  context: PlannerContext,
  outboundKeys: Map<string, string | null>,
  models: Map<string, ResolvedModel>,
  ordered: ResolvedModel[],
  overlay?: RouteOverlay,
  defaultEndpoints?: DefaultEndpoints,
): void {
  // Seed 000 ("routing.yaml"): the deployment's local/remote split rewrites weights only when the
  // effective default router is `fixed`; under any other default every route keeps its weight.
  const share = config.routing.default_router === 'fixed' ? config.routing.local_weight_share : undefined;
  config.models.forEach((m, mi) => {
    if (m.routing) return; // multi-target models resolve below, once every direct model is known
    const where = `models[${mi}] (id '${m.id}')`;
    const routes = resolveRoutes(m.id, m.route, share, where, overlay, defaultEndpoints);
    for (const r of routes) outboundKeys.set(r.endpointId, r.outboundKey);
    const strategy = m.router ?? config.routing.default_router;
    const params = overlaidRouterParams(overlay, m.id, strategy, m.router_params);
    const planner = registry.create(
      strategy,
      params,
      routes.map((r) => ({ endpointId: r.endpointId, configuredWeight: r.configuredWeight, costUsdPer1kTokens: r.costUsdPer1kTokens, route: m.route[r.routeIndex]! })),
      where,
      context,
    );
    const offload = m.offload ? resolveOffloadPolicy(m.offload, routes, strategy) : undefined;
    const candidates = routes.map((r) => r.candidate);
    const textRoutes = routes.every((r) => r.acceptsText);
    const windowless = routes.every((r) => r.contextLength === null);
    const routeById = new Map(routes.map((r) => [r.endpointId, r]));
    const model: ResolvedModel = { id: m.id, aliases: m.aliases, strategy, planner, traits: plannerTraits(planner), published: m.published, routes, candidates, routeById, textRoutes, windowless, ...(offload && { offload }) };
    for (const name of [m.id, ...m.aliases]) {
      if (models.has(name)) throw new Error(`${where}: model id or alias '${name}' is used twice`);
      models.set(name, model);
    }
    ordered.push(model);
  });
  config.models.forEach((m, mi) => {
    if (!m.routing) return;
    const where = `models[${mi}] (id '${m.id}')`;
    const model = resolveMultiTargetModel(m, (name) => models.get(name), registry, context, where);
    for (const name of [m.id, ...m.aliases]) {
      if (models.has(name)) throw new Error(`${where}: model id or alias '${name}' is used twice`);
      models.set(name, model);
    }
    ordered.push(model);
  });
  const position = new Map(config.models.map((m, i) => [m.id, i]));
  ordered.sort((a, b) => position.get(a.id)! - position.get(b.id)!);
}
