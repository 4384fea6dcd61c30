/**
 * Experiment files (`experiments/*.yaml`): which trace to replay, onto which endpoints (local
 * replicas and hosted providers), under which client behaviour, faults, strategies, seeds and
 * sweep grid, and where the results go. Validated with zod; an error names the field and what
 * is allowed.
 */
import { CALLER_ROLES, type CallerRole } from '../core/index.ts';
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { LineCounter, parseDocument } from 'yaml';
import { z } from 'zod';
import { allowedKeys, closestName, readableIssue, closestPath, formatYamlSyntaxError, unknownPathSegment, yamlSyntaxReport, type StrategyModuleRecord } from '../core/index.ts';
import type { HealthOptions } from '../core/health/health-options.ts';
import { applyCalibration } from './calibrate/calibration-file.ts';
import { ClientSchema } from './client-behaviour.ts';
import { METRIC_NAMES } from './compare/metrics.ts';
import { CostsSchema } from './costs.ts';
import { ReplicasSchema } from './engine/replica-config.ts';
import { FaultSchema } from './faults/fault-config.ts';
import { effectiveGatewayReplicas, gatewayReplicasProblems, GatewayReplicasSchema, RunGatewayReplicasSchema } from './gateway-replicas.ts';
import { MultiTargetBlockSchema, OffloadBlockSchema, RunMultiTargetSchema } from './experiment-routing.ts';
import { ProviderEntrySchema, resolveProvider, type ResolvedProvider } from './providers/provider-config.ts';
import { PlanSchema } from './plan/plan-config.ts';
import { SweepSchema } from './sweep/sweep-config.ts';
import { loadStrategyModules, strategyModulePaths, strategyRegistry } from './strategy-modules.ts';

/** Re-exported: the fault schema used by `faults:` and `scenarios:`. */
export { FaultSchema, type Fault } from './faults/fault-config.ts';

/** One replay: a strategy with its params. */
export const RunSchema = z
  .object({
    strategy: z.string().min(1),
    params: z.record(z.string(), z.unknown()).default({}),
    /** Optional label in tables; defaults to the strategy name. Labels must be unique. */
    label: z.string().regex(/^[A-Za-z0-9_.-]+$/, 'use letters, digits, _, - and .').optional(),
    /**
     * `per_model` (default): one model whose routes are the endpoints, `strategy` is its router.
     * `multi_target`: one direct model per endpoint plus a multi-target alias whose
     * `routing.strategy` is `strategy` (built from the experiment's `multi_target:` block).
     */
    style: z.enum(['per_model', 'multi_target']).default('per_model'),
    /** Run-level overrides of the experiment's `multi_target:` block (`style: multi_target` only). */
    multi_target: RunMultiTargetSchema.optional(),
    /** Run-level overrides of the experiment's `gateway_replicas:` block (any of its fields). */
    gateway_replicas: RunGatewayReplicasSchema.optional(),
  })
  .strict();

/** `compare:` — run the paired comparison after the sweep (same as `switchyard compare`). */
export const CompareConfigSchema = z
  .object({
    /** Label of the baseline run. */
    baseline: z.string().min(1),
    metrics: z.array(z.enum(METRIC_NAMES)).min(1).optional(),
    /** Bootstrap resamples. */
    resamples: z.number().int().min(100).default(10_000),
    /** Confidence level of the interval. */
    confidence: z.number().gt(0).lt(1).default(0.95),
  })
  .strict();

/** Name of the scenario that adds no faults. */
export const NO_SCENARIO = 'none';

/** The whole experiment file. */
export const ExperimentSchema = z
  .object({
    name: z.string().min(1),
    description: z.string().default(''),
    /** Arrow trace path, relative to the experiment file. */
    trace: z.string().min(1),
    /** Root seed; `--seed` overrides. */
    seed: z.number().int().default(1),
    /** Arrival-rate multiplier: arrival times are divided by it (2 = twice the load). */
    rate_scale: z.number().positive().default(1),
    /** Replay only the first N requests (after sorting by arrival). */
    limit: z.number().int().positive().optional(),
    /** Public model id the trace's requests are sent to. */
    model: z.string().min(1).default('default'),
    /** Local replicas (`sim://replica-<i>`, routed first). */
    replicas: ReplicasSchema,
    /**
     * Gateway replicas in front of the endpoints (`gateway-replicas.ts`): count, load balancer,
     * local or shared state, propagation delay. Default: one gateway.
     */
    gateway_replicas: GatewayReplicasSchema,
    /** Hosted providers (`sim://<name>`, routed after the replicas, in this order). */
    providers: z.array(ProviderEntrySchema).default([]),
    /** Fraction of traffic weight given to local routes (the routing file's `local_weight_share`). */
    local_weight_share: z.number().min(0).max(1).optional(),
    /**
     * Offload of the model (per-model runs): requests that wait longer than `wait_sec` for a slot
     * or their engine's first token move to `provider`'s route.
     */
    offload: OffloadBlockSchema.optional(),
    /** How `style: multi_target` runs build the multi-target alias. */
    multi_target: MultiTargetBlockSchema.optional(),
    /**
     * Auto profiles (seed 000 "Auto 模型"), in the registry's `auto:` shape; each endpoint is also
     * a model of its own name, which candidates name. Trace rows whose `model` is an auto model
     * (`auto-<profile>`, or `auto` with a `default_profile`) are routed as the candidate the
     * core's `AutoRouter` picks; checked by the core when a run starts (a bad block is refused).
     */
    auto: z.unknown().optional(),
    /** Core routing settings (prefill-aware P2C, affinity, …), validated by the core. */
    routing: z.record(z.string(), z.unknown()).default({}),
    /** Circuit-breaker and availability tunables of the core (its defaults where absent). */
    health: z
      .object({
        failure_threshold: z.number().int().min(1).optional(),
        cooldown_ms: z.number().positive().optional(),
        min_availability: z.number().min(0).max(1).optional(),
        ewma_alpha: z.number().gt(0).max(1).optional(),
      })
      .strict()
      .default({}),
    /**
     * Callers are assigned to sessions by a seeded Zipf draw (traces carry no caller ids).
     * `roles`: the share of callers in each tier (seed 000; e.g. `{free: 0.8, pro: 0.2}`, summing
     * to 1), each caller's tier drawn from a hash of its id; absent ⇒ every request unrestricted.
     * With roles, caller ids read `<role>:caller-<n>` so results group by tier.
     */
    callers: z
      .object({
        count: z.number().int().positive().default(100),
        zipf_s: z.number().nonnegative().default(1.1),
        roles: z
          .object(Object.fromEntries(CALLER_ROLES.map((r) => [r, z.number().min(0).max(1).optional()])) as Record<CallerRole, z.ZodOptional<z.ZodNumber>>)
          .strict()
          .refine((r) => Math.abs(Object.values(r).reduce((a, b) => a + (b ?? 0), 0) - 1) < 1e-9, 'the shares must sum to 1')
          .optional(),
      })
      .strict()
      .default({ count: 100, zipf_s: 1.1 }),
    slo: z
      .object({ ttft_ms: z.number().positive().default(2000), tpot_ms: z.number().positive().default(100) })
      .strict()
      .default({ ttft_ms: 2000, tpot_ms: 100 }),
    /** Streaming, timeouts, abandonment and retries of the clients. */
    client: ClientSchema,
    /** $/GPU-hour of local replicas. */
    costs: CostsSchema,
    /** Virtual interval of endpoint_timeseries samples. */
    sample_interval_ms: z.number().positive().default(1000),
    /** Faults in every cell. */
    faults: z.array(FaultSchema).default([]),
    /** Named fault sets a sweep can choose from (`sweep.scenarios`). */
    scenarios: z.record(z.string().regex(/^[A-Za-z0-9_.]+$/, 'use letters, digits, _ and .'), z.array(FaultSchema)).default({}),
    runs: z.array(RunSchema).min(1),
    sweep: SweepSchema.optional(),
    compare: CompareConfigSchema.optional(),
    /**
     * A calibration file written by `switchyard calibrate --fit`, relative to this file: fills in
     * the replicas' step overheads and API-server term and the providers' TTFT/TPOT where this
     * file leaves them unset.
     */
    calibration: z.string().min(1).optional(),
    /** Capacity questions for `switchyard plan` (ignored by `sim`). */
    plan: PlanSchema.optional(),
    /** DuckDB output path, relative to the experiment file (as `trace:` is). */
    output: z.string().min(1),
    /**
     * Strategy modules (.js / .mjs) whose strategies runs may name, paths relative to this file
     * (`strategy-modules.ts`; contract: core `strategies/strategy-module.ts`).
     */
    strategies: z.array(z.string().min(1)).default([]),
  })
  .strict()
  .superRefine((e, ctx) => {
    const replicaCount = e.replicas.count;
    if (e.replicas.weights && e.replicas.weights.length !== e.replicas.count) {
      ctx.addIssue({ code: 'custom', path: ['replicas', 'weights'], message: `needs ${e.replicas.count} weights (one per replica), got ${e.replicas.weights.length}` });
    }
    const names = new Set<string>();
    for (let i = 0; i < replicaCount; i++) names.add(`replica-${i}`);
    e.providers.forEach((p, i) => {
      if (/^replica-\d+$/.test(p.name) || names.has(p.name)) ctx.addIssue({ code: 'custom', path: ['providers', i, 'name'], message: `'${p.name}' is already an endpoint name; pick another` });
      names.add(p.name);
    });
    const checkFaults = (list: readonly { endpoint: string }[], path: (string | number)[]) => {
      list.forEach((f, i) => {
        if (!names.has(f.endpoint)) {
          ctx.addIssue({ code: 'custom', path: [...path, i, 'endpoint'], message: `must name an endpoint (${[...names].join(', ')}), got '${f.endpoint}'` });
        }
      });
    };
    checkFaults(e.faults, ['faults']);
    for (const [name, list] of Object.entries(e.scenarios)) {
      if (name === NO_SCENARIO) ctx.addIssue({ code: 'custom', path: ['scenarios', name], message: `'${NO_SCENARIO}' is reserved for "no extra faults"` });
      checkFaults(list, ['scenarios', name]);
    }
    const labels = new Set<string>();
    e.runs.forEach((r, i) => {
      const label = r.label ?? r.strategy;
      if (labels.has(label)) ctx.addIssue({ code: 'custom', path: ['runs', i, 'label'], message: `label '${label}' is used twice; give each run its own label` });
      labels.add(label);
      if (r.style === 'multi_target' && !e.multi_target) ctx.addIssue({ code: 'custom', path: ['runs', i, 'style'], message: 'style: multi_target needs the experiment\'s multi_target: block (targets)' });
      for (const [field, message] of gatewayReplicasProblems(effectiveGatewayReplicas(e.gateway_replicas, r.gateway_replicas))) {
        if (r.gateway_replicas) ctx.addIssue({ code: 'custom', path: ['runs', i, 'gateway_replicas', field], message });
      }
      if (r.multi_target && r.style !== 'multi_target') ctx.addIssue({ code: 'custom', path: ['runs', i, 'multi_target'], message: 'applies to style: multi_target runs only' });
      for (const n of Object.keys(r.multi_target?.cooldown ?? {})) {
        if (!names.has(n)) ctx.addIssue({ code: 'custom', path: ['runs', i, 'multi_target', 'cooldown', n], message: `must name an endpoint (${[...names].join(', ')}), got '${n}'` });
      }
    });
    if (e.offload) {
      const provs = e.providers.map((p) => p.name);
      if (!provs.includes(e.offload.provider)) ctx.addIssue({ code: 'custom', path: ['offload', 'provider'], message: `must name a provider (${provs.join(', ') || 'none declared'}), got '${e.offload.provider}'` });
    }
    if (e.multi_target) {
      const seen = new Set<string>();
      e.multi_target.targets.forEach((t, i) => {
        if (!names.has(t.endpoint)) ctx.addIssue({ code: 'custom', path: ['multi_target', 'targets', i, 'endpoint'], message: `must name an endpoint (${[...names].join(', ')}), got '${t.endpoint}'` });
        if (seen.has(t.endpoint)) ctx.addIssue({ code: 'custom', path: ['multi_target', 'targets', i, 'endpoint'], message: `'${t.endpoint}' is listed twice` });
        seen.add(t.endpoint);
      });
      for (const n of Object.keys(e.multi_target.cooldown)) {
        if (!names.has(n)) ctx.addIssue({ code: 'custom', path: ['multi_target', 'cooldown', n], message: `must name an endpoint (${[...names].join(', ')}), got '${n}'` });
      }
    }
    if (e.sweep?.scenarios) {
      e.sweep.scenarios.forEach((s, i) => {
        if (s !== NO_SCENARIO && !(s in e.scenarios)) {
          ctx.addIssue({ code: 'custom', path: ['sweep', 'scenarios', i], message: `no scenario '${s}'; scenarios are ${[NO_SCENARIO, ...Object.keys(e.scenarios)].join(', ')}` });
        }
      });
    }
    if (e.compare && !labels.has(e.compare.baseline)) {
      ctx.addIssue({ code: 'custom', path: ['compare', 'baseline'], message: `must be a run label (${[...labels].join(', ')}), got '${e.compare.baseline}'` });
    }
  });

/**
 * A validated experiment. `tracePath` is resolved to an absolute path; `strategyModules` are the
 * records of its `strategies:` modules as this thread loaded them (plain data: cells carry them
 * to sweep workers, which load the same paths again).
 */
export type Experiment = z.infer<typeof ExperimentSchema> & { tracePath: string; file: string; strategyModules?: readonly StrategyModuleRecord[] };

/** The experiment's `health:` block as the core's `HealthOptions` overrides. */
export function healthOptions(exp: Pick<Experiment, 'health'>): Partial<HealthOptions> {
  const h = exp.health;
  return {
    ...(h.failure_threshold !== undefined && { failureThreshold: h.failure_threshold }),
    ...(h.cooldown_ms !== undefined && { cooldownMs: h.cooldown_ms }),
    ...(h.min_availability !== undefined && { minAvailability: h.min_availability }),
    ...(h.ewma_alpha !== undefined && { ewmaAlpha: h.ewma_alpha }),
  };
}

/** Label of a run entry: its `label`, else its strategy. */
export function runLabel(r: z.infer<typeof RunSchema>): string {
  return r.label ?? r.strategy;
}

/**
 * The experiment's providers merged with their profiles, in route order.
 * @throws Error naming `providers[i]` and the field for a missing profile or a missing limit/price.
 */
export function resolveProviders(exp: Pick<Experiment, 'providers'>): ResolvedProvider[] {
  return exp.providers.map((p, i) => resolveProvider(p, `providers[${i}] (${p.name})`));
}

/** The experiment's `output:` resolved against the folder of its file, as `trace:` is. */
export function experimentOutputPath(exp: Pick<Experiment, 'output' | 'file'>): string {
  return resolve(dirname(exp.file), exp.output);
}

/** 1-based line of the YAML node at a path of the experiment file, or null when unknown. */
export type LineOf = (path: readonly PropertyKey[]) => number | null;

/** One problem of an experiment: where (`path`; `field` when it is named otherwise than the dotted path) and what. */
interface Problem {
  path: PropertyKey[];
  field?: string;
  message: string;
}

/**
 * Router problems of the `runs:` entries as written (before the schema passes, so they come in
 * the same report as the schema's): an unknown `strategy` or bad `params` of a per-model run, or
 * a strategy whose module failed (named with its path and error).
 */
function runRouterProblems(raw: unknown, modules: readonly StrategyModuleRecord[]): Problem[] {
  const runs = (raw as { runs?: unknown } | null)?.runs;
  if (!Array.isArray(runs)) return [];
  const STRATEGIES = strategyRegistry(modules);
  const out: Problem[] = [];
  runs.forEach((r: unknown, i) => {
    const run = r as { strategy?: unknown; params?: unknown; style?: unknown; label?: unknown } | null;
    if (typeof run?.strategy !== 'string' || (run.style !== undefined && run.style !== 'per_model')) return;
    const problem = STRATEGIES.paramsProblem(run.strategy, run.params ?? {});
    if (problem === null) return;
    const label = typeof run.label === 'string' ? run.label : run.strategy;
    const key = problem.startsWith('unknown router') || problem.includes(' is unavailable: ') ? 'strategy' : 'params';
    // Named as the routing preflight names a run (`runs[i] (label …).field`).
    out.push({ path: ['runs', i, key], field: `runs[${i}] (label ${label}).${key}`, message: problem });
  });
  return out;
}

/**
 * Dotted experiment paths that sweep axes and plan configurations set (`sweep.axes` keys, each
 * `plan.max_rate.configs[i].set` and `plan.min_replicas.choices[i].set` key), checked against
 * the experiment's schema as written, so a misspelt field is reported with its line before any
 * cell runs, with the nearest allowed name.
 */
function dottedPathProblems(raw: unknown): Problem[] {
  const obj = (x: unknown): Record<string, unknown> | null => (x !== null && typeof x === 'object' && !Array.isArray(x) ? (x as Record<string, unknown>) : null);
  const sites: { at: (string | number)[]; keys: string[] }[] = [];
  const axes = obj(obj(obj(raw)?.sweep)?.axes);
  if (axes) sites.push({ at: ['sweep', 'axes'], keys: Object.keys(axes) });
  const plan = obj(obj(raw)?.plan);
  for (const [question, list] of [['max_rate', 'configs'], ['min_replicas', 'choices']] as const) {
    const entries = obj(plan?.[question])?.[list];
    if (!Array.isArray(entries)) continue;
    entries.forEach((e, i) => {
      const set = obj(obj(e)?.set);
      if (set) sites.push({ at: ['plan', question, list, i, 'set'], keys: Object.keys(set) });
    });
  }
  const out: Problem[] = [];
  for (const { at, keys } of sites) {
    for (const key of keys) {
      const miss = unknownPathSegment(ExperimentSchema, key);
      if (miss === null) continue;
      const parent = key.split('.').slice(0, miss.index).join('.');
      const near = closestPath(ExperimentSchema, key);
      const mean = near ? ` (did you mean '${near}'?)` : '';
      out.push({
        path: [...at, key],
        message: miss.belowValue
          ? `'${key}' names no experiment field: ${parent} is a single value, not a mapping${mean}`
          : `'${key}' names no experiment field: ${parent ? `${parent} has` : 'an experiment has'} no '${miss.segment}'${mean}; allowed there: ${miss.allowed.join(', ')}`,
      });
    }
  }
  return out;
}

/** What to write for a missing top-level field that has no default. */
const REQUIRED_HINTS: Readonly<Record<string, string>> = {
  name: 'e.g. name: my-experiment',
  trace: 'an Arrow trace file relative to this file, e.g. trace: ../traces/mooncake/conversation.arrow (switchyard trace import converts raw traces)',
  replicas: 'e.g. replicas: { count: 4, engine: vllm, gpu: h100_sxm, model: llama-3.1-70b, tp: 4 }',
  runs: 'one entry per strategy, e.g. runs: [{ strategy: fixed }, { strategy: round_robin }]',
  output: 'the results DuckDB file relative to this file, e.g. output: ../results/my-experiment.duckdb',
};

/** The value at `path` inside `root` (undefined where any step is missing). */
function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let v = root;
  for (const k of path) {
    if (typeof v !== 'object' || v === null) return undefined;
    v = (v as Record<PropertyKey, unknown>)[k];
  }
  return v;
}

/**
 * Validates a parsed experiment object (YAML already parsed), after filling it from the
 * calibration file it names (`calibration:`), and resolves its providers. Every
 * problem found is reported in one error: the schema's issues, the runs' unknown routers and bad
 * `params`, and (once the schema passes) the providers'.
 * @param file label for errors and the base for the trace path.
 * @param lineOf line of a field in the file, for `file:line:` in the report (`loadExperiment`
 *   passes it; without it the lines are left out).
 * @throws Error `<file> is invalid (N problems):` then one `<file>:<line>: <field>: <message>`
 *   line per problem (field as a dotted path; allowed values named).
 */
export function parseExperiment(raw: unknown, file: string, lineOf: LineOf = () => null, modules: readonly StrategyModuleRecord[] = []): Experiment {
  const problems: Problem[] = [];
  const input = applyCalibration(raw, file);
  const r = ExperimentSchema.safeParse(input, { reportInput: true });
  // Each module the file names must have been imported in this thread (`loadExperimentAsync`).
  const strategyModules: StrategyModuleRecord[] = [];
  const listed = (raw as { strategies?: unknown } | null)?.strategies;
  if (Array.isArray(listed)) {
    strategyModulePaths(listed.filter((e): e is string => typeof e === 'string'), dirname(file)).forEach((p, i) => {
      const rec = modules.find((m) => m.path === p);
      if (!rec) problems.push({ path: ['strategies', i], message: `strategy module ${p} was not imported; load the experiment with loadExperimentAsync (switchyard sim does)` });
      else if (!strategyModules.includes(rec)) strategyModules.push(rec);
    });
  }
  if (!r.success) {
    for (const i of r.error.issues) {
      if (i.code === 'invalid_type' && i.path.length > 0 && valueAt(input, i.path) === undefined) {
        // A missing field: say so, rather than "expected string, received undefined".
        const hint = i.path.length === 1 ? REQUIRED_HINTS[String(i.path[0])] : undefined;
        const expected = i.expected === 'array' ? 'a list' : i.expected === 'object' ? 'a mapping' : `a ${i.expected}`;
        problems.push({ path: i.path, message: `required: this field is missing (expected ${expected})${hint ? `; ${hint}` : ''}` });
        continue;
      }
      if (i.code === 'invalid_type' && i.path.length === 0 && (input === null || input === undefined)) {
        problems.push({ path: [], message: `the file is empty; an experiment is a mapping with at least ${Object.keys(REQUIRED_HINTS).join(', ')}` });
        continue;
      }
      if (i.code !== 'unrecognized_keys') {
        const { message, fix } = readableIssue(i, ExperimentSchema);
        problems.push({ path: i.path, message: fix ? `${message} — fix: ${fix}` : message });
        continue;
      }
      // One problem per unknown key, at the key itself, with what is allowed there.
      const allowed = allowedKeys(ExperimentSchema, i.path as (string | number)[]) ?? [];
      for (const key of i.keys) {
        const near = closestName(key, allowed);
        problems.push({ path: [...i.path, key], message: `unknown field${near ? ` (did you mean '${near}'?)` : ''}; allowed here: ${allowed.join(', ')}` });
      }
    }
  }
  for (const p of [...runRouterProblems(raw, strategyModules), ...dottedPathProblems(raw)]) {
    // The schema may already report this field; say it once.
    if (!problems.some((q) => q.path.join('.') === p.path.join('.'))) problems.push(p);
  }
  if (r.success) {
    r.data.providers.forEach((p, i) => {
      try {
        resolveProvider(p, `providers[${i}] (${p.name})`);
      } catch (err) {
        problems.push({ path: ['providers', i], message: (err as Error).message });
      }
    });
  }
  if (problems.length > 0 || !r.success) {
    // In file order (a problem without a line last).
    const located = problems.map((p) => ({ ...p, line: lineOf(p.path) })).sort((a, b) => (a.line ?? Infinity) - (b.line ?? Infinity));
    const lines = located.map((p) => `  ${file}${p.line === null ? '' : `:${p.line}`}: ${p.field ?? (p.path.length > 0 ? p.path.join('.') : '(root)')}: ${p.message}`);
    throw new Error(`${file} is invalid (${problems.length} problem${problems.length === 1 ? '' : 's'}):\n${lines.join('\n')}`);
  }
  return { ...r.data, tracePath: resolve(dirname(file), r.data.trace), file, strategyModules };
}

/**
 * Reads and validates an experiment file; problems carry the line of the field in the file.
 * @throws Error naming the file, line and column of a YAML syntax error with the offending line
 *   under it, or `parseExperiment`'s report.
 */
export function loadExperiment(file: string, modules: readonly StrategyModuleRecord[] = []): Experiment {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new Error(`${file}: cannot read experiment: ${(err as Error).message}`);
  }
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines });
  if (doc.errors.length > 0) {
    // The first error is the cause; the parser's later ones mostly follow from it.
    throw new Error(formatYamlSyntaxError(file, yamlSyntaxReport(text, doc.errors[0]!)));
  }
  const lineOf: LineOf = (path) => {
    // The deepest node of the path that exists (a missing field: its parent mapping).
    for (let n = path.length; n >= 0; n--) {
      const node = n === 0 ? doc.contents : doc.getIn(path.slice(0, n) as unknown[], true);
      const range = (node as { range?: [number, number, number] } | null | undefined)?.range;
      if (range) return lines.linePos(range[0]).line;
    }
    return null;
  };
  return parseExperiment(doc.toJS(), file, lineOf, modules);
}

/**
 * `loadExperiment` after importing, in this thread, the strategy modules the file names
 * (`strategies:`), so that runs may use their strategies. What `switchyard sim` and `plan` call.
 * @throws Error as `loadExperiment`.
 */
export async function loadExperimentAsync(file: string): Promise<Experiment> {
  let listed: unknown;
  try {
    listed = (parseDocument(readFileSync(file, 'utf8')).toJS() as { strategies?: unknown } | null)?.strategies;
  } catch {
    listed = undefined; // `loadExperiment` reports an unreadable or broken file
  }
  const entries = Array.isArray(listed) ? listed.filter((e): e is string => typeof e === 'string' && e.length > 0) : [];
  const modules = entries.length > 0 ? await loadStrategyModules(strategyModulePaths(entries, dirname(file))) : [];
  return loadExperiment(file, modules);
}
