/**
 * Bodies of the runtime-routing admin calls (seed 000, "API endpoints" and "排队等待卸载"),
 * checked with zod: runtime models and routes, re-points, router switches and offload policies.
 * A route's fields are the `route:` entry of models.yaml (`RouteSchema` of the core), so a route
 * added at run time accepts exactly what the file accepts. Every body may carry the `version`
 * of the record it is based on (or send `If-Match`).
 */
import { z } from 'zod';
import { endpointLocation, MAX_OFFLOAD_WAIT_SEC, MAX_ROUTE_WEIGHT, readableIssue, RouteSchema, type RouteConfig } from '../../core/index.ts';
import { routeServeProblems } from '../config/load.ts';
import type { BodyProblem } from './admin-bodies.ts';

const version = z.number().int().min(0).optional();

/**
 * Control characters (C0, DEL, C1), format characters (zero-width space and joiners, BOM, bidi
 * marks) and whitespace or separators of any script: none belongs in an id, where they would
 * make two ids look alike (or, NUL, cannot be stored at all).
 */
const INVISIBLE = /[\p{Cc}\p{Cf}\p{Z}\s]/u;

/** The first invisible character of `s` as `U+XXXX at N`, or null. */
function invisibleAt(s: string): string | null {
  const m = INVISIBLE.exec(s);
  return m ? `U+${m[0].codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')} at position ${m.index}` : null;
}

/**
 * An id refinement: no invisible character, no `%` (a path segment holding `%` could be read
 * encoded or not), and none of `extra`.
 */
function plainId(s: z.ZodString, extra: { chars: string; label: string } | null): z.ZodType<string> {
  return s.superRefine((id, ctx) => {
    const inv = invisibleAt(id);
    if (inv !== null) ctx.addIssue({ code: 'custom', message: `must not contain whitespace, control or zero-width characters (found ${inv})` });
    else if (id.includes('%')) ctx.addIssue({ code: 'custom', message: 'must not contain % (ids go in URL paths, where % starts an escape)' });
    else if (extra && [...extra.chars].some((c) => id.includes(c))) ctx.addIssue({ code: 'custom', message: `must not contain ${extra.label}` });
  });
}

/** A route id: no `/` (it is the last path segment), `%`, whitespace, control or zero-width characters. */
export const RouteIdSchema = plainId(z.string().min(1, 'must not be blank').max(200, 'must be at most 200 characters'), { chars: '/', label: '/ (a route id is one path segment)' });

/**
 * A model id: may contain `/` (`Qwen/Qwen3-8B`), not `%`, whitespace, control or zero-width
 * characters; `auto` and `auto-…` belong to auto profiles.
 */
export const ModelIdSchema = plainId(z.string().min(1, 'must not be blank').max(200, 'must be at most 200 characters'), null).refine(
  (id) => id !== 'auto' && !id.startsWith('auto-'),
  'auto and auto-<name> are reserved for auto profiles; choose another id',
);

/** A provider label: free text, but no control or zero-width characters and no blanks at either end. */
const ProviderLabelSchema = z
  .string()
  .min(1, 'must not be blank')
  .max(200, 'must be at most 200 characters')
  .refine((l) => !/[\p{Cc}\p{Cf}]/u.test(l), 'must not contain control or zero-width characters')
  .refine((l) => l.trim() === l, 'must not start or end with whitespace');

/** The models.yaml route fields, the provider label checked as above. */
const routeShape = { ...RouteSchema.shape, provider: ProviderLabelSchema.optional() };

/** A whole route: the models.yaml fields plus an optional `route_id`. */
export const NewRouteSchema = z.object({ route_id: RouteIdSchema.optional(), ...routeShape }).strict();

/** `POST /admin/routing/provider-route-candidates/{model_id}`. */
export const CandidateBodySchema = NewRouteSchema;

/** `POST /admin/routing/provider-route-models`: a runtime model with its first route. */
export const RuntimeModelBodySchema = z
  .object({
    model_id: ModelIdSchema,
    aliases: z.array(ModelIdSchema).default([]),
    published: z.boolean().default(true),
    router: z.string().trim().min(1, 'must not be blank').optional(),
    router_params: z.record(z.string(), z.unknown()).default({}),
    route: NewRouteSchema,
  })
  .strict();

/** The route fields without their defaults (an absent field is kept). */
const keptShape = Object.fromEntries(Object.entries(routeShape).map(([k, s]) => [k, s instanceof z.ZodDefault ? (s.unwrap() as z.ZodType) : s])) as Record<string, z.ZodType>;

/** Fields of a route entry that models.yaml may leave out (no default): a PATCH may unset them with null. */
export const OPTIONAL_ROUTE_FIELDS: readonly string[] = Object.entries(RouteSchema.shape)
  .filter(([, s]) => s instanceof z.ZodOptional)
  .map(([k]) => k);

const noFields = (b: Record<string, unknown>) => Object.keys(b).some((k) => k !== 'version');
const noFieldsMessage = `the body has no fields to change; send at least one of ${Object.keys(RouteSchema.shape).join(', ')} (e.g. {"base_url": "http://127.0.0.1:8001/v1"})`;

/**
 * `PATCH /admin/routing/provider-route-candidates/{model_id}/{route_id}` (a runtime route): the
 * fields to replace, at least one; `null` unsets an optional field (`context_length`,
 * `provider`, `pricing`, …). A required one (`base_url`) or one with a default (`weight`,
 * `kind`, `input_modalities`) cannot be null.
 */
export const RoutePatchBodySchema = z
  .object({ ...Object.fromEntries(Object.entries(keptShape).map(([k, s]) => [k, OPTIONAL_ROUTE_FIELDS.includes(k) ? s.nullable() : s.optional()])), version })
  .strict()
  .refine(noFields, { message: noFieldsMessage });

/**
 * `PUT /admin/routing/provider-routes/{model_id}/{route_id}` (re-point a YAML route): the fields
 * that replace the models.yaml route's, at least one (a field the file sets is changed, not unset:
 * unset it in the file).
 */
export const RepointBodySchema = z
  .object({ ...Object.fromEntries(Object.entries(keptShape).map(([k, s]) => [k, s.optional()])), version })
  .strict()
  .refine(noFields, { message: noFieldsMessage });

/** `DELETE …/{model_id}/{route_id}` and `DELETE …/offload-routes/{model_id}`: optional body. */
export const RoutingVersionBodySchema = z.object({ version }).strict();

/** `PATCH /admin/routing/provider-route-strategies/{model_id}`. */
export const StrategyBodySchema = z
  .object({
    /** A registered router (`fixed`, `routewise`, …). */
    router: z.string().trim().min(1, 'must not be blank'),
    version,
  })
  .strict();

/** `PUT /admin/routing/offload-routes/{model_id}` (seed 000 "排队等待卸载", "引擎队列上限", "最大卸载输入"). */
export const OffloadBodySchema = z
  .object({
    /** One of the model's routes, by route id (or its current endpoint id). */
    route_id: z.string().min(1, 'must not be blank').refine((id) => invisibleAt(id) === null, 'must not contain whitespace, control or zero-width characters'),
    /** Longest wait for an outbound slot, and a stream's first token, elsewhere; seconds > 0. */
    wait_sec: z.number().positive('must be > 0').max(MAX_OFFLOAD_WAIT_SEC, `must be at most ${MAX_OFFLOAD_WAIT_SEC} seconds (one day)`),
    /** Streaming requests without a first token per local engine; null or absent: no limit. */
    engine_queue_limit: z.number().int().min(1).nullable().optional(),
    /** Prompts estimated above this many tokens never go to the offload route; null or absent: any size. */
    max_input_tokens: z.number().int().min(1).nullable().optional(),
    version,
  })
  .strict();

/** The fix named for each field of these bodies in a 400. */
export const ROUTE_FIXES: Readonly<Record<string, string>> = {
  model_id: 'send the new model\'s id, e.g. "Qwen/Qwen3-8B"',
  aliases: 'send a list of other names, e.g. ["qwen3"]',
  router: 'send a registered router name, e.g. "fixed" or "routewise"',
  route: 'send the first route as an object, e.g. {"base_url": "http://127.0.0.1:8000/v1"}',
  route_id: 'send a route id of visible characters without /, % or spaces, e.g. "local-8001" (GET /admin/routing/provider-routes lists them)',
  'route.route_id': 'send a route id of visible characters without /, % or spaces, e.g. "local-8001"',
  provider: 'send a label of visible characters, e.g. "openai"',
  'route.provider': 'send a label of visible characters, e.g. "openai"',
  base_url: 'send an absolute http(s) URL, e.g. "http://127.0.0.1:8000/v1"',
  'route.base_url': 'send an absolute http(s) URL, e.g. "http://127.0.0.1:8000/v1"',
  weight: `send a number from 0 to ${MAX_ROUTE_WEIGHT}`,
  'route.weight': `send a number from 0 to ${MAX_ROUTE_WEIGHT}`,
  wait_sec: `send the wait in seconds as a number > 0 and at most ${MAX_OFFLOAD_WAIT_SEC}, e.g. 5`,
  engine_queue_limit: 'send an integer >= 1, or null for no limit',
  max_input_tokens: 'send an integer >= 1, or null for any size',
  version: 'send the integer version you read from GET /admin/routing/provider-routes or /admin/routing/offload-routes (0 when there was no record), or leave it out',
};

/**
 * Checks a whole route entry with the core's own schema (cross-field rules: `quota:` with
 * `provider_type: quota`, …) and applies its defaults.
 * @param prefix the entry's path in the body ('' or 'route.').
 */
export function checkRoute(raw: unknown, prefix: string): { ok: true; route: RouteConfig } | { ok: false; problem: BodyProblem } {
  const r = RouteSchema.safeParse(raw, { reportInput: true });
  if (r.success) {
    const serve = routeServeProblems(r.data)[0];
    if (serve) return { ok: false, problem: { message: `'${prefix}${serve.field}' is invalid: ${serve.message}; ${serve.fix}.`, param: `${prefix}${serve.field}` } };
    try {
      endpointLocation(r.data.kind, r.data.base_url);
    } catch (e) {
      return { ok: false, problem: { message: `'${prefix}base_url' is invalid: ${(e as Error).message.replace(/^route\.base_url: /, '')}.`, param: `${prefix}base_url` } };
    }
    return { ok: true, route: r.data };
  }
  const issue = r.error.issues[0]!;
  const field = `${prefix}${issue.path.map(String).join('.')}`.replace(/\.$/, '') || null;
  const readable = readableIssue(issue, RouteSchema);
  return { ok: false, problem: { message: `'${field ?? '(route)'}' is invalid: ${readable.message}${readable.fix ? `; ${readable.fix}` : ''}.`, param: field } };
}

/**
 * A route after a PATCH: `fields` laid over `route`, a `null` field removed (an optional field unset).
 */
export function patchedRoute(route: RouteConfig, fields: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...route };
  for (const [k, v] of Object.entries(fields)) {
    if (v === null) delete out[k];
    else out[k] = v;
  }
  return out;
}
