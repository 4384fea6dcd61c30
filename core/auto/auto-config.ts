/**
 * The `auto:` block of the model registry (seed 000 "Auto 模型"), beside `models:`: named
 * profiles, each an ordered list of candidate models (optionally with a `reasoning_effort`),
 * the profile plain `auto` gets, and the session table's idle timeout and size.
 *
 * The block is checked against the registered models by `checkAutoBlock`, which never throws:
 * a bad block turns auto models off (every problem listed) instead of refusing the start, and a
 * profile whose served name (`auto-<name>`) is a registered model id or alias turns them off too
 * (the profile would hide that model). An unregistered candidate, or a candidate effort its model
 * does not declare, is only a warning: requests skip that candidate until it can serve.
 */
import { z } from 'zod';
import { fnv1a64Hex } from '../affinity/affinity-key.ts';
import type { ModelsConfig } from '../config/models-config.ts';

/** The reasoning efforts a request or candidate may name (OpenAI's `reasoning_effort` values). */
export const REASONING_EFFORTS = ['minimal', 'low', 'medium', 'high'] as const;

/** One of `REASONING_EFFORTS`. */
export type ReasoningEffort = (typeof REASONING_EFFORTS)[number];

/** The name prefix of a served profile: profile `balance` is the model `auto-balance`. */
export const AUTO_PREFIX = 'auto-';

/** The plain auto model's name: it is served by `default_profile`. */
export const AUTO_MODEL = 'auto';

/** Default idle time after which a session is forgotten, seconds (seed 000's example value). */
export const DEFAULT_SESSION_IDLE_TIMEOUT_SEC = 1800;

/** Default session-table size (seed 000's example value). */
export const DEFAULT_MAX_SESSIONS = 10_000;

const CandidateSchema = z
  .object({
    /** A model id or alias of the registry. */
    model: z.string().min(1),
    /** Applied only when the request sets no `reasoning_effort` of its own. */
    reasoning_effort: z.enum(REASONING_EFFORTS).optional(),
  })
  .strict();

const ProfileSchema = z
  .object({
    candidates: z.array(CandidateSchema).min(1, 'a profile needs at least one candidate'),
  })
  .strict();

/** The `auto:` block's schema (see the file doc). */
export const AutoBlockSchema = z
  .object({
    /** The profile plain `auto` gets; absent ⇒ `auto` is not served. */
    default_profile: z.string().min(1).optional(),
    session: z
      .object({
        idle_timeout_seconds: z.number().positive().default(DEFAULT_SESSION_IDLE_TIMEOUT_SEC),
        max_sessions: z.number().int().min(1).default(DEFAULT_MAX_SESSIONS),
      })
      .strict()
      .default({ idle_timeout_seconds: DEFAULT_SESSION_IDLE_TIMEOUT_SEC, max_sessions: DEFAULT_MAX_SESSIONS }),
    /**
     * How the gateway tells a Claude Code tool permission check (a side call asking whether a
     * tool use may go ahead) from a turn of the conversation: a request whose system prompt
     * contains any of `system_contains` (case-sensitive substrings) is one. Absent ⇒ none is.
     */
    permission_check: z
      .object({ system_contains: z.array(z.string().min(1, 'write a non-empty substring of the permission check\'s system prompt')).min(1, 'list at least one substring') })
      .strict()
      .optional(),
    profiles: z.record(
      z.string().regex(/^[a-z0-9][a-z0-9._-]*$/, 'a profile name is lower-case letters, digits, ".", "_" or "-", e.g. balance'),
      ProfileSchema,
    ),
  })
  .strict();

/** One candidate of a profile. */
export interface AutoCandidate {
  /** Model id or alias as configured. */
  readonly model: string;
  /** The candidate's effort; null when it names none. */
  readonly reasoningEffort: ReasoningEffort | null;
}

/** One profile, as served. */
export interface AutoProfile {
  /** The profile's name (`balance`). */
  readonly name: string;
  /** The model name clients use (`auto-balance`). */
  readonly servedName: string;
  /** Candidates in preference order. */
  readonly candidates: readonly AutoCandidate[];
  /** A short hash of the profile's declaration (16 hex digits), logged with each decision. */
  readonly version: string;
}

/** A checked `auto:` block. */
export interface AutoConfig {
  /** Profiles by served name (`auto-balance`), and `auto` for the default profile. */
  readonly profiles: ReadonlyMap<string, AutoProfile>;
  readonly sessionIdleTimeoutSec: number;
  readonly maxSessions: number;
  /** System-prompt substrings that mark a Claude Code permission check (empty: none is marked). */
  readonly permissionCheckSystemContains: readonly string[];
}

/** What `checkAutoBlock` found. */
export interface AutoBlockCheck {
  /** The block to serve; null when auto models are off (absent block, or any problem). */
  readonly config: AutoConfig | null;
  /** Why auto models are off, one line each (empty when on or absent). */
  readonly problems: readonly string[];
  /** Things that work but skip candidates, one line each. */
  readonly warnings: readonly string[];
}

/** What `checkAutoBlock` reads of a registered model. */
interface RegisteredModel {
  readonly id: string;
  readonly reasoningEfforts: readonly string[] | null;
}

/**
 * Checks a raw `auto:` block (YAML parsed, env interpolated; `undefined`/null = absent) against
 * the registered models (`models`: the whole registry; `extraNames`: more names the gateway
 * serves, such as runtime models). Never throws (see the file doc).
 */
export function checkAutoBlock(raw: unknown, models: ModelsConfig['models'], extraNames: Iterable<string> = []): AutoBlockCheck {
  if (raw === undefined || raw === null) return { config: null, problems: [], warnings: [] };
  const parsed = AutoBlockSchema.safeParse(raw);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `auto.${i.path.join('.') || '(root)'}: ${i.message}`);
    return { config: null, problems, warnings: [] };
  }
  const block = parsed.data;
  const byName = new Map<string, RegisteredModel>();
  for (const m of models) {
    const reg = { id: m.id, reasoningEfforts: m.reasoning_efforts ?? null };
    for (const n of [m.id, ...m.aliases]) if (!byName.has(n)) byName.set(n, reg);
  }
  const taken = new Set<string>([...byName.keys(), ...extraNames]);
  const problems: string[] = [];
  const warnings: string[] = [];
  const profiles = new Map<string, AutoProfile>();
  for (const [name, p] of Object.entries(block.profiles)) {
    const servedName = AUTO_PREFIX + name;
    if (name.startsWith('auto-')) warnings.push(`auto.profiles.${name}: served as '${servedName}' (profiles get the auto- prefix); name it '${name.slice('auto-'.length)}' to serve '${name}'`);
    if (taken.has(servedName)) problems.push(`auto.profiles.${name}: its model name '${servedName}' is a registered model, which the profile would hide; rename the profile or the model`);
    const candidates = p.candidates.map((c, i): AutoCandidate => {
      const reg = byName.get(c.model);
      if (!reg) warnings.push(`auto.profiles.${name}.candidates.${i}: model '${c.model}' is not registered; requests skip it until it is`);
      else if (c.reasoning_effort !== undefined && reg.reasoningEfforts !== null && !reg.reasoningEfforts.includes(c.reasoning_effort)) {
        warnings.push(`auto.profiles.${name}.candidates.${i}: model '${c.model}' declares reasoning_efforts [${reg.reasoningEfforts.join(', ')}], not '${c.reasoning_effort}'; requests that set no effort skip it`);
      }
      return { model: c.model, reasoningEffort: c.reasoning_effort ?? null };
    });
    profiles.set(servedName, { name, servedName, candidates, version: fnv1a64Hex(JSON.stringify(p)) });
  }
  if (block.default_profile !== undefined) {
    const d = profiles.get(AUTO_PREFIX + block.default_profile);
    if (!d) problems.push(`auto.default_profile: '${block.default_profile}' is not a profile; profiles: ${[...profiles.values()].map((x) => x.name).join(', ') || '(none)'}`);
    else if (taken.has(AUTO_MODEL)) problems.push(`auto.default_profile: the model name '${AUTO_MODEL}' is a registered model, which plain auto would hide; rename that model`);
    else profiles.set(AUTO_MODEL, d);
  }
  if (problems.length > 0) return { config: null, problems, warnings };
  return { config: { profiles, sessionIdleTimeoutSec: block.session.idle_timeout_seconds, maxSessions: block.session.max_sessions, permissionCheckSystemContains: block.permission_check?.system_contains ?? [] }, problems, warnings };
}

/** Whether `name` is an auto model's name (`auto` or `auto-…`), served or not. */
export function isAutoModelName(name: string): boolean {
  return name === AUTO_MODEL || name.startsWith(AUTO_PREFIX);
}
