/**
 * Which endpoint families (inference API shapes: the gateway's `chat`, `embedding`, …) a route
 * serves. Family names are open data to the core: ids the driver registers (the gateway in
 * `gateway/endpoints/families.ts`), which the core only compares. A route lists its families in
 * `endpoints:`; absent, the driver's default for the route's `kind` applies
 * (`RoutingCoreOptions.defaultEndpoints`; the gateway's comes from its adapter registry); a kind
 * the driver gives no default for (the simulator's engines) serves every family.
 */
import type { EndpointFamilyName } from '../lifecycle/seam.ts';

/**
 * The endpoint families a route of `kind` serves when it lists none, or undefined when the
 * driver has no default for the kind (such a route serves every family).
 */
export type DefaultEndpoints = (kind: string) => readonly EndpointFamilyName[] | undefined;

/**
 * The endpoint families of a route: its `endpoints:` when given, else `defaults(kind)`, else
 * null (every family).
 */
export function routeEndpointFamilies(kind: string, declared: readonly EndpointFamilyName[] | undefined, defaults?: DefaultEndpoints): readonly EndpointFamilyName[] | null {
  return declared ?? defaults?.(kind) ?? null;
}
