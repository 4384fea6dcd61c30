/**
 * Bodies of the runtime-routing admin calls (seed 000, "API endpoints" and "排队等待卸载"),
 * checked with zod: runtime models and routes, re-points, router switches and offload policies.
 * A route's fields are the `route:` entry of models.yaml (`RouteSchema` of the core), so a route
 * added at run time accepts exactly what the file accepts. Every body may carry the `version`
 * of the record it is based on (or send `If-Match`).
 */
import { z } from 'zod';
import { endpointLocation, RouteSchema, type RouteConfig } from '../../core/index.ts';
import type { BodyProblem } from './admin-bodies.ts';

const version = z.number().int().min(0).optional();

/** A route id: no `/` (it is the last path segment) and no blanks. */
export const RouteIdSchema = z
  .string()
  .trim()
  .min(1, 'must not be blank')
  .max(200, 'must be at most 200 characters')
  .regex(/^[^/\s]+$/, 'must not contain / or whitespace');

/** A model id: may contain `/` (`Qwen/Qwen3-8B`); `auto` and `auto-…` belong to auto profiles. */
export const ModelIdSchema = z
  .string()
  .min(1, 'must not be blank')
  .max(200, 'must be at most 200 characters')
  .regex(/^\S(.*\S)?$/, 'must not start or end with whitespace')
  .refine((id) => id !== 'auto' && !id.startsWith('auto-'), 'auto and auto-<name> are reserved for auto profiles; choose another id');

/** A whole route: the models.yaml fields plus an optional `route_id`. */
export const NewRouteSchema = z.object({ route_id: RouteIdSchema.optional(), ...RouteSchema.shape }).strict();

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

/** Route fields that replace those of a route (no defaults: an absent field is kept). */
const patchShape = Object.fromEntries(Object.entries(RouteSchema.shape).map(([k, s]) => [k, (s instanceof z.ZodDefault ? (s.unwrap() as z.ZodType) : s).optional()])) as {
  [K in keyof typeof RouteSchema.shape]: z.ZodOptional<z.ZodType<RouteConfig[K]>>;
};

/**
 * `PATCH /admin/routing/provider-route-candidates/{model_id}/{route_id}` (a runtime route) and
 * `PUT /admin/routing/provider-routes/{model_id}/{route_id}` (re-point a YAML route): the fields
 * to replace, at least one.
 */
export const RoutePatchBodySchema = z
  .object({ ...patchShape, version })
  .strict()
  .refine((b) => Object.keys(b).some((k) => k !== 'version'), { message: 'send at least one route field to change, e.g. {"base_url": "http://127.0.0.1:8001/v1"}' });

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
    route_id: z.string().trim().min(1, 'must not be blank'),
    /** Longest wait for an outbound slot, and a stream's first token, elsewhere; seconds > 0. */
    wait_sec: z.number().positive('must be > 0').refine(Number.isFinite, 'must be a finite number'),
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
  route_id: 'send a route id without / or spaces, e.g. "local-8001" (GET /admin/routing/provider-routes lists them)',
  base_url: 'send an absolute http(s) URL, e.g. "http://127.0.0.1:8000/v1"',
  'route.base_url': 'send an absolute http(s) URL, e.g. "http://127.0.0.1:8000/v1"',
  weight: 'send a number >= 0',
  'route.weight': 'send a number >= 0',
  wait_sec: 'send the wait in seconds as a number > 0, e.g. 5',
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
  const r = RouteSchema.safeParse(raw);
  if (r.success) {
    try {
      endpointLocation(r.data.kind, r.data.base_url);
    } catch (e) {
      return { ok: false, problem: { message: `'${prefix}base_url' is invalid: ${(e as Error).message.replace(/^route\.base_url: /, '')}.`, param: `${prefix}base_url` } };
    }
    return { ok: true, route: r.data };
  }
  const issue = r.error.issues[0]!;
  const field = `${prefix}${issue.path.map(String).join('.')}`.replace(/\.$/, '') || null;
  return { ok: false, problem: { message: `'${field ?? '(route)'}' is invalid: ${issue.message}.`, param: field } };
}
