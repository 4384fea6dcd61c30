/**
 * Who is calling: `Authorization: Bearer <key>` checked against the configured keys, which are
 * stored only as SHA-256 digests. The presented key is hashed once and compared with every
 * stored digest in constant time (`timingSafeEqual`, no early exit), so neither a match nor its
 * position leaks through timing. A key may be limited to some models (`allowed_models`); an id
 * admits its aliases, an alias admits only itself (seed 003: a key scoped to one alias).
 * `auth.mode: none` (local use) lets every request in as one anonymous caller.
 *
 * Every caller has a tier (`role`, seed 000 "为某个层级预留上游 key"): `free` < `pro` <
 * `internal` < `admin`; the key pools of models.yaml hide keys reserved above it. The admin
 * tier is the control plane's admin. The anonymous caller of none mode has `auth.anonymous_role`.
 * The gateway's own traffic (probes, warm-up, verifications) is no caller and has no role.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { RoutingCore } from '../core/index.ts';
import type { CallerRole } from '../core/index.ts';
import { callerKeyRole, type AuthConfig } from './config/gateway-settings.ts';

/** An authenticated caller. */
export interface Caller {
  /** Caller id (config `id`; `anonymous` in none mode). */
  readonly id: string;
  /** The admin role: may pin a route (`X-Route-Pin`) and call `/health/deep`, `/routing`, `/metrics` and `/admin/…`. */
  readonly admin: boolean;
  /** Model names (ids and aliases) this caller may use; null = every model. */
  readonly allowed: ReadonlySet<string> | null;
  /** The caller's tier for key pools; absent ⇒ `admin` when `admin`, else `free` (see `roleOf`). */
  readonly role?: CallerRole;
  /** The grant the caller's key belongs to (config `grant_id`), or null/absent. */
  readonly grantId?: string | null;
}

/** The tier of `caller`: its `role`, else `admin` for an admin, else `free`. */
export function roleOf(caller: Caller): CallerRole {
  return caller.role ?? (caller.admin ? 'admin' : 'free');
}

interface StoredKey {
  readonly digest: Buffer;
  readonly caller: Caller;
}

/** SHA-256 of a key, lowercase hex — what `auth.keys[].sha256` holds. */
export function hashKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

/** The configured callers of one gateway. */
export class Callers {
  private readonly keys: StoredKey[];
  /** Tokens already verified against `keys`, to their caller. */
  private readonly verified = new Map<string, Caller>();
  private readonly anonymous: Caller | null;

  /**
   * @param auth the validated `auth:` block.
   * @param core resolves model ids to their aliases for `allowed_models`.
   */
  constructor(auth: AuthConfig, core: RoutingCore) {
    const anonymousRole: CallerRole = auth.anonymous_role ?? (auth.anonymous_admin ? 'admin' : 'free');
    this.anonymous = auth.mode === 'none' ? { id: 'anonymous', admin: anonymousRole === 'admin', allowed: null, role: anonymousRole, grantId: null } : null;
    this.keys = auth.keys.map((k) => {
      let allowed: Set<string> | null = null;
      if (k.allowed_models) {
        allowed = new Set<string>();
        for (const name of k.allowed_models) {
          allowed.add(name);
          const m = core.model(name);
          // A canonical id admits the model's aliases; an alias admits only itself.
          if (m && m.id === name) for (const a of m.aliases) allowed.add(a);
        }
      }
      const role = callerKeyRole(k);
      return { digest: Buffer.from(k.sha256.toLowerCase(), 'hex'), caller: { id: k.id, admin: role === 'admin', allowed, role, grantId: k.grant_id ?? null } };
    });
  }

  /** True in `auth.mode: none`. */
  get open(): boolean {
    return this.anonymous !== null;
  }

  /**
   * The caller for an `Authorization` header value ('' when absent), or null (⇒ 401).
   * In none mode every request is the anonymous caller, header or not.
   */
  authenticate(authorization: string): Caller | null {
    if (this.anonymous) return this.anonymous;
    if (authorization.length < 8 || authorization.slice(0, 7).toLowerCase() !== 'bearer ') return null;
    const token = authorization.slice(7).trim();
    if (token.length === 0) return null;
    // Known-good tokens skip the SHA-256 (a few µs per request); the cache is per configuration
    // (a reload builds new Callers), bounded, and never holds a rejected token.
    const cached = this.verified.get(token);
    if (cached !== undefined) return cached;
    const digest = createHash('sha256').update(token, 'utf8').digest();
    let found: Caller | null = null;
    for (const k of this.keys) {
      // Compare against every key; remember the match without leaving early.
      if (timingSafeEqual(digest, k.digest) && found === null) found = k.caller;
    }
    if (found !== null) {
      if (this.verified.size >= 1024) this.verified.clear();
      this.verified.set(token, found);
    }
    return found;
  }

  /** Whether `caller` may use the model named `name` (id or alias as the client wrote it). */
  static mayUse(caller: Caller, name: string): boolean {
    return caller.allowed === null || caller.allowed.has(name);
  }
}
