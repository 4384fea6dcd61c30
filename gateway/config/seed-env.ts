/**
 * The seed's own environment names for settings the gateway otherwise reads from its files
 * (seed 000, "端点健康与熔断", "会话亲和", `router_params`):
 *
 * | variable                    | accepted                    | setting it fills                              |
 * |-----------------------------|-----------------------------|-----------------------------------------------|
 * | `CIRCUIT_FAILURE_THRESHOLD` | integer ≥ 1                 | gateway.yaml `health.failure_threshold`       |
 * | `CIRCUIT_COOLDOWN_SECONDS`  | number > 0                  | gateway.yaml `health.cooldown_sec`            |
 * | `CIRCUIT_MIN_AVAILABILITY`  | number in [0, 1]            | gateway.yaml `health.min_availability`        |
 * | `ROUTER_HEALTH_EWMA_ALPHA`  | number in (0, 1]            | gateway.yaml `health.ewma_alpha`              |
 * | `AFFINITY_SWEEP_THRESHOLD`  | integer ≥ 1                 | gateway.yaml `routing_settings.affinity_sweep_threshold` |
 * | `ENABLE_ROUTEWISE`          | boolean (1/0, true/false, yes/no, on/off) | the routing file's `default_router`: `fixed` ⇒ `routewise` |
 *
 * The files win: a variable fills its setting only where the file leaves it unset (key by key),
 * and is otherwise ignored with a warning. `AFFINITY_SWEEP_THRESHOLD` also yields to
 * `ROUTING_AFFINITY_SWEEP_THRESHOLD`, the gateway's own name for the same setting.
 * `ENABLE_ROUTEWISE=true` is the seed's older switch: while `default_router` is `fixed` (given or
 * by default) it becomes `routewise`, so every direct model without a `router:` of its own is
 * routed by RouteWise; a model that names its router, and multi-target models, are unchanged; a
 * `default_router` other than `fixed` wins. Unset or empty ⇒ no effect. A value outside its range
 * refuses the start (and `validate`) naming the variable and what it accepts.
 */

import { DEFAULT_HEALTH_OPTIONS, DEFAULT_ROUTING_SETTINGS, type ModelsConfig, type RoutingSettings } from '../../core/index.ts';
import type { GatewaySettings } from './gateway-settings.ts';

/** The seed's variable names, in the table's order. */
export const SEED_ENV_NAMES = ['CIRCUIT_FAILURE_THRESHOLD', 'CIRCUIT_COOLDOWN_SECONDS', 'CIRCUIT_MIN_AVAILABILITY', 'ROUTER_HEALTH_EWMA_ALPHA', 'AFFINITY_SWEEP_THRESHOLD', 'ENABLE_ROUTEWISE'] as const;
/** One of `SEED_ENV_NAMES`. */
export type SeedEnvName = (typeof SEED_ENV_NAMES)[number];

/** Where a setting's value in force came from (printed by `switchyard validate`). */
export interface SettingSource {
  /** The setting, as its file spells it: `health.failure_threshold`, `routing.default_router`, … */
  readonly setting: string;
  /** The seed's environment variable for it. */
  readonly variable: SeedEnvName;
  /** The variable's text as set (trimmed); null when unset or blank. */
  readonly envText: string | null;
  /** The value in force. */
  readonly value: number | string;
  /** Who decided it: a file, an environment variable (`variable`, or the name in `by`), or the default. */
  readonly source: 'file' | 'environment' | 'default';
  /** The file (for `file`) or the variable (for `environment`) that set it. */
  readonly by: string | null;
}

interface Rule {
  readonly accepted: string;
  readonly parse: (text: string) => number | boolean | null;
}

const TRUE = new Set(['1', 'true', 'yes', 'on']);
const FALSE = new Set(['0', 'false', 'no', 'off']);
const num = (ok: (n: number) => boolean) => (text: string) => {
  const n = Number(text.replaceAll('_', ''));
  return Number.isFinite(n) && ok(n) ? n : null;
};

const RULES: Readonly<Record<SeedEnvName, Rule>> = {
  CIRCUIT_FAILURE_THRESHOLD: { accepted: 'an integer ≥ 1', parse: num((n) => Number.isInteger(n) && n >= 1) },
  CIRCUIT_COOLDOWN_SECONDS: { accepted: 'a number of seconds > 0', parse: num((n) => n > 0) },
  CIRCUIT_MIN_AVAILABILITY: { accepted: 'a number in [0, 1]', parse: num((n) => n >= 0 && n <= 1) },
  ROUTER_HEALTH_EWMA_ALPHA: { accepted: 'a number in (0, 1]', parse: num((n) => n > 0 && n <= 1) },
  AFFINITY_SWEEP_THRESHOLD: { accepted: 'an integer ≥ 1', parse: num((n) => Number.isInteger(n) && n >= 1) },
  ENABLE_ROUTEWISE: {
    accepted: 'a boolean: 1 or 0 (also true/false, yes/no, on/off)',
    parse: (t) => (TRUE.has(t.toLowerCase()) ? true : FALSE.has(t.toLowerCase()) ? false : null),
  },
};

/** The environment's seed variables, parsed, or the refusals of the bad ones. */
export interface SeedEnv {
  readonly vars: ReadonlyMap<SeedEnvName, number | boolean>;
  /** One message per bad variable: `NAME='text' is not accepted; NAME takes <range>`. */
  readonly problems: readonly { variable: SeedEnvName; message: string; fix: string }[];
}

/** Reads the seed's variables from `env` (unset or blank ⇒ absent). Pure. */
export function readSeedEnv(env: Readonly<Record<string, string | undefined>>): SeedEnv {
  const vars = new Map<SeedEnvName, number | boolean>();
  const problems: Array<{ variable: SeedEnvName; message: string; fix: string }> = [];
  for (const name of SEED_ENV_NAMES) {
    const text = env[name]?.trim();
    if (text === undefined || text === '') continue;
    const v = RULES[name].parse(text);
    if (v === null) problems.push({ variable: name, message: `${name}='${text}' is not accepted; ${name} takes ${RULES[name].accepted}`, fix: `set ${name} to ${RULES[name].accepted}, or unset it` });
    else vars.set(name, v);
  }
  return { vars, problems };
}

type HealthKey = 'failure_threshold' | 'cooldown_sec' | 'min_availability' | 'ewma_alpha';

/** Seed variable and core default of each gateway.yaml `health:` key. */
const HEALTH_ENV: ReadonlyArray<readonly [SeedEnvName, HealthKey, number]> = [
  ['CIRCUIT_FAILURE_THRESHOLD', 'failure_threshold', DEFAULT_HEALTH_OPTIONS.failureThreshold],
  ['CIRCUIT_COOLDOWN_SECONDS', 'cooldown_sec', DEFAULT_HEALTH_OPTIONS.cooldownMs / 1000],
  ['CIRCUIT_MIN_AVAILABILITY', 'min_availability', DEFAULT_HEALTH_OPTIONS.minAvailability],
  ['ROUTER_HEALTH_EWMA_ALPHA', 'ewma_alpha', DEFAULT_HEALTH_OPTIONS.ewmaAlpha],
];

/** What the seed's variables were laid over. */
export interface SeedEnvInput {
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly vars: SeedEnv['vars'];
  readonly settings: GatewaySettings;
  readonly models: ModelsConfig;
  /** The routing tunables chosen so far: gateway.yaml's block, or the `ROUTING_*` variables' settings. */
  readonly routingSettings: Record<string, unknown> | RoutingSettings;
  /** Whether `routingSettings` came from the `ROUTING_*` variables (gateway.yaml had none). */
  readonly routingFromEnv: boolean;
  /** Whether the routing file (routing.yaml or models.yaml `routing:`) sets `default_router`. */
  readonly defaultRouterInFile: boolean;
  /** Labels for sources: the gateway.yaml and routing file names as loaded. */
  readonly gatewayFile: string;
  readonly routingFile: string;
}

/** The configuration with the seed's variables applied, each setting's source, and warnings. */
export interface SeedEnvApplied {
  readonly settings: GatewaySettings;
  readonly models: ModelsConfig;
  readonly routingSettings: Record<string, unknown> | RoutingSettings;
  readonly sources: readonly SettingSource[];
  readonly warnings: readonly string[];
}

/**
 * Lays the parsed seed variables over the loaded files: each fills its setting where the file
 * leaves it unset (module comment). Pure; the inputs are not changed.
 */
export function applySeedEnv(i: SeedEnvInput): SeedEnvApplied {
  const sources: SettingSource[] = [];
  const warnings: string[] = [];
  const text = (name: SeedEnvName): string | null => i.env[name]?.trim() || null;
  const ignored = (name: SeedEnvName, why: string): void => {
    if (i.vars.has(name)) warnings.push(`${why}, so ${name}=${text(name)} is ignored`);
  };

  const health: Record<string, number | undefined> = { ...i.settings.health };
  for (const [name, key, dflt] of HEALTH_ENV) {
    const fromEnv = i.vars.get(name) as number | undefined;
    const inFile = health[key];
    if (inFile !== undefined) {
      ignored(name, `${i.gatewayFile} sets health.${key}`);
      sources.push({ setting: `health.${key}`, variable: name, envText: text(name), value: inFile, source: 'file', by: i.gatewayFile });
    } else if (fromEnv !== undefined) {
      health[key] = fromEnv;
      sources.push({ setting: `health.${key}`, variable: name, envText: text(name), value: fromEnv, source: 'environment', by: name });
    } else sources.push({ setting: `health.${key}`, variable: name, envText: null, value: dflt, source: 'default', by: null });
  }

  let routingSettings = i.routingSettings;
  const sweepEnv = i.vars.get('AFFINITY_SWEEP_THRESHOLD') as number | undefined;
  const sweep = { setting: 'routing_settings.affinity_sweep_threshold', variable: 'AFFINITY_SWEEP_THRESHOLD' as const, envText: text('AFFINITY_SWEEP_THRESHOLD') };
  const fileSweep = i.routingFromEnv ? undefined : (routingSettings as Record<string, unknown>).affinity_sweep_threshold;
  const ownEnv = i.routingFromEnv && Boolean(i.env.ROUTING_AFFINITY_SWEEP_THRESHOLD?.trim());
  if (fileSweep !== undefined) {
    ignored('AFFINITY_SWEEP_THRESHOLD', `${i.gatewayFile} sets routing_settings.affinity_sweep_threshold`);
    sources.push({ ...sweep, value: fileSweep as number, source: 'file', by: i.gatewayFile });
  } else if (ownEnv) {
    ignored('AFFINITY_SWEEP_THRESHOLD', 'ROUTING_AFFINITY_SWEEP_THRESHOLD is set');
    sources.push({ ...sweep, value: (routingSettings as RoutingSettings).affinitySweepThreshold, source: 'environment', by: 'ROUTING_AFFINITY_SWEEP_THRESHOLD' });
  } else if (sweepEnv !== undefined) {
    routingSettings = i.routingFromEnv ? { ...(routingSettings as RoutingSettings), affinitySweepThreshold: sweepEnv } : { ...routingSettings, affinity_sweep_threshold: sweepEnv };
    sources.push({ ...sweep, value: sweepEnv, source: 'environment', by: 'AFFINITY_SWEEP_THRESHOLD' });
  } else sources.push({ ...sweep, value: DEFAULT_ROUTING_SETTINGS.affinitySweepThreshold, source: 'default', by: null });

  let models = i.models;
  const router = i.models.routing.default_router;
  const rw = { setting: 'routing.default_router', variable: 'ENABLE_ROUTEWISE' as const, envText: text('ENABLE_ROUTEWISE') };
  if (i.vars.get('ENABLE_ROUTEWISE') === true && router === 'fixed') {
    models = { ...i.models, routing: { ...i.models.routing, default_router: 'routewise' } };
    sources.push({ ...rw, value: 'routewise', source: 'environment', by: 'ENABLE_ROUTEWISE' });
  } else {
    if (i.vars.get('ENABLE_ROUTEWISE') === true) ignored('ENABLE_ROUTEWISE', `${i.routingFile} sets default_router: ${router} (not fixed)`);
    sources.push({ ...rw, value: router, source: i.defaultRouterInFile ? 'file' : 'default', by: i.defaultRouterInFile ? i.routingFile : null });
  }
  return { settings: { ...i.settings, health: health as GatewaySettings['health'] }, models, routingSettings, sources, warnings };
}

/**
 * One line per setting for `switchyard validate`: the value in force, who set it, and the seed
 * variable's text when it was set but not used, e.g.
 * `health.failure_threshold = 5 (from gateway.yaml; CIRCUIT_FAILURE_THRESHOLD=7 not used)`,
 * `health.cooldown_sec = 12 (from environment CIRCUIT_COOLDOWN_SECONDS=12)`.
 */
export function formatSettingSource(s: SettingSource): string {
  if (s.source === 'environment' && s.by === s.variable) return `${s.setting} = ${s.value} (from environment ${s.variable}=${s.envText})`;
  const from = s.source === 'default' ? 'default' : s.source === 'file' ? `from ${s.by}` : `from environment ${s.by}`;
  return `${s.setting} = ${s.value} (${from}; ${s.envText === null ? `${s.variable} unset` : `${s.variable}=${s.envText} not used`})`;
}
