/**
 * The upstream adapters the gateway has, by route `kind`. Adding a protocol is a folder of its
 * own under `upstream/` exporting an `UpstreamAdapter`, and one line in `ADAPTERS` below; the
 * configuration check (`config/load.ts`) and the exchange pick it up from here.
 */
import type { UpstreamAdapter } from './adapter.ts';
import { openaiCompatAdapter } from './openai-compat.ts';

/** Every adapter, keyed by its `kind`. */
export const ADAPTERS: ReadonlyMap<string, UpstreamAdapter> = new Map([openaiCompatAdapter].map((a) => [a.kind, a]));

/** The route kinds an adapter exists for, in registration order. */
export const ROUTE_KINDS: readonly string[] = [...ADAPTERS.keys()];

/**
 * The adapter of a route kind.
 * @throws Error naming the kind and the known ones (the configuration check refuses such routes first).
 */
export function adapterFor(kind: string): UpstreamAdapter {
  const a = ADAPTERS.get(kind);
  if (!a) throw new Error(`route kind '${kind}' has no gateway adapter; use one of: ${ROUTE_KINDS.join(', ')}`);
  return a;
}
