/**
 * Bodies, query strings and preconditions of the admin API, checked with zod. A problem becomes
 * a 400 whose message names the field, what was wrong and the fix, and whose `param` is the
 * field's dotted path (`weight`, `version`, `limit`).
 */
import { z } from 'zod';
import { closestName, MAX_ROUTE_WEIGHT, readableIssue } from '../../core/index.ts';

/** `PUT /admin/routing/weights/{model_id}/{endpoint_id}`. */
export const WeightBodySchema = z
  .object({
    /** The route's effective weight from now on; 0 drains it. */
    weight: z.number().min(0).max(MAX_ROUTE_WEIGHT, `must be at most ${MAX_ROUTE_WEIGHT} (weights are relative)`),
    /** The override's version this write is based on (0: none existed); stale ⇒ 409. */
    version: z.number().int().min(0).optional(),
  })
  .strict();

/** `DELETE /admin/routing/weights/…`: optional body. */
export const VersionOnlyBodySchema = z.object({ version: z.number().int().min(0).optional() }).strict();

/** `PUT /admin/routing/providers/{provider}`. */
export const ProviderBodySchema = z
  .object({
    /** true: every route with this provider label gets effective weight 0. */
    disabled: z.boolean(),
    version: z.number().int().min(0).optional(),
  })
  .strict();

/** `GET /admin/audit` query. */
export const AuditQuerySchema = z.object({ limit: z.coerce.number().int().min(1).max(1000).default(100) }).strict();

/** A 400 answer's content: message naming the field and the fix, and the field. */
export interface BodyProblem {
  message: string;
  param: string | null;
}

const FIXES: Record<string, string> = {
  weight: `send a number from 0 to ${MAX_ROUTE_WEIGHT}, e.g. {"weight": 0} to drain the route`,
  version: 'send the integer version you read from GET /admin/routing (0 when there was no record), or leave it out',
  disabled: 'send true or false',
  limit: 'use an integer from 1 to 1000',
};

/**
 * Parses a JSON body (empty ⇒ `{}`) against `schema`.
 * @param fixes the fix to name for a field, by dotted path, besides the built-in ones.
 * @returns the value, or the problem to answer with 400.
 */
export function parseBody<T>(schema: z.ZodType<T>, text: string, fixes: Readonly<Record<string, string>> = {}): { ok: true; value: T } | { ok: false; problem: BodyProblem } {
  let raw: unknown = {};
  if (text.trim().length > 0) {
    try {
      raw = JSON.parse(text);
    } catch (e) {
      return { ok: false, problem: { message: `The body is not valid JSON (${(e as Error).message}); send a JSON object.`, param: null } };
    }
  }
  return check(schema, raw, fixes);
}

/** Checks a query string against `schema` (every parameter a string before coercion). */
export function parseQuery<T>(schema: z.ZodType<T>, query: URLSearchParams): { ok: true; value: T } | { ok: false; problem: BodyProblem } {
  return check(schema, Object.fromEntries(query.entries()));
}

function check<T>(schema: z.ZodType<T>, raw: unknown, fixes: Readonly<Record<string, string>> = {}): { ok: true; value: T } | { ok: false; problem: BodyProblem } {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) return { ok: false, problem: { message: 'The body must be a JSON object.', param: null } };
  const nul = nulAt(raw, []);
  if (nul !== null) {
    const field = nul.join('.') || null;
    return { ok: false, problem: { message: `'${field ?? '(body)'}' is invalid: it contains a NUL character (\\u0000), which no field may hold; remove it.`, param: field } };
  }
  const r = schema.safeParse(raw, { reportInput: true });
  if (r.success) return { ok: true, value: r.data };
  // An unknown field is named first: a misspelt one ('wieght') is also why its real one is missing.
  const unknown = r.error.issues.find((i) => i.code === 'unrecognized_keys');
  if (unknown) {
    const key = [...unknown.path.map(String), unknown.keys[0]!].join('.');
    const allowed = Object.keys(objectAt(schema, unknown.path.map(String))?.shape ?? {});
    const near = closestName(unknown.keys[0]!, allowed);
    return { ok: false, problem: { message: `Unknown field '${key}'${near ? ` (did you mean '${near}'?)` : ''}: remove it (allowed: ${allowed.join(', ')}).`, param: key } };
  }
  const issue = r.error.issues[0]!;
  const field = issue.path.map(String).join('.') || null;
  const readable = readableIssue(issue, schema);
  const fix = (field ? (fixes[field] ?? FIXES[field]) : undefined) ?? readable.fix;
  // An absent field is 'required', whether the schema wanted a type (invalid_type) or one of a
  // list of values (invalid_value, an enum such as min_role).
  const missing = (issue.code === 'invalid_type' || issue.code === 'invalid_value') && issue.path.length > 0 && valueAt(raw, issue.path) === undefined;
  return { ok: false, problem: { message: `'${field ?? '(body)'}' ${missing ? 'is required' : `is invalid: ${readable.message}`}${fix ? `; ${fix}` : ''}.`, param: field } };
}

/** The value at `path` inside `raw` (undefined when a step is missing). */
function valueAt(raw: unknown, path: readonly PropertyKey[]): unknown {
  let v = raw;
  for (const k of path) {
    if (v === null || typeof v !== 'object') return undefined;
    v = (v as Record<PropertyKey, unknown>)[k];
  }
  return v;
}

/** The path of the first key or string holding U+0000 in a parsed JSON value (PostgreSQL text cannot store it), or null. */
function nulAt(v: unknown, path: string[]): string[] | null {
  if (typeof v === 'string') return v.includes('\u0000') ? path : null;
  if (v === null || typeof v !== 'object') return null;
  for (const [k, x] of Object.entries(v)) {
    if (k.includes('\u0000')) return [...path, k];
    const at = nulAt(x, [...path, k]);
    if (at) return at;
  }
  return null;
}

/** The object schema at `path` inside `schema` (through optional / default wrappers), if any. */
function objectAt(schema: z.ZodType, path: readonly string[]): z.ZodObject | null {
  let s: unknown = schema;
  for (let i = 0; ; i++) {
    while (s instanceof z.ZodOptional || s instanceof z.ZodDefault || s instanceof z.ZodNullable) s = s.unwrap();
    if (!(s instanceof z.ZodObject)) return null;
    if (i === path.length) return s;
    s = s.shape[path[i]!];
  }
}

/**
 * The version an `If-Match` header names: `"3"`, `W/"3"` or `3`; null when the header is absent.
 * @returns `{ ok: false }` for any other value (answer 400).
 */
export function parseIfMatch(header: string): { ok: true; version: number | null } | { ok: false; problem: BodyProblem } {
  const h = header.trim();
  if (h.length === 0) return { ok: true, version: null };
  const m = /^(?:W\/)?"?(\d{1,9})"?$/.exec(h);
  if (!m) return { ok: false, problem: { message: `If-Match '${h}' is not a record version; send the ETag you read, e.g. If-Match: "3".`, param: 'If-Match' } };
  return { ok: true, version: Number(m[1]) };
}

/**
 * `url` as the admin API shows it: the password of its userinfo (`http://user:secret@host/v1`)
 * replaced by `***`, as an `api_key` is; any other string comes back unchanged.
 */
export function maskedUrl(url: string): string {
  if (!URL.canParse(url)) return url;
  const u = new URL(url);
  if (u.password === '') return url;
  u.password = '***';
  return u.href;
}
