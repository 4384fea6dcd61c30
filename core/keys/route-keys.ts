/**
 * A route's own keys as a key pool declares them: `api_keys:` entries (a pool whatever their
 * roles) or the single `api_key` (a pool only while a reservation applies to it, seed 000). The
 * secret itself stays with the driver; the core keeps a fingerprint (FNV-1a 64, hex) to tell
 * keys apart and an id to name them in logs.
 */
import type { RouteConfig } from '../config/models-config.ts';
import { fnv1a64Hex } from '../affinity/affinity-key.ts';
import type { PoolKeyDeclaration } from './key-pool.ts';

/** The fingerprint of a secret: FNV-1a 64 of its UTF-8 text, 16 hex digits. */
export function keyFingerprint(secret: string): string {
  return fnv1a64Hex(secret);
}

/**
 * The display id of a key: its configured `id`, else `key-` and the first 8 hex digits of its
 * fingerprint (enough to tell a deployment's keys apart; reveals nothing usable of the secret).
 */
export function poolKeyId(secret: string, id?: string | null): string {
  return id ?? `key-${keyFingerprint(secret).slice(0, 8)}`;
}

/** What `r` declares: `listed` for `api_keys:`; its keys (one for `api_key`, none without a key). */
export function routeKeyDeclarations(r: Pick<RouteConfig, 'api_key' | 'api_keys'>): { listed: boolean; keys: PoolKeyDeclaration[] } {
  if (r.api_keys !== undefined) {
    return { listed: true, keys: r.api_keys.map((k) => ({ keyId: poolKeyId(k.key, k.id), fingerprint: keyFingerprint(k.key), minRole: k.min_role })) };
  }
  if (r.api_key) return { listed: false, keys: [{ keyId: poolKeyId(r.api_key), fingerprint: keyFingerprint(r.api_key), minRole: 'free' }] };
  return { listed: false, keys: [] };
}
