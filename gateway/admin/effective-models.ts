/**
 * The model registry a generation routes with: the YAML registry with the routing records of the
 * overlay laid over it (`store/routing-records.ts`), and where each model and route came from —
 * `yaml`, `override` (a YAML route re-pointed, a router switched) or `runtime` (added through the
 * admin API), as `GET /admin/routing/provider-routes` reports it (seed 000, "API endpoints").
 *
 * Route ids: a YAML route's id is the endpoint id its YAML entry derives (`{model}:{location}`),
 * so a YAML `offload.route` naming that endpoint id names the route; a runtime route's id is
 * chosen when it is added (default: the endpoint id it derives then). A route keeps its id when
 * re-pointed, while its endpoint id follows the new base URL (`core/config/endpoint-id.ts`): a
 * re-point to another host starts a new latency profile. Offload policies name routes by id
 * and are translated here to the route's endpoint id in force.
 *
 * Records that no longer fit the YAML (a runtime model whose id the YAML now uses, a route of a
 * model that is gone, an endpoint id that repeats one already there, a re-point of a YAML route
 * that is gone) are left out and listed in `ignored` with the reason, so a reload of the YAML
 * never fails because of the overlay. So are records the gateway cannot build a generation with
 * (`unusableRecords`: a route kind without an adapter, a router the core refuses, …): the
 * gateway finds them at start, at every reload and before every admin write, and the admin API
 * refuses a change that would add one.
 */
import { endpointId, parseModelsConfig, type ModelConfig, type ModelsConfig, type OffloadConfig, type RouteConfig } from '../../core/index.ts';
import type { RoutingRecord } from '../store/routing-records.ts';

/** Value of a `model` record: a runtime model without its routes. */
export interface RuntimeModelValue {
  aliases: string[];
  published: boolean;
  router?: string;
  router_params: Record<string, unknown>;
}

/** Value of a `strategy` record. */
export interface StrategyValue {
  router: string;
}

/** Value of an `offload` record (seed 000 "排队等待卸载"); the route by id. */
export interface OffloadValue {
  route_id: string;
  wait_sec: number;
  engine_queue_limit?: number;
  max_input_tokens?: number;
}

/** Where one route of the effective registry came from. */
export interface RouteOrigin {
  routeId: string;
  source: 'yaml' | 'override' | 'runtime';
  /** The effective entry. */
  route: RouteConfig;
  endpointId: string;
  /** The YAML entry (yaml / override), else null. */
  yaml: RouteConfig | null;
  /** The `route` or `repoint` record, else null. */
  record: RoutingRecord | null;
}

/** Where one model of the effective registry came from. */
export interface ModelOrigin {
  modelId: string;
  source: 'yaml' | 'runtime';
  /** The effective entry. */
  model: ModelConfig;
  /** The `model` record of a runtime model. */
  record: RoutingRecord | null;
  routes: RouteOrigin[];
  /** The live `strategy` record, when the router is switched. */
  strategy: RoutingRecord | null;
  /** The offload policy in force and where it came from, or null. */
  offload: { source: 'yaml' | 'override'; routeId: string; value: OffloadValue; record: RoutingRecord | null } | null;
}

/** A record left out, and why. */
export interface IgnoredRecord {
  kind: RoutingRecord['kind'];
  modelId: string;
  key: string;
  reason: string;
}

/** The composition. */
export interface EffectiveModels {
  config: ModelsConfig;
  /** Direct models (with routes of their own), by id, in registry order. */
  models: Map<string, ModelOrigin>;
  ignored: IgnoredRecord[];
  /** Every model id and alias (multi-target models too) to the canonical id. */
  names: Map<string, string>;
}

/** A record's identity: (kind, model, key) as one string. */
export function recordKey(r: Pick<RoutingRecord, 'kind' | 'modelId' | 'key'>): string {
  return JSON.stringify([r.kind, r.modelId, r.key]);
}

/** Why a record cannot be applied; `field`: the route field it comes from, when known. */
export interface Unusable {
  reason: string;
  field: string | null;
}

/** The outcome of `unusableRecords`. */
export interface RecordAssessment {
  /** Live records left out, by `recordKey`, each with why. */
  refused: ReadonlyMap<string, Unusable>;
  /**
   * Set when the configuration fails with every routing record left out too (the YAML, the
   * weights or the RouteWise settings are refused, not a routing record); `refused` is empty then.
   */
  error: Error | null;
}

/**
 * The live records of `records` that a generation cannot be built with. `trial` builds (and
 * drops) the configuration a list of records gives and throws when it is refused. When every
 * record builds together, none is refused (one trial). Otherwise the records are taken in
 * order (`seq`, the order they were created in) and each is kept only when the ones kept so far
 * and it still build: a record is refused for its own problem, or for clashing with an older
 * record that was kept. Removed records (value null) go along unchanged.
 * @returns the refused records with the trial's message; `error` when even no record fails.
 */
export function unusableRecords(records: readonly RoutingRecord[], trial: (records: readonly RoutingRecord[]) => void): RecordAssessment {
  try {
    trial(records);
    return { refused: new Map(), error: null };
  } catch {
    // find which records it is, below
  }
  let kept = records.filter((r) => r.value === null);
  try {
    trial(kept);
  } catch (e) {
    return { refused: new Map(), error: e as Error };
  }
  const refused = new Map<string, Unusable>();
  const taken = new Set<RoutingRecord>();
  const attempt = (add: RoutingRecord[]): unknown => {
    const next = [...kept, ...add];
    try {
      trial(next);
    } catch (e) {
      return e;
    }
    kept = next;
    for (const a of add) taken.add(a);
    return null;
  };
  for (const r of records) {
    if (r.value === null || taken.has(r)) continue;
    let e = attempt([r]);
    // A runtime model is written with its first route: a model the core refuses without routes is tried with it.
    const first = r.kind === 'model' ? records.find((x) => x.kind === 'route' && x.modelId === r.modelId && x.value !== null) : undefined;
    if (e !== null && first) e = attempt([r, first]);
    if (e === null) continue;
    const field = (e as { field?: unknown }).field;
    refused.set(recordKey(r), { reason: (e as Error).message, field: typeof field === 'string' ? field : null });
  }
  return { refused, error: null };
}

/** The id of a route: its derived endpoint id. */
export function derivedRouteId(modelId: string, r: Pick<RouteConfig, 'kind' | 'base_url'>): string {
  return endpointId(modelId, r.kind, r.base_url);
}

/**
 * Lays `records` over `yaml`.
 * @param refused records to leave out (`unusableRecords`), each listed in `ignored` with its reason.
 * @throws Error only when the result fails the registry's own checks (`parseModelsConfig`), e.g.
 *   a runtime route added to a model that a multi-target model uses as a one-route target; the
 *   gateway finds such records with `unusableRecords` and passes them as `refused`.
 */
export function composeModels(yaml: ModelsConfig, records: readonly RoutingRecord[], refused: ReadonlyMap<string, Unusable> = new Map()): EffectiveModels {
  const ignored: IgnoredRecord[] = [];
  const live = records.filter((r) => {
    if (r.value === null) return false;
    const no = refused.get(recordKey(r));
    if (no) ignored.push({ kind: r.kind, modelId: r.modelId, key: r.key, reason: `cannot be applied: ${no.reason}` });
    return no === undefined;
  });
  const names = new Map<string, string>();
  const entries: ModelConfig[] = [];
  const origins = new Map<string, ModelOrigin>();
  const add = (m: ModelConfig, source: 'yaml' | 'runtime', record: RoutingRecord | null): void => {
    entries.push(m);
    for (const n of [m.id, ...m.aliases]) if (!names.has(n)) names.set(n, m.id);
    if (m.routing) return;
    const routes = m.route.map((r): RouteOrigin => ({ routeId: derivedRouteId(m.id, r), source: source === 'yaml' ? 'yaml' : 'runtime', route: r, endpointId: derivedRouteId(m.id, r), yaml: source === 'yaml' ? r : null, record: null }));
    origins.set(m.id, { modelId: m.id, source, model: m, record, routes, strategy: null, offload: null });
  };
  for (const m of yaml.models) add({ ...m, route: [...m.route] }, 'yaml', null);
  for (const rec of live.filter((r) => r.kind === 'model')) {
    const v = rec.value as RuntimeModelValue;
    const clash = [rec.modelId, ...v.aliases].find((n) => names.has(n));
    if (clash !== undefined) {
      ignored.push({ kind: rec.kind, modelId: rec.modelId, key: rec.key, reason: `the name '${clash}' is taken by model '${names.get(clash)}'` });
      continue;
    }
    add({ id: rec.modelId, aliases: v.aliases, published: v.published, router_params: v.router_params, route: [], ...(v.router !== undefined && { router: v.router }) }, 'runtime', rec);
  }
  for (const rec of live.filter((r) => r.kind === 'repoint')) {
    const o = origins.get(rec.modelId);
    const i = o ? o.routes.findIndex((r) => r.routeId === rec.key && r.yaml !== null) : -1;
    if (!o || i < 0) {
      ignored.push({ kind: rec.kind, modelId: rec.modelId, key: rec.key, reason: 'no YAML route has this id any more' });
      continue;
    }
    const prev = o.routes[i]!;
    const route = { ...prev.yaml!, ...(rec.value as Partial<RouteConfig>) } as RouteConfig;
    o.routes[i] = { ...prev, source: 'override', route, endpointId: derivedRouteId(o.modelId, route), record: rec };
  }
  for (const rec of live.filter((r) => r.kind === 'route')) {
    const o = origins.get(rec.modelId);
    if (!o) {
      ignored.push({ kind: rec.kind, modelId: rec.modelId, key: rec.key, reason: 'no model with routes of its own has this id' });
      continue;
    }
    const route = rec.value as RouteConfig;
    const id = derivedRouteId(o.modelId, route);
    const clash = o.routes.find((r) => r.routeId === rec.key || r.endpointId === id);
    if (clash) {
      ignored.push({ kind: rec.kind, modelId: rec.modelId, key: rec.key, reason: `route '${clash.routeId}' already has this route id or endpoint id '${id}'` });
      continue;
    }
    o.routes.push({ routeId: rec.key, source: 'runtime', route, endpointId: id, yaml: null, record: rec });
  }
  // Two re-pointed YAML routes may now derive one endpoint id: the later one is left as it was.
  for (const o of origins.values()) {
    const seen = new Set<string>();
    o.routes = o.routes.map((r) => {
      if (r.source === 'override' && seen.has(r.endpointId)) {
        ignored.push({ kind: 'repoint', modelId: o.modelId, key: r.routeId, reason: `endpoint id '${r.endpointId}' repeats an earlier route` });
        const back = { ...r, source: 'yaml' as const, route: r.yaml!, endpointId: derivedRouteId(o.modelId, r.yaml!), record: null };
        seen.add(back.endpointId);
        return back;
      }
      seen.add(r.endpointId);
      return r;
    });
  }
  for (const rec of live.filter((r) => r.kind === 'strategy')) {
    const o = origins.get(rec.modelId);
    if (!o) {
      ignored.push({ kind: rec.kind, modelId: rec.modelId, key: rec.key, reason: 'no model with routes of its own has this id' });
      continue;
    }
    o.strategy = rec;
  }
  for (const o of origins.values()) {
    const y = o.model.offload;
    if (y) o.offload = { source: 'yaml', routeId: o.routes.find((r) => r.routeId === y.route)?.routeId ?? y.route, value: { route_id: y.route, wait_sec: y.wait_sec, ...(y.engine_queue_limit !== undefined && { engine_queue_limit: y.engine_queue_limit }), ...(y.max_input_tokens !== undefined && { max_input_tokens: y.max_input_tokens }) }, record: null };
  }
  for (const rec of live.filter((r) => r.kind === 'offload')) {
    const o = origins.get(rec.modelId);
    if (!o) {
      ignored.push({ kind: rec.kind, modelId: rec.modelId, key: rec.key, reason: 'no model with routes of its own has this id' });
      continue;
    }
    const v = rec.value as OffloadValue;
    o.offload = { source: 'override', routeId: v.route_id, value: v, record: rec };
  }
  if (live.length === 0) return { config: yaml, models: origins, ignored, names };
  const models = entries.map((m): ModelConfig => {
    const o = origins.get(m.id);
    if (!o) return m;
    const out: ModelConfig = { ...m, route: o.routes.map((r) => r.route) };
    if (o.strategy) out.router = (o.strategy.value as StrategyValue).router;
    delete out.offload;
    if (o.offload) {
      const v = o.offload.value;
      // By route id, else an endpoint id or provider label as the YAML may name it (the core resolves those).
      const target = o.routes.find((r) => r.routeId === v.route_id)?.endpointId ?? v.route_id;
      const offload: OffloadConfig = { route: target, wait_sec: v.wait_sec, ...(v.engine_queue_limit !== undefined && { engine_queue_limit: v.engine_queue_limit }), ...(v.max_input_tokens !== undefined && { max_input_tokens: v.max_input_tokens }) };
      out.offload = offload;
    }
    o.model = out;
    return out;
  });
  return { config: parseModelsConfig({ models, routing: yaml.routing, ...(yaml.auto !== undefined && { auto: yaml.auto }) }, 'models.yaml with the admin overlay'), models: origins, ignored, names };
}
