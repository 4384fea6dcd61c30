/**
 * Runtime models and routes through the admin API (seed 000, "API endpoints"):
 * - `GET /admin/routing/provider-routes[/{model_id}]`: every route the gateway serves, by model,
 *   each with `source: yaml | override | runtime`, its route id and the endpoint id it has now;
 * - `POST /admin/routing/provider-route-models`: a runtime model with its first route;
 * - `POST /admin/routing/provider-route-candidates/{model_id}`: one more route for a model;
 *   `PATCH` / `DELETE …/{model_id}/{route_id}` edit or delete a runtime route (deleting the last
 *   route of a runtime model removes the model; deleting the model's offload route is refused);
 * - `PUT /admin/routing/provider-routes/{model_id}/{route_id}`: re-point a YAML route (the route
 *   id stays, the endpoint id follows the new base URL); `DELETE` restores the YAML route;
 * - `PATCH /admin/routing/provider-route-strategies/{model_id}`: switch the model's router
 *   (refused towards `routewise` while the model has an offload policy: RouteWise ignores it).
 * Model ids may contain `/`, sent encoded (`%2F`) or not; route ids never do.
 *
 * The `POST` and `PUT` writes have `…-verifications` twins (`POST
 * …/provider-route-models-verifications`, `POST …/provider-route-candidates-verifications/{model_id}`,
 * `PUT …/provider-routes-verifications/{model_id}/{route_id}`): the same body and the same
 * checks, in the same code (the 400s, 404s, 409s and the configuration check), then one small
 * request to the route's upstream as the write would leave it (`verifications.ts`); nothing is
 * saved.
 */
import type { OverlaySnapshot } from '../store/overlay-repo.ts';
import type { RoutingRecord, RoutingWrite } from '../store/routing-records.ts';
import type { AdminCall } from './admin-api.ts';
import { maskedUrl, parseBody } from './admin-bodies.ts';
import { derivedRouteId, type ModelOrigin, type RouteOrigin } from './effective-models.ts';
import { CandidateBodySchema, checkRoute, patchedRoute, RepointBodySchema, ROUTE_FIXES, RoutePatchBodySchema, RoutingVersionBodySchema, RuntimeModelBodySchema, StrategyBodySchema } from './route-bodies.ts';
import { badRequest, commit, effective, findModel, findRoute, modelRouteTail, modelTail, precondition, refuse, routeNotFound, routeSpec, verifyChange, writesRefused, type RoutingAdminDeps, type RoutingResult } from './routing-admin-kit.ts';

const ROUTES = '/admin/routing/provider-routes';
const MODELS = '/admin/routing/provider-route-models';
const CANDIDATES = '/admin/routing/provider-route-candidates';
const STRATEGIES = '/admin/routing/provider-route-strategies';
/** Suffix of a write's collection that names its verification twin. */
const VERIFY = '-verifications';

/** The runtime models-and-routes calls; `route` answers null for a call that is not one. */
export class RouteAdmin {
  constructor(private readonly d: RoutingAdminDeps) {}

  /** Answers the call when it is one of these routes, else null. */
  route(call: AdminCall): Promise<RoutingResult> | null {
    const { method, path } = call;
    if (path === ROUTES && method === 'GET') return Promise.resolve(this.list(null));
    if (path.startsWith(`${ROUTES}/`)) {
      const tail = path.slice(ROUTES.length + 1);
      if (method === 'GET') return Promise.resolve(this.list(modelTail(tail)));
      if (method === 'PUT' || method === 'DELETE') return this.guard(() => this.repoint(call, tail));
    }
    if (path === MODELS && method === 'POST') return this.guard(() => this.createModel(call));
    if (path.startsWith(`${CANDIDATES}/`)) {
      const tail = path.slice(CANDIDATES.length + 1);
      if (method === 'POST') return this.guard(() => this.addRoute(call, tail));
      if (method === 'PATCH' || method === 'DELETE') return this.guard(() => this.editRoute(call, tail));
    }
    // Verification twins: the write's checks and body, a try of the upstream, nothing saved; so
    // also served where writes are refused.
    if (path === `${MODELS}${VERIFY}` && method === 'POST') return this.createModel(call, true);
    if (path.startsWith(`${CANDIDATES}${VERIFY}/`) && method === 'POST') return this.addRoute(call, path.slice(CANDIDATES.length + VERIFY.length + 1), true);
    if (path.startsWith(`${ROUTES}${VERIFY}/`) && method === 'PUT') return this.repoint(call, path.slice(ROUTES.length + VERIFY.length + 1), true);
    if (path.startsWith(`${STRATEGIES}/`) && method === 'PATCH') return this.guard(() => this.switchRouter(call, path.slice(STRATEGIES.length + 1)));
    return null;
  }

  private guard(fn: () => Promise<RoutingResult>): Promise<RoutingResult> {
    const no = writesRefused(this.d);
    return no ? Promise.resolve(no) : fn();
  }

  /** `GET …/provider-routes[/{model_id}]` from the generation in force. */
  private list(modelName: string | null): RoutingResult {
    const eff = effective(this.d, this.d.overlay());
    if (modelName !== null) {
      const m = findModel(eff, modelName);
      if (!m.ok) return m.result;
      return { answer: { status: 200, body: { generation: this.d.generation(), model: this.modelView(m.model) } } };
    }
    return {
      answer: {
        status: 200,
        body: {
          generation: this.d.generation(),
          models: [...eff.models.values()].map((m) => this.modelView(m)),
          ignored: eff.ignored.map((x) => ({ kind: x.kind, model_id: x.modelId, key: x.key, reason: x.reason })),
        },
      },
    };
  }

  private modelView(m: ModelOrigin): Record<string, unknown> {
    const live = this.d.core().model(m.modelId);
    const byId = new Map((live?.routes ?? []).map((r) => [r.endpointId, r]));
    return {
      model_id: m.modelId,
      aliases: m.model.aliases,
      source: m.source,
      published: m.model.published,
      router: live?.strategy ?? m.model.router ?? null,
      router_source: m.strategy ? 'override' : m.source,
      version: m.record?.version ?? 0,
      strategy_version: m.strategy?.version ?? 0,
      offload_route_id: m.offload?.routeId ?? null,
      routes: m.routes.map((r) => {
        const lr = byId.get(r.endpointId);
        return {
          route_id: r.routeId,
          endpoint_id: r.endpointId,
          source: r.source,
          kind: r.route.kind,
          base_url: maskedUrl(r.route.base_url),
          provider: lr?.provider ?? r.route.provider ?? null,
          provider_model_id: r.route.provider_model_id ?? null,
          weight: r.route.weight,
          effective_weight: lr?.effectiveWeight ?? null,
          exclusion_reasons: lr?.exclusionReasons ?? [],
          api_key_set: r.route.api_key !== undefined && r.route.api_key.length > 0,
          input_modalities: r.route.input_modalities,
          context_length: r.route.context_length ?? null,
          version: r.record?.version ?? 0,
          updated_by: r.record?.updatedBy ?? null,
          updated_at: r.record?.updatedAt ?? null,
          ...(r.yaml && r.source === 'override' && { yaml: { kind: r.yaml.kind, base_url: maskedUrl(r.yaml.base_url), endpoint_id: derivedRouteId(m.modelId, r.yaml) } }),
        };
      }),
    };
  }

  /** `POST …/provider-route-models`; `verify`: its twin `POST …/provider-route-models-verifications`. */
  private async createModel(call: AdminCall, verify = false): Promise<RoutingResult> {
    const body = parseBody(RuntimeModelBodySchema, call.body, ROUTE_FIXES);
    if (!body.ok) return badRequest(body.problem);
    const { route_id, ...rest } = body.value.route;
    const route = checkRoute(rest, 'route.');
    if (!route.ok) return badRequest(route.problem);
    const b = body.value;
    const fresh = await this.d.repo.load();
    const eff = effective(this.d, fresh);
    for (const [i, n] of [b.model_id, ...b.aliases].entries()) {
      const owner = eff.names.get(n);
      if (owner !== undefined) return refuse(409, 'model_exists', `The name '${n}' is already model '${owner}'${n === owner ? '' : "'s alias"}; choose another name, or add a route to it with POST ${CANDIDATES}/${encodeURIComponent(owner)}.`, i === 0 ? 'model_id' : `aliases.${i - 1}`);
    }
    const routeId = route_id ?? derivedRouteId(b.model_id, route.route);
    const model = { aliases: b.aliases, published: b.published, router_params: b.router_params, ...(b.router !== undefined && { router: b.router }) };
    const writes: RoutingWrite[] = [
      { kind: 'model', modelId: b.model_id, key: '', value: model, expect: 'absent' },
      { kind: 'route', modelId: b.model_id, key: routeId, value: route.route, expect: 'absent' },
    ];
    if (verify) return verifyChange(this.d, call, fresh, writes, { from: null, param: null, routeParam: 'route.' }, [routeSpec(b.model_id, route.route)], { model_id: b.model_id, route_id: routeId });
    return commit(this.d, call, fresh, writes, { from: null, status: 201, param: null, routeParam: 'route.', body: () => ({ model_id: b.model_id, route_id: routeId, endpoint_id: derivedRouteId(b.model_id, route.route) }) });
  }

  /** `POST …/provider-route-candidates/{model_id}`; `verify`: its twin `POST …/provider-route-candidates-verifications/{model_id}`. */
  private async addRoute(call: AdminCall, tail: string, verify = false): Promise<RoutingResult> {
    const name = modelTail(tail);
    if (name === null) return refuse(404, 'model_not_found', `Name the model: POST ${CANDIDATES}/{model_id}.`, 'model_id');
    const fresh = await this.d.repo.load();
    const m = findModel(effective(this.d, fresh), name);
    if (!m.ok) return m.result;
    const body = parseBody(CandidateBodySchema, call.body, ROUTE_FIXES);
    if (!body.ok) return badRequest(body.problem);
    const { route_id, ...rest } = body.value;
    const route = checkRoute(rest, '');
    if (!route.ok) return badRequest(route.problem);
    const model = m.model;
    const routeId = route_id ?? derivedRouteId(model.modelId, route.route);
    if (model.routes.some((r) => r.routeId === routeId)) {
      return refuse(409, 'route_exists', `Model '${model.modelId}' already has route '${routeId}'; send another route_id, or change that route with PATCH ${CANDIDATES}/${encodeURIComponent(model.modelId)}/${encodeURIComponent(routeId)}.`, 'route_id');
    }
    const clash = this.endpointClash(model, route.route, null);
    if (clash) return clash;
    const writes: RoutingWrite[] = [{ kind: 'route', modelId: model.modelId, key: routeId, value: route.route, expect: 'absent' }];
    if (verify) return verifyChange(this.d, call, fresh, writes, { from: null, param: null, routeParam: '' }, [routeSpec(model.modelId, route.route)], { model_id: model.modelId, route_id: routeId });
    return commit(this.d, call, fresh, writes, { from: null, status: 201, param: null, routeParam: '', body: () => ({ model_id: model.modelId, route_id: routeId, endpoint_id: derivedRouteId(model.modelId, route.route) }) });
  }

  /** `PATCH` / `DELETE …/provider-route-candidates/{model_id}/{route_id}`: runtime routes only. */
  private async editRoute(call: AdminCall, tail: string): Promise<RoutingResult> {
    const at = modelRouteTail(tail);
    if (!at) return refuse(404, 'route_not_found', `Name the model and the route: ${call.method} ${CANDIDATES}/{model_id}/{route_id}.`, 'route_id');
    const fresh = await this.d.repo.load();
    const m = findModel(effective(this.d, fresh), at.modelName);
    if (!m.ok) return m.result;
    const model = m.model;
    const r = findRoute(model, at.routeId);
    if (!r) {
      // A stored route the gateway leaves out (listed under `ignored`) can still be deleted.
      const stray = call.method === 'DELETE' ? fresh.routing.find((x) => x.kind === 'route' && x.modelId === model.modelId && x.key === at.routeId && x.value !== null) : undefined;
      return stray ? this.deleteStray(call, fresh, model, stray) : routeNotFound(model, at.routeId, 'route_id');
    }
    if (r.source !== 'runtime') {
      return refuse(409, 'not_runtime_route', `Route '${r.routeId}' of model '${model.modelId}' comes from models.yaml; re-point it with PUT ${ROUTES}/${encodeURIComponent(model.modelId)}/${encodeURIComponent(r.routeId)} (DELETE there restores it), or edit the file.`, 'route_id');
    }
    const del = call.method === 'DELETE';
    const body = del ? parseBody(RoutingVersionBodySchema, call.body, ROUTE_FIXES) : parseBody(RoutePatchBodySchema, call.body, ROUTE_FIXES);
    if (!body.ok) return badRequest(body.problem);
    const { version, ...fields } = body.value as { version?: number } & Record<string, unknown>;
    const pre = precondition(call, version);
    if (!pre.ok) return pre.result;
    const key = () => ({ model_id: model.modelId, route_id: r.routeId });
    if (del) {
      if (this.isOffloadRoute(model, r)) {
        return refuse(409, 'offload_route', `Route '${r.routeId}' is the offload route of model '${model.modelId}', so deleting it would leave the policy pointing nowhere; clear the policy first with DELETE /admin/routing/offload-routes/${encodeURIComponent(model.modelId)} (or PUT it with another route_id), then delete the route.`, 'route_id');
      }
      const writes: RoutingWrite[] = [{ kind: 'route', modelId: model.modelId, key: r.routeId, value: null, expect: pre.version }];
      // A runtime model lives as long as it has a route: its last one takes the model with it.
      const last = model.source === 'runtime' && model.routes.length === 1;
      if (last) writes.push({ kind: 'model', modelId: model.modelId, key: '', value: null, expect: model.record!.version });
      return commit(this.d, call, fresh, writes, { from: pre.from, param: 'route_id', body: () => ({ ...key(), deleted: true, model_removed: last }) });
    }
    const merged = checkRoute(patchedRoute(r.route, fields), '');
    if (!merged.ok) return badRequest(merged.problem);
    const clash = this.endpointClash(model, merged.route, r);
    if (clash) return clash;
    const writes: RoutingWrite[] = [{ kind: 'route', modelId: model.modelId, key: r.routeId, value: merged.route, expect: pre.version }];
    return commit(this.d, call, fresh, writes, { from: pre.from, param: null, routeParam: '', body: () => ({ ...key(), endpoint_id: derivedRouteId(model.modelId, merged.route) }) });
  }

  /** `DELETE` of a route record that is stored but left out of the generation (`ignored`). */
  private deleteStray(call: AdminCall, fresh: OverlaySnapshot, model: ModelOrigin, rec: RoutingRecord): Promise<RoutingResult> | RoutingResult {
    const body = parseBody(RoutingVersionBodySchema, call.body, ROUTE_FIXES);
    if (!body.ok) return badRequest(body.problem);
    const pre = precondition(call, body.value.version);
    if (!pre.ok) return pre.result;
    const writes: RoutingWrite[] = [{ kind: 'route', modelId: model.modelId, key: rec.key, value: null, expect: pre.version }];
    const others = fresh.routing.some((x) => x.kind === 'route' && x.modelId === model.modelId && x.key !== rec.key && x.value !== null);
    const last = model.source === 'runtime' && model.routes.length === 0 && !others;
    if (last) writes.push({ kind: 'model', modelId: model.modelId, key: '', value: null, expect: model.record!.version });
    return commit(this.d, call, fresh, writes, { from: pre.from, param: 'route_id', body: () => ({ model_id: model.modelId, route_id: rec.key, deleted: true, model_removed: last }) });
  }

  /**
   * `PUT` (re-point) / `DELETE` (restore) `…/provider-routes/{model_id}/{route_id}`: YAML routes
   * only; `verify`: the twin of the `PUT`, `PUT …/provider-routes-verifications/{model_id}/{route_id}`.
   */
  private async repoint(call: AdminCall, tail: string, verify = false): Promise<RoutingResult> {
    const at = modelRouteTail(tail);
    if (!at) return refuse(404, 'route_not_found', `Name the model and the route: ${call.method} ${ROUTES}/{model_id}/{route_id}.`, 'route_id');
    const fresh = await this.d.repo.load();
    const m = findModel(effective(this.d, fresh), at.modelName);
    if (!m.ok) return m.result;
    const model = m.model;
    const r = findRoute(model, at.routeId);
    if (!r) return routeNotFound(model, at.routeId, 'route_id');
    const path = `${CANDIDATES}/${encodeURIComponent(model.modelId)}/${encodeURIComponent(r.routeId)}`;
    if (r.source === 'runtime') {
      return refuse(409, 'runtime_route', `Route '${r.routeId}' of model '${model.modelId}' was added at run time, so there is no YAML route to re-point or restore; change it with PATCH ${path} or delete it with DELETE ${path}.`, 'route_id');
    }
    const del = call.method === 'DELETE';
    const body = del ? parseBody(RoutingVersionBodySchema, call.body, ROUTE_FIXES) : parseBody(RepointBodySchema, call.body, ROUTE_FIXES);
    if (!body.ok) return badRequest(body.problem);
    const { version, ...fields } = body.value as { version?: number } & Record<string, unknown>;
    const pre = precondition(call, version);
    if (!pre.ok) return pre.result;
    const key = () => ({ model_id: model.modelId, route_id: r.routeId });
    if (del) {
      if (r.source !== 'override') return refuse(404, 'override_not_found', `Route '${r.routeId}' of model '${model.modelId}' is not re-pointed; there is nothing to restore.`, 'route_id');
      const writes: RoutingWrite[] = [{ kind: 'repoint', modelId: model.modelId, key: r.routeId, value: null, expect: pre.version }];
      return commit(this.d, call, fresh, writes, { from: pre.from, param: null, body: () => ({ ...key(), endpoint_id: r.yaml ? derivedRouteId(model.modelId, r.yaml) : null, restored: true }) });
    }
    const merged = checkRoute({ ...r.yaml!, ...fields }, '');
    if (!merged.ok) return badRequest(merged.problem);
    const clash = this.endpointClash(model, merged.route, r);
    if (clash) return clash;
    const writes: RoutingWrite[] = [{ kind: 'repoint', modelId: model.modelId, key: r.routeId, value: fields, expect: pre.version }];
    if (verify) return verifyChange(this.d, call, fresh, writes, { from: pre.from, param: null, routeParam: '' }, [routeSpec(model.modelId, merged.route)], key());
    return commit(this.d, call, fresh, writes, { from: pre.from, param: null, routeParam: '', body: () => ({ ...key(), endpoint_id: derivedRouteId(model.modelId, merged.route) }) });
  }

  /** `PATCH …/provider-route-strategies/{model_id}`. */
  private async switchRouter(call: AdminCall, tail: string): Promise<RoutingResult> {
    const name = modelTail(tail);
    if (name === null) return refuse(404, 'model_not_found', `Name the model: PATCH ${STRATEGIES}/{model_id}.`, 'model_id');
    const fresh = await this.d.repo.load();
    const m = findModel(effective(this.d, fresh), name);
    if (!m.ok) return m.result;
    const model = m.model;
    const body = parseBody(StrategyBodySchema, call.body, ROUTE_FIXES);
    if (!body.ok) return badRequest(body.problem);
    const pre = precondition(call, body.value.version);
    if (!pre.ok) return pre.result;
    if (body.value.router === 'routewise' && model.offload) {
      return refuse(409, 'offload_policy_set', `Model '${model.modelId}' has an offload policy (route '${model.offload.routeId}', from ${model.offload.source === 'yaml' ? 'models.yaml' : 'the admin API'}), and RouteWise plans its own candidates and ignores it; clear it first with DELETE /admin/routing/offload-routes/${encodeURIComponent(model.modelId)}${model.offload.source === 'yaml' ? ' (or remove offload: from models.yaml)' : ''}, then switch.`, 'router');
    }
    const writes: RoutingWrite[] = [{ kind: 'strategy', modelId: model.modelId, key: '', value: { router: body.value.router }, expect: pre.version }];
    return commit(this.d, call, fresh, writes, { from: pre.from, param: 'router', body: () => ({ model_id: model.modelId, router: body.value.router }) });
  }

  /** Whether `r` is the route the model's offload policy names (by route id, endpoint id or, in YAML, provider label). */
  private isOffloadRoute(m: ModelOrigin, r: RouteOrigin): boolean {
    const o = m.offload;
    if (o === null) return false;
    return o.routeId === r.routeId || o.value.route_id === r.endpointId || this.d.core().model(m.modelId)?.offload?.endpointId === r.endpointId;
  }

  /** 409 when `route` derives an endpoint id another route of `m` (other than `self`) has. */
  private endpointClash(m: ModelOrigin, route: { kind: string; base_url: string }, self: RouteOrigin | null): RoutingResult | null {
    const id = derivedRouteId(m.modelId, route);
    const other = m.routes.find((x) => x !== self && x.endpointId === id);
    if (!other) return null;
    return refuse(409, 'endpoint_exists', `This route would have endpoint id '${id}', which route '${other.routeId}' of model '${m.modelId}' already has (ids derive from the base URL: a loopback port, or the vendor's host); use another port or host, or change that route instead.`, 'base_url');
  }
}
