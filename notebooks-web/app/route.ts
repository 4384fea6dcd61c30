/**
 * The view lives in the URL hash, so any view can be shared or reloaded:
 * `#/<page>?<key>=<value>&…` — e.g. `#/timeline?db=default&exp=…&run=fixed-42&from=0&to=60000`.
 * A hash (not a path) keeps the static server trivial and works the same under Vite's dev
 * server. Pure functions; no DOM.
 */

/** Pages of the results dashboard. */
export const RESULT_PAGES = ['experiments', 'compare', 'timeline', 'sweep', 'requests', 'plans'] as const;

/** Pages of the operator's console (shown when the dashboard runs with `--gateway`). */
export const GATEWAY_PAGES = ['gateway/routes', 'gateway/health', 'gateway/offload', 'gateway/requests', 'gateway/routewise', 'gateway/audit'] as const;

/** Pages of the app. */
export const PAGES = [...RESULT_PAGES, ...GATEWAY_PAGES] as const;

/** A page name. */
export type PageName = (typeof PAGES)[number];

/** A parsed view: the page and its string parameters (no empty values). */
export interface Route {
  /** The page, or null for an unknown one (shown as "no such page"). */
  page: PageName | null;
  params: Record<string, string>;
}

/**
 * Parses `location.hash`. An empty hash is the experiments list; unknown pages give
 * `page: null`. Empty parameter values are dropped; a repeated key keeps its last value.
 */
export function parseRoute(hash: string): Route {
  const h = hash.startsWith('#') ? hash.slice(1) : hash;
  const q = h.indexOf('?');
  const path = (q < 0 ? h : h.slice(0, q)).replace(/^\/+|\/+$/g, '');
  const params: Record<string, string> = {};
  for (const [k, v] of new URLSearchParams(q < 0 ? '' : h.slice(q + 1))) {
    if (v !== '') params[k] = v;
    else delete params[k];
  }
  if (path === '') return { page: 'experiments', params };
  if (path === 'gateway') return { page: 'gateway/routes', params };
  return { page: (PAGES as readonly string[]).includes(path) ? (path as PageName) : null, params };
}

/**
 * Formats a view as a hash (`#/page?…`), keys in a stable order (sorted), dropping undefined
 * and empty values, so equal views give equal URLs.
 */
export function formatRoute(page: PageName, params: Readonly<Record<string, string | number | undefined | null>>): string {
  const search = new URLSearchParams();
  for (const k of Object.keys(params).sort()) {
    const v = params[k];
    if (v !== undefined && v !== null && v !== '') search.set(k, String(v));
  }
  const s = search.toString();
  return `#/${page}${s ? `?${s}` : ''}`;
}

/** The experiment a view is about (`db` + `exp`), or null when it names none. */
export function experimentOf(route: Route): { db: string; exp: string } | null {
  const { db, exp } = route.params;
  return db !== undefined && exp !== undefined ? { db, exp } : null;
}

/** A table sort as stored in the URL: `column:asc` / `column:desc`. */
export interface SortState {
  key: string;
  dir: 'asc' | 'desc';
}

/** Parses `key:dir`; anything malformed gives `fallback`. */
export function parseSort(value: string | undefined, fallback: SortState | null): SortState | null {
  if (value === undefined) return fallback;
  const m = /^([\w.-]+):(asc|desc)$/.exec(value);
  return m ? { key: m[1]!, dir: m[2] as 'asc' | 'desc' } : fallback;
}

/** Formats a sort for the URL. */
export function formatSort(s: SortState | null): string | undefined {
  return s ? `${s.key}:${s.dir}` : undefined;
}

/**
 * Parses a finite number parameter; undefined (absent or not a number) gives `fallback`.
 */
export function numberParam(value: string | undefined, fallback: number): number;
export function numberParam(value: string | undefined): number | undefined;
export function numberParam(value: string | undefined, fallback?: number): number | undefined {
  if (value === undefined) return fallback;
  const n = Number(value);
  return Number.isFinite(n) ? n : fallback;
}
