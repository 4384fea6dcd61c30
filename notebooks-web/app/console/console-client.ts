/**
 * The console's side of the gateway: calls go to `/gateway/<path>` on the dashboard, which
 * forwards them to the gateway's admin listener (server/gateway-proxy.ts). The admin key is typed
 * once and kept in this tab's `sessionStorage` only (gone when the tab closes; never in the URL,
 * a cookie or `localStorage`), and sent as `Authorization: Bearer …` on every call. Nothing is
 * cached: the console shows the gateway as it is now.
 */

const KEY_ITEM = 'switchyard.console.adminKey';

/** A refused or failed gateway call: the HTTP status, the error code and the gateway's message. */
export class GatewayError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    /** The whole error body, to show as the server's answer. */
    readonly body: unknown,
  ) {
    super(message);
    this.name = 'GatewayError';
  }
}

/** The admin key of this tab, or null when none was entered. */
export function adminKey(): string | null {
  try {
    return sessionStorage.getItem(KEY_ITEM);
  } catch {
    return null;
  }
}

/** Keeps `key` for this tab (trimmed); an empty key forgets it. */
export function setAdminKey(key: string): void {
  const k = key.trim();
  if (k === '') sessionStorage.removeItem(KEY_ITEM);
  else sessionStorage.setItem(KEY_ITEM, k);
}

/** Forgets this tab's admin key. */
export function forgetAdminKey(): void {
  sessionStorage.removeItem(KEY_ITEM);
}

/** A gateway answer: status, parsed JSON body, ETag. */
export interface GatewayAnswer<T> {
  status: number;
  body: T;
  etag: string | null;
}

/** Options of {@link gatewayCall}. */
export interface CallOptions {
  body?: unknown;
  ifMatch?: string;
}

/**
 * Calls the gateway (`path` starts with `/`, query included) and returns its answer; a non-2xx
 * answer is thrown.
 * @throws GatewayError with the gateway's (or the dashboard's) message for any non-2xx status;
 *   status 0 when the dashboard itself cannot be reached.
 */
export async function gatewayCall<T>(method: string, path: string, opts: CallOptions = {}): Promise<GatewayAnswer<T>> {
  const headers: Record<string, string> = { accept: 'application/json' };
  const key = adminKey();
  if (key) headers.authorization = `Bearer ${key}`;
  if (opts.ifMatch) headers['if-match'] = opts.ifMatch;
  if (method !== 'GET') headers['content-type'] = 'application/json';
  let res: Response;
  try {
    res = await fetch(`/gateway${path}`, { method, headers, ...(method !== 'GET' && { body: JSON.stringify(opts.body ?? {}) }), cache: 'no-store' });
  } catch (err) {
    throw new GatewayError(0, 'dashboard_unreachable', `the dashboard server did not answer (${(err as Error).message})`, null);
  }
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // a non-JSON body is shown as text
  }
  if (!res.ok) {
    const e = (body as { error?: { code?: string; message?: string } } | null)?.error;
    throw new GatewayError(res.status, e?.code ?? 'error', e?.message ?? `${res.status} ${res.statusText}`, body);
  }
  return { status: res.status, body: body as T, etag: res.headers.get('etag') };
}

/** GETs `path` and returns the body. @throws GatewayError as {@link gatewayCall}. */
export async function gatewayGet<T>(path: string): Promise<T> {
  return (await gatewayCall<T>('GET', path)).body;
}

/** `segment` percent-encoded for a path (model ids may hold `/`). */
export const enc = encodeURIComponent;
