/**
 * Strategy registry: name → definition. Unknown names and unknown `router_params` keys fail at
 * start with a message naming what is wrong and what is allowed (seed 000, "choosing a router").
 */
import { allowedKeys, closestName } from '../config/field-names.ts';
import type { Planner, PlannerContext, PlannerRoute, StrategyDefinition } from './planner.ts';
import { fixedStrategy } from './fixed.ts';
import { roundRobinStrategy } from './round-robin.ts';
import { failoverStrategy } from './failover.ts';
import { consistentHashStrategy } from './consistent-hash.ts';
import { leastCostStrategy } from './least-cost.ts';
import { leastLatencyStrategy } from './least-latency.ts';
import { leastBusyStrategy } from './least-busy.ts';
import { routeWiseStrategy } from './routewise/routewise.ts';
import { llmDStrategy } from './llm-d/llm-d.ts';
import { sglangCacheAwareStrategy } from './sglang-cache-aware/sglang-cache-aware.ts';
import { dynamoKvStrategy } from './dynamo-kv/dynamo-kv.ts';

/**
 * The strategies every core knows. Later features register more here. The six target orderers
 * of multi-target models (seed 003) are `router:` names too: one implementation orders
 * candidates, whether a model's routes or a multi-target model's targets.
 */
export const BUILTIN_STRATEGIES: readonly StrategyDefinition<any>[] = [
  fixedStrategy,
  roundRobinStrategy,
  failoverStrategy,
  consistentHashStrategy,
  leastCostStrategy,
  leastLatencyStrategy,
  leastBusyStrategy,
  routeWiseStrategy,
  llmDStrategy,
  sglangCacheAwareStrategy,
  dynamoKvStrategy,
];

/** A name → definition map with validated construction. */
export class StrategyRegistry {
  private readonly byName = new Map<string, StrategyDefinition<any>>();
  /** Names a strategy module should have registered, with why it could not (`markUnavailable`). */
  private readonly unavailableByName = new Map<string, string>();
  /** Reasons of strategy modules that failed to load, whatever name they would have had. */
  private readonly failedModules: string[] = [];

  /** @param definitions strategies to register; a duplicate name throws. */
  constructor(definitions: readonly StrategyDefinition<any>[] = BUILTIN_STRATEGIES) {
    for (const d of definitions) this.register(d);
  }

  /** Adds a strategy. @throws Error when the name is already registered. */
  register(def: StrategyDefinition<any>): void {
    if (this.byName.has(def.name)) throw new Error(`strategy '${def.name}' is registered twice`);
    this.byName.set(def.name, def);
  }

  /**
   * Records that a strategy module failed (seed 000 `register_missing_strategy`): a model whose
   * router is `name` — or any router name no strategy has, since the failed module's own name is
   * unknown — is then *unavailable* rather than invalid (`unavailableReason`), so a driver can
   * leave out just those models.
   * @param name the name the module's file carries (`fileStrategyName`).
   * @param reason the module's path and error, e.g. `strategy module /x/a.mjs: Cannot find module …`.
   */
  markUnavailable(name: string, reason: string): void {
    if (!this.byName.has(name)) this.unavailableByName.set(name, reason);
    this.failedModules.push(reason);
  }

  /**
   * Why a model routed by `name` cannot be built because a strategy module failed, or null when
   * `name` is registered or no module failed (then an unknown name is plain bad config).
   */
  unavailableReason(name: string): string | null {
    if (this.byName.has(name)) return null;
    const own = this.unavailableByName.get(name);
    if (own !== undefined) return `router '${name}' is unavailable: ${own}`;
    if (this.failedModules.length === 0) return null;
    return `unknown router '${name}'; known routers: ${this.names().join(', ')}; strategy module(s) that failed to load: ${this.failedModules.join('; ')}`;
  }

  /** Registered names, sorted. */
  names(): string[] {
    return [...this.byName.keys()].sort();
  }

  /**
   * What is wrong with a router name and its `router_params`, without building a planner (no
   * routes needed), or null when both are valid.
   * @returns `unknown router 'x'; known routers: …`, or `router_params for 'x' are invalid: …`
   *   naming each bad key, with the allowed keys, the nearest one and the fix for an unknown key.
   */
  paramsProblem(name: string, params: unknown): string | null {
    const def = this.byName.get(name);
    if (!def) return this.unavailableReason(name) ?? `unknown router '${name}'; known routers: ${this.names().join(', ')}`;
    const parsed = def.paramsSchema.safeParse(params ?? {});
    if (parsed.success) return null;
    const detail = parsed.error.issues
      .map((i) => {
        const keys = (i as { keys?: string[] }).keys;
        if (i.code === 'unrecognized_keys' && keys) {
          const allowed = allowedKeys(def.paramsSchema, i.path as (string | number)[]) ?? [];
          const near = keys.map((k) => closestName(k, allowed)).filter((n): n is string => n !== null);
          const hint = near.length > 0 ? ` (did you mean ${near.map((n) => `'${n}'`).join(', ')}?)` : '';
          const list = allowed.length > 0 ? `; allowed keys: ${allowed.join(', ')}` : `; '${name}' takes no router_params`;
          return `unknown key(s) ${keys.map((k) => `'${k}'`).join(', ')}${hint}${list} — remove it or fix the spelling`;
        }
        return `${i.path.join('.') || '(params)'}: ${i.message}`;
      })
      .join('; ');
    return `router_params for '${name}' are invalid: ${detail}`;
  }

  /**
   * Validates `params` against the strategy's schema and creates a planner.
   * @param where label for errors, e.g. `models[0] (id 'kimi')`.
   * @param context settings and prefill view handed to the strategy's factory (see `PlannerContext`).
   * @throws Error for an unknown strategy (listing known ones) or bad params (naming the key); an
   *   error the strategy throws on its routes (e.g. RouteWise `EnvelopeNotCalibratedError`) is
   *   rethrown with `where` prefixed.
   */
  create(name: string, params: unknown, routes: readonly PlannerRoute[], where: string, context?: PlannerContext): Planner {
    const def = this.byName.get(name);
    const parsed = def?.paramsSchema.safeParse(params ?? {});
    if (!def || !parsed?.success) throw new Error(`${where}: ${this.paramsProblem(name, params)}`);
    try {
      return def.create(parsed.data, routes, context);
    } catch (err) {
      // A strategy that refuses its routes (e.g. RouteWise's EnvelopeNotCalibratedError) names the model.
      if (err instanceof Error && !err.message.startsWith(where)) err.message = `${where}: ${err.message}`;
      throw err;
    }
  }
}
