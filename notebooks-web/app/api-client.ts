/**
 * The app's side of the JSON API (shapes in shared/api-types.ts). GET responses are cached for
 * the life of the page: results files do not change under a running view, and re-rendering a
 * page after a control change should not refetch what it already has. Reload to refresh.
 */
import type { ApiErrorBody, ExperimentDetail, ExperimentsResponse } from '../shared/api-types.ts';

/** An API error response, with its status and the server's message. */
export class ApiClientError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = 'ApiClientError';
  }
}

const cache = new Map<string, Promise<unknown>>();
/** Most cached responses; the oldest go first. */
const CACHE_LIMIT = 200;

/** Builds `/api/<path>?<params>` (undefined and empty params dropped). */
export function apiUrl(path: string, params: Readonly<Record<string, string | number | undefined>> = {}): string {
  const search = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== '') search.set(k, String(v));
  const s = search.toString();
  return `/api/${path}${s ? `?${s}` : ''}`;
}

/**
 * GETs `/api/<path>` and parses the JSON (cached by URL).
 * @throws ApiClientError with the server's message for a non-2xx status; TypeError on network failure.
 */
export function api<T>(path: string, params: Readonly<Record<string, string | number | undefined>> = {}): Promise<T> {
  const url = apiUrl(path, params);
  let p = cache.get(url);
  if (!p) {
    p = fetchJson(url);
    cache.set(url, p);
    p.catch(() => cache.delete(url)); // do not cache failures
    if (cache.size > CACHE_LIMIT) cache.delete(cache.keys().next().value!);
  }
  return p as Promise<T>;
}

async function fetchJson(url: string): Promise<unknown> {
  const res = await fetch(url, { headers: { Accept: 'application/json' } });
  const body: unknown = await res.json().catch(() => null);
  if (!res.ok) {
    const message = (body as ApiErrorBody | null)?.error?.message ?? `${res.status} ${res.statusText}`;
    throw new ApiClientError(res.status, message);
  }
  return body;
}

/** `experiments/<db>/<experiment>` with both parts escaped. */
export function experimentPath(db: string, exp: string): string {
  return `experiments/${encodeURIComponent(db)}/${encodeURIComponent(exp)}`;
}

/** `experiments/<db>/<experiment>/runs/<run>` with every part escaped. */
export function runPath(db: string, exp: string, run: string): string {
  return `${experimentPath(db, exp)}/runs/${encodeURIComponent(run)}`;
}

/** The experiment list. */
export function fetchExperiments(): Promise<ExperimentsResponse> {
  return api<ExperimentsResponse>('experiments');
}

/** One experiment's detail. */
export function fetchExperiment(db: string, exp: string): Promise<ExperimentDetail> {
  return api<ExperimentDetail>(experimentPath(db, exp));
}
