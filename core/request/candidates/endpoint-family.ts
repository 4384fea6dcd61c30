/**
 * The endpoint-family stage of the candidate pipeline, shared by every model kind: a request
 * made on one API family (chat, completion, embedding, or any id the driver registers) goes only
 * to routes that serve it. A request that names no family (the simulator's traces) passes every
 * route, and so does a route that serves every family (`endpoints` null). Pure.
 */
import type { EndpointFamilyName } from '../../lifecycle/seam.ts';

/** What the stage reads of a route. */
export interface FamilyRoute {
  /** The families the route serves, null for every family (`route-endpoints.ts`). */
  readonly endpoints: readonly EndpointFamilyName[] | null;
}

/** Whether `route` serves `family` (always, when the request names none or the route serves all). */
export function servesFamily(route: FamilyRoute, family: EndpointFamilyName | null | undefined): boolean {
  return family == null || route.endpoints === null || route.endpoints.includes(family);
}

/**
 * The routes of `routes` that serve `family`: `routes` itself when all do (the usual case,
 * nothing allocated), else a filtered copy (possibly empty).
 */
export function routesServing<R extends FamilyRoute>(routes: readonly R[], family: EndpointFamilyName | null | undefined): readonly R[] {
  if (family == null) return routes;
  for (let i = 0; i < routes.length; i++) {
    if (!servesFamily(routes[i]!, family)) return routes.filter((r) => servesFamily(r, family));
  }
  return routes;
}

/** The client-facing message when no route or target of `modelId` serves `family`. */
export function noRouteServesMessage(modelId: string, family: EndpointFamilyName, what: 'route' | 'target'): string {
  return `no ${what} of model '${modelId}' serves the '${family}' endpoint; add '${family}' to a route's endpoints: or call an endpoint the model serves`;
}
