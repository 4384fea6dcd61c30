/**
 * RouteWise tuning at run time (seed 000, "RouteWise", run-time tuning), in two layers kept in
 * the store's `routewise_settings`:
 *
 * - per model: `GET /admin/routewise/model-settings?model_id=…` (every key with its effective
 *   value and where it comes from), `GET | PATCH | DELETE /admin/routewise/model-settings/{key}
 *   ?model_id=…`. The model id is a query parameter because ids may contain `/`; an alias names
 *   its canonical model, so both always read and write one set of values. `DELETE` removes the
 *   model's override only: the key falls back to what it inherits.
 * - fallback: `GET | PATCH /admin/routewise/settings`, the value a RouteWise model takes for a
 *   key that neither its own override nor its `router_params:` sets. `PATCH` is a merge patch:
 *   `{"slo_ms": 2500, "hedge": null}` sets one key and removes the other.
 *
 * Precedence per key: model override, then `router_params:`, then fallback, then the schema's
 * default (`core/strategies/routewise/params.ts`, which also gives the keys and their types).
 * A write is checked against that schema as a whole (a value out of range, or one that breaks a
 * rule between keys, such as `envelope_low_quantile` < `envelope_high_quantile`, is a 400) before
 * it is stored; once stored it is applied as a new generation, and the RouteWise planners keep
 * what they learnt unless the setting redefines it (`RouteWisePlanner.carryFrom`: a new
 * `slo_ms`, hedge grid or `latency_window_sec` starts the latency profiles afresh, a new
 * envelope window the envelope). `stateful_providers_single_worker_only` guards the
 * start of a multi-worker gateway and `db_bootstrap_enabled` the warm start; neither is tunable here.
 */
import { z } from 'zod';
import { closestName, overlaidRouterParams, readableIssue, ROUTEWISE_STRATEGY, type ResolvedModel, type RouteOverlay } from '../../core/index.ts';
import { MOVED_TO_ROUTE, parseRouteWiseParams, RouteWiseParamsObject } from '../../core/strategies/routewise/params.ts';
import { emptyOverlay, FALLBACK_LAYER, type OverlaySnapshot, type RouteWiseSettingRecord } from '../store/overlay-repo.ts';
import type { AdminCall, AdminKit, AdminRouteGroup, Routed } from './admin-api.ts';
import { badRequest, decode, error, precondition } from './admin-api.ts';
import { parseBody } from './admin-bodies.ts';

const MODEL_SETTINGS = '/admin/routewise/model-settings';
const FALLBACK_SETTINGS = '/admin/routewise/settings';
const KEY_PATH = /^\/admin\/routewise\/model-settings\/([^/]+)$/;

/** Keys that only take effect at start, refused here with the reason. */
const START_ONLY: Readonly<Record<string, string>> = {
  stateful_providers_single_worker_only: 'it guards the start of a multi-worker gateway, so it is read from router_params: at start only',
  db_bootstrap_enabled: 'the request log is replayed once, when the gateway starts, so it is read from router_params: at start only',
};

const SHAPE = RouteWiseParamsObject.shape as Record<string, z.ZodType>;
/** Every tunable key, in the schema's order. */
export const ROUTEWISE_KEYS: readonly string[] = Object.keys(SHAPE).filter((k) => !(k in START_ONLY));
const DEFAULTS = RouteWiseParamsObject.parse({}) as Record<string, unknown>;

/** A write refused by its validator, carrying the answer. */
class Rejected extends Error {
  constructor(readonly answer: Routed) {
    super('RouteWise settings refused');
  }
}

/** `PATCH …/model-settings/{key}` body. */
const SettingBodySchema = z.object({ value: z.unknown(), version: z.number().int().min(0).optional() }).strict();
/** `DELETE …/model-settings/{key}`: optional body. */
const VersionBodySchema = z.object({ version: z.number().int().min(0).optional() }).strict();

/**
 * The RouteWise layers of an overlay as the core takes them: per model, and the fallback
 * (removed settings left out).
 */
export function routeWiseLayers(o: OverlaySnapshot): NonNullable<RouteOverlay['routewise']> {
  const perModel = new Map<string, Record<string, unknown>>();
  const fallback: Record<string, unknown> = {};
  for (const r of o.routewise) {
    if (r.value === null) continue;
    if (r.modelId === FALLBACK_LAYER) fallback[r.key] = r.value;
    else (perModel.get(r.modelId) ?? perModel.set(r.modelId, {}).get(r.modelId)!)[r.key] = r.value;
  }
  return { perModel, fallback };
}

/** The route group; `kit.d.yamlRouterParams` gives a model's `router_params:`. */
export function routeWiseSettingsRoutes(kit: AdminKit): AdminRouteGroup {
  const d = kit.d;
  const yaml = (id: string): Readonly<Record<string, unknown>> => d.yamlRouterParams?.(id) ?? {};

  /** The model a `model_id` names (aliases resolve), or the 4xx to answer. */
  const modelOf = (call: AdminCall): { ok: true; model: ResolvedModel } | { ok: false; r: Routed } => {
    const name = call.query.get('model_id');
    if (name === null || name.length === 0) {
      return { ok: false, r: { answer: badRequest({ message: `'model_id' is required: send it as a query parameter, e.g. ${MODEL_SETTINGS}?model_id=<model id> (ids may contain '/', so they are not a path segment).`, param: 'model_id' }) } };
    }
    const m = d.core().model(name);
    if (!m || m.multiTarget) {
      return { ok: false, r: { answer: { status: 404, body: error('model_not_found', `No model '${name}' with routes of its own; GET /admin/routing lists them.`, 'model_id') } } };
    }
    return { ok: true, model: m };
  };

  /** The key problem (unknown, a route field, start-only), or null. */
  const keyProblem = (key: string): Routed | null => {
    if (key in START_ONLY) return { answer: badRequest({ message: `'${key}' cannot be tuned at run time: ${START_ONLY[key]}.`, param: 'key' }) };
    const moved = MOVED_TO_ROUTE[key];
    if (moved !== undefined) return { answer: badRequest({ message: `'${key}' is a resource limit, not a RouteWise setting: set it on the route entry as ${moved}.`, param: 'key' }) };
    if (!(key in SHAPE)) {
      const near = closestName(key, [...ROUTEWISE_KEYS]);
      return { answer: badRequest({ message: `Unknown RouteWise setting '${key}'${near ? ` (did you mean '${near}'?)` : ''}; the settings are: ${ROUTEWISE_KEYS.join(', ')}.`, param: 'key' }) };
    }
    return null;
  };

  /** The value's problem for `key` (type, range), or null. */
  const valueProblem = (key: string, value: unknown, param: string): Routed | null => {
    if (value === undefined || value === null) return { answer: badRequest({ message: `'${param}' is required: send the new value of '${key}' (default ${JSON.stringify(DEFAULTS[key])}).`, param }) };
    const r = SHAPE[key]!.safeParse(value, { reportInput: true });
    if (r.success) return null;
    const { message, fix } = readableIssue(r.error.issues[0]!, SHAPE[key]!);
    return { answer: badRequest({ message: `'${param}' is invalid for '${key}': ${message}${fix ? `; ${fix}` : ''} (default ${JSON.stringify(DEFAULTS[key])}).`, param }) };
  };

  /**
   * Whether the layers after a write still give every affected model valid parameters (rules
   * between keys); the 400 naming the model otherwise. A model that is not RouteWise now is
   * checked on its RouteWise layers alone (its `router_params:` belong to its own router).
   */
  const wholeProblem = (next: OverlaySnapshot, models: ResolvedModel[]): Routed | null => {
    const overlay: RouteOverlay = { routewise: routeWiseLayers(next) };
    for (const m of models) {
      const own = m.strategy === ROUTEWISE_STRATEGY ? yaml(m.id) : {};
      try {
        parseRouteWiseParams(overlaidRouterParams(overlay, m.id, ROUTEWISE_STRATEGY, own));
      } catch (e) {
        return { answer: badRequest({ message: `The change would leave model '${m.id}' with invalid RouteWise settings: ${(e as Error).message.replace(/^routewise router_params are invalid: /, '')}. Change the other key first, or both.`, param: null }) };
      }
    }
    return null;
  };

  /** A validator for `writeRouteWise`: throws `Rejected` with the 400 when `models` would break. */
  const check = (models: ResolvedModel[]) => (after: RouteWiseSettingRecord[]): void => {
    const problem = wholeProblem({ ...emptyOverlay(), routewise: after }, models);
    if (problem) throw new Rejected(problem);
  };
  /** Runs a write whose validator may refuse it. */
  const guarded = async <T,>(write: () => Promise<T>): Promise<T | { refusal: Routed }> => {
    try {
      return await write();
    } catch (e) {
      if (e instanceof Rejected) return { refusal: e.answer };
      throw e;
    }
  };

  const recordView = (r: RouteWiseSettingRecord | undefined) => (r && r.value !== null ? { value: r.value, version: r.version, updated_by: r.updatedBy, updated_at: r.updatedAt } : null);

  /** One key of one model: effective value, its source, and the override record. */
  const keyView = (ov: OverlaySnapshot, m: ResolvedModel, key: string) => {
    const own = ov.routewise.find((r) => r.modelId === m.id && r.key === key);
    const fb = ov.routewise.find((r) => r.modelId === FALLBACK_LAYER && r.key === key);
    const params = m.strategy === ROUTEWISE_STRATEGY ? yaml(m.id) : {};
    const source = own && own.value !== null ? 'override' : key in params ? 'router_params' : fb && fb.value !== null ? 'fallback' : 'default';
    const value = source === 'override' ? own!.value : source === 'router_params' ? params[key] : source === 'fallback' ? fb!.value : DEFAULTS[key];
    return { key, value, source, override: recordView(own), version: own?.version ?? 0 };
  };

  const modelView = (m: ResolvedModel) => {
    const ov = d.overlay();
    return {
      model_id: m.id,
      strategy: m.strategy,
      // Settings of a model on another router are kept, and apply once it is switched to RouteWise.
      in_effect: m.strategy === ROUTEWISE_STRATEGY,
      settings: Object.fromEntries(ROUTEWISE_KEYS.map((k) => { const { key: _, ...v } = keyView(ov, m, k); return [k, v]; })),
      generation: d.generation(),
    };
  };

  const refused = (): Routed | null => (d.writesRefused ? { answer: { status: 409, body: error('store_required', d.writesRefused, null) } } : null);

  const writeKey = async (call: AdminCall, key: string): Promise<Routed> => {
    const mo = modelOf(call);
    if (!mo.ok) return mo.r;
    const m = mo.model;
    const kp = keyProblem(key);
    if (kp) return kp;
    const del = call.method === 'DELETE';
    const body = del ? parseBody(VersionBodySchema, call.body) : parseBody(SettingBodySchema, call.body);
    if (!body.ok) return { answer: badRequest(body.problem) };
    const pre = precondition(call.ifMatch, body.value.version);
    if (!pre.ok) return { answer: badRequest(pre.problem) };
    const cur = await d.repo.load();
    const existing = cur.routewise.find((r) => r.modelId === m.id && r.key === key);
    let value: unknown = null;
    if (del) {
      if (!existing || existing.value === null) {
        return { answer: { status: 404, body: error('override_not_found', `Model '${m.id}' has no override of '${key}' to remove; it uses its ${keyView(cur, m, key).source} value.`, 'key') } };
      }
    } else {
      value = (body.value as { value: unknown }).value;
      const vp = valueProblem(key, value, 'value');
      if (vp) return vp;
      value = SHAPE[key]!.parse(value);
    }
    const r = await guarded(() => d.repo.writeRouteWise(m.id, [[key, value]], pre.version, call.caller.id, check([m])));
    if ('refusal' in r) return r.refusal;
    const one = r.ok ? { ok: true as const, before: r.before?.[0] ?? null, after: r.after[0]! } : r;
    return kit.finish(one, pre.from, () => ({ model_id: m.id, key, ...(call.query.get('model_id') !== m.id && { requested_as: call.query.get('model_id') }) }));
  };

  const patchFallback = async (call: AdminCall): Promise<Routed> => {
    let raw: unknown;
    try {
      raw = call.body.trim().length === 0 ? {} : JSON.parse(call.body);
    } catch (e) {
      return { answer: badRequest({ message: `The body is not valid JSON (${(e as Error).message}); send a JSON object of settings, e.g. {"slo_ms": 2500}.`, param: null }) };
    }
    if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) return { answer: badRequest({ message: 'The body must be a JSON object of settings, e.g. {"slo_ms": 2500} (null removes one).', param: null }) };
    const entries = Object.entries(raw as Record<string, unknown>);
    if (entries.length === 0) return { answer: badRequest({ message: `The body names no setting; send e.g. {"slo_ms": 2500}. The settings are: ${ROUTEWISE_KEYS.join(', ')}.`, param: null }) };
    const cur = await d.repo.load();
    const values: Array<[string, unknown]> = [];
    for (const [key, v] of entries) {
      const kp = keyProblem(key);
      if (kp) return { answer: { ...kp.answer, body: error('invalid_request', (kp.answer.body as ReturnType<typeof error>).error.message, key) } };
      if (v === null) {
        // Removing a key the layer does not set changes nothing.
        if (cur.routewise.some((r) => r.modelId === FALLBACK_LAYER && r.key === key && r.value !== null)) values.push([key, null]);
        continue;
      }
      const vp = valueProblem(key, v, key);
      if (vp) return vp;
      values.push([key, SHAPE[key]!.parse(v)]);
    }
    if (values.length === 0) return { answer: { status: 200, body: { ...fallbackView(), changed: [] } } };
    const r = await guarded(() => d.repo.writeRouteWise(FALLBACK_LAYER, values, null, call.caller.id, check(d.core().allModels().filter((m) => !m.multiTarget && m.strategy === ROUTEWISE_STRATEGY))));
    if ('refusal' in r) return r.refusal;
    if (!r.ok) throw new Error('unconditional write refused'); // cannot happen: no precondition
    d.apply(await d.repo.load());
    return { answer: { status: 200, body: { ...fallbackView(), changed: values.map(([k]) => k) } }, change: { before: r.before, after: r.after } };
  };

  const fallbackView = () => {
    const ov = d.overlay();
    const set = new Map(ov.routewise.filter((r) => r.modelId === FALLBACK_LAYER && r.value !== null).map((r) => [r.key, r]));
    return {
      settings: Object.fromEntries([...set].map(([k, r]) => [k, recordView(r)])),
      defaults: Object.fromEntries(ROUTEWISE_KEYS.map((k) => [k, DEFAULTS[k]])),
      generation: d.generation(),
    };
  };

  return {
    route(call) {
      const { method, path } = call;
      if (path === FALLBACK_SETTINGS) {
        if (method === 'GET') return Promise.resolve({ answer: { status: 200, body: fallbackView() } });
        if (method === 'PATCH') return Promise.resolve(refused() ?? patchFallback(call));
        return null;
      }
      if (path === MODEL_SETTINGS && method === 'GET') {
        const mo = modelOf(call);
        return Promise.resolve(mo.ok ? { answer: { status: 200, body: modelView(mo.model) } } : mo.r);
      }
      const k = KEY_PATH.exec(path);
      if (!k) return null;
      const key = decode(k[1]!);
      if (method === 'GET') {
        const mo = modelOf(call);
        if (!mo.ok) return Promise.resolve(mo.r);
        const kp = keyProblem(key);
        if (kp) return Promise.resolve(kp);
        const v = keyView(d.overlay(), mo.model, key);
        return Promise.resolve({ answer: { status: 200, etag: `"${v.version}"`, body: { model_id: mo.model.id, ...v, generation: d.generation() } } });
      }
      if (method === 'PATCH' || method === 'DELETE') return Promise.resolve(refused() ?? writeKey(call, key));
      return null;
    },
  };
}
