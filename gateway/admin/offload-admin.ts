/**
 * Offload policies through the admin API (seed 000, "排队等待卸载"): `GET
 * /admin/routing/offload-routes[/{model_id}]` lists each model's policy — route id, the endpoint
 * id it has now, wait seconds, engine queue limit, max offload input, where it came from (`yaml`
 * or `override`) — and whether the core applies it (`active`, `inactive_reason`: the route is
 * gone or has effective weight 0, it is the model's only route, the model is RouteWise).
 * `PUT …/{model_id}` sets the policy, `DELETE` clears it (a YAML `offload:` applies again).
 *
 * Refused: a RouteWise model (it plans its own candidates and ignores the policy), a route id
 * that is blank or not one of the model's, a
 * wait that is not > 0. The policy names its route by route id, so re-pointing the route keeps
 * it; the route cannot be deleted while the policy names it (`route-admin.ts`).
 *
 * `PUT /admin/routing/offload-routes-verifications/{model_id}` is the twin of the `PUT`: the same
 * body and checks, then one small request to the offload route's upstream; nothing is saved.
 */
import type { RoutingWrite } from '../store/routing-records.ts';
import type { AdminCall } from './admin-api.ts';
import { parseBody } from './admin-bodies.ts';
import type { ModelOrigin, OffloadValue } from './effective-models.ts';
import { OffloadBodySchema, ROUTE_FIXES, RoutingVersionBodySchema } from './route-bodies.ts';
import { badRequest, commit, effective, findModel, findRoute, modelTail, precondition, refuse, routeNotFound, routeSpec, verifyChange, writesRefused, type RoutingAdminDeps, type RoutingResult } from './routing-admin-kit.ts';

const OFFLOAD = '/admin/routing/offload-routes';
/** The verification twin of `PUT …/{model_id}` (served where writes are refused too). */
const OFFLOAD_VERIFY = '/admin/routing/offload-routes-verifications';

/** The offload-policy calls; `route` answers null for a call that is not one. */
export class OffloadAdmin {
  constructor(private readonly d: RoutingAdminDeps) {}

  /** Answers the call when it is one of these routes, else null. */
  route(call: AdminCall): Promise<RoutingResult> | null {
    const { method, path } = call;
    if (path === OFFLOAD && method === 'GET') return Promise.resolve(this.list(null));
    if (method === 'PUT' && path.startsWith(`${OFFLOAD_VERIFY}/`)) {
      const v = modelTail(path.slice(OFFLOAD_VERIFY.length + 1));
      return v === null ? null : this.set(call, v, true);
    }
    if (!path.startsWith(`${OFFLOAD}/`)) return null;
    const name = modelTail(path.slice(OFFLOAD.length + 1));
    if (name === null) return null;
    if (method === 'GET') return Promise.resolve(this.list(name));
    if (method !== 'PUT' && method !== 'DELETE') return null;
    const no = writesRefused(this.d);
    if (no) return Promise.resolve(no);
    return method === 'PUT' ? this.set(call, name) : this.clear(call, name);
  }

  /** Policies of the generation in force, with the core's verdict. */
  private list(modelName: string | null): RoutingResult {
    const eff = effective(this.d, this.d.overlay());
    if (modelName !== null) {
      const m = findModel(eff, modelName);
      if (!m.ok) return m.result;
      return { answer: { status: 200, body: { generation: this.d.generation(), policy: this.view(m.model) } } };
    }
    const policies = [...eff.models.values()].filter((m) => m.offload !== null).map((m) => this.view(m));
    return { answer: { status: 200, body: { generation: this.d.generation(), policies } } };
  }

  private view(m: ModelOrigin): Record<string, unknown> | null {
    const o = m.offload;
    if (!o) return null;
    const live = this.d.core().model(m.modelId)?.offload;
    return {
      model_id: m.modelId,
      source: o.source,
      route_id: o.routeId,
      endpoint_id: live?.endpointId ?? null,
      wait_sec: o.value.wait_sec,
      engine_queue_limit: o.value.engine_queue_limit ?? null,
      max_input_tokens: o.value.max_input_tokens ?? null,
      active: live?.active ?? false,
      inactive_reason: live ? live.inactiveReason : 'route_not_found',
      version: o.record?.version ?? 0,
      updated_by: o.record?.updatedBy ?? null,
      updated_at: o.record?.updatedAt ?? null,
    };
  }

  /** `PUT …/offload-routes/{model_id}`; `verify`: its twin, which tries the offload route's upstream. */
  private async set(call: AdminCall, name: string, verify = false): Promise<RoutingResult> {
    const fresh = await this.d.repo.load();
    const eff = effective(this.d, fresh);
    const m = findModel(eff, name);
    if (!m.ok) return m.result;
    const model = m.model;
    const body = parseBody(OffloadBodySchema, call.body, ROUTE_FIXES);
    if (!body.ok) return badRequest(body.problem);
    const b = body.value;
    const pre = precondition(call, b.version);
    if (!pre.ok) return pre.result;
    const strategy = model.model.router ?? eff.config.routing.default_router;
    if (strategy === 'routewise') {
      return refuse(409, 'routewise_model', `Model '${model.modelId}' uses the routewise router, which plans its own candidates and ignores an offload route; switch it to fixed first (PATCH /admin/routing/provider-route-strategies/${encodeURIComponent(model.modelId)}) if you want one.`, 'model_id');
    }
    const r = findRoute(model, b.route_id);
    if (!r) return routeNotFound(model, b.route_id, 'route_id');
    const value: OffloadValue = {
      route_id: r.routeId,
      wait_sec: b.wait_sec,
      ...(b.engine_queue_limit != null && { engine_queue_limit: b.engine_queue_limit }),
      ...(b.max_input_tokens != null && { max_input_tokens: b.max_input_tokens }),
    };
    const writes: RoutingWrite[] = [{ kind: 'offload', modelId: model.modelId, key: '', value, expect: pre.version }];
    if (verify) return verifyChange(this.d, call, fresh, writes, { from: pre.from, param: 'route_id' }, [routeSpec(model.modelId, r.route)], { model_id: model.modelId, route_id: r.routeId });
    const out = await commit(this.d, call, fresh, writes, { from: pre.from, param: 'route_id', body: () => ({ model_id: model.modelId }) });
    if (out.answer.status === 200) {
      const applied = effective(this.d, this.d.overlay()).models.get(model.modelId);
      (out.answer.body as Record<string, unknown>).policy = applied ? this.view(applied) : null;
    }
    return out;
  }

  /** `DELETE …/offload-routes/{model_id}`: clears the override. */
  private async clear(call: AdminCall, name: string): Promise<RoutingResult> {
    const fresh = await this.d.repo.load();
    const m = findModel(effective(this.d, fresh), name);
    if (!m.ok) return m.result;
    const model = m.model;
    const body = parseBody(RoutingVersionBodySchema, call.body, ROUTE_FIXES);
    if (!body.ok) return badRequest(body.problem);
    const pre = precondition(call, body.value.version);
    if (!pre.ok) return pre.result;
    if (model.offload?.source !== 'override') {
      const why = model.offload ? `its policy comes from models.yaml (offload:); remove it there` : 'it has none';
      return refuse(404, 'offload_not_found', `Model '${model.modelId}' has no offload policy set through the admin API to clear: ${why}.`, 'model_id');
    }
    const writes: RoutingWrite[] = [{ kind: 'offload', modelId: model.modelId, key: '', value: null, expect: pre.version }];
    return commit(this.d, call, fresh, writes, {
      from: pre.from,
      param: null,
      body: () => {
        const after = effective(this.d, this.d.overlay()).models.get(model.modelId);
        return { model_id: model.modelId, cleared: true, policy: after ? this.view(after) : null };
      },
    });
  }
}
