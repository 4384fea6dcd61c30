/**
 * The public HTTP surface on uWebSockets.js: every inference family of `endpoints/families.ts`
 * (`POST /v1/chat/completions`, `/v1/completions`, `/v1/embeddings`, `/v1/responses`, `/v1/rerank`,
 * images, audio, `/v1/videos`, …; a family that takes `multipart/form-data` has it spooled to a
 * temporary file, removed when the request ends), `GET /v1/videos/{id}` and its `/content`
 * (to the target that accepted the job), 501 for the endpoints the gateway does not serve
 * (`unsupported-endpoints.ts`), `GET /v1/models` and `/v1/models/{id}` (`endpoints/models.ts`),
 * `GET /v1/responses/{id}` (a stored response, `endpoints/responses/`), plus `GET /health` (public liveness) and the
 * operational routes `/health/deep`, `/routing`, `/metrics` and `/admin/…` (admin keys only, on
 * this listener and on the admin listener, `createAdminApp`; see `admin-routes.ts`). What happens before routing
 * lives here — request id, caller authentication, the in-flight bound, the body limit, JSON and
 * field checks, model access — and each admitted request is handed to an `Exchange` that drives
 * the core with the configuration generation current when it arrived. An inference family's
 * refusals are written in its client wire (`EndpointFamily.wire`), like its later errors; its
 * `apiKeyHeader` is read when `Authorization` is absent, and its `forwardHeaders` are kept for
 * the adapters.
 *
 * Order of checks, cheapest first: draining (503 + Retry-After, connection closed) → auth (401)
 * → `X-Route-Pin` from a non-admin key (403) → in-flight bound (503 + Retry-After) → declared
 * body size (413) → body read with the limit (413) → JSON (400) → fields (400) → the RouteWise budget header `x-switchyard-budget-alpha`
 * (400 unless a number in [0, 1]; see `routewise/budget-alpha.ts`) → model access (404, the same
 * answer as an unknown model, so a key cannot probe which models exist). `X-Route-Pin` is
 * honoured for admin callers only; anyone else sending it is refused rather than silently
 * routed another way than they asked.
 */
import { randomUUID } from 'node:crypto';
import uWS from '@trufflesuite/uws-js-unofficial';
import type { HttpRequest, HttpResponse, TemplatedApp } from '@trufflesuite/uws-js-unofficial';
import { Callers, type Caller } from '../callers.ts';
import type { ClientWire } from '../endpoints/client-wire.ts';
import type { EndpointFamily } from '../endpoints/endpoint-family.ts';
import { endpointFamilies, wireOf } from '../endpoints/families.ts';
import { listModels, retrieveModel } from '../endpoints/models.ts';
import { autoJobServing, decideAuto, mayUseAuto, type GatewayAuto } from '../auto/gateway-auto.ts';
import { clientMessage, errorJson } from '../errors.ts';
import { isBodyProblem, readClientRequest, readUploadRequest, videoFetchRequest, type BodyProblem, type ClientRequest, type Endpoint } from '../request-body.ts';
import { MultipartSpool, multipartBoundary } from '../multipart-spool.ts';
import { decodeVideoId, resolveVideoEndpoint } from '../endpoints/video-id.ts';
import { mountUnsupported } from './unsupported-endpoints.ts';
import { endBodyWatch, watchBody, type BodyWatch } from './body-read-watch.ts';
import { ClientResponse, statusLine, type HeaderPairs } from './client-response.ts';
import type { ExchangeContext } from './exchange-context.ts';
import { Exchange } from './exchange.ts';
import { BUDGET_ALPHA_HEADER, parseBudgetAlphaHeader } from '../routewise/budget-alpha.ts';
import type { DeepHealth, StoreHealth } from './worker-aggregate.ts';
import type { SharedStateHealth } from '../state/shared-state.ts';
import type { AdminApi } from '../admin/admin-api.ts';
import { ADMIN_PATHS, mountAdminRoutes } from './admin-routes.ts';
import type { ConfigStatus } from '../config-status.ts';
import { isConversationProblem, resolveConversation, type Conversation } from '../endpoints/responses/conversation.ts';
import { RESPONSES } from '../endpoints/responses/responses.ts';
import type { ResponseStore } from '../endpoints/responses/response-store.ts';
export { ADMIN_PATHS };
export { deepHealthView, routingView } from './operational-views.ts';
import { deriveAffinityKey, type IntrusiveList } from '../../core/index.ts';

/**
 * One configuration generation: everything a request reads from the configuration. A SIGHUP
 * reload builds a new one and swaps `ServerContext.gen`; a request keeps the generation it
 * started with to its end, so a reload never changes a request half-way.
 */
export interface Generation extends ExchangeContext {
  readonly callers: Callers;
  readonly bodyLimitBytes: number;
  readonly maxInFlight: number;
  /** `server.body_read_timeout_ms`: a body not whole by then ⇒ 408 and the connection closed. */
  readonly bodyReadTimeoutMs: number;
  readonly overloadRetryAfterSec: number;
  /** Request header names (lower case) the core's strategies may key on (`hash_on`). */
  readonly routingHeaders: readonly string[];
  /** Whether any strategy keys on cookies. */
  readonly routingCookies: boolean;
  /** The auto models in force (`auto/gateway-auto.ts`); null while `auto_mode_enabled` is off or the `auto:` block is invalid. */
  readonly auto: GatewayAuto | null;
}

/** What the HTTP layer needs from the gateway. */
export interface ServerContext {
  /** The current configuration generation (swapped atomically on reload). */
  gen: Generation;
  /** Set when draining (SIGTERM): new requests get 503 with `Connection: close`. */
  draining: boolean;
  /**
   * Counts a request answered before routing (401, 400, 404, 413, 503), by status and, for a
   * body-check 400 whose body named one, by the `model` the client wrote (null otherwise).
   */
  readonly countRefused: (status: number, model?: string | null) => void;
  /** Serves `/metrics` (Prometheus text), or null when metrics are off. */
  readonly metricsText: (() => Promise<string>) | null;
  /** Serves `/health/deep`: this gateway's `deepHealthView`, or (a worker of several) all workers' merged. */
  readonly deepHealth: () => Promise<DeepHealth>;
  /** Unix seconds of start (the `created` of /v1/models). */
  readonly startedAtSec: number;
  /** Requests admitted and not yet over. */
  inFlight: number;
  /** The `/admin/…` API (null: off). */
  readonly admin: AdminApi | null;
  /** `server.metrics_without_key`: `/metrics` on the admin listener answers without a key. */
  readonly metricsWithoutKey: boolean;
  /** The store's last known state for `/health/deep`, or null without a store. */
  readonly storeHealth: () => StoreHealth | null;
  /** The shared routing state's health for `/health/deep`, or null with `backend: local`. */
  readonly sharedStateHealth?: () => SharedStateHealth | null;
  /** Exchanges running now (a drain cuts those left when its grace runs out). */
  readonly live: IntrusiveList<Exchange>;
  /** The last configuration load / reload and the generation in force (`GET /status/config`). */
  readonly configStatus: ConfigStatus;
  /** The stored `/v1/responses` responses (`previous_response_id`, `GET /v1/responses/{id}`). */
  readonly responses: ResponseStore;
}

const REQUEST_ID = /^[A-Za-z0-9._:\-]{1,128}$/;
const JSON_TYPE = ['content-type', 'application/json'] as const;

/**
 * Creates the public uWS app with every route. Call `listen` on it. The operational routes
 * (`/health/deep`, `/routing`, `/metrics`) answer here only to an admin key: 401 without a
 * valid key, 404 (as for an unknown URL) for a non-admin key, so topology never leaks.
 */
export function createApp(ctx: ServerContext): TemplatedApp {
  const app = uWS.App();
  for (const family of endpointFamilies()) {
    const wire = wireOf(family);
    app.post(family.path, (res, req) => handleInference(ctx, family, wire, res, req));
  }
  app.get('/v1/models', (res, req) => {
    const requestId = takeRequestId(req);
    const caller = ctx.gen.callers.authenticate(modelsAuthorization(req));
    if (!caller) return sendNow(res, 401, requestId, errorJson('invalid_api_key', 'Incorrect or missing API key.'));
    sendNow(res, 200, requestId, listModels(ctx.gen.core, caller, ctx.startedAtSec, ctx.gen.auto));
  });
  app.get('/v1/models/*', (res, req) => {
    const requestId = takeRequestId(req);
    const caller = ctx.gen.callers.authenticate(modelsAuthorization(req));
    if (!caller) return sendNow(res, 401, requestId, errorJson('invalid_api_key', 'Incorrect or missing API key.'));
    const r = retrieveModel(ctx.gen.core, caller, req.getUrl().slice('/v1/models/'.length), ctx.startedAtSec, ctx.gen.auto);
    sendNow(res, r.status, requestId, r.body);
  });
  app.get('/v1/videos/*', (res, req) => handleVideoFetch(ctx, res, req));
  mountUnsupported(app, takeRequestId);
  app.get('/v1/responses/*', (res, req) => {
    const requestId = takeRequestId(req);
    const caller = ctx.gen.callers.authenticate(req.getHeader('authorization'));
    if (!caller) return sendNow(res, 401, requestId, errorJson('invalid_api_key', 'Incorrect or missing API key.'));
    retrieveStoredResponse(ctx, caller, res, requestId, decodePathSegment(req.getUrl().slice('/v1/responses/'.length)));
  });
  app.get('/health', (res, req) => sendNow(res, 200, takeRequestId(req), JSON.stringify(liveness(ctx))));
  mountAdminRoutes(app, ctx, 'public');
  app.any('/*', (res, req) => sendUnknownUrl(res, req));
  return app;
}

/**
 * The admin listener's app: `/health` (no key), and `/health/deep`, `/routing`, `/metrics`,
 * `/admin/…` with an admin key, like on the public listener (`admin-routes.ts`), plus
 * `/status/models` and `/status/config` (admin key; this listener only). It listens on
 * loopback, or wherever `server.admin_host` says: keep it private.
 */
export function createAdminApp(ctx: ServerContext): TemplatedApp {
  const app = uWS.App();
  app.get('/health', (res, req) => sendNow(res, 200, takeRequestId(req), JSON.stringify(liveness(ctx))));
  mountAdminRoutes(app, ctx, 'admin');
  app.any('/*', (res, req) => sendUnknownUrl(res, req));
  return app;
}

/** Whether `caller` may use `model`: a model its key lists, or an auto model with a candidate it may use (stored responses of auto models name the auto model). */
function mayUseModelOrAuto(ctx: ServerContext, caller: Caller, model: string): boolean {
  const auto = ctx.gen.auto;
  return Callers.mayUse(caller, model) || (auto !== null && mayUseAuto(auto, ctx.gen.core, caller, model));
}

/**
 * `GET /v1/responses/{id}`: a stored response as its client saw it, to a caller allowed its
 * model; 404 (OpenAI's answer for an unknown id) otherwise, so a key cannot probe others' ids.
 */
function retrieveStoredResponse(ctx: ServerContext, caller: Caller, res: HttpResponse, requestId: string, id: string): void {
  let aborted = false;
  res.onAborted(() => (aborted = true));
  const notFound = errorJson('not_found', `No response found with id '${id}'.`, 'response_id', 404);
  ctx.responses.get(id).then(
    (stored) => {
      if (aborted) return;
      const model = stored?.response.model;
      if (!stored || typeof model !== 'string' || !mayUseModelOrAuto(ctx, caller, model)) return sendNow(res, 404, requestId, notFound);
      sendNow(res, 200, requestId, JSON.stringify(stored.response));
    },
    () => {
      if (!aborted) sendNow(res, 503, requestId, errorJson('store_unavailable', 'The gateway could not read its stored responses; retry shortly.', null, 503));
    },
  );
}

/**
 * `segment` with its percent-escapes decoded; malformed escapes (a `%` not followed by two hex
 * digits, or bytes that are not UTF-8) leave it as it is, so it matches no stored id and gets a
 * 404, as `/v1/models/{id}` and `/v1/videos/{id}` do. (`decodeURIComponent` throws on them, and
 * a throw inside a uWS handler ends the process.)
 */
function decodePathSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

/** `GET /health`: liveness, in-flight count, routes configured (no topology). */
function liveness(ctx: ServerContext): Record<string, unknown> {
  let routes = 0;
  for (const m of ctx.gen.core.allModels()) if (!m.multiTarget) routes += m.routes.length;
  return { status: ctx.draining ? 'draining' : 'ok', in_flight: ctx.inFlight, routes_configured: routes };
}

/**
 * The 404 of a URL no route serves. A HEAD request gets the status and headers only: a response
 * to HEAD carries no body (RFC 9110 §9.3.2), and one would be read as the start of the next
 * response on a kept-alive connection. (No Content-Length either: this uWS build aborts the
 * process when `endWithoutBody` is given a length.)
 */
function sendUnknownUrl(res: HttpResponse, req: HttpRequest): void {
  const method = req.getMethod().toUpperCase();
  const requestId = takeRequestId(req);
  const body = errorJson('not_found', `Unknown request URL: ${method} ${req.getUrl()}.`);
  if (method !== 'HEAD') return sendNow(res, 404, requestId, body);
  res.cork(() => {
    res.writeStatus(statusLine(404)).writeHeader('x-request-id', requestId).writeHeader(JSON_TYPE[0], JSON_TYPE[1]).endWithoutBody();
  });
}

/** Answers synchronously inside a handler (no onAborted needed). */
function sendNow(res: HttpResponse, status: number, requestId: string, body: string): void {
  res.cork(() => {
    res.writeStatus(statusLine(status)).writeHeader('x-request-id', requestId).writeHeader(JSON_TYPE[0], JSON_TYPE[1]).end(body);
  });
}

/** The key of a `/v1/models` request: `Authorization`, else Anthropic's `x-api-key` as a bearer key (the Anthropic SDKs list models too). */
function modelsAuthorization(req: HttpRequest): string {
  const authorization = req.getHeader('authorization');
  if (authorization.length > 0) return authorization;
  const key = req.getHeader('x-api-key');
  return key.length > 0 ? `Bearer ${key}` : '';
}

function takeRequestId(req: HttpRequest): string {
  const given = req.getHeader('x-request-id');
  return given && REQUEST_ID.test(given) ? given : randomUUID();
}

function handleInference(ctx: ServerContext, family: EndpointFamily, wire: ClientWire, res: HttpResponse, req: HttpRequest): void {
  // HttpRequest is only valid during this call: read everything now.
  const g = ctx.gen;
  const endpoint = family.endpoint;
  const requestId = takeRequestId(req);
  let authorization = req.getHeader('authorization');
  if (authorization.length === 0 && family.apiKeyHeader !== undefined) {
    const key = req.getHeader(family.apiKeyHeader);
    if (key.length > 0) authorization = `Bearer ${key}`;
  }
  const forwardedHeaders = family.forwardHeaders === undefined ? null : readHeaders(req, family.forwardHeaders);
  const pinHeader = req.getHeader('x-route-pin');
  const sessionId = req.getHeader('x-session-id') || null;
  const tagsHeader = req.getHeader('x-switchyard-routing-tags');
  const declaredLength = req.getHeader('content-length');
  const boundary = family.multipart === true ? multipartBoundary(req.getHeader('content-type')) : null;
  const contentType = boundary === null ? '' : req.getHeader('content-type');
  const budgetAlpha = parseBudgetAlphaHeader(req.getHeader(BUDGET_ALPHA_HEADER));
  let headers: Record<string, string> | null = null;
  for (const name of g.routingHeaders) {
    const v = req.getHeader(name);
    if (v) (headers ??= {})[name] = v;
  }
  // A valid budget override reaches the planner in `headers` (RouteWise reads it there).
  if (budgetAlpha.kind === 'ok') (headers ??= {})[BUDGET_ALPHA_HEADER] = String(budgetAlpha.alpha);
  const cookies = g.routingCookies ? parseCookies(req.getHeader('cookie')) : null;
  const clientIp = Buffer.from(res.getRemoteAddressAsText()).toString('latin1');
  const traceHeaders = g.tracing === null ? null : { traceparent: req.getHeader('traceparent'), tracestate: req.getHeader('tracestate') };

  const base: HeaderPairs = [['x-request-id', requestId]];
  let exchange: Exchange | null = null;
  let admitted = false;
  // A spooled multipart body's file goes when the request is over, however it ends.
  let removeUpload: (() => void) | null = null;
  // The body-read deadline, from here until the body is whole or refused (or the client is gone).
  let bodyWatch: BodyWatch | null = null;
  const release = (): void => {
    endBodyWatch(bodyWatch);
    if (removeUpload !== null) {
      removeUpload();
      removeUpload = null;
    }
    if (!admitted) return;
    admitted = false;
    ctx.inFlight--;
  };
  const client = new ClientResponse(res, () => {
    if (exchange) exchange.clientGone();
    else release();
  });
  const refuse = (status: number, code: string, message: string, param: string | null = null, retryAfterSec: number | null = null, model: string | null = null): void => {
    const headers: HeaderPairs = retryAfterSec === null ? [...base, JSON_TYPE] : [...base, JSON_TYPE, ['retry-after', String(retryAfterSec)]];
    client.send(status, headers, wire.errorBody(code, message, param, status, retryAfterSec));
    ctx.countRefused(status, model);
    release();
  };

  if (ctx.draining) {
    client.sendAndClose(503, [...base, JSON_TYPE, ['retry-after', '1']], wire.errorBody('draining', 'The gateway is shutting down; retry on another instance.', null, 503, 1));
    ctx.countRefused(503);
    return;
  }
  const caller = g.callers.authenticate(authorization);
  if (!caller) {
    const how = family.apiKeyHeader === undefined ? '"Authorization: Bearer <key>"' : `"${family.apiKeyHeader}: <key>" or "Authorization: Bearer <key>"`;
    return refuse(401, 'invalid_api_key', `Incorrect or missing API key. Send it as ${how}.`);
  }
  if (pinHeader.length > 0 && !caller.admin) {
    return refuse(403, 'admin_required', `The X-Route-Pin header needs an admin key (admin: true); '${caller.id}' is not an admin. Drop the header to route as usual.`, 'X-Route-Pin');
  }
  if (ctx.inFlight >= g.maxInFlight) {
    return refuse(503, 'overloaded', 'The gateway is at its in-flight request limit; retry shortly.', null, g.overloadRetryAfterSec);
  }
  ctx.inFlight++;
  admitted = true;
  const limit = g.bodyLimitBytes;
  if (declaredLength && Number(declaredLength) > limit) {
    ctx.countRefused(413);
    return tooLarge(client, wire, base, limit, release);
  }

  const admit = (body: ClientRequest | BodyProblem): void => {
    if (isBodyProblem(body)) return refuse(400, body.code, body.message, body.param, null, body.model ?? null);
    let parsed = body;
    // Refusals of a parsed request are logged as the core's own answers are (recent requests).
    const refuseParsed = (status: number, code: string, message: string, param: string | null, logged = parsed): void => {
      if (!g.onFinished) return refuse(status, code, message, param);
      const startedAtMs = g.now();
      client.send(status, [...base, JSON_TYPE], wire.errorBody(code, message, param, status, null));
      release();
      // Counted in the metrics by onFinished, as an answered request.
      g.onFinished({ req: logged, requestId, sessionId, callerId: caller.id, startedAtMs, endedAtMs: startedAtMs, metadata: null, httpStatus: status, cut: false, refusedCode: code });
    };
    if (budgetAlpha.kind === 'invalid') return refuseParsed(400, 'invalid_request', budgetAlpha.message, BUDGET_ALPHA_HEADER);
    if (g.auto?.router.profile(parsed.model)) {
      // An auto model: its candidate checks decide (the caller's access to each model included).
      const a = decideAuto(g.auto, g.core, parsed, caller, sessionId, g.now());
      if (a.kind === 'reject') return refuseParsed(a.status, a.code, a.message, a.status === 404 ? 'model' : null, a.req);
      parsed = a.req;
    } else {
      if (!Callers.mayUse(caller, parsed.model)) {
        // Word for word what an unknown model gets from the core, so a key cannot probe.
        return refuseParsed(404, 'model_not_found', clientMessage('model_not_found', parsed.model, ''), 'model');
      }
      const tooLong = outputBeyondContext(g, parsed);
      if (tooLong) return refuseParsed(400, 'context_length_exceeded', tooLong.message, tooLong.param);
    }
    const routingTags = tagsHeader
      ? tagsHeader
          .split(',')
          .map((t) => t.trim().toLowerCase())
          .filter((t) => t.length > 0)
      : null;
    const startExchange = (request: ClientRequest, conversation: Conversation | null): void => {
      const ex = new Exchange(g, client, request, caller, {
        requestId,
        affinityKey: affinityKeyOf(authorization, clientIp),
        baseHeaders: base,
        pin: pinFor(caller, pinHeader),
        sessionId,
        routingTags,
        clientIp,
        headers,
        cookies,
        forwardedHeaders,
        traceHeaders,
        preferEndpointId: conversation?.preferEndpointId ?? null,
        keepResponse: conversation?.keep ?? null,
        released: () => {
          ctx.live.remove(ex);
          release();
        },
      });
      exchange = ex;
      ctx.live.add(ex);
      ex.run(() => ex.start());
    };
    if (endpoint !== RESPONSES) return startExchange(parsed, null);
    // The conversation's stored turns are read before routing (the store may be remote).
    const onStoreError = (e: unknown): void => g.log.warn({ requestId, err: e }, 'storing a response failed');
    resolveConversation(parsed, ctx.responses, onStoreError, (model) => mayUseModelOrAuto(ctx, caller, model)).then(
      (conversation) => {
        if (!client.open) return release();
        if (isConversationProblem(conversation)) return refuseParsed(400, conversation.code, conversation.message, conversation.param);
        startExchange(conversation.req, conversation);
      },
      (e: unknown) => {
        g.log.error({ requestId, err: e }, 'reading a stored response failed');
        if (!client.open) return release();
        refuse(503, 'store_unavailable', 'The gateway could not read the stored conversation of previous_response_id; retry shortly.', 'previous_response_id', 1);
      },
    );
  };
  const onTooLarge = (): void => {
    endBodyWatch(bodyWatch);
    ctx.countRefused(413);
    tooLarge(client, wire, base, limit, release);
  };
  let late = false;
  bodyWatch = watchBody(g.bodyReadTimeoutMs, () => {
    if (!client.open) return;
    late = true;
    client.sendAndClose(408, [...base, JSON_TYPE], wire.errorBody('request_timeout', `The request body did not arrive whole within ${g.bodyReadTimeoutMs} ms (server.body_read_timeout_ms).`, null, 408, null));
    ctx.countRefused(408);
    release();
  });
  if (boundary !== null) {
    const spool = new MultipartSpool(contentType, boundary);
    removeUpload = () => spool.abandon();
    readChunks(res, limit, {
      chunk: (buf) => spool.push(buf),
      tooLarge: onTooLarge,
      done: () => {
        endBodyWatch(bodyWatch);
        if (late) return;
        void spool.finish().then((r) => {
          if ('problem' in r) return r.status === 400 ? refuse(400, 'invalid_request', r.problem) : refuse(503, 'overloaded', r.problem, null, g.overloadRetryAfterSec);
          removeUpload = r.remove;
          if (!client.open) return release();
          admit(readUploadRequest(endpoint, r));
        });
      },
    });
    return;
  }
  readBody(res, limit, {
    tooLarge: onTooLarge,
    done: (text) => {
      endBodyWatch(bodyWatch);
      if (late) return;
      if (!client.open) return release();
      admit(readClientRequest(endpoint, text));
    },
  });
}

/**
 * `GET /v1/videos/{id}` and `GET /v1/videos/{id}/content`: the id is one the gateway handed out
 * (`endpoints/video-id.ts`), so the request goes to the target that accepted the job — pinned,
 * no fallback — through the one request life (breakers, the request log), as the model the job
 * was submitted on (for an auto model: as the model that owns that target, the client seeing only
 * the auto name). Refusals: draining 503, no key 401, in-flight bound 503, an id the gateway
 * did not issue or a model the key may not use 404 `video_not_found`; a target no longer
 * configured is the core's 400 `route_pin_not_found`.
 */
function handleVideoFetch(ctx: ServerContext, res: HttpResponse, req: HttpRequest): void {
  const g = ctx.gen;
  const requestId = takeRequestId(req);
  const url = req.getUrl();
  const authorization = req.getHeader('authorization');
  const clientIp = Buffer.from(res.getRemoteAddressAsText()).toString('latin1');
  const traceHeaders = g.tracing === null ? null : { traceparent: req.getHeader('traceparent'), tracestate: req.getHeader('tracestate') };
  const base: HeaderPairs = [['x-request-id', requestId]];
  const rest = url.slice('/v1/videos/'.length).split('/');
  const op = rest.length === 1 ? 'status' : rest.length === 2 && rest[1] === 'content' ? 'content' : null;
  if (op === null) return sendNow(res, 404, requestId, errorJson('not_found', `Unknown request URL: GET ${url}.`));
  let admitted = false;
  let exchange: Exchange | null = null;
  const release = (): void => {
    if (!admitted) return;
    admitted = false;
    ctx.inFlight--;
  };
  const client = new ClientResponse(res, () => {
    if (exchange) exchange.clientGone();
    else release();
  });
  if (ctx.draining) {
    ctx.countRefused(503);
    return client.sendAndClose(503, [...base, JSON_TYPE, ['retry-after', '1']], errorJson('draining', 'The gateway is shutting down; retry on another instance.'));
  }
  const caller = g.callers.authenticate(authorization);
  if (!caller) {
    ctx.countRefused(401);
    return client.send(401, [...base, JSON_TYPE], errorJson('invalid_api_key', 'Incorrect or missing API key. Send it as "Authorization: Bearer <key>".'));
  }
  let publicId = rest[0]!;
  try {
    publicId = decodeURIComponent(publicId);
  } catch {
    // Not percent-encoded text: taken as it is (and then matches no issued id).
  }
  const decoded = decodeVideoId(publicId);
  // An auto model's job carries its endpoint sealed: found again among this generation's endpoints.
  const endpointId = decoded === null ? null : resolveVideoEndpoint(decoded, g.routes.keys());
  const ref = decoded === null || endpointId === null ? null : { ...decoded, endpointId };
  // A job submitted on an auto model is fetched as the model that owns its endpoint, under the auto name.
  const onAuto = ref !== null && g.auto !== null && g.auto.router.profile(ref.model) !== undefined;
  const autoJob = onAuto ? autoJobServing(g.auto!, g.core, caller, ref!.model, ref!.endpointId) : null;
  if (!ref || (onAuto ? autoJob === null : !Callers.mayUse(caller, ref.model))) {
    ctx.countRefused(404);
    return client.send(404, [...base, JSON_TYPE], errorJson('video_not_found', `No video '${publicId}' was submitted through this gateway for a model your key may use.`, 'video_id'));
  }
  if (ctx.inFlight >= g.maxInFlight) {
    ctx.countRefused(503);
    return client.send(503, [...base, JSON_TYPE, ['retry-after', String(g.overloadRetryAfterSec)]], errorJson('overloaded', 'The gateway is at its in-flight request limit; retry shortly.'));
  }
  ctx.inFlight++;
  admitted = true;
  const fetched = videoFetchRequest(autoJob?.model ?? ref.model, { op, upstreamId: ref.upstreamId, publicId });
  const parsed = autoJob === null ? fetched : { ...fetched, auto: autoJob.serving };
  const ex = new Exchange(g, client, parsed, caller, {
    requestId,
    affinityKey: affinityKeyOf(authorization, clientIp),
    baseHeaders: base,
    pin: ref.endpointId,
    sessionId: null,
    routingTags: null,
    clientIp,
    headers: null,
    cookies: null,
    forwardedHeaders: null,
    traceHeaders,
    released: () => {
      ctx.live.remove(ex);
      release();
    },
  });
  exchange = ex;
  ctx.live.add(ex);
  ex.run(() => ex.start());
}

/** The last `Authorization` header with a bearer key `affinityKeyOf` saw, and that key's affinity key. */
let lastAuthorization = '';
let lastKeyAffinity = '';

/**
 * The session-affinity key of a request (seed 000's rule, `deriveAffinityKey`): the presented
 * bearer key's hash, else the client address bucket (IPv4, or an IPv6 /64), else `anonymous`.
 */
function affinityKeyOf(authorization: string, clientIp: string): string {
  // A key's affinity key depends on the key alone: the last one is kept, so a caller sending the
  // same header again costs a string comparison instead of a hash.
  if (authorization.length > 0 && authorization === lastAuthorization) return lastKeyAffinity;
  const bearer = authorization.length > 7 && authorization.slice(0, 7).toLowerCase() === 'bearer ' ? authorization.slice(7).trim() : '';
  if (bearer.length > 0) {
    lastKeyAffinity = deriveAffinityKey({ apiKey: bearer });
    lastAuthorization = authorization;
    return lastKeyAffinity;
  }
  try {
    return deriveAffinityKey({ apiKey: bearer, clientIp });
  } catch {
    return deriveAffinityKey({ apiKey: bearer }); // not an IP (a unix socket): key or anonymous
  }
}

/**
 * When every route of the requested model declares `context_length` and the request's
 * `max_completion_tokens` / `max_tokens` exceeds the largest one, the refusal (message and the
 * field to name); otherwise null (unknown model, a route without `context_length`, no hint).
 */
function outputBeyondContext(g: Generation, req: ClientRequest): { message: string; param: string } | null {
  if (req.outputTokensHint === null) return null;
  const routes = g.core.model(req.model)?.routes;
  if (!routes || routes.length === 0) return null;
  let largest = 0;
  for (const r of routes) {
    if (r.contextLength === null) return null;
    if (r.contextLength > largest) largest = r.contextLength;
  }
  if (req.outputTokensHint <= largest) return null;
  const param = typeof req.body.max_completion_tokens === 'number' ? 'max_completion_tokens' : 'max_tokens';
  return {
    message: `'${param}' is ${req.outputTokensHint}, but model '${req.model}' has a context length of at most ${largest} tokens. Lower '${param}' to ${largest} or less.`,
    param,
  };
}

/** The pin of an admin's request (non-admins with a pin were refused with 403 already). */
function pinFor(caller: Caller, header: string): string | null {
  return caller.admin && header.length > 0 ? header : null;
}

/** 413, and the connection is closed: the rest of the body will not be read. */
function tooLarge(client: ClientResponse, wire: ClientWire, base: HeaderPairs, limit: number, release: () => void): void {
  client.sendAndClose(413, [...base, JSON_TYPE], wire.errorBody('body_too_large', `The request body exceeds the gateway's limit of ${limit} bytes.`, null, 413, null));
  release();
}

/**
 * Reads a body up to `limit` bytes. uWS hands out chunks that are neutered when the callback
 * returns, so every chunk kept is copied; the last one is decoded while still valid.
 */
function readBody(res: HttpResponse, limit: number, on: { done(text: string): void; tooLarge(): void }): void {
  const parts: Buffer[] = [];
  let size = 0;
  let dead = false;
  res.onData((chunk, isLast) => {
    if (dead) return;
    size += chunk.byteLength;
    if (size > limit) {
      dead = true;
      parts.length = 0;
      on.tooLarge();
      return;
    }
    if (!isLast) {
      parts.push(Buffer.from(chunk.slice(0)));
      return;
    }
    dead = true;
    if (parts.length === 0) return on.done(Buffer.from(chunk).toString('utf8'));
    parts.push(Buffer.from(chunk));
    on.done(Buffer.concat(parts).toString('utf8'));
  });
}

/**
 * Reads a body up to `limit` bytes chunk by chunk, handing each (a copy: uWS neuters its own
 * when the callback returns) to `chunk`; `done` once the last arrived.
 */
function readChunks(res: HttpResponse, limit: number, on: { chunk(buf: Buffer): void; done(): void; tooLarge(): void }): void {
  let size = 0;
  let dead = false;
  res.onData((chunk, isLast) => {
    if (dead) return;
    size += chunk.byteLength;
    if (size > limit) {
      dead = true;
      on.tooLarge();
      return;
    }
    on.chunk(Buffer.from(chunk.slice(0)));
    if (!isLast) return;
    dead = true;
    on.done();
  });
}

/** The headers of `names` the request carries (non-empty values), or null when none. */
function readHeaders(req: HttpRequest, names: readonly string[]): Record<string, string> | null {
  let out: Record<string, string> | null = null;
  for (const name of names) {
    const v = req.getHeader(name);
    if (v) (out ??= {})[name] = v;
  }
  return out;
}

function parseCookies(header: string): Record<string, string> | null {
  if (!header) return null;
  const out: Record<string, string> = {};
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq <= 0) continue;
    out[part.slice(0, eq).trim()] = part.slice(eq + 1).trim();
  }
  return out;
}
