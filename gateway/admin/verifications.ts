/**
 * Verify before saving (seed 000, admin API: every POST or PUT that changes routing has a
 * `…-verifications` twin that only tries the upstream and saves nothing). A verification takes
 * the same path and body as its write and is checked the same way (the same 400s and 404s), then
 * sends one small request — `max_tokens: 1`, one-character prompt, not streamed — to each
 * upstream the write concerns, through the adapter of the route's kind (the one its traffic
 * uses), bounded by `timeout_ms` (query, default `DEFAULT_VERIFY_TIMEOUT_MS`). The answer is
 * 200 with, per upstream, `status` (`ok`, `failed`, `timeout`), `http_status`, `latency_ms`
 * and `error`; `verified` is true when every upstream answered 2xx. Nothing is written but the
 * audit entry of the call, and no routing state (breakers, latency profiles) is touched.
 *
 * A twin's path is its write's collection with `-verifications` appended, the rest unchanged.
 * Twins served here: `PUT /admin/routing/weights-verifications/{model_id}/{endpoint_id}` (the
 * route's upstream) and `PUT /admin/routing/providers-verifications/{provider}` (every route
 * with the label). The twins of the runtime-route and offload writes (`POST
 * …/provider-route-models-verifications`, `POST …/provider-route-candidates-verifications/{model_id}`,
 * `PUT …/provider-routes-verifications/{model_id}/{route_id}`, `PUT
 * …/offload-routes-verifications/{model_id}`) live beside their writes (`route-admin.ts`,
 * `offload-admin.ts`, through `verifyChange` of `routing-admin-kit.ts`): they try the route as
 * the write would leave it, on an `UpstreamSpec` with a pool of its own. Verifications are
 * served also where writes are refused (several workers, no store), since they save nothing.
 */
import { randomUUID } from 'node:crypto';
import { Pool } from 'undici';
import { z } from 'zod';
import { routeEndpointFamilies, type Outcome } from '../../core/index.ts';
import type { RouteTarget } from '../server/exchange-context.ts';
import { isBodyProblem, readClientRequest, type Endpoint } from '../request-body.ts';
import { adapterFor, defaultEndpoints } from '../upstream/adapters.ts';
import type { AttemptEnd } from '../upstream/adapter.ts';
import type { AdminCall, AdminKit, AdminRouteGroup, Routed } from './admin-api.ts';
import { badRequest, decode, error } from './admin-api.ts';
import { parseBody, parseQuery, ProviderBodySchema, WeightBodySchema } from './admin-bodies.ts';

/** Bound on one verification request when the call names none, ms. */
export const DEFAULT_VERIFY_TIMEOUT_MS = 10_000;
/** Largest `timeout_ms` a call may ask for, ms. */
export const MAX_VERIFY_TIMEOUT_MS = 60_000;
/** Upstream error bodies quoted in `error` are cut at this many bytes. */
const ERROR_BODY_BYTES = 2_048;

/** A route that is not built yet (a runtime route before its write), as models.yaml gives it. */
export interface UpstreamSpec {
  /** Route `kind` (selects the adapter), e.g. `openai_compat`. */
  readonly kind: string;
  readonly baseUrl: string;
  readonly apiKey: string | null;
  /** `model` sent upstream (`provider_model_id`, else the model id). */
  readonly upstreamModel: string;
  /** The route's `endpoints:` family ids (null: its kind's default). */
  readonly endpoints?: readonly string[] | null;
  /** The id the route will have, for the answer (optional). */
  readonly endpointId?: string;
}

/** What one upstream did with the verification request. */
export interface VerificationResult {
  endpoint_id: string | null;
  /** `ok`: a 2xx answer; `failed`: an error status or a transport failure; `timeout`: no answer in time. */
  status: 'ok' | 'failed' | 'timeout';
  /** The upstream's HTTP status, or null when none came. */
  http_status: number | null;
  /** From sending to the end of the answer (or the failure / the timeout), ms, rounded. */
  latency_ms: number;
  /** What went wrong, or null. */
  error: string | null;
}

/** The family a verification (and a background health-check probe) speaks: chat when the route serves it, else its first; null when it serves none. */
export function verificationFamily(endpoints: Iterable<Endpoint>): Endpoint | null {
  const all = [...endpoints];
  return all.includes('chat') ? 'chat' : (all[0] ?? null);
}

/** The smallest request of each family the gateway serves. */
function smallBody(family: Endpoint): Record<string, unknown> {
  if (family === 'chat') return { messages: [{ role: 'user', content: '.' }], max_tokens: 1 };
  if (family === 'completion') return { prompt: '.', max_tokens: 1 };
  if (family === 'embedding') return { input: '.' };
  return { max_tokens: 1 };
}

function describe(o: Outcome): string {
  switch (o.kind) {
    case 'http_status':
      return `upstream answered HTTP ${o.status}`;
    case 'transport':
      return o.cause === 'refused' ? 'connection refused' : o.cause === 'timeout' ? 'transport timeout' : 'connection reset or unreadable answer';
    default:
      return o.kind;
  }
}

/**
 * Sends one small request to `target` (a built route, or a spec: then a one-connection pool of
 * its own is opened and closed) and reports what happened. Never throws; nothing is recorded.
 * @param timeoutMs bound on the whole request, ms (> 0); the request is aborted after it.
 * @param opts `signal` aborts the request early (the background health checks' stop; the result
 *   is then `failed` with `error: 'aborted'`); `requestId` is the `x-request-id` sent (default
 *   `verify-<uuid>`).
 */
export async function verifyUpstream(target: RouteTarget | UpstreamSpec, timeoutMs: number, opts: { signal?: AbortSignal; requestId?: string } = {}): Promise<VerificationResult> {
  const { signal } = opts;
  const built = 'adapter' in target;
  const endpointId = built ? target.endpointId : (target.endpointId ?? null);
  const t0 = performance.now();
  const result = (status: VerificationResult['status'], http: number | null, err: string | null): VerificationResult => ({ endpoint_id: endpointId, status, http_status: http, latency_ms: Math.round(performance.now() - t0), error: err });
  let pool: Pool | null = null;
  let rt: RouteTarget;
  try {
    if (built) rt = target;
    else {
      const url = new URL(target.baseUrl);
      const adapter = adapterFor(target.kind);
      pool = new Pool(url.origin, { connections: 1, connectTimeout: timeoutMs, headersTimeout: timeoutMs, bodyTimeout: timeoutMs });
      rt = {
        endpointId: endpointId ?? `${target.kind}:${url.host}`,
        adapter,
        endpoints: new Set(routeEndpointFamilies(target.kind, target.endpoints ?? undefined, defaultEndpoints) ?? adapter.endpoints),
        pool,
        basePath: url.pathname.replace(/\/+$/, ''),
        origin: url.origin,
        apiKey: target.apiKey,
        upstreamModel: target.upstreamModel,
      };
    }
  } catch (e) {
    return result('failed', null, (e as Error).message);
  }
  try {
    const family = verificationFamily(rt.endpoints);
    if (!family) return result('failed', null, 'the route serves no endpoint family');
    const req = readClientRequest(family, JSON.stringify({ model: rt.upstreamModel, ...smallBody(family) }));
    if (isBodyProblem(req)) return result('failed', null, `verification request refused: ${req.message}`);
    let timedOut = false;
    let timer: NodeJS.Timeout | undefined;
    const end = await new Promise<AttemptEnd>((resolve) => {
      const handle = rt.adapter.startAttempt(rt, req, { requestId: opts.requestId ?? `verify-${randomUUID()}`, maxErrorBodyBytes: ERROR_BODY_BYTES, clientHeaders: null }, { headers: () => undefined, events: () => undefined }, resolve);
      timer = setTimeout(() => {
        timedOut = true;
        handle.abort();
      }, timeoutMs);
      timer.unref();
      if (signal?.aborted) handle.abort();
      else signal?.addEventListener('abort', () => handle.abort(), { once: true });
    });
    clearTimeout(timer);
    switch (end.kind) {
      case 'streamed':
      case 'body':
        return result('ok', 200, null);
      case 'failed': {
        const http = end.outcome.kind === 'http_status' ? end.outcome.status : null;
        const detail = end.errorBody ? `: ${end.errorBody.slice(0, 300)}` : '';
        return result('failed', http, `${describe(end.outcome)}${detail}`);
      }
      case 'aborted':
        return result(timedOut ? 'timeout' : 'failed', null, timedOut ? `no answer within ${timeoutMs} ms` : 'aborted');
    }
    return result('failed', null, 'unknown attempt end');
  } catch (e) {
    return result('failed', null, (e as Error).message);
  } finally {
    await pool?.destroy().catch(() => undefined);
  }
}

/** The 200 body of a verification: every result, and whether all were `ok`. Saves nothing. */
export function verificationAnswer(results: VerificationResult[], extra: Record<string, unknown> = {}): Routed {
  return { answer: { status: 200, body: { ...extra, verified: results.length > 0 && results.every((r) => r.status === 'ok'), saved: false, results } } };
}

/** `?timeout_ms=` of a verification. */
const VerifyQuerySchema = z.object({ timeout_ms: z.coerce.number().int().min(1).max(MAX_VERIFY_TIMEOUT_MS).default(DEFAULT_VERIFY_TIMEOUT_MS) }).strict();

/** The bound a verification call asks for, or the 400. */
export function verifyTimeout(call: AdminCall): { ok: true; ms: number } | { ok: false; r: Routed } {
  const q = parseQuery(VerifyQuerySchema, call.query);
  if (!q.ok) return { ok: false, r: { answer: badRequest({ message: `'timeout_ms' must be an integer from 1 to ${MAX_VERIFY_TIMEOUT_MS} (ms); default ${DEFAULT_VERIFY_TIMEOUT_MS}.`, param: q.problem.param ?? 'timeout_ms' }) } };
  return { ok: true, ms: q.value.timeout_ms };
}

const WEIGHT_VERIFY = /^\/admin\/routing\/weights-verifications\/([^/]+)\/([^/]+)$/;
const PROVIDER_VERIFY = /^\/admin\/routing\/providers-verifications\/([^/]+)$/;

/** The verification twins of the weight and provider writes. */
export function verificationRoutes(kit: AdminKit): AdminRouteGroup {
  const d = kit.d;
  const targetOf = (id: string): RouteTarget | undefined => d.targets?.().get(id);
  const run = async (ids: Array<{ modelId: string; endpointId: string }>, ms: number): Promise<VerificationResult[]> =>
    Promise.all(
      ids.map(async ({ endpointId }) => {
        const t = targetOf(endpointId);
        return t ? verifyUpstream(t, ms) : { endpoint_id: endpointId, status: 'failed' as const, http_status: null, latency_ms: 0, error: 'no upstream target for this route in the generation in force' };
      }),
    );

  const weight = async (call: AdminCall, modelName: string, endpointId: string): Promise<Routed> => {
    const model = d.core().model(modelName);
    if (!model || model.multiTarget) return { answer: { status: 404, body: error('model_not_found', `No model '${modelName}' with routes of its own; GET /admin/routing lists them.`, 'model_id') } };
    if (!model.routes.some((r) => r.endpointId === endpointId)) {
      return { answer: { status: 404, body: error('endpoint_not_found', `Model '${model.id}' has no route '${endpointId}'; its routes are: ${model.routes.map((r) => r.endpointId).join(', ')}.`, 'endpoint_id') } };
    }
    const body = parseBody(WeightBodySchema, call.body);
    if (!body.ok) return { answer: badRequest(body.problem) };
    const t = verifyTimeout(call);
    if (!t.ok) return t.r;
    return verificationAnswer(await run([{ modelId: model.id, endpointId }], t.ms), { model_id: model.id, endpoint_id: endpointId });
  };

  const provider = async (call: AdminCall, label: string): Promise<Routed> => {
    const ids: Array<{ modelId: string; endpointId: string }> = [];
    for (const m of d.core().allModels()) {
      if (m.multiTarget) continue;
      for (const r of m.routes) if (r.provider === label) ids.push({ modelId: m.id, endpointId: r.endpointId });
    }
    if (ids.length === 0) return { answer: { status: 404, body: error('provider_not_found', `No route has provider label '${label}'; GET /admin/routing/providers lists them.`, 'provider') } };
    const body = parseBody(ProviderBodySchema, call.body);
    if (!body.ok) return { answer: badRequest(body.problem) };
    const t = verifyTimeout(call);
    if (!t.ok) return t.r;
    return verificationAnswer(await run(ids, t.ms), { provider: label });
  };

  return {
    route(call) {
      if (call.method !== 'PUT') return null;
      const w = WEIGHT_VERIFY.exec(call.path);
      if (w) return weight(call, decode(w[1]!), decode(w[2]!));
      const p = PROVIDER_VERIFY.exec(call.path);
      if (p) return provider(call, decode(p[1]!));
      return null;
    },
  };
}
