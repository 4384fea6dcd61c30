/**
 * The modality stage of the candidate pipeline, shared by every model kind: every request
 * carries text, so a route must accept text and each extra input modality the request carries
 * (images, audio). Pure.
 */
import type { Modality } from '../../lifecycle/seam.ts';

/** What the stage reads of a route. */
export interface ModalRoute {
  /** The route's `input_modalities` include text (precomputed on the decision path). */
  readonly acceptsText: boolean;
  readonly modalities: readonly Modality[];
}

/** Whether `route` accepts text and every modality in `requested`. */
export function acceptsModalities(route: ModalRoute, requested: readonly Modality[]): boolean {
  if (!route.acceptsText) return false;
  for (let i = 0; i < requested.length; i++) if (!route.modalities.includes(requested[i]!)) return false;
  return true;
}

/**
 * The routes of `routes` that accept `requested`: `routes` itself when all do (the usual case,
 * nothing allocated), else a filtered copy (possibly empty).
 */
export function routesAccepting<R extends ModalRoute>(routes: readonly R[], requested: readonly Modality[]): readonly R[] {
  for (let i = 0; i < routes.length; i++) {
    if (!acceptsModalities(routes[i]!, requested)) return routes.filter((r) => acceptsModalities(r, requested));
  }
  return routes;
}
