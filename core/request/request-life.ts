/**
 * Where every request life begins, whatever the model kind: one `Life` (`life.ts`) composed of
 * the family's candidate source and attempt policy — a `router:` model's own routes in the
 * planner's order (`candidates/route-source.ts`, `router-policy.ts`), a multi-target alias's
 * tier walk (`candidates/tier-source.ts`, `alias-policy.ts`) — over the same admission gates
 * (`admission/`), the same deadline book and the same commit rule and ending. A per-model router
 * whose planner watches lives (RouteWise) or reads endpoint statistics (least_busy,
 * least_latency) gets its life wrapped in the planner's tap or a `StatsTap`; the driver holds
 * the outermost life. (Aliases count endpoint statistics themselves, in their policy.)
 */
import type { Rng } from '../rng.ts';
import type { ResolvedModel } from '../model/resolved-model.ts';
import type { LifecycleAction, RequestLife, RouteRequest } from '../lifecycle/seam.ts';
import type { EndpointStats } from '../stats/endpoint-stats.ts';
import { StatsTap } from '../stats/stats-tap.ts';
import { aliasPolicy } from './policy/kind-policy.ts';
import { completeDeps, type LifecycleDeps } from './router-deps.ts';
import type { MultiTargetDeps } from './alias-deps.ts';
import { Life } from './life.ts';
import { RouteSource } from './candidates/route-source.ts';
import { TierSource } from './candidates/tier-source.ts';
import { ROUTER_POLICY } from './router-policy.ts';
import { ALIAS_POLICY } from './alias-policy.ts';

/** The shared state of both families, owned by `RoutingCore`. */
export interface LifeDeps {
  readonly router: LifecycleDeps;
  readonly alias: MultiTargetDeps;
  readonly stats: EndpointStats;
}

/** A `router:` model's life for `request` (not begun), over `deps` (completed with private tables when partial). */
export function routerLife(model: ResolvedModel | null, request: RouteRequest, deps: LifecycleDeps, rng: Rng): Life<RouteSource> {
  const full = completeDeps(deps);
  return new Life(model, request, rng, full, full.kindPolicy, new RouteSource(full, model, request.stream), ROUTER_POLICY);
}

/**
 * Begins the life of `request` for `model` (null: unknown id; the life answers 404) at `nowMs`.
 * Returns the life the driver steps and its first actions.
 */
export function startRequestLife(model: ResolvedModel | null, request: RouteRequest, deps: LifeDeps, nowMs: number, rng: Rng): { life: RequestLife; actions: LifecycleAction[] } {
  const mt = model?.multiTarget;
  if (mt) {
    const a = deps.alias;
    const mlife = new Life(model, request, rng, a, aliasPolicy(mt, a.settings), new TierSource(a, mt), ALIAS_POLICY);
    return { life: mlife, actions: mlife.begin(nowMs) };
  }
  const life = routerLife(model, request, deps.router, rng);
  const plannerTap = model?.traits.tapsLives === true ? model.planner.tapLife!(life, request, nowMs) : undefined;
  if (plannerTap) {
    life.outerLife = plannerTap;
    return { life: plannerTap, actions: plannerTap.absorb(life.begin(nowMs), nowMs) };
  }
  if (model?.traits.readsEndpointStats !== true) {
    return { life, actions: life.begin(nowMs) };
  }
  // A router that reads in-flight counts or latency learns from this model's own lives too.
  const tap = new StatsTap(life, request.stream, deps.stats, request.latencyAt === 'headers');
  life.outerLife = tap;
  return { life: tap, actions: tap.absorb(life.begin(nowMs), nowMs) };
}
