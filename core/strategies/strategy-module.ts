/**
 * Strategies registered from outside the repository (seed 000 "adding a routing strategy"): a
 * module a deployment names (gateway.yaml or an experiment's `strategies:` list) exports one
 * strategy definition, which is checked against the planner contract and registered under its
 * name next to the built-ins. A module that cannot be imported or breaks the contract is
 * registered as *unavailable* under the name its file carries, so only the models that choose it
 * fail, with the module's path and the reason (the seed's `register_missing_strategy`).
 *
 * The drivers import the module (I/O) and hand its namespace object here; nothing here touches
 * the file system.
 *
 * A module exports, either as its default export or as named exports:
 * - `name` — the `router:` name: lower-case letters, digits, `_` and `-`, not a built-in's;
 * - `create(params, routes, context?)` — returns a `Planner` whose `pick(candidates, request,
 *   nowMs, rng)` returns `{ candidate, reason }` (optional `order`, `observe`, `carryFrom`);
 * - `params` (optional) — a plain description of `router_params`: a mapping of key → `{ type:
 *   'boolean' | 'number' | 'integer' | 'string', default?, minimum?, maximum?, enum? }`; or
 *   `paramsSchema` — a zod schema (anything with `safeParse`). Neither ⇒ no `router_params`.
 *   Unknown keys are refused either way;
 * - `description` (optional) — one line for help output;
 * - `workerSafe` (optional, default false) — true when the planner's per-process state does not
 *   change what a request gets when several gateway workers each hold a copy.
 */
import { z } from 'zod';
import type { Planner, PlannerContext, PlannerRoute, StrategyDefinition } from './planner.ts';
import { StrategyRegistry } from './registry.ts';

/** What a driver knows of one strategy module after trying to load it (plain data: it crosses threads). */
export interface StrategyModuleRecord {
  /** Absolute path of the module file. */
  readonly path: string;
  /** The strategy's `name` once loaded; for a module that failed, the name its file carries (`fileStrategyName`). */
  readonly name: string;
  /** Why the module is unusable (import error or contract breach), or null when it loaded. */
  readonly error: string | null;
  /** The module's `workerSafe` export (false for a failed module). */
  readonly workerSafe: boolean;
}

/** A loaded, checked external strategy. */
export interface ExternalStrategy {
  readonly definition: StrategyDefinition<unknown>;
  readonly workerSafe: boolean;
}

/** `router:` names an external strategy may take. */
const NAME = /^[a-z][a-z0-9_-]*$/;

/**
 * The name a module's file carries: its base name without the extension (`/x/my-strategy.mjs`
 * → `my-strategy`). A module that cannot be loaded is registered as unavailable under it.
 */
export function fileStrategyName(path: string): string {
  const base = path.slice(Math.max(path.lastIndexOf('/'), path.lastIndexOf('\\')) + 1);
  const dot = base.lastIndexOf('.');
  return dot > 0 ? base.slice(0, dot) : base;
}

/** One entry of the plain `params` description. */
interface ParamSpec {
  type: 'boolean' | 'number' | 'integer' | 'string';
  default?: unknown;
  minimum?: number;
  maximum?: number;
  enum?: readonly string[];
}

const ParamSpecSchema = z
  .object({
    type: z.enum(['boolean', 'number', 'integer', 'string']),
    default: z.unknown().optional(),
    minimum: z.number().optional(),
    maximum: z.number().optional(),
    enum: z.array(z.string()).min(1).optional(),
    description: z.string().optional(),
  })
  .strict();

/**
 * A strict zod object schema from the plain `params` description (see the module docstring).
 * @throws Error `params.<key>: …` for an entry that is not a valid description, or a default
 *   that its own type refuses.
 */
export function paramsSchemaFromShape(shape: unknown): z.ZodType<Record<string, unknown>> {
  if (shape === null || typeof shape !== 'object' || Array.isArray(shape)) throw new Error(`params: must be a mapping of key → { type, default? }, got ${describe(shape)}`);
  const fields: Record<string, z.ZodType> = {};
  for (const [key, raw] of Object.entries(shape as Record<string, unknown>)) {
    const parsed = ParamSpecSchema.safeParse(raw);
    if (!parsed.success) throw new Error(`params.${key}: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(entry)'}: ${i.message}`).join('; ')} (expected { type: boolean|number|integer|string, default?, minimum?, maximum?, enum? })`);
    const spec = parsed.data as ParamSpec;
    let field: z.ZodType;
    if (spec.type === 'boolean') field = z.boolean();
    else if (spec.type === 'string') field = spec.enum ? z.enum(spec.enum as [string, ...string[]]) : z.string();
    else {
      let n = spec.type === 'integer' ? z.number().int() : z.number();
      if (spec.minimum !== undefined) n = n.min(spec.minimum);
      if (spec.maximum !== undefined) n = n.max(spec.maximum);
      field = n;
    }
    if (spec.default !== undefined) {
      const d = field.safeParse(spec.default);
      if (!d.success) throw new Error(`params.${key}.default: ${d.error.issues[0]?.message ?? 'invalid'} for type ${spec.type}`);
      field = field.default(d.data as never);
    } else {
      field = field.optional();
    }
    fields[key] = field;
  }
  return z.object(fields).strict() as unknown as z.ZodType<Record<string, unknown>>;
}

function describe(v: unknown): string {
  return v === null ? 'null' : Array.isArray(v) ? 'a list' : typeof v;
}

/**
 * Checks a module's namespace object against the strategy contract and returns its definition.
 * @param namespace what `import()` gave for the module (its default export is used when it is
 *   an object or function, else the named exports).
 * @param path the module's path, for messages.
 * @param taken names already registered (the built-ins, earlier modules): a clash is refused.
 * @throws Error `strategy module <path>: …` naming the missing or wrong export and the fix.
 */
export function strategyFromModule(namespace: unknown, path: string, taken: ReadonlySet<string>): ExternalStrategy {
  const fail = (what: string): never => {
    throw new Error(`strategy module ${path}: ${what}`);
  };
  const ns = (namespace ?? {}) as Record<string, unknown>;
  const d = (ns.default !== undefined && ns.default !== null && (typeof ns.default === 'object' || typeof ns.default === 'function') ? ns.default : ns) as Record<string, unknown>;
  const name = d.name;
  if (typeof name !== 'string') fail(`export 'name' is missing or not a string (got ${describe(name)}); export the router: name, e.g. export const name = 'my-strategy'`);
  const n = name as string;
  if (!NAME.test(n)) fail(`export 'name' is '${n}'; a router name is lower-case letters, digits, _ and -, starting with a letter`);
  if (taken.has(n)) fail(`export 'name' is '${n}', which is already registered (a built-in or another module); choose another name`);
  const create = d.create;
  if (typeof create !== 'function') fail(`export 'create' is missing or not a function (got ${describe(create)}); export create(params, routes, context) returning a planner with pick()`);
  if ((create as (...a: unknown[]) => unknown).length > 3) fail(`export 'create' takes ${(create as () => unknown).length} parameters; the contract is create(params, routes, context?)`);
  if (d.params !== undefined && d.paramsSchema !== undefined) fail(`exports both 'params' and 'paramsSchema'; keep one`);
  let schema: z.ZodType<unknown>;
  if (d.paramsSchema !== undefined) {
    const s = d.paramsSchema as { safeParse?: unknown } | null;
    if (!s || typeof s.safeParse !== 'function') fail(`export 'paramsSchema' is not a zod schema (no safeParse); export a strict z.object, or a plain 'params' description instead`);
    schema = s as z.ZodType<unknown>;
  } else if (d.params !== undefined) {
    try {
      schema = paramsSchemaFromShape(d.params);
    } catch (e) {
      return fail(`export 'params' is invalid: ${(e as Error).message}`);
    }
  } else {
    schema = z.object({}).strict();
  }
  if (d.description !== undefined && typeof d.description !== 'string') fail(`export 'description' is not a string (got ${describe(d.description)})`);
  if (d.workerSafe !== undefined && typeof d.workerSafe !== 'boolean') fail(`export 'workerSafe' is not a boolean (got ${describe(d.workerSafe)})`);
  const factory = create as (params: unknown, routes: readonly PlannerRoute[], context?: PlannerContext) => unknown;
  const definition: StrategyDefinition<unknown> = {
    name: n,
    description: (d.description as string | undefined) ?? `external strategy (${path})`,
    paramsSchema: schema!,
    create(params, routes, context) {
      // A throw inside the module's own create() would otherwise reach the operator without
      // saying which file raised it (several modules may be configured).
      let planner: unknown;
      try {
        planner = factory(params, routes, context);
      } catch (e) {
        throw new Error(`strategy module ${path}: create() threw: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
      }
      return checkedPlanner(planner, path);
    },
  };
  return { definition, workerSafe: d.workerSafe === true };
}

/** The planner hooks that must be functions when present, with their arity. */
const HOOKS: ReadonlyArray<[keyof Planner, number]> = [
  ['order', 4],
  ['observe', 3],
  ['carryFrom', 1],
  ['tapLife', 3],
];

/**
 * `planner` when it keeps the `Planner` contract: `pick` a function of at most four parameters
 * (candidates, request, nowMs, rng), and each optional hook present a function of its arity.
 * @throws Error `strategy module <path>: create() returned …` naming the wrong member.
 */
export function checkedPlanner(planner: unknown, path: string): Planner {
  const p = planner as Record<string, unknown> | null;
  if (p === null || typeof p !== 'object') throw new Error(`strategy module ${path}: create() returned ${describe(planner)}, not a planner object with pick()`);
  if (typeof p.pick !== 'function') throw new Error(`strategy module ${path}: create() returned a planner without a pick(candidates, request, nowMs, rng) function`);
  if ((p.pick as () => unknown).length > 4) throw new Error(`strategy module ${path}: pick takes ${(p.pick as () => unknown).length} parameters; the contract is pick(candidates, request, nowMs, rng)`);
  for (const [hook, arity] of HOOKS) {
    const f = p[hook];
    if (f === undefined) continue;
    if (typeof f !== 'function') throw new Error(`strategy module ${path}: planner.${hook} is ${describe(f)}, not a function`);
    if ((f as () => unknown).length > arity) throw new Error(`strategy module ${path}: planner.${hook} takes ${(f as () => unknown).length} parameters; at most ${arity}`);
  }
  return guardedPlanner(p as unknown as Planner, path);
}

/**
 * `planner` with its answers checked on every call: `pick` must name a candidate (an integer
 * index below the candidate count) and `order` must be a permutation of the candidates. A wrong
 * answer throws `strategy module <path>: …`, which the driver treats as any internal error (the
 * gateway answers that request 500). The guard inherits the flags from `planner` and calls
 * every method on `planner` itself, so a class-based planner keeps one state.
 */
function guardedPlanner(planner: Planner, path: string): Planner {
  const guard = Object.create(planner) as { -readonly [K in keyof Planner]: Planner[K] };
  guard.pick = (candidates, request, nowMs, rng) => {
    const p = planner.pick.call(planner, candidates, request, nowMs, rng);
    const c = (p as { candidate?: unknown } | null)?.candidate;
    if (typeof c !== 'number' || !Number.isInteger(c) || c < 0 || c >= candidates.length) {
      throw new Error(`strategy module ${path}: pick returned candidate ${String(c)} for ${candidates.length} candidate(s); return { candidate: <index 0..${candidates.length - 1}>, reason }`);
    }
    return p;
  };
  // Hooks run on the planner itself, so state they write is the state `pick` reads.
  for (const hook of ['observe', 'carryFrom', 'tapLife'] as const) {
    const f = planner[hook] as ((...a: unknown[]) => unknown) | undefined;
    if (f) (guard as Record<string, unknown>)[hook] = (...a: unknown[]) => f.apply(planner, a);
  }
  if (planner.order) {
    const order = planner.order;
    guard.order = (candidates, request, nowMs, rng) => {
      const o = order.call(planner, candidates, request, nowMs, rng);
      const list = (o as { order?: unknown } | null)?.order;
      const seen = new Set<number>();
      const ok = Array.isArray(list) && list.length === candidates.length && list.every((i) => Number.isInteger(i) && i >= 0 && i < candidates.length && !seen.has(i) && seen.add(i));
      if (!ok) throw new Error(`strategy module ${path}: order returned ${JSON.stringify(list)}, not a permutation of the ${candidates.length} candidate indices`);
      return o;
    };
  }
  return guard;
}

/** Imports one module by absolute path and resolves to its namespace object (the driver's I/O). */
export type ModuleImporter = (path: string) => Promise<unknown>;

/**
 * The strategy modules one thread has imported, by absolute path. A driver `load`s the paths a
 * configuration names (async: `import()`), keeps the returned records with the configuration
 * (plain data, so they cross to worker threads, which `load` the same paths themselves), and
 * builds registries from them synchronously with `registry`.
 */
export class StrategyModules {
  private readonly loaded = new Map<string, ExternalStrategy>();

  /** @param importer how the driver imports a module (`import(pathToFileURL(path).href)`). */
  constructor(private readonly importer: ModuleImporter) {}

  /**
   * Imports and checks each module in order; a module's name must differ from the built-ins'
   * and from every earlier module's. Never throws for a bad module: its record carries the error
   * and the name its file carries (`fileStrategyName`).
   * @param paths absolute module paths (duplicates are loaded once).
   * @param builtins names already taken (`StrategyRegistry.names()` of the built-ins).
   */
  async load(paths: readonly string[], builtins: readonly string[]): Promise<StrategyModuleRecord[]> {
    const taken = new Set(builtins);
    const records: StrategyModuleRecord[] = [];
    for (const path of new Set(paths)) {
      let ns: unknown;
      try {
        ns = await this.importer(path);
      } catch (e) {
        records.push({ path, name: fileStrategyName(path), error: `strategy module ${path}: cannot be imported: ${(e as Error)?.message ?? String(e)}`, workerSafe: false });
        continue;
      }
      try {
        const s = strategyFromModule(ns, path, taken);
        taken.add(s.definition.name);
        this.loaded.set(path, s);
        records.push({ path, name: s.definition.name, error: null, workerSafe: s.workerSafe });
      } catch (e) {
        records.push({ path, name: fileStrategyName(path), error: (e as Error).message, workerSafe: false });
      }
    }
    return records;
  }

  /**
   * A registry of `builtins` plus the strategies of `records`: each loaded module registered
   * under its name, each failed one marked unavailable (`StrategyRegistry.markUnavailable`).
   * @throws Error when a loaded record's module was not `load`ed in this thread (a driver bug).
   */
  registry(records: readonly StrategyModuleRecord[], builtins: readonly StrategyDefinition<any>[]): StrategyRegistry {
    const registry = new StrategyRegistry(builtins);
    for (const r of records) {
      if (r.error !== null) {
        registry.markUnavailable(r.name, r.error);
        continue;
      }
      const s = this.loaded.get(r.path);
      if (!s) throw new Error(`strategy module ${r.path} was not loaded in this thread (StrategyModules.load first)`);
      registry.register(s.definition);
    }
    return registry;
  }
}
