/**
 * The console's way to a running gateway: `/gateway/<path>` on the dashboard is forwarded to
 * `<admin listener>/<path>` of the gateway named by `switchyard dashboard --gateway URL`, so the
 * page talks to its own origin only (no CORS on the gateway, and the page's Content-Security-Policy
 * stays `connect-src 'self'`).
 *
 * Only the gateway's operator reads and the admin API are forwarded (`/admin/…`, `/health/deep`,
 * `/routing`, `/status/models`, `/status/config`); any other path is a 404 here. The admin key
 * is the caller's: the page sends it as `Authorization: Bearer …` and it is forwarded as is,
 * never stored, logged or echoed by this server (a failure is logged by method and path only).
 * A change (anything but GET) must be sent as `application/json`: a page of another origin
 * cannot send that without a CORS preflight, which this server never grants, so a foreign page
 * cannot drive the admin API through a reader's dashboard even if it guessed a key.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

/** Paths (after `/gateway`) that are forwarded: the gateway's operator surface. */
const FORWARDED = /^\/(admin\/[^?#]*|health\/deep|routing|status\/models|status\/config)$/;
/** Segments a URL parser resolves as `.` / `..` (percent-encoded forms included): never forwarded. */
const DOT_SEGMENTS = new Set(['.', '..', '%2e', '%2e%2e', '.%2e', '%2e.']);
/** Methods forwarded; the admin API uses all of them. */
const METHODS = new Set(['GET', 'PUT', 'PATCH', 'DELETE', 'POST']);
/** Largest request body forwarded, bytes (the gateway's own admin limit). */
const BODY_LIMIT = 1024 * 1024;
/** How long one forwarded call may take, ms (a verification tries an upstream). */
const TIMEOUT_MS = 30_000;

/** Prefix of the forwarded paths on the dashboard. */
export const GATEWAY_PREFIX = '/gateway';

/**
 * Checks and normalises `--gateway`: an http(s) URL without query or fragment; the trailing
 * slash is dropped.
 * @throws Error naming the option and the fix for anything else.
 */
export function parseGatewayUrl(raw: string): string {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new Error(`--gateway must be the URL of the gateway's admin listener, e.g. http://127.0.0.1:8081; got '${raw}'`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error(`--gateway must be an http:// or https:// URL; got '${raw}'`);
  if (u.search || u.hash || u.username || u.password) throw new Error(`--gateway takes the listener's base URL only (no query, fragment or credentials); got '${raw}'`);
  return u.href.replace(/\/+$/, '');
}

function answer(res: ServerResponse, status: number, code: string, message: string): void {
  const body = JSON.stringify({ error: { code, message } });
  res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(body), 'Cache-Control': 'no-store', 'X-Content-Type-Options': 'nosniff' });
  res.end(body);
}

async function readBody(req: IncomingMessage): Promise<Buffer | null> {
  const parts: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > BODY_LIMIT) return null;
    parts.push(chunk as Buffer);
  }
  return Buffer.concat(parts);
}

/**
 * Forwards one `/gateway/…` request to `gatewayUrl` (null: the dashboard was started without
 * `--gateway` ⇒ 404 saying so) and relays the status, the JSON body and the `ETag`.
 * `rest` is the raw path after the prefix, `query` the raw query string ('' for none).
 */
export async function proxyToGateway(gatewayUrl: string | null, req: IncomingMessage, res: ServerResponse, rest: string, query: string, logError: (m: string) => void): Promise<void> {
  const method = req.method ?? 'GET';
  if (gatewayUrl === null) return answer(res, 404, 'no_gateway', 'This dashboard was started without a gateway; start it with --gateway URL (the gateway\u2019s admin listener).');
  if (!FORWARDED.test(rest) || rest.split('/').some((seg) => DOT_SEGMENTS.has(seg.toLowerCase()))) return answer(res, 404, 'not_found', `not a gateway operator path: ${rest}`);
  if (!METHODS.has(method)) return answer(res, 405, 'method_not_allowed', `method ${method} is not forwarded`);
  const headers: Record<string, string> = { accept: 'application/json' };
  const auth = req.headers.authorization;
  if (auth) headers.authorization = auth;
  const ifMatch = req.headers['if-match'];
  if (typeof ifMatch === 'string') headers['if-match'] = ifMatch;
  let body: Buffer | undefined;
  if (method !== 'GET') {
    if (!(req.headers['content-type'] ?? '').startsWith('application/json')) return answer(res, 415, 'unsupported_media_type', 'changes must be sent as application/json');
    const b = await readBody(req);
    if (b === null) return answer(res, 413, 'body_too_large', `bodies are limited to ${BODY_LIMIT} bytes`);
    body = b;
    headers['content-type'] = 'application/json';
  }
  let upstream: Response;
  try {
    upstream = await fetch(`${gatewayUrl}${rest}${query ? `?${query}` : ''}`, { method, headers, ...(body !== undefined && body.length > 0 && { body: body.toString('utf8') }), signal: AbortSignal.timeout(TIMEOUT_MS) });
  } catch (err) {
    logError(`dashboard: gateway ${method} ${rest} failed: ${(err as Error).message}`);
    return answer(res, 502, 'gateway_unreachable', `the gateway at ${gatewayUrl} did not answer (${(err as Error).name === 'TimeoutError' ? 'timed out' : 'connection failed'})`);
  }
  const text = Buffer.from(await upstream.arrayBuffer());
  const out: Record<string, string | number> = {
    'Content-Type': upstream.headers.get('content-type') ?? 'application/json',
    'Content-Length': text.length,
    'Cache-Control': 'no-store',
    'X-Content-Type-Options': 'nosniff',
  };
  const etag = upstream.headers.get('etag');
  if (etag) out.ETag = etag;
  res.writeHead(upstream.status, out);
  res.end(text);
}
