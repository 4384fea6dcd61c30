/**
 * Which endpoint families (inference API shapes) a route serves. A route lists them in
 * `endpoints:`; absent, its `kind` decides by the table below. The gateway's adapters declare
 * the same lists (`UpstreamAdapter.endpoints`), and a test keeps the two in agreement; the core
 * keeps its own copy because it must not depend on the gateway.
 */
import type { EndpointFamilyName } from '../lifecycle/seam.ts';

/** Every endpoint family, in the order the gateway registers them. */
export const ENDPOINT_FAMILY_NAMES: readonly EndpointFamilyName[] = ['chat', 'completion', 'embedding'];

/**
 * The endpoint families a route of each known `kind` serves when it lists none. A kind missing
 * here (the simulator's engines, kinds a driver adds) serves every family.
 */
export const DEFAULT_ENDPOINTS_BY_KIND: Readonly<Record<string, readonly EndpointFamilyName[]>> = {
  openai_compat: ['chat', 'completion', 'embedding'],
};

/** The endpoint families of a route: its `endpoints:` when given, else its kind's default. */
export function routeEndpointFamilies(kind: string, declared: readonly EndpointFamilyName[] | undefined): readonly EndpointFamilyName[] {
  return declared ?? DEFAULT_ENDPOINTS_BY_KIND[kind] ?? ENDPOINT_FAMILY_NAMES;
}
