/**
 * Which provider key a target calls its upstream with (seed 003: a follow-up turn of a
 * `/v1/responses` conversation goes back to the target that produced its context, or else to
 * another target on the same provider key, since that provider can still resolve the
 * conversation's ids and encrypted reasoning). Two targets share a provider key when their
 * routes name the same provider and declare the same secrets (compared by fingerprint, never by
 * the secret itself).
 */
import type { ResolvedRoute } from '../../model/resolved-model.ts';

/**
 * The provider key of `route`: `provider|fingerprint[,fingerprint…]` over its own keys
 * (`api_key`, or every `api_keys:` entry, sorted), or null when the route declares no key (then
 * it shares a key with no other target).
 */
export function providerKeyOf(route: Pick<ResolvedRoute, 'provider' | 'keys'>): string | null {
  if (route.keys.length === 0) return null;
  const prints = route.keys.map((k) => k.fingerprint).sort();
  return `${route.provider}|${prints.join(',')}`;
}
