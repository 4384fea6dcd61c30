/**
 * Where every request life begins, whatever the model kind: the model's family picks the life
 * and its attempt policy (`policy/kind-policy.ts`) — `router:` models get the per-model life,
 * multi-target aliases the tier-walking one — and both ask the same admission gates
 * (`admission/`), arm the same deadlines (`deadline-book.ts`), commit by the same rule
 * (`policy/commit.ts`) and end the same way (`ending.ts`). A per-model router whose planner
 * watches lives (RouteWise) or reads endpoint statistics (least_busy, least_latency) gets its
 * life wrapped in the planner's tap or a `StatsTap`; the driver holds the outermost life.
 */
import type { Rng } from '../rng.ts';
import type { ResolvedModel } from '../model/resolved-model.ts';
import type { LifecycleAction, RequestLife, RouteRequest } from '../lifecycle/seam.ts';
import { RequestLifecycle, type LifecycleDeps } from './router-life.ts';
import { MultiTargetLifecycle, type MultiTargetDeps } from './alias-life.ts';
import type { EndpointStats } from '../stats/endpoint-stats.ts';
import { StatsTap } from '../stats/stats-tap.ts';

/** The shared state of both families, owned by `RoutingCore`. */
export interface LifeDeps {
  readonly router: LifecycleDeps;
  readonly alias: MultiTargetDeps;
  readonly stats: EndpointStats;
}

/**
 * Begins the life of `request` for `model` (null: unknown id; the life answers 404) at `nowMs`.
 * Returns the life the driver steps and its first actions.
 */
export function startRequestLife(model: ResolvedModel | null, request: RouteRequest, deps: LifeDeps, nowMs: number, rng: Rng): { life: RequestLife; actions: LifecycleAction[] } {
  if (model?.multiTarget) {
    const mlife = new MultiTargetLifecycle(model, request, deps.alias, rng);
    return { life: mlife, actions: mlife.begin(nowMs) };
  }
  const life = new RequestLifecycle(model, request, deps.router, rng);
  const plannerTap = model?.planner.tapLife?.(life, request, nowMs);
  if (plannerTap) {
    life.outerLife = plannerTap;
    return { life: plannerTap, actions: plannerTap.absorb(life.begin(nowMs), nowMs) };
  }
  if (!model?.planner.readsEndpointStats) {
    return { life, actions: life.begin(nowMs) };
  }
  // A router that reads in-flight counts or latency learns from this model's own lives too.
  const tap = new StatsTap(life, request.stream, deps.stats);
  life.outerLife = tap;
  return { life: tap, actions: tap.absorb(life.begin(nowMs), nowMs) };
}
