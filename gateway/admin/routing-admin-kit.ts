/**
 * What the runtime-routing admin calls (`route-admin.ts`, `offload-admin.ts`) share: their
 * dependencies, the path split (model ids may contain `/`), the version precondition, error
 * bodies, and the write path — check the changed overlay as a whole configuration first (a change
 * the core would refuse is a 400 and is never stored), write the records in one transaction, read
 * the overlay back and apply it as a new generation, so the next request already routes with it.
 * Weight overrides are per (model, endpoint id): a change that takes an endpoint id away from a
 * model, or gives it one no route had, clears the override set on it in the same transaction
 * (audited beside the records, listed as `weights_cleared` in the answer), so a new route never
 * starts drained by an old route's override.
 */
import type { ModelsConfig, RouteConfig, RoutingCore } from '../../core/index.ts';
import type { OverlayRepo, OverlaySnapshot, WeightKey, WeightOverrideRecord } from '../store/overlay-repo.ts';
import { refusal, type RoutingRecord, type RoutingWrite, type RoutingWriteResult } from '../store/routing-records.ts';
import { savedNotApplied, type AdminAnswer, type AdminCall } from './admin-api.ts';
import { maskedUrl, parseIfMatch, type BodyProblem } from './admin-bodies.ts';
import { composeModels, derivedRouteId, recordKey, type EffectiveModels, type ModelOrigin, type RecordAssessment, type RouteOrigin } from './effective-models.ts';
import { verificationAnswer, verifyTimeout, verifyUpstream, type UpstreamSpec } from './verifications.ts';

/** What the runtime-routing calls need from the gateway. */
export interface RoutingAdminDeps {
  repo: OverlayRepo;
  /** The current generation's core. */
  core(): RoutingCore;
  /** The overlay the current generation was built with. */
  overlay(): OverlaySnapshot;
  /** The YAML registry in force (the overlay is laid over it). */
  yaml(): ModelsConfig;
  /**
   * Runs every check of a generation build (`generation.ts` `checkGeneration`) on the
   * configuration `next` gives, without putting it in force: the routing records that cannot be
   * applied (left out of the generation and listed as ignored), or the error of a configuration
   * refused with none of them.
   */
  assess(next: OverlaySnapshot): RecordAssessment;
  /** Applies `next` as a new generation. @throws Error when the core refuses it. */
  apply(next: OverlaySnapshot): void;
  generation(): number;
  /** Why changes are refused on this gateway, or null (see `AdminDeps.writesRefused`). */
  writesRefused: string | null;
}

/** An answer and, for a change, the records before and after (audited). */
export interface RoutingResult {
  answer: AdminAnswer;
  change?: { before: unknown; after: unknown };
}

/** The OpenAI-style error body the rest of the gateway uses. */
export function error(code: string, message: string, param: string | null): { error: { message: string; type: string; param: string | null; code: string } } {
  return { error: { message, type: 'invalid_request_error', param, code } };
}

/** A 400 for a body problem. */
export function badRequest(p: BodyProblem): RoutingResult {
  return { answer: { status: 400, body: error('invalid_request', p.message, p.param) } };
}

/** An answer with `status` and an error body. */
export function refuse(status: number, code: string, message: string, param: string | null): RoutingResult {
  return { answer: { status, body: error(code, message, param) } };
}

/** 409 on a gateway that cannot keep changes consistent, else null. */
export function writesRefused(d: RoutingAdminDeps): RoutingResult | null {
  return d.writesRefused ? refuse(409, 'store_required', d.writesRefused, null) : null;
}

function decode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

/**
 * The model id of a path tail (`Qwen%2FQwen3-8B` or `Qwen/Qwen3-8B`), or null when empty. A
 * leading `/` is kept (`…/provider-routes//lead` names model `/lead`); `findModel` falls back to
 * the id without it.
 */
export function modelTail(tail: string): string | null {
  return /^\/*$/.test(tail) ? null : decode(tail);
}

/**
 * Model id and route id of a path tail: the last segment is the route id (route ids have no
 * `/`), everything before it the model id (encoded or not, a leading `/` kept as in `modelTail`).
 */
export function modelRouteTail(tail: string): { modelName: string; routeId: string } | null {
  const cut = tail.lastIndexOf('/');
  if (cut === tail.length - 1 || /^\/*$/.test(tail.slice(0, Math.max(cut, 0)))) return null;
  return { modelName: decode(tail.slice(0, cut)), routeId: decode(tail.slice(cut + 1)) };
}

/** The composition of the YAML with `overlay`, records that cannot be applied left out. */
export function effective(d: RoutingAdminDeps, overlay: OverlaySnapshot): EffectiveModels {
  return composeModels(d.yaml(), overlay.routing, d.assess(overlay).refused);
}

/** A direct model by id or alias, or the 404. */
export function findModel(eff: EffectiveModels, name: string): { ok: true; model: ModelOrigin } | { ok: false; result: RoutingResult } {
  // A doubled slash after the collection (`…/provider-routes//demo`) still finds `demo`.
  const id = eff.names.get(name) ?? (name.startsWith('/') ? eff.names.get(name.replace(/^\/+/, '')) : undefined);
  const m = id === undefined ? undefined : eff.models.get(id);
  if (m) return { ok: true, model: m };
  const why = id === undefined ? `No model '${name}'` : `Model '${name}' is a multi-target model and has no routes of its own`;
  return { ok: false, result: refuse(404, 'model_not_found', `${why}; GET /admin/routing/provider-routes lists the models with routes.`, 'model_id') };
}

/** A model's route by route id, or by the endpoint id it has now. */
export function findRoute(m: ModelOrigin, id: string): RouteOrigin | undefined {
  return m.routes.find((r) => r.routeId === id) ?? m.routes.find((r) => r.endpointId === id);
}

/** The 404 for a route id that `m` lacks. */
export function routeNotFound(m: ModelOrigin, id: string, param: string): RoutingResult {
  return refuse(404, 'route_not_found', `Model '${m.modelId}' has no route '${id}'; its route ids are: ${m.routes.map((r) => r.routeId).join(', ')}.`, param);
}

/** The version precondition: `If-Match` wins over a body `version`; null when neither is sent. */
export function precondition(call: AdminCall, bodyVersion: number | undefined): { ok: true; version: number | null; from: 'if-match' | 'version' | null } | { ok: false; result: RoutingResult } {
  const h = parseIfMatch(call.ifMatch);
  if (!h.ok) return { ok: false, result: badRequest(h.problem) };
  if (h.version !== null) return { ok: true, version: h.version, from: 'if-match' };
  if (bodyVersion !== undefined) return { ok: true, version: bodyVersion, from: 'version' };
  return { ok: true, version: null, from: null };
}

/** `snapshot` with `writes` applied (the records the batch would leave), for the check. */
function simulate(snapshot: OverlaySnapshot, writes: readonly RoutingWrite[]): OverlaySnapshot {
  const routing: RoutingRecord[] = snapshot.routing.map((r) => ({ ...r }));
  let seq = routing.reduce((s, r) => Math.max(s, r.seq), 0);
  for (const w of writes) {
    const cur = routing.find((r) => r.kind === w.kind && r.modelId === w.modelId && r.key === w.key);
    if (cur) {
      if (cur.value === null && w.value !== null) cur.seq = ++seq;
      cur.value = w.value;
      cur.version++;
    } else {
      routing.push({ kind: w.kind, modelId: w.modelId, key: w.key, value: w.value, seq: ++seq, version: 1, updatedBy: '', updatedAt: '' });
    }
  }
  routing.sort((a, b) => a.seq - b.seq);
  return { ...snapshot, routing };
}

/**
 * The 400 for a batch whose records the gateway could not apply, or null. The batch is refused
 * when the configuration it gives fails the generation checks, when one of its records would be
 * left out, or when it would leave out a record that applies now; records that cannot be applied
 * already (stored before these checks, or by a gateway of another version) do not refuse it.
 * @param opts.routeParam the body path of the route entry ('' or 'route.'), for a route field's `param`.
 */
function configurationRefusal(d: RoutingAdminDeps, fresh: OverlaySnapshot, writes: readonly RoutingWrite[], opts: { param?: string | null; routeParam?: string }): RoutingResult | null {
  const next = d.assess(simulate(fresh, writes));
  const say = (why: string, param: string | null): RoutingResult => refuse(400, 'configuration_refused', `The change was not saved: the configuration it gives is refused: ${why}`, param);
  if (next.error) return say(next.error.message, opts.param ?? null);
  const was = d.assess(fresh).refused;
  const written = new Set(writes.filter((w) => w.value !== null).map((w) => recordKey(w)));
  const added = [...next.refused].filter(([k]) => !was.has(k));
  if (added.length === 0) return null;
  const own = added.find(([k]) => written.has(k));
  const [k, u] = own ?? added[0]!;
  const param = own && u.field !== null && opts.routeParam !== undefined ? `${opts.routeParam}${u.field}` : (opts.param ?? null);
  return say(own ? u.reason : `it would leave out the stored record ${k} (${u.reason})`, param);
}

/**
 * The weight overrides a batch leaves stale: for each model it writes, the set overrides on an
 * endpoint id that a route of the model has before the batch and no route has after it (a
 * route deleted, re-pointed, restored, or given another base URL), or that no route has before
 * and one has after (an override left from an earlier route on that endpoint id, which a new
 * route would otherwise inherit). The batch clears them in its transaction.
 */
function staleWeights(d: RoutingAdminDeps, fresh: OverlaySnapshot, writes: readonly RoutingWrite[]): WeightKey[] {
  const set = fresh.weights.filter((w) => w.weight !== null);
  if (set.length === 0) return [];
  const before = effective(d, fresh).models;
  const after = effective(d, simulate(fresh, writes)).models;
  const out: WeightKey[] = [];
  for (const modelId of new Set(writes.map((w) => w.modelId))) {
    const b = new Set(before.get(modelId)?.routes.map((r) => r.endpointId) ?? []);
    const a = new Set(after.get(modelId)?.routes.map((r) => r.endpointId) ?? []);
    for (const w of set) if (w.modelId === modelId && b.has(w.endpointId) !== a.has(w.endpointId)) out.push({ modelId, endpointId: w.endpointId });
  }
  return out;
}

/** A weight override as the audit shows it beside routing records. */
function weightView(w: WeightOverrideRecord): Record<string, unknown> {
  return { kind: 'weight', model_id: w.modelId, key: w.endpointId, value: w.weight, version: w.version, updated_by: w.updatedBy, updated_at: w.updatedAt };
}

/** A record as the API (and the audit) shows it: an `api_key` as `***`, a base URL's password as `***`. */
export function recordView(r: RoutingRecord): Record<string, unknown> {
  let value = r.value;
  if (value && typeof value === 'object' && !Array.isArray(value)) {
    const v = { ...(value as Record<string, unknown>) };
    if ('api_key' in v) v['api_key'] = '***';
    if (typeof v['base_url'] === 'string') v['base_url'] = maskedUrl(v['base_url']);
    value = v;
  }
  return { kind: r.kind, model_id: r.modelId, key: r.key, value, version: r.version, updated_by: r.updatedBy, updated_at: r.updatedAt };
}

/** The upstream `route` of model `modelId` would be, for a verification before it is built. */
export function routeSpec(modelId: string, route: RouteConfig): UpstreamSpec {
  return {
    kind: route.kind,
    baseUrl: route.base_url,
    apiKey: route.api_key ?? null,
    upstreamModel: route.provider_model_id ?? modelId,
    endpoints: route.endpoints ?? null,
    endpointId: derivedRouteId(modelId, route),
  };
}

/** The answer to a batch refused for a record's version (412 / 409) or a create that met a record (409). */
function conflict(r: Extract<RoutingWriteResult, { ok: false }>, from: 'if-match' | 'version' | null, param: string | null): RoutingResult {
  if (r.exists) return { answer: { status: 409, etag: `"${r.currentVersion}"`, body: { ...error('already_exists', `The record was created meanwhile (now at version ${r.currentVersion}); read it with GET and change it instead.`, param), current_version: r.currentVersion } } };
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

/**
 * The `…-verifications` twin of `commit`: the same configuration check (the same 400) and the
 * same version answers (412 / 409, against `fresh`: a write racing the twin is not seen), then
 * one small request to each upstream of `specs` (`verifications.ts`), bounded by
 * `?timeout_ms=`. Writes nothing, applies nothing; the answer is 200 with `saved: false` and
 * `key`'s fields.
 * @param from which precondition the call sent, as `commit` takes it.
 * @param param the body field a refused configuration most likely comes from.
 */
export async function verifyChange(
  d: RoutingAdminDeps,
  call: AdminCall,
  fresh: OverlaySnapshot,
  writes: readonly RoutingWrite[],
  opts: { from: 'if-match' | 'version' | null; param: string | null; routeParam?: string },
  specs: readonly UpstreamSpec[],
  key: Record<string, unknown>,
): Promise<RoutingResult> {
  const t = verifyTimeout(call);
  if (!t.ok) return t.r;
  const refused = configurationRefusal(d, fresh, writes, { param: opts.param, ...(opts.routeParam !== undefined ? { routeParam: opts.routeParam } : {}) });
  if (refused) return refused;
  for (const [i, w] of writes.entries()) {
    const no = refusal(w, fresh.routing.find((x) => x.kind === w.kind && x.modelId === w.modelId && x.key === w.key) ?? null, i);
    if (no) return conflict(no, opts.from, opts.param);
  }
  return verificationAnswer(await Promise.all(specs.map((s) => verifyUpstream(s, t.ms))), key);
}

/**
 * Checks, writes and applies a batch. The first write is the addressed record: its version is
 * the answer's ETag, and `from` says which precondition a stale version answers (412 for
 * `If-Match`, 409 for a body `version`; a create that finds a record answers 409 `already_exists`).
 * @param fresh the overlay as just read from the store (the change is checked against it).
 * @param param the body field a refused configuration most likely comes from.
 * @param routeParam the body path of the route entry the batch writes ('' or 'route.'): a route
 *   field the gateway cannot serve (`kind`, `endpoints`, `base_url`) is named under it.
 * @param body what the 200 / 201 answer carries besides the records and the generation.
 */
export async function commit(
  d: RoutingAdminDeps,
  call: AdminCall,
  fresh: OverlaySnapshot,
  writes: RoutingWrite[],
  opts: { from: 'if-match' | 'version' | null; status?: number; param?: string | null; routeParam?: string; body: () => Record<string, unknown> },
): Promise<RoutingResult> {
  const no = configurationRefusal(d, fresh, writes, opts);
  if (no) return no;
  const r = await d.repo.writeRouting(writes, call.caller.id, staleWeights(d, fresh, writes));
  if (!r.ok) return conflict(r, opts.from, opts.param ?? null);
  const change = { before: [...r.before.map((x) => x && recordView(x)), ...r.weights.map((w) => weightView(w.before))], after: [...r.after.map(recordView), ...r.weights.map((w) => weightView(w.after))] };
  const cleared = r.weights.length > 0 ? { weights_cleared: r.weights.map((w) => ({ model_id: w.after.modelId, endpoint_id: w.after.endpointId, weight_before: w.before.weight, version: w.after.version })) } : {};
  try {
    d.apply(await d.repo.load());
  } catch (e) {
    // Checked above, so only a store that failed after the commit can get here.
    const a = savedNotApplied(e);
    return { answer: { ...a, etag: `"${r.after[0]!.version}"`, body: { ...(a.body as object), records: r.after.map(recordView), ...cleared } }, change };
  }
  return { answer: { status: opts.status ?? 200, etag: `"${r.after[0]!.version}"`, body: { ...opts.body(), records: r.after.map(recordView), ...cleared, generation: d.generation() } }, change };
}
