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
