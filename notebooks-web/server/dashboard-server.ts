/**
 * The dashboard's HTTP server (node:http): `/api/…` answers JSON from the results catalog
 * (api-routes.ts), every other path serves the built app. Read-only by construction: GET and
 * HEAD only, files opened with DuckDB's READ_ONLY mode, no SQL and no file path from clients.
 * Binds 127.0.0.1 unless told otherwise: the results may be private.
 *
 * With a gateway (`gatewayUrl`), `/gateway/…` is forwarded to its admin listener
 * (gateway-proxy.ts) for the operator's console; that prefix alone takes other methods than GET.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ApiErrorBody } from '../shared/api-types.ts';
import { handleApi } from './api-routes.ts';
import { GATEWAY_PREFIX, proxyToGateway } from './gateway-proxy.ts';
import { ApiError } from './http-errors.ts';
import { pathSegments } from './query-params.ts';
import type { ResultsCatalog } from './results-catalog.ts';
import { readStaticFile } from './static-files.ts';

/** Options of {@link startDashboardServer}. */
export interface DashboardServerOptions {
  catalog: ResultsCatalog;
  /** Folder of the built app (index.html + assets/); null serves the API only. */
  appDir: string | null;
  /** Interface to bind; default 127.0.0.1. */
  host?: string;
  /** TCP port; 0 (default) picks a free one. */
  port?: number;
  /** Base URL of the gateway's admin listener the console reads (`--gateway`); absent: none. */
  gatewayUrl?: string;
  /** Where unexpected (500) errors are logged; default stderr. */
  logError?: (message: string) => void;
}

/** A running server. */
export interface DashboardServer {
  /** Base URL, e.g. `http://127.0.0.1:8090/`. */
  url: string;
  port: number;
  /** Stops accepting connections, closes idle ones and the catalog's databases. */
  close(): Promise<void>;
}

/** Content-Security-Policy of every response: the app loads nothing from elsewhere. */
const CSP = "default-src 'self'; img-src 'self' data: blob:; style-src 'self' 'unsafe-inline'; connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'";

function send(res: ServerResponse, status: number, contentType: string, body: string | Buffer, head: boolean, extra: Record<string, string> = {}): void {
  res.writeHead(status, {
    'Content-Type': contentType,
    'Content-Length': Buffer.byteLength(body),
    'X-Content-Type-Options': 'nosniff',
    'Content-Security-Policy': CSP,
    'Referrer-Policy': 'no-referrer',
    ...extra,
  });
  res.end(head ? undefined : body);
}

function sendError(res: ServerResponse, err: ApiError, head: boolean, asJson: boolean): void {
  const extra: Record<string, string> = err.code === 'method_not_allowed' ? { Allow: 'GET, HEAD' } : {};
  if (asJson) {
    const body: ApiErrorBody = { error: { code: err.code, message: err.message } };
    send(res, err.status, 'application/json; charset=utf-8', JSON.stringify(body), head, { 'Cache-Control': 'no-store', ...extra });
  } else {
    send(res, err.status, 'text/plain; charset=utf-8', `${err.status} ${err.message}\n`, head, extra);
  }
}

async function handle(opts: DashboardServerOptions, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const raw = req.url ?? '/';
  const q = raw.indexOf('?');
  // The raw path, not `new URL(...).pathname`: WHATWG parsing would resolve `..` before we see it.
  const pathname = q < 0 ? raw : raw.slice(0, q);
  const search = new URLSearchParams(q < 0 ? '' : raw.slice(q + 1));
  const isApi = pathname === '/api' || pathname.startsWith('/api/');
  const head = req.method === 'HEAD';
  const logError = opts.logError ?? ((m: string) => process.stderr.write(`${m}\n`));
  if (pathname === GATEWAY_PREFIX || pathname.startsWith(`${GATEWAY_PREFIX}/`)) {
    try {
      await proxyToGateway(opts.gatewayUrl ?? null, req, res, pathname.slice(GATEWAY_PREFIX.length), q < 0 ? '' : raw.slice(q + 1), logError);
    } catch (err) {
      logError(`dashboard: gateway ${req.method} ${pathname} failed: ${(err as Error).message}`);
      if (!res.headersSent) sendError(res, new ApiError('internal', 'internal error (see the server log)'), false, true);
      else res.destroy();
    }
    return;
  }
  try {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      throw new ApiError('method_not_allowed', `method ${req.method ?? '?'} not allowed: the dashboard is read-only`);
    }
    const segments = pathSegments(pathname);
    if (isApi) {
      const body = await handleApi(opts.catalog, segments.slice(1), search, opts.gatewayUrl !== undefined);
      send(res, 200, 'application/json; charset=utf-8', JSON.stringify(body), head, { 'Cache-Control': 'no-store' });
      return;
    }
    if (opts.appDir === null) throw new ApiError('not_found', 'this server was started without the app (API only)');
    const file = await readStaticFile(opts.appDir, segments);
    send(res, 200, file.contentType, file.body, head, { 'Cache-Control': file.cacheControl });
  } catch (err) {
    if (err instanceof ApiError) {
      sendError(res, err, head, isApi);
      return;
    }
    logError(
      `dashboard: ${req.method} ${raw} failed: ${(err as Error).stack ?? String(err)}`,
    );
    sendError(res, new ApiError('internal', 'internal error (see the server log)'), head, isApi);
  }
}

/**
 * Starts the server and resolves once it listens.
 * @throws Error when the port cannot be bound (e.g. EADDRINUSE).
 */
export async function startDashboardServer(opts: DashboardServerOptions): Promise<DashboardServer> {
  const host = opts.host ?? '127.0.0.1';
  const server = createServer((req, res) => {
    void handle(opts, req, res);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const shownHost = host.includes(':') ? `[${host}]` : host;
  return {
    url: `http://${shownHost}:${port}/`,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => {
          opts.catalog.close();
          resolve();
        });
        // Read-only responses: cutting one short on shutdown loses nothing.
        server.closeAllConnections();
      }),
  };
}
