// Admin calls over HTTP, for the store suites and the gateway's own admin tests.
import { KEYS } from '../gateway/harness.ts';

/** An admin call: status, JSON body, ETag. */
export async function adminCall(
  base: string,
  method: string,
  path: string,
  opts: { body?: unknown; key?: string | null; ifMatch?: string; raw?: string } = {},
): Promise<{ status: number; body: any; etag: string | null }> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  const key = opts.key === undefined ? KEYS.admin : opts.key;
  if (key !== null) headers.authorization = `Bearer ${key}`;
  if (opts.ifMatch !== undefined) headers['if-match'] = opts.ifMatch;
  const body = method === 'GET' ? undefined : (opts.raw ?? (opts.body === undefined ? undefined : JSON.stringify(opts.body)));
  const r = await fetch(`${base}${path}`, { method, headers, ...(body !== undefined && { body }) });
  const text = await r.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not JSON (metrics)
  }
  return { status: r.status, body: parsed, etag: r.headers.get('etag') };
}

/** `/admin/routing/weights/{model}/{endpoint}` with both segments encoded. */
export const weightPath = (model: string, endpoint: string): string => `/admin/routing/weights/${encodeURIComponent(model)}/${encodeURIComponent(endpoint)}`;
