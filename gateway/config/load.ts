/**
 * Loads and checks the gateway's configuration directory:
 * - `models.yaml` — the model registry (`models:`), validated by the core's schema;
 * - `routing.yaml` (optional) — the routing file (`default_router`, `local_weight_share`); it
 *   may instead sit in models.yaml as a `routing:` block, but not in both;
 * - `gateway.yaml` (optional) — listener, limits, upstream pools, caller keys, health tunables
 *   (`gateway-settings.ts`);
 * - the environment, through `${VAR}` / `${VAR:-default}` in any string (`interpolate.ts`), the
 *   `ROUTING_*` variables (routing tunables) and the seed's own names for health and routing
 *   settings (`CIRCUIT_*`, `ROUTER_HEALTH_EWMA_ALPHA`, `AFFINITY_SWEEP_THRESHOLD`,
 *   `ENABLE_ROUTEWISE`: `seed-env.ts`); the files win over the environment.
 *
 * Every problem is reported at once as `file:line: field: message — fix: …`, from the YAML
 * parser, the schemas, the core's own construction checks, and the gateway's cross-checks
 * (route kinds it can serve, caller keys naming real models, workers vs stateful routing).
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { LineCounter, parseDocument, type Document } from 'yaml';
import type { z } from 'zod';
import { allowedKeys, checkAutoBlock, readableIssue, closestName, endpointId, ModelsConfigSchema, RoutingCore, ROUTING_ENV_NAMES, routingSettingsFromEnv, withoutUnavailableModels, type HealthOptions, type ModelsConfig, type RoutingSettings, type StrategyModuleRecord, yamlSyntaxReport } from '../../core/index.ts';
import { GatewaySettingsSchema, type GatewaySettings } from './gateway-settings.ts';
import { interpolateEnv } from './interpolate.ts';
import { applySeedEnv, readSeedEnv, type SettingSource } from './seed-env.ts';
import { endpointFamilies, endpointFamily } from '../endpoints/families.ts';
import { adapterFor, defaultEndpoints, routeKinds } from '../upstream/adapters.ts';
import { quotaFetchers } from '../routewise/quota-fetchers.ts';
import { loadStrategyModules, strategyModulePaths, strategyRegistry } from './strategy-modules.ts';

/** One thing wrong with the configuration. */
export interface ConfigProblem {
  /** File name as given (e.g. `gateway/example/models.yaml`), or `(environment)`/`(options)`. */
  file: string;
  /** 1-based line of the field (or of its nearest parent that exists), or null. */
  line: number | null;
  /** Dotted path of the field inside the file, e.g. `models.0.route.1.weight`; `(root)` for the file. */
  field: string;
  message: string;
  /** How to mend it, when something more specific than the message can be said. */
  fix: string | null;
  /** 1-based column, where known (YAML syntax errors). */
  column?: number | null;
  /** The offending source line with a caret under the column (YAML syntax errors). */
  snippet?: string | null;
}

/** The configuration is unusable; `problems` lists every reason, `message` prints them. */
export class ConfigError extends Error {
  constructor(readonly problems: ConfigProblem[]) {
    super(`configuration is invalid (${problems.length} problem${problems.length === 1 ? '' : 's'}):\n${problems.map(formatProblem).join('\n')}`);
  }
}

/** `file:line[:column]: field: message — fix: …`, then the snippet (indented) when there is one. */
export function formatProblem(p: ConfigProblem): string {
  const where = p.line === null ? p.file : p.column ? `${p.file}:${p.line}:${p.column}` : `${p.file}:${p.line}`;
  const head = `  ${where}: ${p.field}: ${p.message}${p.fix ? ` — fix: ${p.fix}` : ''}`;
  return p.snippet ? `${head}\n${p.snippet.replace(/^/gm, '    ')}` : head;
}

/** A loaded, validated configuration. */
export interface GatewayConfig {
  /** Paths read (null for a file that is absent), for logs. */
  readonly files: { models: string; routing: string | null; gateway: string | null };
  /** The core's validated model registry + routing file (route `api_key`s included). */
  readonly models: ModelsConfig;
  readonly settings: GatewaySettings;
  /**
   * The core's routing tunables: gateway.yaml `routing_settings` when given, else the
   * `ROUTING_*` environment variables (core `routingSettingsFromEnv`), else the core's defaults.
   */
  readonly routingSettings: Record<string, unknown> | RoutingSettings;
  /** The value, source and environment variable of each setting the seed names (`seed-env.ts`), for `validate`. */
  readonly settingSources: readonly SettingSource[];
  /** Things that work but are probably not meant (printed at start and by `validate`). */
  readonly warnings: string[];
  /**
   * The strategy modules of gateway.yaml `strategies:`, as this thread loaded them (each worker
   * thread loads the same paths again before it builds a core: `loadStrategyModules`).
   */
  readonly strategies: readonly StrategyModuleRecord[];
  /**
   * Models left out because their strategy module failed (`models` holds the others), one
   * problem each naming the model's `router` field, the module's path and the error. `validate`
   * reports them and exits 1; the gateway starts without them and logs each.
   */
  readonly unavailableModels: readonly ConfigProblem[];
}

/**
 * Strategies whose per-process state does not change what a request gets when several workers
 * each hold their own copy: static draws and orders (`fixed`, `round_robin`, the multi-target
 * `failover`, `consistent_hash`, `least_cost`). Strategies that learn from traffic (latency,
 * load, RouteWise) are refused with more than one worker, as are per-target rate limits (N
 * workers would admit N times the limit). Breakers, session affinity and prefill load are per
 * worker too, but only blunt decisions: a warning.
 */
export const WORKER_SAFE_STRATEGIES: readonly string[] = ['fixed', 'round_robin', 'failover', 'consistent_hash', 'least_cost'];

interface SourceFile {
  name: string;
  doc: Document | null;
  lines: LineCounter;
  value: unknown;
}

/**
 * Loads `path`: a directory holding models.yaml (and optionally routing.yaml, gateway.yaml), or
 * the models file itself (its siblings are read from the same directory).
 * @param env variables for `${VAR}` (default `process.env`).
 * @throws ConfigError listing every problem with file, line, field and fix.
 */
export function loadGatewayConfig(
  path: string,
  env: Readonly<Record<string, string | undefined>> = process.env,
  strategies: readonly StrategyModuleRecord[] = [],
): GatewayConfig {
  const isDir = existsSync(path) && statSync(path).isDirectory();
  const dir = isDir ? path : dirname(path);
  const modelsPath = isDir ? join(dir, 'models.yaml') : path;
  if (!existsSync(modelsPath)) {
    throw new ConfigError([{ file: modelsPath, line: null, field: '(root)', message: 'file not found', fix: `give a models.yaml or a directory that holds one (switchyard gateway --config PATH, switchyard validate PATH)` }]);
  }
  const sibling = (name: string): string | null => {
    const p = join(dir, name);
    return basename(modelsPath) !== name && existsSync(p) ? p : null;
  };
  const routingPath = sibling('routing.yaml');
  const gatewayPath = sibling('gateway.yaml');
  const problems: ConfigProblem[] = [];
  const models = readYaml(modelsPath, problems);
  const routing = routingPath ? readYaml(routingPath, problems) : null;
  const gateway = gatewayPath ? readYaml(gatewayPath, problems) : null;
  if (problems.length > 0) throw new ConfigError(problems);
  return checkConfig({ models, routing, gateway }, env, { models: modelsPath, routing: routingPath, gateway: gatewayPath }, strategies, dir);
}

/**
 * `loadGatewayConfig` after importing, in this thread, the strategy modules gateway.yaml names
 * (`strategies:`), so that models may route with them. What the CLI's `gateway` and `validate`
 * call, at start and on every reload.
 * @throws ConfigError as `loadGatewayConfig`.
 */
export async function loadGatewayConfigAsync(path: string, env: Readonly<Record<string, string | undefined>> = process.env): Promise<GatewayConfig> {
  const isDir = existsSync(path) && statSync(path).isDirectory();
  const dir = isDir ? path : dirname(path);
  const gatewayPath = join(dir, 'gateway.yaml');
  let entries: string[] = [];
  if (existsSync(gatewayPath) && (isDir || basename(path) !== 'gateway.yaml')) {
    // Read leniently here: the full load below reports whatever is wrong with the file.
    const value = (() => {
      try {
        return parseDocument(readFileSync(gatewayPath, 'utf8')).toJS() as unknown;
      } catch {
        return null;
      }
    })();
    const list = isRecord(value) ? value.strategies : undefined;
    if (Array.isArray(list)) entries = list.filter((e): e is string => typeof e === 'string' && e.length > 0);
  }
  const records = entries.length > 0 ? await loadStrategyModules(strategyModulePaths(entries, dir)) : [];
  return loadGatewayConfig(path, env, records);
}

/**
 * Builds a configuration from values instead of files (tests, embedding). Same checks as
 * `loadGatewayConfig`; problems name the pseudo-files `models`, `routing`, `gateway`.
 * @throws ConfigError
 */
export function buildGatewayConfig(
  raw: { models: unknown; routing?: unknown; gateway?: unknown },
  env: Readonly<Record<string, string | undefined>> = {},
  strategies: readonly StrategyModuleRecord[] = [],
): GatewayConfig {
  const wrap = (name: string, value: unknown): SourceFile => ({ name, doc: null, lines: new LineCounter(), value });
  return checkConfig(
    {
      models: wrap('models', raw.models),
      routing: raw.routing === undefined ? null : wrap('routing', raw.routing),
      gateway: raw.gateway === undefined ? null : wrap('gateway', raw.gateway),
    },
    env,
    { models: 'models', routing: raw.routing === undefined ? null : 'routing', gateway: raw.gateway === undefined ? null : 'gateway' },
    strategies,
    process.cwd(),
  );
}

function readYaml(file: string, problems: ConfigProblem[]): SourceFile {
  const lines = new LineCounter();
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    problems.push({ file, line: null, field: '(root)', message: `cannot read: ${(e as Error).message}`, fix: null });
    return { name: file, doc: null, lines, value: null };
  }
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: true });
  for (const err of doc.errors) {
    const r = yamlSyntaxReport(text, err);
    problems.push({ file, line: r.line, column: r.column, snippet: r.snippet, field: '(yaml)', message: r.reason, fix: 'fix the YAML syntax (indentation, quotes, a missing colon)' });
  }
  if (doc.errors.length > 0) return { name: file, doc, lines, value: null };
  try {
    return { name: file, doc, lines, value: doc.toJS() };
  } catch (e) {
    // The parser accepts an alias to an anchor defined nowhere (or later), and an alias
    // expansion past its limit; building the value then throws. Reported like a syntax error.
    const message = (e as Error).message;
    const alias = /alias[^:]*: (\S+)/i.exec(message)?.[1];
    const at = alias === undefined ? -1 : text.search(new RegExp(`\\*${alias.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(?![\\w-])`));
    const pos = at >= 0 ? lines.linePos(at) : null;
    problems.push({
      file,
      line: pos?.line ?? null,
      field: '(yaml)',
      message,
      fix: alias === undefined ? 'use fewer aliases (each `*name` copies its anchor)' : `define the anchor &${alias} before the alias *${alias}, or write the value out`,
    });
    return { name: file, doc, lines, value: null };
  }
}

function checkConfig(
  src: { models: SourceFile; routing: SourceFile | null; gateway: SourceFile | null },
  env: Readonly<Record<string, string | undefined>>,
  files: GatewayConfig['files'],
  loadedStrategies: readonly StrategyModuleRecord[],
  baseDir: string,
): GatewayConfig {
  const problems: ConfigProblem[] = [];
  const warnings: string[] = [];
  /** Records a problem at `path`; `key`: an unknown key inside that mapping, whose own line is reported. */
  const at = (f: SourceFile, path: readonly (string | number)[], message: string, fix: string | null, key?: string): void => {
    problems.push({ file: f.name, line: (key !== undefined ? keyLine(f, path, key) : null) ?? lineOf(f, path), field: path.length > 0 ? path.join('.') : '(root)', message, fix });
  };
  const unknownKey = (issue: z.core.$ZodIssue): string | undefined => (issue.code === 'unrecognized_keys' ? issue.keys[0] : undefined);

  // 1. Environment.
  const resolve = (f: SourceFile | null): unknown => {
    if (!f) return undefined;
    const { value, missing } = interpolateEnv(f.value, env);
    for (const m of missing) at(f, m.path, `environment variable ${m.variable} is not set`, `export ${m.variable}=… or write \${${m.variable}:-default}`);
    return value;
  };
  const modelsDoc = resolve(src.models);
  const routingDoc = resolve(src.routing);
  const gatewayDoc = resolve(src.gateway);

  // 2. Schemas. models.yaml may hold `models:` and (without a routing.yaml) `routing:`.
  if (!isRecord(modelsDoc)) {
    at(src.models, [], 'expected a mapping with a `models:` list', 'start the file with `models:` and list each model under it');
    throw new ConfigError(problems);
  }
  for (const key of Object.keys(modelsDoc)) {
    if (key !== 'models' && key !== 'routing' && key !== 'auto') at(src.models, [key], `unknown top-level key '${key}'`, 'models.yaml holds `models:` (and optionally `routing:` and `auto:`); gateway settings go in gateway.yaml');
  }
  if (modelsDoc.routing !== undefined && src.routing) {
    at(src.models, ['routing'], 'routing is given both here and in routing.yaml', 'keep one of the two');
  }
  const routingInModels = modelsDoc.routing !== undefined;
  // reportInput: zod 4 leaves the offending value out of issues unless asked.
  const modelsParsed = ModelsConfigSchema.safeParse(
    {
      models: modelsDoc.models,
      ...(modelsDoc.auto !== undefined ? { auto: modelsDoc.auto } : {}),
      ...(routingInModels ? { routing: modelsDoc.routing } : routingDoc !== undefined && routingDoc !== null ? { routing: routingDoc } : {}),
    },
    { reportInput: true },
  );
  if (!modelsParsed.success) {
    for (const issue of modelsParsed.error.issues) {
      const [head, ...rest] = issue.path as (string | number)[];
      const inRouting = head === 'routing' && !routingInModels && src.routing;
      const file = inRouting ? src.routing! : src.models;
      const path = inRouting ? rest : (issue.path as (string | number)[]);
      const { message, fix } = readableIssue(issue, ModelsConfigSchema);
      at(file, path, message, fix, unknownKey(issue));
    }
  }
  const settingsParsed = GatewaySettingsSchema.safeParse(gatewayDoc ?? {}, { reportInput: true });
  if (!settingsParsed.success) {
    for (const issue of settingsParsed.error.issues) {
      const { message, fix } = readableIssue(issue, GatewaySettingsSchema);
      at(src.gateway ?? { name: 'gateway.yaml', doc: null, lines: new LineCounter(), value: null }, issue.path as (string | number)[], message, fix, unknownKey(issue));
    }
  }
  const seedEnv = readSeedEnv(env);
  for (const p of seedEnv.problems) problems.push({ file: '(environment)', line: null, field: p.variable, message: p.message, fix: p.fix });
  if (problems.length > 0 || !modelsParsed.success || !settingsParsed.success) throw new ConfigError(problems);

  // 3. Routes the gateway can serve.
  modelsParsed.data.models.forEach((m, mi) => {
    m.route.forEach((r, ri) => {
      const path = ['models', mi, 'route', ri];
      for (const p of routeServeProblems(r)) at(src.models, [...path, p.field], p.message, p.fix);
      const url = URL.canParse(r.base_url) ? new URL(r.base_url) : null;
      if (url && url.protocol === 'http:' && r.api_key && !isLoopback(url.hostname)) {
        warnings.push(`models.${mi} (id '${m.id}').route.${ri}: api_key is sent in clear over http:// to ${url.hostname}`);
      }
    });
  });

  // 4. Routing settings: gateway.yaml, else ROUTING_* variables. Then the core's own checks
  // (unknown router, bad router_params or settings, duplicate ids / endpoints).
  const fileSettings = settingsParsed.data;
  let routingSettings: Record<string, unknown> | RoutingSettings = fileSettings.routing_settings;
  const envRouting = Object.keys(env).filter((k) => k.startsWith('ROUTING_') && env[k]);
  // A misspelt variable would otherwise be ignored without a word.
  for (const k of Object.keys(env)) {
    if (!(k.startsWith('ROUTING_') || k.startsWith('UPSTREAM_CONCURRENCY_')) || ROUTING_ENV_NAMES.includes(k)) continue;
    const near = closestName(k, ROUTING_ENV_NAMES);
    warnings.push(`${k} is not a Switchyard setting and is ignored${near ? `; did you mean ${near}?` : ''}`);
  }
  if (Object.keys(routingSettings).length > 0) {
    if (envRouting.length > 0) warnings.push(`gateway.yaml sets routing_settings, so ${envRouting.join(', ')} ${envRouting.length > 1 ? 'are' : 'is'} ignored`);
  } else if (envRouting.length > 0) {
    try {
      routingSettings = routingSettingsFromEnv(env);
    } catch (e) {
      problems.push({ file: '(environment)', line: null, field: 'ROUTING_*', message: (e as Error).message, fix: null });
    }
  }
  // The seed's names fill what the files leave unset.
  const routingDefault = routingInModels ? (modelsDoc.routing as Record<string, unknown> | null) : isRecord(routingDoc) ? routingDoc : null;
  const seeded = applySeedEnv({
    env,
    vars: seedEnv.vars,
    settings: fileSettings,
    models: modelsParsed.data,
    routingSettings,
    routingFromEnv: routingSettings !== fileSettings.routing_settings,
    defaultRouterInFile: isRecord(routingDefault) && routingDefault.default_router !== undefined,
    gatewayFile: files.gateway ?? 'gateway.yaml',
    routingFile: routingInModels || !files.routing ? files.models : files.routing,
  });
  const { settings } = seeded;
  routingSettings = seeded.routingSettings;
  warnings.push(...seeded.warnings);

  // Strategy modules: each must have been imported in this thread (`loadGatewayConfigAsync`).
  const gwFile = src.gateway ?? { name: 'gateway.yaml', doc: null, lines: new LineCounter(), value: null };
  const strategies: StrategyModuleRecord[] = [];
  strategyModulePaths(settings.strategies, baseDir).forEach((p, i) => {
    const r = loadedStrategies.find((x) => x.path === p);
    if (!r) at(gwFile, ['strategies', i], `strategy module ${p} was not imported`, 'load the configuration with loadGatewayConfigAsync (the switchyard CLI does)');
    else if (!strategies.includes(r)) strategies.push(r);
  });
  for (const r of strategies) if (r.error !== null) warnings.push(`${r.error} — models routed by '${r.name}' are left out`);
  const registry = problems.length === 0 ? strategyRegistry(strategies) : null;
  // Models whose strategy module failed are left out, each reported; the others load.
  const split = registry ? withoutUnavailableModels(seeded.models, registry) : { config: seeded.models, unavailable: [] };
  const models = split.config;
  const unavailableModels: ConfigProblem[] = split.unavailable.map((u) => {
    const path = ['models', u.index, ...u.field.split('.').map((s) => (/^\d+$/.test(s) ? Number(s) : s))];
    return { file: src.models.name, line: lineOf(src.models, path), field: path.join('.'), message: `model '${u.id}' is not loaded: ${u.reason}`, fix: 'fix or remove the strategy module, or route this model with another router' };
  });
  // Core errors name models by their index in `models`, which lacks the left-out ones.
  const left = new Set(split.unavailable.map((u) => u.index));
  const fileIndex = seeded.models.models.map((_, i) => i).filter((i) => !left.has(i));
  // Caller keys may still name a left-out model: it is reported once, above, not per key.
  const leftOut = new Set(seeded.models.models.filter((_, i) => left.has(i)).flatMap((m) => [m.id, ...m.aliases]));
  let core: RoutingCore | null = null;
  if (problems.length === 0) {
    try {
      core = new RoutingCore(models, { health: healthOptions(settings), settings: routingSettings, defaultEndpoints, registry: registry! });
    } catch (e) {
      const msg = (e as Error).message;
      const m = /^models\[(\d+)\] \(id '[^']*'\)(?:\.route\[(\d+)\])?: (.*)$/s.exec(msg);
      if (m) {
        const index = fileIndex[Number(m[1])] ?? Number(m[1]);
        const unknownRouter = m[2] === undefined && /unknown router/.test(m[3]!);
        if (unknownRouter && seeded.models.models[index]?.router === undefined) {
          // The model took the routing file's default: that line is the one to fix.
          const [file, field] = !routingInModels && src.routing ? [src.routing, ['default_router']] : [src.models, ['routing', 'default_router']];
          at(file, field, m[3]!, 'set default_router to one of the known routers');
        } else {
          const path: (string | number)[] = ['models', index];
          if (m[2] !== undefined) path.push('route', Number(m[2]));
          else if (/router_params/.test(m[3]!)) path.push('router_params');
          else if (unknownRouter) path.push('router');
          // An unknown router_params key is reported on its own line.
          const key = path.at(-1) === 'router_params' ? /unknown key\(s\) '([^']+)'/.exec(m[3]!)?.[1] : undefined;
          at(src.models, path, m[3]!, null, key);
        }
      } else {
        at(src.gateway ?? src.models, [], msg, null);
      }
    }
  }

  // 5. Callers.
  const gw = gwFile;
  if (settings.auth.mode === 'keys' && settings.auth.keys.length === 0) {
    at(gw, ['auth', 'keys'], 'auth.mode is keys but no key is configured, so every request would get 401', 'add a key (id + sha256) or set auth.mode: none for local use');
  }
  const ids = new Set<string>();
  const hashes = new Set<string>();
  settings.auth.keys.forEach((k, ki) => {
    if (ids.has(k.id)) at(gw, ['auth', 'keys', ki, 'id'], `caller id '${k.id}' is used twice`, 'give each key its own id');
    if (hashes.has(k.sha256.toLowerCase())) at(gw, ['auth', 'keys', ki, 'sha256'], 'the same key hash is listed twice', 'remove the duplicate');
    ids.add(k.id);
    hashes.add(k.sha256.toLowerCase());
    k.allowed_models?.forEach((name, ni) => {
      if (core && !core.model(name) && !leftOut.has(name)) {
        at(gw, ['auth', 'keys', ki, 'allowed_models', ni], `no model or alias is named '${name}'`, `use one of: ${core.allModels().flatMap((mm) => [mm.id, ...mm.aliases]).join(', ')}`);
      }
    });
  });

  if (settings.server.metrics_without_key && !isPrivateHost(settings.server.admin_host)) {
    at(gw, ['server', 'metrics_without_key'], `admin_host '${settings.server.admin_host}' is not a loopback or private address, so /metrics would be open to anyone who can reach it`, 'set server.admin_host to a private address (127.0.0.1, 10.x, 172.16-31.x, 192.168.x, fc00::/7) or drop metrics_without_key');
  }

  if (settings.store?.kind === 'pglite' && settings.server.workers > 1) {
    at(gw, ['store', 'kind'], `an embedded pglite store belongs to one process, but server.workers is ${settings.server.workers}`, 'use store.kind: postgres (a server every worker connects to) or server.workers: 1');
  }

  // 6. Workers and per-worker state.
  const stateful = statefulModels(models, workerSafeModules(strategies));
  if (settings.server.workers > 1) {
    if (settings.state.backend === 'redis') {
      warnings.push(`server.workers is ${settings.server.workers} with state.backend redis: ${WORKERS_SHARE_THROUGH_REDIS}`);
    } else if (stateful.length > 0) {
      at(gw, ['server', 'workers'], `${settings.server.workers} workers, but routing state would be split per worker for: ${stateful.join(', ')}`, WORKER_SCOPE_FIX);
    } else {
      warnings.push(`server.workers is ${settings.server.workers}: breakers, session affinity, prefill load and in-flight bounds are per worker`);
    }
  }


  if (problems.length > 0) throw new ConfigError(problems);
  for (const m of models.models) {
    for (const r of m.route) if (r.local === false && !r.api_key) warnings.push(`model '${m.id}': remote route ${r.base_url} has no api_key`);
    const router = m.router ?? models.routing.default_router;
    m.route.forEach((r, ri) => {
      const at = `models.${models.models.indexOf(m)} (id '${m.id}').route.${ri}`;
      // Quota and concurrency routes are RouteWise's: any other router routes them as on-demand.
      if (router !== 'routewise') {
        const fields = (['provider_type', 'quota', 'quota_pool', 'concurrency', 'concurrency_pool', 'quota_source', 'local_quota_fallback'] as const).filter((f) => r[f] !== undefined && !(f === 'provider_type' && r[f] === 'on_demand'));
        if (fields.length > 0) warnings.push(`${at}: ${fields.join(', ')} ${fields.length > 1 ? 'are' : 'is'} read by router routewise only; this model's router is ${router}, which ignores ${fields.length > 1 ? 'them' : 'it'} — set router: routewise or remove ${fields.length > 1 ? 'them' : 'it'}`);
      } else if (r.quota_source !== undefined && !quotaFetchers.get(r.quota_source.provider)) {
        warnings.push(`${at}: quota_source.provider '${r.quota_source.provider}' has no registered quota fetcher, so the route stays unready — register one (registerQuotaFetcher), or replace quota_source with local_quota_fallback: true`);
      }
    });
  }
  // 7. Auto profiles: a bad block turns auto models off (listed here and logged at start), never refuses the file.
  const auto = checkAutoBlock(models.auto, models.models);
  for (const w of auto.warnings) warnings.push(w);
  if (auto.problems.length > 0) warnings.push(`auto models are off: ${auto.problems.join('; ')}`);
  else if (auto.config !== null && !settings.auto_mode_enabled) warnings.push('models.yaml has auto: profiles, but gateway.yaml auto_mode_enabled is false, so they are not served unless it is turned on at run time (PUT /admin/settings/auto_mode_enabled)');
  else if (auto.config !== null && settings.server.workers > 1) warnings.push(`server.workers is ${settings.server.workers}: auto-model conversations are kept per worker, so a tool loop may change model when its requests reach another worker`);
  return { files, models, settings, routingSettings, settingSources: seeded.sources, warnings, strategies, unavailableModels };
}

/** Names of the loaded strategy modules that declare `workerSafe: true`. */
export function workerSafeModules(strategies: readonly StrategyModuleRecord[]): string[] {
  return strategies.filter((s) => s.error === null && s.workerSafe).map((s) => s.name);
}

/** How to mend a configuration refused for its worker count (`workerScopeError`, `checkConfig`). */
export const WORKER_SCOPE_FIX = `share the routing state through Redis (state: {backend: redis, url: redis://HOST:6379} in gateway.yaml), or set server.workers: 1 (or --workers 1), or route those models with ${WORKER_SAFE_STRATEGIES.join(' / ')} (or a strategy module that exports workerSafe: true because its state may be split per worker)`;

/**
 * What several workers (or replicas) share with `state.backend: redis` (`gateway/state/`): said in
 * the start-up warning of a multi-worker gateway.
 */
export const WORKERS_SHARE_THROUGH_REDIS = 'breakers and the half-open probe claim, affinity pins and prefill hints, outbound limits and in-flight counts per provider key, RouteWise quota and concurrency units, target rate-limit windows and key-pool silences and bindings are shared through Redis; learned latency statistics stay per worker';

/**
 * The refusal of `models` under `workers` gateway workers, or null when they may run so. Used at
 * load (`checkConfig`), by `startGateway` for every configuration generation (start and SIGHUP
 * reload, so a reload that would split state is rejected and the old configuration kept, also
 * when `--workers` overrides the file), and by the CLI's multi-worker reload. With
 * `stateBackend` `redis` the workers share their routing state as replicas do, so none is refused.
 * @returns `N workers, but routing state would be split per worker for: <labels> — fix: …`.
 */
export function workerScopeError(models: ModelsConfig, workers: number, moreSafe: readonly string[] = [], stateBackend: 'local' | 'redis' = 'local'): string | null {
  if (workers <= 1 || stateBackend === 'redis') return null;
  const stateful = statefulModels(models, moreSafe);
  if (stateful.length === 0) return null;
  return `${workers} workers, but routing state would be split per worker for: ${stateful.join(', ')} — fix: ${WORKER_SCOPE_FIX}`;
}

/**
 * Models whose routing keeps per-process state that several workers would split: a router or
 * multi-target strategy outside `WORKER_SAFE_STRATEGIES`, or targets with a `rate_limit`. A
 * `routewise` model with quota / concurrency routes also names those routes (endpoint ids):
 * their reservations are process-local (the planner's `assertWorkerScope`).
 * @returns labels like `model 'demo' (router least_latency)` or
 *   `model 'rw' (router routewise; quota/concurrency routes <endpoint id>, <endpoint id> keep process-local reservations)`.
 * @param moreSafe strategy modules that declare themselves worker-safe (`workerSafeModules`).
 */
export function statefulModels(models: ModelsConfig, moreSafe: readonly string[] = []): string[] {
  const out: string[] = [];
  const safe = (name: string): boolean => WORKER_SAFE_STRATEGIES.includes(name) || moreSafe.includes(name);
  for (const m of models.models) {
    // Multi-target blocks are read structurally so this stays valid as the core's schema grows.
    const mt = (m as { routing?: { strategy?: string; targets?: Array<{ rate_limit?: unknown }> } }).routing;
    if (mt) {
      const strategy = mt.strategy ?? 'failover';
      if (!safe(strategy)) out.push(`model '${m.id}' (strategy ${strategy})`);
      if (mt.targets?.some((t) => t.rate_limit !== undefined)) out.push(`model '${m.id}' (target rate limits)`);
      continue;
    }
    const router = m.router ?? models.routing.default_router;
    if (safe(router)) continue;
    const reserved = router === 'routewise' ? m.route.filter((r) => (r.provider_type ?? 'on_demand') !== 'on_demand').map((r) => endpointId(m.id, r.kind, r.base_url)) : [];
    out.push(
      reserved.length > 0
        ? `model '${m.id}' (router ${router}; quota/concurrency route${reserved.length > 1 ? 's' : ''} ${reserved.join(', ')} keep${reserved.length > 1 ? '' : 's'} process-local reservations)`
        : `model '${m.id}' (router ${router})`,
    );
  }
  return out;
}

/** The core's health options from `gateway.yaml` (seconds → ms). */
export function healthOptions(s: GatewaySettings): Partial<HealthOptions> {
  const h = s.health;
  const out: { -readonly [K in keyof HealthOptions]?: number } = {};
  if (h.failure_threshold !== undefined) out.failureThreshold = h.failure_threshold;
  if (h.cooldown_sec !== undefined) out.cooldownMs = h.cooldown_sec * 1000;
  if (h.min_availability !== undefined) out.minAvailability = h.min_availability;
  if (h.ewma_alpha !== undefined) out.ewmaAlpha = h.ewma_alpha;
  return out;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** Loopback or a private (RFC 1918 / unique-local) address: where an unauthenticated scraper port may listen. */
function isPrivateHost(host: string): boolean {
  return isLoopback(host) || /^(10(\.\d{1,3}){3}|192\.168(\.\d{1,3}){2}|172\.(1[6-9]|2\d|3[01])(\.\d{1,3}){2}|f[cd][0-9a-f]{2}:.*)$/i.test(host);
}

function isLoopback(host: string): boolean {
  return /^(localhost|127(\.\d{1,3}){3}|\[::1\]|::1)$/i.test(host);
}

/** Line of `path` in the file, or of its deepest ancestor present there. */
/** 1-based line of the key `key` in the mapping at `path`, or null when it is not there. */
function keyLine(f: SourceFile, path: readonly (string | number)[], key: string): number | null {
  if (!f.doc) return null;
  const map = path.length === 0 ? f.doc.contents : f.doc.getIn(path, true);
  const items = (map as { items?: Array<{ key?: { value?: unknown; range?: [number, number, number] } }> } | null)?.items ?? [];
  const range = items.find((p) => p.key?.value === key)?.key?.range;
  return range ? f.lines.linePos(range[0]).line : null;
}

function lineOf(f: SourceFile, path: readonly (string | number)[]): number | null {
  if (!f.doc) return null;
  for (let n = path.length; n >= 0; n--) {
    const node = n === 0 ? f.doc.contents : f.doc.getIn(path.slice(0, n), true);
    const range = (node as { range?: [number, number, number] } | undefined)?.range;
    if (range) return f.lines.linePos(range[0]).line;
  }
  return null;
}

/** A zod issue as message + fix, with the allowed keys or values spelled out. */
/** A route field the gateway cannot serve: the field of the route entry, what is wrong, the fix. */
export interface RouteServeProblem {
  field: 'kind' | 'endpoints' | 'base_url';
  message: string;
  fix: string;
}

/**
 * What keeps the gateway from serving a route that passed `RouteSchema`: a kind without an
 * adapter, endpoint families it does not register or the kind does not serve, a base URL that is
 * not an absolute http(s) URL. models.yaml and the admin API's route bodies both check with it,
 * so a route added at run time is refused exactly when the file would refuse it.
 */
export function routeServeProblems(r: { kind: string; base_url: string; endpoints?: readonly string[] | undefined }): RouteServeProblem[] {
  const out: RouteServeProblem[] = [];
  const kinds = routeKinds();
  const unknown = (r.endpoints ?? []).filter((e) => !endpointFamily(e));
  if (!kinds.includes(r.kind)) {
    out.push({ field: 'kind', message: `route kind '${r.kind}' has no gateway adapter`, fix: `use one of: ${kinds.join(', ')} (vLLM, SGLang, Ollama and OpenAI-style APIs are all openai_compat)` });
  } else if (unknown.length > 0) {
    out.push({ field: 'endpoints', message: `the gateway has no endpoint family ${unknown.map((e) => `'${e}'`).join(', ')}`, fix: `list only endpoint families it serves: ${endpointFamilies().map((f) => f.endpoint).join(', ')}` });
  } else {
    const served = adapterFor(r.kind).endpoints;
    const extra = (r.endpoints ?? []).filter((e) => !served.includes(e));
    if (extra.length > 0) out.push({ field: 'endpoints', message: `a ${r.kind} route cannot serve ${extra.join(', ')}`, fix: `list only endpoints its kind serves: ${served.join(', ')}` });
  }
  if (!URL.canParse(r.base_url)) {
    out.push({ field: 'base_url', message: `'${r.base_url}' is not an absolute URL`, fix: 'write e.g. http://127.0.0.1:8000/v1' });
  } else {
    const url = new URL(r.base_url);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') out.push({ field: 'base_url', message: `'${url.protocol}' URLs cannot be served by the gateway`, fix: 'use an http:// or https:// base_url (sim:// is for the simulator)' });
  }
  return out;
}

