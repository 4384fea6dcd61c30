/**
 * A model's resolved offload policy (seed 000 "排队等待卸载", "引擎等待", "引擎队列上限",
 * "最大卸载输入"). Resolution never throws for a bad route: a policy that cannot work is kept
 * but marked inactive with a reason (the admin view lists it), and the router ignores it.
 */
import type { OffloadConfig } from '../config/models-config.ts';

/** Why a configured policy is not in force. */
export type OffloadInactiveReason =
  | 'route_not_found'
  | 'route_weight_zero'
  | 'routewise_model'
  | 'only_route';

/** The policy as the lifecycle uses it. Times in ms, sizes in estimated prompt tokens. */
export interface OffloadPolicy {
  /** Endpoint id of the offload route (null when the configured route matches none). */
  readonly endpointId: string | null;
  /** Queue wait and first-token wait, ms > 0. */
  readonly waitMs: number;
  /** Engine hold places per local engine, or null (no hold). */
  readonly engineQueueLimit: number | null;
  /** Prompts estimated above this never go to the offload route; null = any size. */
  readonly maxInputTokens: number | null;
  readonly active: boolean;
  readonly inactiveReason: OffloadInactiveReason | null;
}

/** Route facts the resolution needs. */
export interface OffloadRouteView {
  readonly endpointId: string;
  readonly provider: string;
  readonly effectiveWeight: number;
}

/**
 * Resolves `config` against the model's routes. The route is named by endpoint id or provider
 * label. Inactive when: the route is missing or has effective weight 0, the model is `routewise`
 * (it plans its own candidates), or the offload route is the model's only route.
 */
export function resolveOffloadPolicy(config: OffloadConfig, routes: readonly OffloadRouteView[], strategy: string): OffloadPolicy {
  const route = routes.find((r) => r.endpointId === config.route) ?? routes.find((r) => r.provider === config.route) ?? null;
  let reason: OffloadInactiveReason | null = null;
  if (strategy === 'routewise') reason = 'routewise_model';
  else if (route === null) reason = 'route_not_found';
  else if (route.effectiveWeight <= 0) reason = 'route_weight_zero';
  else if (routes.length < 2) reason = 'only_route';
  return {
    endpointId: route?.endpointId ?? null,
    waitMs: config.wait_sec * 1000,
    engineQueueLimit: config.engine_queue_limit ?? null,
    maxInputTokens: config.max_input_tokens ?? null,
    active: reason === null,
    inactiveReason: reason,
  };
}
