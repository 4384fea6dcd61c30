/**
 * Strategy registry: name → definition. Unknown names and unknown `router_params` keys fail at
 * start with a message naming what is wrong and what is allowed (seed 000, "choosing a router").
 */
import type { Planner, PlannerRoute, StrategyDefinition } from './planner.ts';
import { fixedStrategy } from './fixed.ts';
import { roundRobinStrategy } from './round-robin.ts';

/** The strategies every core knows. Later features register more here. */
export const BUILTIN_STRATEGIES: readonly StrategyDefinition<any>[] = [fixedStrategy, roundRobinStrategy];

/** A name → definition map with validated construction. */
export class StrategyRegistry {
  private readonly byName = new Map<string, StrategyDefinition<any>>();

  /** @param definitions strategies to register; a duplicate name throws. */
  constructor(definitions: readonly StrategyDefinition<any>[] = BUILTIN_STRATEGIES) {
    for (const d of definitions) this.register(d);
  }

  /** Adds a strategy. @throws Error when the name is already registered. */
  register(def: StrategyDefinition<any>): void {
    if (this.byName.has(def.name)) throw new Error(`strategy '${def.name}' is registered twice`);
    this.byName.set(def.name, def);
  }

  /** Registered names, sorted. */
  names(): string[] {
    return [...this.byName.keys()].sort();
  }

  /**
   * Validates `params` against the strategy's schema and creates a planner.
   * @param where label for errors, e.g. `models[0] (id 'kimi')`.
   * @throws Error for an unknown strategy (listing known ones) or bad params (naming the key).
   */
  create(name: string, params: unknown, routes: readonly PlannerRoute[], where: string): Planner {
    const def = this.byName.get(name);
    if (!def) {
      throw new Error(`${where}: unknown router '${name}'; known routers: ${this.names().join(', ')}`);
    }
    const parsed = def.paramsSchema.safeParse(params ?? {});
    if (!parsed.success) {
      const detail = parsed.error.issues
        .map((i) => {
          const keys = (i as { keys?: string[] }).keys;
          if (i.code === 'unrecognized_keys' && keys) return `unknown key(s) ${keys.map((k) => `'${k}'`).join(', ')}`;
          return `${i.path.join('.') || '(params)'}: ${i.message}`;
        })
        .join('; ');
      throw new Error(`${where}: router_params for '${name}' are invalid: ${detail}`);
    }
    return def.create(parsed.data, routes);
  }
}
