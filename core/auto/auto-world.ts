/**
 * What the candidate checks of auto profiles read of the registry and of endpoint health, built
 * from a `RoutingCore` and the configuration it was built from: each model's routes (a
 * multi-target model's are its targets' routes), its `supports_tools`, `reasoning_efforts` and
 * `max_output_tokens`, and whether an endpoint of it admits an attempt now — a route with
 * effective weight (its provider not disabled) that the admission gates and its breaker admit.
 * The caller check is the driver's (`mayUse`). Pure given the core's state at `nowMs`.
 */
import type { ModelsConfig } from '../config/models-config.ts';
import type { ResolvedModel, ResolvedRoute } from '../model/resolved-model.ts';
import type { RoutingCore } from '../routing-core.ts';
import type { AutoCandidateWorld, AutoModelFacts } from './select-candidate.ts';

/** The candidate facts of every registered model, by id and alias (built once per configuration). */
export function autoModelFacts(core: RoutingCore, config: ModelsConfig): ReadonlyMap<string, AutoModelFacts> {
  const declared = new Map(config.models.map((m) => [m.id, m]));
  const out = new Map<string, AutoModelFacts>();
  for (const m of core.allModels()) {
    const c = declared.get(m.id);
    const facts: AutoModelFacts = {
      id: m.id,
      routes: routesOf(m),
      supportsTools: c?.supports_tools ?? true,
      reasoningEfforts: c?.reasoning_efforts ?? null,
      maxOutputTokens: c?.max_output_tokens ?? null,
    };
    for (const n of [m.id, ...m.aliases]) out.set(n, facts);
  }
  return out;
}

function routesOf(m: ResolvedModel): readonly ResolvedRoute[] {
  return m.multiTarget ? m.multiTarget.targets.map((t) => t.route) : m.routes;
}

/** Whether some endpoint of `model` admits an attempt at `nowMs` (see the file doc). */
export function modelAdmits(core: RoutingCore, model: ResolvedModel, nowMs: number): boolean {
  const admission = core.lifecycleDeps.admission;
  const open = admission === undefined || admission.admitsEvery(nowMs);
  for (const r of routesOf(model)) {
    if (r.effectiveWeight <= 0) continue;
    if (open || admission === undefined || (admission.refusal(r, nowMs) === null && admission.gates.breaker.admits(r, nowMs))) return true;
  }
  return false;
}

/**
 * The world of one decision at `nowMs`: `facts` from `autoModelFacts`, `mayUse` the driver's
 * caller check (the name as configured in the profile).
 */
export function autoWorld(core: RoutingCore, facts: ReadonlyMap<string, AutoModelFacts>, mayUse: (name: string) => boolean, nowMs: number): AutoCandidateWorld {
  return {
    model: (name) => facts.get(name) ?? null,
    mayUse,
    admits: (id) => {
      const m = core.model(id);
      return m !== undefined && m.published && modelAdmits(core, m, nowMs);
    },
  };
}
