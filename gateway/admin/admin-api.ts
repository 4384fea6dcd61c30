/**
 * The runtime admin API under `/admin/…` (seed 000, "API endpoints"): the routing view, weight
 * overrides, provider labels disabled and enabled, and the audit log; runtime models and routes
 * (`route-admin.ts`) and offload policies (`offload-admin.ts`) are modules tried after these,
 * then the groups of RouteWise settings, runtime settings (`runtime-settings-admin.ts`) and
 * verifications. The HTTP layer
 * (`server/uws.ts`) authenticates the caller as an admin on whichever listener the call came in,
 * reads the body and hands the call here; every call is answered with JSON and audited (who,
 * from where, when, what, and for a change the records before and after). Calls refused before
 * they get here (no key, a wrong key, no admin role) are audited too, within a bound per window
 * (`refused-audit.ts`) so that a flood of them cannot grow the log without limit.
 *
 * A change is written to the overlay store first, with the version precondition the caller sent
 * (`If-Match` ⇒ 412 when stale, a body `version` ⇒ 409), then the whole overlay is read back and
 * applied as a new configuration generation (`AdminDeps.apply`), so what a replica serves is
 * always what the store holds. A store that cannot be reached answers 503 and changes nothing:
 * the gateway keeps serving on the generation it last applied. A change that was committed but
 * could not be read back or applied answers 500 `apply_failed`, saying that it was saved.
 */
import type { Logger } from 'pino';
import type { Caller } from '../callers.ts';
import type { RoutingCore } from '../../core/index.ts';
import type { OverlayRepo, OverlaySnapshot, WriteResult } from '../store/overlay-repo.ts';
import { routeWiseSettingsRoutes } from './routewise-settings-admin.ts';
import { runtimeSettingsRoutes, type YamlRuntimeSettings } from './runtime-settings-admin.ts';
import { verificationRoutes } from './verifications.ts';
import type { RouteTarget } from '../server/exchange-context.ts';
import { RefusedAudit, type RefusedAuditOptions, type RefusedCall } from './refused-audit.ts';
import { AuditQuerySchema, maskedUrl, parseBody, parseIfMatch, parseQuery, ProviderBodySchema, VersionOnlyBodySchema, WeightBodySchema, type BodyProblem } from './admin-bodies.ts';

/** One admin call as the HTTP layer read it. */
export interface AdminCall {
  method: string;
  /** Path without the query string, still percent-encoded. */
  path: string;
  query: URLSearchParams;
  /** `If-Match` header ('' when absent). */
  ifMatch: string;
  body: string;
  caller: Caller;
  /** The client's address as the listener saw it. */
  remoteAddr: string;
}

/** The answer: status, JSON body, and an ETag (a record's version) when one is read or written. */
export interface AdminAnswer {
  status: number;
  body: unknown;
  etag?: string;
}

/** What the API needs from the gateway. */
export interface AdminDeps {
  repo: OverlayRepo;
  /** The current generation's core (for ids, providers, weights). */
  core(): RoutingCore;
  /** The overlay the current generation was built with. */
  overlay(): OverlaySnapshot;
  /**
   * Applies `next` as a new configuration generation (learned state carried over).
   * @throws Error when the core rejects it (the old generation stays).
   */
  apply(next: OverlaySnapshot): void;
  /** Number of the current generation (1 at start, +1 per applied change or reload). */
  generation(): number;
  /** Whether a database backs the overlay (false: this process only). */
  persistent: boolean;
  /**
   * Why changes are refused here, or null: a gateway of several workers without a store, where
   * a change would reach only the worker that took the call.
   */
  writesRefused: string | null;
  log: Logger;
  /** Further route families (runtime routes, offload policies), tried after the built-in ones; each answers null for a call not its own. */
  modules?: ReadonlyArray<{ route(call: AdminCall): Promise<{ answer: AdminAnswer; change?: { before: unknown; after: unknown } }> | null }>;
  /** Extra read-only routes (e.g. the request log's reports), tried after the built-in ones. */
  extraRoutes?: (call: AdminCall) => Promise<AdminAnswer> | null;
  /** Options of the refused-call bound (`refused-audit.ts`; tests shorten the window). */
  refusedAudit?: Partial<RefusedAuditOptions>;
  /** Wall clock, Unix ms (default `Date.now`). */
  nowUnixMs?: () => number;
  /** The current generation's upstream targets by endpoint id (verifications try them). */
  targets?: () => ReadonlyMap<string, RouteTarget>;
  /** A model's `router_params:` in the configuration in force (null: none, or no such model). */
  yamlRouterParams?: (modelId: string) => Readonly<Record<string, unknown>> | null;
  /** The gateway.yaml values of the runtime settings in force (`runtime-settings-admin.ts`; default: their schema defaults). */
  yamlSettings?: () => YamlRuntimeSettings;
}

const WEIGHT_PATH = /^\/admin\/routing\/weights\/([^/]+)\/([^/]+)$/;
const PROVIDER_PATH = /^\/admin\/routing\/providers\/([^/]+)$/;

/** An answer and, for a change, the records before and after (audited). */
export interface Routed {
  answer: AdminAnswer;
  change?: { before: unknown; after: unknown };
}

/** A group of admin routes kept in a file of its own, tried before the 404. */
export interface AdminRouteGroup {
  /** The answer to `call`, or null when no route of the group matches it. */
  route(call: AdminCall): Promise<Routed> | null;
}

/** What a route group gets from the API: its dependencies and the shared write path. */
export interface AdminKit {
  readonly d: AdminDeps;
  /** Refusal (412 / 409) or: read the overlay back, apply it, answer the record written. */
  finish<T extends { version: number }>(r: WriteResult<T>, from: 'if-match' | 'version' | null, key: () => Record<string, unknown>): Promise<Routed>;
}

/** The `/admin/…` routes. */
export class AdminApi {
  private readonly refusals: RefusedAudit;
  private readonly groups: AdminRouteGroup[];

  constructor(private readonly d: AdminDeps) {
    this.refusals = new RefusedAudit((e) => this.store(e), d.nowUnixMs ?? Date.now, d.refusedAudit);
    const kit: AdminKit = { d, finish: (r, from, key) => this.finish(r, from, key) };
    this.groups = [routeWiseSettingsRoutes(kit), runtimeSettingsRoutes(kit, d.yamlSettings ?? (() => ({ auto_mode_enabled: false }))), verificationRoutes(kit)];
  }

  /** Answers one call and audits it (an audit write that fails is logged, not answered). */
  async handle(call: AdminCall): Promise<AdminAnswer> {
    await this.refusals.flushDue(); // a summary of refusals is listed before the calls after it
    let answer: AdminAnswer;
    let change: { before: unknown; after: unknown } | null = null;
    try {
      const r = await this.route(call);
      answer = r.answer;
      change = r.change ?? null;
    } catch (e) {
      answer = storeDown(e);
    }
    await this.audit(call.caller, call.remoteAddr, call.method, call.path, answer.status, change);
    return answer;
  }

  /** Records a call answered elsewhere (`/health/deep`, `/routing`). */
  async audit(caller: Caller, remoteAddr: string, method: string, path: string, status: number, change: { before: unknown; after: unknown } | null = null): Promise<void> {
    await Promise.all([this.refusals.flushDue(), this.store({ callerId: caller.id, remoteAddr, method, path, status, before: change?.before ?? null, after: change?.after ?? null })]);
  }

  /**
   * Records a call refused before it reached the API (401 without a valid key, 403 / 404 for a
   * key without the admin role), within the refused-call bound (`refused-audit.ts`).
   */
  refused(c: RefusedCall): Promise<void> {
    return this.refusals.record(c);
  }

  /** Appends one entry; a write that fails is logged, never thrown. */
  private async store(e: Parameters<OverlayRepo['appendAudit']>[0]): Promise<void> {
    try {
      await this.d.repo.appendAudit(e);
    } catch (err) {
      this.d.log.error({ method: e.method, path: e.path, caller: e.callerId, reason: (err as Error).message }, 'admin audit entry not stored');
    }
  }

  private async route(call: AdminCall): Promise<{ answer: AdminAnswer; change?: { before: unknown; after: unknown } }> {
    const { method, path } = call;
    if (path === '/admin/routing' && method === 'GET') return { answer: { status: 200, body: this.routingView() } };
    if (path === '/admin/routing/providers' && method === 'GET') return { answer: { status: 200, body: { providers: this.providersView() } } };
    if (path === '/admin/audit' && method === 'GET') {
      const q = parseQuery(AuditQuerySchema, call.query);
      if (!q.ok) return { answer: badRequest(q.problem) };
      const entries = await this.d.repo.listAudit(q.value.limit);
      return { answer: { status: 200, body: { entries: entries.map((e) => ({ id: e.id, at: e.at, caller_id: e.callerId, remote_addr: e.remoteAddr, method: e.method, path: e.path, status: e.status, before: e.before, after: e.after })) } } };
    }
    const w = WEIGHT_PATH.exec(path);
    if (this.d.writesRefused && method !== 'GET' && (w || PROVIDER_PATH.test(path))) {
      return { answer: { status: 409, body: error('store_required', this.d.writesRefused, null) } };
    }
    if (w && (method === 'PUT' || method === 'DELETE')) return this.writeWeight(call, decode(w[1]!), decode(w[2]!));
    const p = PROVIDER_PATH.exec(path);
    if (p && method === 'PUT') return this.writeProvider(call, decode(p[1]!));
    for (const m of this.d.modules ?? []) {
      const r = m.route(call);
      if (r) return r;
    }
    for (const g of this.groups) {
      const r = g.route(call);
      if (r) return r;
    }
    const extra = this.d.extraRoutes?.(call);
    if (extra) return { answer: await extra };
    return { answer: { status: 404, body: error('not_found', `Unknown admin URL: ${method} ${path}.`, null) } };
  }

  /**
   * `GET /admin/routing`: every model (unpublished too), routes with weights, reasons and
   * overrides; a route an enforcing health check holds out reads weight 0, reason `health_check`.
   */
  routingView(): Record<string, unknown> {
    const core = this.d.core();
    const ov = this.d.overlay();
    const overrideOf = new Map(ov.weights.filter((x) => x.weight !== null).map((x) => [x.endpointId, x]));
    return {
      generation: this.d.generation(),
      persistent: this.d.persistent,
      models: core.allModels().map((m) => ({
        id: m.id,
        aliases: m.aliases,
        strategy: m.strategy,
        published: m.published,
        ...(m.multiTarget && { multi_target: true }),
        routes: m.routes.map((r) => {
          const o = overrideOf.get(r.endpointId);
          return {
            endpoint_id: r.endpointId,
            provider: r.provider,
            base_url: maskedUrl(r.baseUrl),
            configured_weight: r.configuredWeight,
            // An enforcing health check reading unhealthy holds the route out of selection.
            ...(core.healthChecks.excludes(r.endpointId)
              ? { effective_weight: 0, exclusion_reasons: [...r.exclusionReasons, 'health_check'] }
              : { effective_weight: r.effectiveWeight, exclusion_reasons: r.exclusionReasons }),
            weight_override: o ? { weight: o.weight, version: o.version, updated_by: o.updatedBy, updated_at: o.updatedAt } : null,
          };
        }),
      })),
      providers: this.providersView(),
    };
  }

  private providersView(): Array<Record<string, unknown>> {
    const ov = this.d.overlay();
    const state = new Map(ov.providers.map((p) => [p.provider, p]));
    const endpoints = new Map<string, string[]>();
    for (const m of this.d.core().allModels()) {
      if (m.multiTarget) continue;
      for (const r of m.routes) (endpoints.get(r.provider) ?? endpoints.set(r.provider, []).get(r.provider)!).push(r.endpointId);
    }
    return [...endpoints.keys()].sort().map((label) => {
      const s = state.get(label);
      return { provider: label, disabled: s?.disabled ?? false, version: s?.version ?? 0, endpoints: endpoints.get(label) };
    });
  }

  private async writeWeight(call: AdminCall, modelName: string, endpointId: string): Promise<{ answer: AdminAnswer; change?: { before: unknown; after: unknown } }> {
    const model = this.d.core().model(modelName);
    if (!model || model.multiTarget) {
      return { answer: { status: 404, body: error('model_not_found', `No model '${modelName}' with routes of its own; GET /admin/routing lists them.`, 'model_id') } };
    }
    if (!model.routes.some((r) => r.endpointId === endpointId)) {
      return { answer: { status: 404, body: error('endpoint_not_found', `Model '${model.id}' has no route '${endpointId}'; its routes are: ${model.routes.map((r) => r.endpointId).join(', ')}.`, 'endpoint_id') } };
    }
    const del = call.method === 'DELETE';
    const body = del ? parseBody(VersionOnlyBodySchema, call.body) : parseBody(WeightBodySchema, call.body);
    if (!body.ok) return { answer: badRequest(body.problem) };
    const pre = precondition(call.ifMatch, body.value.version);
    if (!pre.ok) return { answer: badRequest(pre.problem) };
    if (del) {
      const cur = (await this.d.repo.load()).weights.find((x) => x.modelId === model.id && x.endpointId === endpointId);
      if (!cur || cur.weight === null) {
        return { answer: { status: 404, body: error('override_not_found', `Route '${endpointId}' of model '${model.id}' has no weight override to clear.`, 'endpoint_id') } };
      }
    }
    const weight = del ? null : (body.value as { weight: number }).weight;
    const r = await this.d.repo.writeWeight(model.id, endpointId, weight, pre.version, call.caller.id);
    return this.finish(r, pre.from, () => ({ model_id: model.id, endpoint_id: endpointId }));
  }

  private async writeProvider(call: AdminCall, label: string): Promise<{ answer: AdminAnswer; change?: { before: unknown; after: unknown } }> {
    const known = this.providersView().some((p) => p.provider === label);
    if (!known) {
      return { answer: { status: 404, body: error('provider_not_found', `No route has provider label '${label}'; GET /admin/routing/providers lists them.`, 'provider') } };
    }
    const body = parseBody(ProviderBodySchema, call.body);
    if (!body.ok) return { answer: badRequest(body.problem) };
    const pre = precondition(call.ifMatch, body.value.version);
    if (!pre.ok) return { answer: badRequest(pre.problem) };
    const r = await this.d.repo.writeProvider(label, body.value.disabled, pre.version, call.caller.id);
    return this.finish(r, pre.from, () => ({ provider: label }));
  }

  /** Refusal (412 / 409) or: read the overlay back, apply it, answer the record written. */
  private async finish<T extends { version: number }>(
    r: WriteResult<T>,
    from: 'if-match' | 'version' | null,
    key: () => Record<string, unknown>,
  ): Promise<{ answer: AdminAnswer; change?: { before: unknown; after: unknown } }> {
    if (!r.ok) {
      const status = from === 'if-match' ? 412 : 409;
      const code = status === 412 ? 'precondition_failed' : 'version_conflict';
      return {
        answer: {
          status,
          etag: `"${r.currentVersion}"`,
          body: { ...error(code, `The record changed since you read it (now at version ${r.currentVersion}); read it again and resend your change based on that version.`, from === 'if-match' ? 'If-Match' : 'version'), current_version: r.currentVersion },
        },
      };
    }
    const change = { before: r.before, after: r.after };
    try {
      this.d.apply(await this.d.repo.load());
    } catch (e) {
      return { answer: { ...savedNotApplied(e), etag: `"${r.after.version}"`, body: { ...(savedNotApplied(e).body as object), ...key(), record: r.after } }, change };
    }
    return { answer: { status: 200, etag: `"${r.after.version}"`, body: { ...key(), record: r.after, generation: this.d.generation() } }, change };
  }
}

/** The version precondition: `If-Match` wins over a body `version`; null when neither is sent. */
export function precondition(ifMatch: string, bodyVersion: number | undefined): { ok: true; version: number | null; from: 'if-match' | 'version' | null } | { ok: false; problem: BodyProblem } {
  const h = parseIfMatch(ifMatch);
  if (!h.ok) return h;
  if (h.version !== null) return { ok: true, version: h.version, from: 'if-match' };
  if (bodyVersion !== undefined) return { ok: true, version: bodyVersion, from: 'version' };
  return { ok: true, version: null, from: null };
}

/** A path segment percent-decoded (left as it is when it is not valid percent-encoding). */
export function decode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

/** The OpenAI-style error body the rest of the gateway uses. */
export function error(code: string, message: string, param: string | null): { error: { message: string; type: string; param: string | null; code: string } } {
  return { error: { message, type: 'invalid_request_error', param, code } };
}

/** The 400 answer of a body, query or precondition problem. */
export function badRequest(p: BodyProblem): AdminAnswer {
  return { status: 400, body: error('invalid_request', p.message, p.param) };
}

/**
 * 500 `apply_failed` for a change that was committed to the store but that this gateway could
 * not read back or apply: the answer says it was saved (the audit entry carries the records),
 * and that the generation in force is unchanged until the store's configuration applies.
 */
export function savedNotApplied(e: unknown): AdminAnswer {
  return {
    status: 500,
    body: error('apply_failed', `The change was saved in the store, but this gateway could not apply it (${(e as Error).message}); it keeps serving on its current configuration until the store's configuration applies (at the next change it picks up, or a restart). Undo or fix the change if it should not stay.`, null),
  };
}

/** 503 for a store that failed before anything was written (the generation in force is unchanged). */
function storeDown(e: unknown): AdminAnswer {
  return { status: 503, body: { error: { message: `The store cannot be reached (${(e as Error).message}); nothing was changed and the gateway keeps serving on its current configuration. Retry when the store is back.`, type: 'server_error', param: null, code: 'store_unavailable' } } };
}
