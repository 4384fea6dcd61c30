/**
 * Start-up (and reload) notices for routes whose effective weight differs from the configured
 * one (seed 000, "routes excluded from selection"): a configured route zeroed at run time is a
 * warning (`route_weight_zeroed`), a changed but non-zero weight is informational
 * (`route_weight_overridden`). A route configured at weight 0 is the operator's own choice and is
 * reported at info level too. Drivers log these with their logger; the core only builds them.
 */
import type { RouteExclusion } from '../model/resolved-model.ts';

/** One log line's worth of data. */
export interface RouteNotice {
  level: 'warn' | 'info';
  event: 'route_weight_zeroed' | 'route_weight_overridden';
  modelId: string;
  endpointId: string;
  configuredWeight: number;
  effectiveWeight: number;
  reasons: string[];
}

/** Notices for every excluded or re-weighted route, in configuration order. */
export function routeNotices(exclusions: readonly RouteExclusion[]): RouteNotice[] {
  return exclusions.map((x) => {
    const zeroedAtRuntime = x.effectiveWeight === 0 && x.configuredWeight > 0;
    return {
      level: zeroedAtRuntime ? 'warn' : 'info',
      event: x.effectiveWeight === 0 ? 'route_weight_zeroed' : 'route_weight_overridden',
      modelId: x.modelId,
      endpointId: x.endpointId,
      configuredWeight: x.configuredWeight,
      effectiveWeight: x.effectiveWeight,
      reasons: [...x.reasons],
    };
  });
}
