/**
 * The secrets behind the core's pooled keys (seed 000 "为某个层级预留上游 key"). The core names
 * an attempt's key by id and fingerprint only (`AttemptKey`); the exchange looks the secret up
 * here, by fingerprint, and hands it to the adapter for that attempt (`AttemptContext.apiKey`).
 * Two sources: the keys models.yaml declares (`api_keys:` / `api_key`, replaced with each
 * configuration generation) and the keys operators add through `POST /admin/provider-keys`
 * (replaced whenever the store's list changes). Secrets never leave this object except towards
 * an upstream: logs and admin answers carry the key id or a hash prefix.
 */
import { keyFingerprint, poolKeyId, roleRank, type RouteConfig } from '../../core/index.ts';

/** Fingerprint → secret, for every key a pool may hand out. One per gateway process. */
export class KeySecrets {
  private configured = new Map<string, string>();
  private added = new Map<string, string>();

  /** Replaces the keys of the configuration in force (every route's `api_key` and `api_keys`). */
  setConfigured(routes: Iterable<Pick<RouteConfig, 'api_key' | 'api_keys'>>): void {
    const m = new Map<string, string>();
    for (const r of routes) {
      if (r.api_key) m.set(keyFingerprint(r.api_key), r.api_key);
      for (const k of r.api_keys ?? []) m.set(keyFingerprint(k.key), k.key);
    }
    this.configured = m;
  }

  /** Replaces the keys added through the admin API. */
  setAdded(secrets: Iterable<string>): void {
    const m = new Map<string, string>();
    for (const s of secrets) m.set(keyFingerprint(s), s);
    this.added = m;
  }

  /** The secret of `fingerprint`, or undefined (a key removed since the core chose it). */
  get(fingerprint: string): string | undefined {
    return this.configured.get(fingerprint) ?? this.added.get(fingerprint);
  }
}

/**
 * The key a route's own (unrestricted) traffic sends — health probes, verifications, warm-up:
 * its `api_key`, else the most reserved of its `api_keys` (what an unrestricted request is given
 * first), else null.
 */
export function unrestrictedKey(r: Pick<RouteConfig, 'api_key' | 'api_keys'>): string | null {
  if (r.api_key) return r.api_key;
  const keys = r.api_keys;
  if (!keys || keys.length === 0) return null;
  let best = keys[0]!;
  for (const k of keys) if (roleRank(k.min_role) > roleRank(best.min_role)) best = k;
  return best.key;
}

/** The log name of a secret: its pool id (`key-` and a fingerprint prefix), never the secret. */
export function keyLogName(secret: string): string {
  return poolKeyId(secret);
}
