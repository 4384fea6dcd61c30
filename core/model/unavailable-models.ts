/**
 * The models a registry cannot build because a strategy module failed to load (seed 000: a
 * missing optional strategy fails the models that choose it, not everyone's). They are left out
 * of the configuration with their reason, and every other model loads as usual; a multi-target
 * model whose strategy is unavailable, or one of whose targets is left out, is left out too.
 */
import type { ModelsConfig } from '../config/models-config.ts';
import type { StrategyRegistry } from '../strategies/registry.ts';

/** A model left out: its position in `models:`, its id, the field that names the strategy or target, and why. */
export interface UnavailableModel {
  readonly index: number;
  readonly id: string;
  /** Dotted path inside the model: `router`, `routing.strategy` or `routing.targets.<i>.model`. */
  readonly field: string;
  /** E.g. `router 'my-strategy' is unavailable: strategy module /x/my-strategy.mjs: Cannot find module …`. */
  readonly reason: string;
}

/**
 * `config` without the models whose strategy is unavailable in `registry`
 * (`StrategyRegistry.unavailableReason`), and the list of those left out, in file order.
 * Returns `config` itself when nothing is left out.
 */
export function withoutUnavailableModels(config: ModelsConfig, registry: StrategyRegistry): { config: ModelsConfig; unavailable: UnavailableModel[] } {
  const unavailable: UnavailableModel[] = [];
  const gone = new Map<string, string>(); // id or alias → the left-out model's id
  config.models.forEach((m, index) => {
    if (m.routing) return;
    const reason = registry.unavailableReason(m.router ?? config.routing.default_router);
    if (reason === null) return;
    unavailable.push({ index, id: m.id, field: 'router', reason: m.router === undefined ? `${reason} (routing.default_router)` : reason });
    for (const n of [m.id, ...m.aliases]) gone.set(n, m.id);
  });
  config.models.forEach((m, index) => {
    if (!m.routing) return;
    const own = registry.unavailableReason(m.routing.strategy);
    const ti = m.routing.targets.findIndex((t) => gone.has(t.model));
    if (own === null && ti < 0) return;
    const t = m.routing.targets[ti];
    unavailable.push(
      own !== null
        ? { index, id: m.id, field: 'routing.strategy', reason: own }
        : { index, id: m.id, field: `routing.targets.${ti}.model`, reason: `target '${t!.model}' is not loaded (model '${gone.get(t!.model)}' is unavailable)` },
    );
  });
  if (unavailable.length === 0) return { config, unavailable };
  unavailable.sort((a, b) => a.index - b.index);
  const left = new Set(unavailable.map((u) => u.index));
  return { config: { ...config, models: config.models.filter((_, i) => !left.has(i)) }, unavailable };
}
