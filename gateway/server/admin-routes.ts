/**
 * The operational and admin routes on a uWS app — the public listener and the admin listener
 * alike: `GET /health/deep`, `/routing`, `/metrics` and everything under `/admin/`. Each needs an
 * admin key (`Authorization: Bearer …` of a caller with `admin: true`) on either listener: no
 * key or an unknown one ⇒ 401; a key without the admin role ⇒ 404 on the public listener (as for
 * an unknown URL, so topology never leaks) and 403 on the admin listener. The one exception is
 * `/metrics` on the admin listener when `server.metrics_without_key` is set (a scraper on a
 * private address; the configuration check refuses it on a public one). `auth.mode: none` with
 * `anonymous_admin: true` makes every caller an admin (local use).
 *
 * `/admin/…` calls are handed to `AdminApi` (gateway/admin/admin-api.ts) with their body (at most
 * 1 MiB) and `If-Match` header; reads of `/health/deep` and `/routing` are audited here, and so
 * is every refusal (who: `anonymous`, `key:<hash prefix>` or the non-admin caller; the remote
 * address), within the refused-call bound of `admin/refused-audit.ts`. Scrapes of `/metrics`
 * are not audited (a scraper calls every few seconds; its refusals are).
 *
 * The admin listener alone also serves `GET /status/models` (`status-views.ts`) and
 * `GET /status/config` (`../config-status.ts`), under the same admin-key rule; on the public
 * listener they are unknown URLs.
 */
import { randomUUID } from 'node:crypto';
import type { HttpRequest, HttpResponse, TemplatedApp } from '@trufflesuite/uws-js-unofficial';
import type { Caller } from '../callers.ts';
import { refusedWho } from '../admin/refused-audit.ts';
import { errorJson } from '../errors.ts';
import { statusLine } from './client-response.ts';
import { deepHealthView, routingView } from './operational-views.ts';
import { modelStatusView } from './status-views.ts';
import type { ServerContext } from './uws.ts';

/** The operational routes besides `/admin/…`. */
export const ADMIN_PATHS = ['/health/deep', '/routing', '/metrics'] as const;
type AdminPath = (typeof ADMIN_PATHS)[number];

/** The status reads served on the admin listener only. */
export const STATUS_PATHS = ['/status/models', '/status/config'] as const;

/** Largest admin request body, bytes. */
const ADMIN_BODY_LIMIT = 1024 * 1024;
const REQUEST_ID = /^[A-Za-z0-9._:\-]{1,128}$/;

/** Registers the operational and `/admin/…` routes on `app` (call before its catch-all). */
export function mountAdminRoutes(app: TemplatedApp, ctx: ServerContext, listener: 'public' | 'admin'): void {
  for (const path of ADMIN_PATHS) {
    app.get(path, (res, req) => {
      const requestId = requestIdOf(req);
      if (listener === 'admin' && path === '/metrics' && ctx.metricsWithoutKey) return serveOperational(ctx, path, res, requestId);
      const remoteAddr = remoteOf(res);
      const caller = gate(ctx, listener, req, res, requestId, 'GET', path, remoteAddr);
      if (!caller) return;
      if (path !== '/metrics') void ctx.admin?.audit(caller, remoteAddr, 'GET', path, 200);
      serveOperational(ctx, path, res, requestId);
    });
  }
  if (listener === 'admin') {
    for (const path of STATUS_PATHS) {
      app.get(path, (res, req) => {
        const requestId = requestIdOf(req);
        const remoteAddr = remoteOf(res);
        const caller = gate(ctx, listener, req, res, requestId, 'GET', path, remoteAddr);
        if (!caller) return;
        void ctx.admin?.audit(caller, remoteAddr, 'GET', path, 200);
        const body = path === '/status/models' ? modelStatusView(ctx, Date.now()) : ctx.configStatus.view();
        send(res, 200, requestId, JSON.stringify(body));
      });
    }
  }
  app.any('/admin/*', (res, req) => {
    const requestId = requestIdOf(req);
    const method = req.getMethod().toUpperCase();
    const path = req.getUrl();
    const query = new URLSearchParams(req.getQuery() ?? '');
    const ifMatch = req.getHeader('if-match');
    const remoteAddr = remoteOf(res);
    const caller = gate(ctx, listener, req, res, requestId, method, path, remoteAddr);
    if (!caller) return;
    // The admin API has no HEAD form; a response to HEAD carries no body (RFC 9110 §9.3.2).
    if (method === 'HEAD') return send(res, 405, requestId, '', 'HEAD');
    const admin = ctx.admin;
    if (!admin) return send(res, 404, requestId, errorJson('not_found', 'The admin API is off in this gateway.'));
    let aborted = false;
    res.onAborted(() => (aborted = true));
    const parts: Buffer[] = [];
    let size = 0;
    res.onData((chunk, isLast) => {
      if (aborted) return;
      size += chunk.byteLength;
      if (size > ADMIN_BODY_LIMIT) {
        if (size - chunk.byteLength <= ADMIN_BODY_LIMIT) {
          aborted = true;
          res.cork(() => res.writeStatus(statusLine(413)).writeHeader('x-request-id', requestId).writeHeader('content-type', 'application/json').end(errorJson('body_too_large', `Admin request bodies are limited to ${ADMIN_BODY_LIMIT} bytes.`, null, 413), true));
        }
        return;
      }
      parts.push(Buffer.from(chunk.slice(0)));
      if (!isLast) return;
      const body = Buffer.concat(parts).toString('utf8');
      admin.handle({ method, path, query, ifMatch, body, caller, remoteAddr }).then(
        (a) => {
          if (aborted) return;
          res.cork(() => {
            res.writeStatus(statusLine(a.status)).writeHeader('x-request-id', requestId).writeHeader('content-type', 'application/json');
            if (a.etag) res.writeHeader('etag', a.etag);
            res.end(JSON.stringify(a.body));
          });
        },
        (e: unknown) => {
          if (!aborted) send(res, 500, requestId, errorJson('internal_error', `admin call failed: ${(e as Error).message}`));
        },
      );
    });
  });
}

/** The admin caller, or null after answering 401 / 403 / 404 (and auditing the refusal). */
function gate(ctx: ServerContext, listener: 'public' | 'admin', req: HttpRequest, res: HttpResponse, requestId: string, method: string, path: string, remoteAddr: string): Caller | null {
  const authorization = req.getHeader('authorization');
  const caller = ctx.gen.callers.authenticate(authorization);
  const what = `${method} ${path}`;
  if (!caller) {
    void ctx.admin?.refused({ who: refusedWho(authorization), remoteAddr, method, path, status: 401 });
    send(res, 401, requestId, errorJson('invalid_api_key', 'Incorrect or missing admin key. Send it as "Authorization: Bearer <key>" (a key with admin: true).'), method);
    return null;
  }
  if (caller.admin) return caller;
  const status = listener === 'public' ? 404 : 403;
  void ctx.admin?.refused({ who: caller.id, remoteAddr, method, path, status });
  if (status === 404) send(res, 404, requestId, errorJson('not_found', `Unknown request URL: ${what}.`), method);
  else send(res, 403, requestId, errorJson('admin_required', `${what} needs a key with admin: true; '${caller.id}' is not an admin.`), method);
  return null;
}

/** The client's address as text (uWS gives IPv4 clients of a dual-stack socket their IPv4 form). */
function remoteOf(res: HttpResponse): string {
  return Buffer.from(res.getRemoteAddressAsText()).toString('latin1');
}

function serveOperational(ctx: ServerContext, path: AdminPath, res: HttpResponse, requestId: string): void {
  if (path === '/routing') return send(res, 200, requestId, JSON.stringify(routingView(ctx)));
  const metrics = ctx.metricsText;
  if (path === '/metrics' && !metrics) return send(res, 404, requestId, errorJson('not_found', 'Metrics are off.'));
  // Both may wait (for the other workers of a multi-worker gateway, or the store's check).
  let aborted = false;
  res.onAborted(() => (aborted = true));
  const [body, type] = path === '/health/deep' ? [ctx.deepHealth().then((b) => JSON.stringify(b)), 'application/json'] : [metrics!(), 'text/plain; version=0.0.4; charset=utf-8'];
  body.then(
    (text) => {
      if (aborted) return;
      res.cork(() => {
        res.writeStatus('200 OK').writeHeader('x-request-id', requestId).writeHeader('content-type', type).end(text);
      });
    },
    (e: unknown) => {
      if (!aborted) send(res, 500, requestId, errorJson('internal_error', `${path.slice(1)} failed: ${(e as Error).message}`));
    },
  );
}

/**
 * Answers `status` with the JSON `body`; to a HEAD request (`method`), the status and headers
 * only. (`endWithoutBody` is called without a length: this uWS build ends the process when
 * given one.)
 */
function send(res: HttpResponse, status: number, requestId: string, body: string, method = 'GET'): void {
  res.cork(() => {
    res.writeStatus(statusLine(status)).writeHeader('x-request-id', requestId).writeHeader('content-type', 'application/json');
    if (method === 'HEAD') {
      if (status === 405) res.writeHeader('allow', 'GET, POST, PUT, DELETE');
      res.endWithoutBody();
    } else res.end(body);
  });
}

function requestIdOf(req: HttpRequest): string {
  const given = req.getHeader('x-request-id');
  return given && REQUEST_ID.test(given) ? given : randomUUID();
}

export { deepHealthView };
