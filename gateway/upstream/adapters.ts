/**
 * The registry of upstream adapters, by route `kind`. Adding a protocol is a file (or folder) of
 * its own under `upstream/` exporting an `UpstreamAdapter`, and one `registerAdapter` line at
 * the end of this file; the configuration check (`config/load.ts`), the routing core's default
 * `endpoints:` of a route (`defaultEndpoints`) and the exchange all read from here. See the
 * gateway section of the README.
 *
 * As with endpoint families (`endpoints/families.ts`), registration at module load reaches every
 * process and worker thread; one made at run time must come before the configuration is loaded
 * and reaches only this thread.
 */
import type { DefaultEndpoints } from '../../core/index.ts';
import { endpointFamily } from '../endpoints/families.ts';
import type { UpstreamAdapter } from './adapter.ts';
import { anthropicAdapter } from './anthropic/anthropic-adapter.ts';
import { openaiCompatAdapter } from './openai-compat.ts';

const ADAPTER_MAP = new Map<string, UpstreamAdapter>();

/** Every adapter, keyed by its `kind` (a live view: run-time registrations show here). */
export const ADAPTERS: ReadonlyMap<string, UpstreamAdapter> = ADAPTER_MAP;

/**
 * Adds `adapter` under its `kind`.
 * @throws Error when the kind is already registered, the adapter serves no family, or it lists
 *   an endpoint family that is not registered (`endpoints/families.ts`; register the family first).
 */
export function registerAdapter(adapter: UpstreamAdapter): void {
  if (ADAPTER_MAP.has(adapter.kind)) throw new Error(`route kind '${adapter.kind}' has an adapter already; give the new adapter another kind`);
  if (adapter.endpoints.length === 0) throw new Error(`adapter '${adapter.kind}' serves no endpoint family; list at least one in its endpoints`);
  for (const e of adapter.endpoints) {
    if (!endpointFamily(e)) throw new Error(`adapter '${adapter.kind}' lists endpoint family '${e}', which is not registered; register it in endpoints/families.ts first`);
  }
  ADAPTER_MAP.set(adapter.kind, adapter);
}

/** The route kinds an adapter exists for, in registration order. */
export function routeKinds(): readonly string[] {
  return [...ADAPTER_MAP.keys()];
}

/**
 * The adapter of a route kind.
 * @throws Error naming the kind and the known ones (the configuration check refuses such routes first).
 */
export function adapterFor(kind: string): UpstreamAdapter {
  const a = ADAPTER_MAP.get(kind);
  if (!a) throw new Error(`route kind '${kind}' has no gateway adapter; use one of: ${routeKinds().join(', ')}`);
  return a;
}

/** Why this gateway cannot serve a route, with the route field it comes from. */
export interface RouteServeProblem {
  /** `kind`, `endpoints` or `base_url`. */
  field: 'kind' | 'endpoints' | 'base_url';
  message: string;
}

/**
 * What a generation build needs of one route entry (`generation.ts` checks every route with it
 * before building, `config/load.ts` reports the same rules with file lines): an adapter for its
 * `kind`, `endpoints:` families that are registered and that the adapter serves, and an absolute
 * http(s) `base_url`. Null when the route can be served.
 */
export function routeServeProblem(r: { kind: string; base_url: string; endpoints?: readonly string[] | undefined }): RouteServeProblem | null {
  const a = ADAPTER_MAP.get(r.kind);
  if (!a) return { field: 'kind', message: `route kind '${r.kind}' has no gateway adapter; use one of: ${routeKinds().join(', ')}` };
  const declared = r.endpoints ?? [];
  const unknown = declared.filter((e) => !endpointFamily(e));
  if (unknown.length > 0) return { field: 'endpoints', message: `the gateway has no endpoint family ${unknown.map((e) => `'${e}'`).join(', ')}` };
  const extra = declared.filter((e) => !a.endpoints.includes(e));
  if (extra.length > 0) return { field: 'endpoints', message: `a ${r.kind} route cannot serve ${extra.join(', ')}; list only endpoints its kind serves: ${a.endpoints.join(', ')}` };
  let url: URL;
  try {
    url = new URL(r.base_url);
  } catch {
    return { field: 'base_url', message: `'${r.base_url}' is not an absolute URL` };
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return { field: 'base_url', message: `'${url.protocol}' URLs cannot be served by the gateway; use an http:// or https:// base_url` };
  return null;
}

/** The routing core's default `endpoints:` of a route: its kind's adapter's defaults, else all it serves. */
export const defaultEndpoints: DefaultEndpoints = (kind) => {
  const a = ADAPTER_MAP.get(kind);
  return a?.defaultEndpoints ?? a?.endpoints;
};

// The adapters, one line each.
registerAdapter(openaiCompatAdapter);
registerAdapter(anthropicAdapter);
