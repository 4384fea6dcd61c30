/**
 * Where a consistent-hash key comes from (`hash_on`, seed 003 "A/B tests and canaries"): an
 * ordered chain of sources, the first non-empty value wins. Sources: a request header or cookie
 * by name, the caller's API key (the request's `callerId`), or the resolved client IP.
 * Default chain: the `x-switchyard-routing-key` header, then the caller's API key, so each key is
 * sticky by default and a client can pin per session or end user with the header.
 */
import { z } from 'zod';
import type { RouteRequest } from '../lifecycle/seam.ts';

/** One `hash_on` source. Header names are matched case-insensitively. */
export const HashSourceSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('header'), name: z.string().min(1) }).strict(),
  z.object({ type: z.literal('cookie'), name: z.string().min(1) }).strict(),
  z.object({ type: z.literal('api_key') }).strict(),
  z.object({ type: z.literal('client_ip') }).strict(),
]);

/** One `hash_on` source after validation. */
export type HashSource = z.infer<typeof HashSourceSchema>;

/** The routing-key header a client sets to choose its hash key (never forwarded upstream). */
export const ROUTING_KEY_HEADER = 'x-switchyard-routing-key';

/** The chain used when `hash_on` is absent. */
export const DEFAULT_HASH_ON: readonly HashSource[] = Object.freeze([
  { type: 'header', name: ROUTING_KEY_HEADER },
  { type: 'api_key' },
] as const);

/**
 * The first non-empty value of `chain` for `request`, or null when every source is empty or
 * absent (the planner then spreads the request by a random draw).
 */
export function resolveHashKey(chain: readonly HashSource[], request: RouteRequest): string | null {
  for (const s of chain) {
    let v: string | null | undefined;
    switch (s.type) {
      case 'header':
        v = request.headers?.[s.name.toLowerCase()];
        break;
      case 'cookie':
        v = request.cookies?.[s.name];
        break;
      case 'api_key':
        v = request.callerId;
        break;
      case 'client_ip':
        v = request.clientIp;
        break;
    }
    if (v !== undefined && v !== null && v !== '') return v;
  }
  return null;
}
