/**
 * The key pools of one core, by endpoint (seed 000 "为某个层级预留上游 key"): which routes take
 * the pool path and with which keys, and the reservations operators declare at run time.
 *
 * A route's effective keys are its own (`api_keys:`, or its single `api_key`) plus the keys
 * added for its provider through the admin API, each raised to the strictest reservation any
 * declaration names for the same secret (the route's `min_role`, a provider key's `min_role`, a
 * reservation by the secret's hash). A route with `api_keys:` or with provider keys always takes
 * the pool path; a route with one `api_key` takes it only while a reservation applies to that
 * key. A route of a kind that holds its own credential (`own-credential-kinds.ts`)
 * takes neither reservations nor provider keys: recorded ones are kept, never applied to it.
 * Every change re-declares the affected pools at once (`KeyPool.redeclare` keeps silence
 * and the bindings whose preferred key did not change).
 *
 * Pooled attempts queue on an outbound limit of their own key: the same `provider|fingerprint`
 * outbound key a single-key route on that secret uses (`model/resolve-routes.ts`), so the
 * adaptive limit is per key, shared with every route that sends on it.
 */
import { stricterRole, type CallerRole, type RequestRole } from './caller-role.ts';
import { DEFAULT_KEY_POOL_OPTIONS, KeyPool, type KeyPick, type KeyPoolOptions, type PoolKeyDeclaration } from './key-pool.ts';
import type { Outcome } from '../lifecycle/outcome.ts';

/**
 * How long a key that failed for a key-related reason stays out of the rotation when the
 * upstream named no Retry-After: one minute (the seed gives no figure; LiteLLM's deployment
 * cooldown defaults to 60 s).
 */
export const DEFAULT_KEY_SILENCE_MS = 60_000;

/** HTTP statuses that blame the key rather than the request or the endpoint (seed: 401/402/403/429). */
export const KEY_RELATED_STATUSES: readonly number[] = Object.freeze([401, 402, 403, 429]);

/** Whether `outcome` is a key-related failure (one of `KEY_RELATED_STATUSES`). */
export function isKeyRelatedFailure(outcome: Outcome): boolean {
  return outcome.kind === 'http_status' && KEY_RELATED_STATUSES.includes(outcome.status);
}

/** What a route declares about keys (from models.yaml, resolved by `RoutingCore`). */
export interface RouteKeyDeclaration {
  readonly endpointId: string;
  /** The route's `provider:` label (provider keys join routes with the same label), or null. */
  readonly provider: string | null;
  /** The route's outbound key (`provider|hash`), or null for a limiter-exempt route. */
  readonly outboundKey: string | null;
  /** True for `api_keys:` (always a pool); false for a single `api_key` (a pool only while reserved). */
  readonly listed: boolean;
  /** The route's own keys (one for `api_key`, none without a key). */
  readonly keys: readonly PoolKeyDeclaration[];
  /**
   * Whether reservations and provider keys apply (false for a kind that holds its own credential,
   * `own-credential-kinds.ts`: then only an `api_keys:` list pools, every key free).
   * Absent ⇒ true.
   */
  readonly reservable?: boolean;
}

/** The registry of pools. Owned by `RoutingCore`; the key-pool gate reads it. */
export class KeyPools {
  private routes: RouteKeyDeclaration[] = [];
  private reservations: ReadonlyMap<string, CallerRole> = new Map();
  private providerKeys: ReadonlyMap<string, readonly PoolKeyDeclaration[]> = new Map();
  private readonly pools = new Map<string, KeyPool>();
  private readonly outboundPrefix = new Map<string, string | null>();
  /** Bumped on every change of a pool's declaration (drivers refresh their key maps). */
  version = 0;

  constructor(readonly options: KeyPoolOptions = DEFAULT_KEY_POOL_OPTIONS) {}

  /**
   * Sets every route's own declaration (at start and on each configuration generation). Pools of
   * routes still pooled keep their state; pools of routes gone are dropped.
   * @throws Error when one key id names two different secrets (the id must identify one key).
   */
  configure(routes: readonly RouteKeyDeclaration[]): void {
    const idToFp = new Map<string, string>();
    for (const r of routes) {
      for (const k of r.keys) {
        const seen = idToFp.get(k.keyId);
        if (seen !== undefined && seen !== k.fingerprint) throw new Error(`api_keys: id '${k.keyId}' names two different keys (route ${r.endpointId}); give each key its own id`);
        idToFp.set(k.keyId, k.fingerprint);
      }
    }
    this.routes = [...routes];
    this.rebuild();
  }

  /**
   * Reservations declared by the secret's fingerprint (admin `min-role-env` and
   * `provider-keys/{id}/min-role`, translated by the driver): applied to running pools at once.
   */
  setReservations(byFingerprint: ReadonlyMap<string, CallerRole>): void {
    this.reservations = new Map(byFingerprint);
    this.rebuild();
  }

  /** Keys added per provider label (admin `POST /admin/provider-keys`): applied at once. */
  setProviderKeys(byProvider: ReadonlyMap<string, readonly PoolKeyDeclaration[]>): void {
    this.providerKeys = new Map(byProvider);
    this.rebuild();
  }

  /** The pool of `endpointId`, or null when the route does not take the pool path. */
  pool(endpointId: string): KeyPool | null {
    return this.pools.get(endpointId) ?? null;
  }

  /** Whether any route takes the pool path (the gate is skipped entirely otherwise). */
  get isEmpty(): boolean {
    return this.pools.size === 0;
  }

  /** Every pool by endpoint id (admin views, tests). */
  entries(): IterableIterator<[string, KeyPool]> {
    return this.pools.entries();
  }

  /** The outbound key a pooled attempt on `endpointId` with key `fingerprint` queues on, or null (exempt). */
  outboundKeyFor(endpointId: string, fingerprint: string): string | null {
    const prefix = this.outboundPrefix.get(endpointId);
    return prefix === undefined || prefix === null ? null : `${prefix}|${fingerprint}`;
  }

  /** `pool(endpointId).acquire(...)`, or null when the route has no pool. */
  acquire(endpointId: string, role: RequestRole, callerId: string | null, nowMs: number): KeyPick | null {
    const p = this.pools.get(endpointId);
    return p === undefined ? null : p.acquire(role, callerId, nowMs);
  }

  /**
   * Silences key `fingerprint` of `endpointId`'s pool when `outcome` is key-related, for the
   * upstream's Retry-After when it named one, else `DEFAULT_KEY_SILENCE_MS`. Returns whether it did.
   */
  keyFailed(endpointId: string, fingerprint: string, outcome: Outcome, nowMs: number): boolean {
    const p = this.pools.get(endpointId);
    if (p === undefined || !isKeyRelatedFailure(outcome) || outcome.kind !== 'http_status') return false;
    p.silence(fingerprint, nowMs, outcome.retryAfterMs !== null && outcome.retryAfterMs > 0 ? outcome.retryAfterMs : DEFAULT_KEY_SILENCE_MS);
    return true;
  }

  private effectiveKeys(r: RouteKeyDeclaration): PoolKeyDeclaration[] {
    if (r.reservable === false) return r.keys.map((k) => (k.minRole === 'free' ? k : { ...k, minRole: 'free' }));
    const extra = r.provider === null ? [] : (this.providerKeys.get(r.provider) ?? []);
    return [...r.keys, ...extra].map((k) => {
      const reserved = this.reservations.get(k.fingerprint);
      return reserved === undefined ? k : { keyId: k.keyId, fingerprint: k.fingerprint, minRole: stricterRole(k.minRole, reserved) };
    });
  }

  private rebuild(): void {
    const keep = new Set<string>();
    for (const r of this.routes) {
      const keys = this.effectiveKeys(r);
      const hasExtra = r.reservable !== false && r.provider !== null && (this.providerKeys.get(r.provider)?.length ?? 0) > 0;
      const pooled = r.listed || hasExtra || keys.some((k) => k.minRole !== 'free');
      if (!pooled || keys.length === 0) continue;
      keep.add(r.endpointId);
      const prefix = r.outboundKey === null ? null : r.outboundKey.slice(0, r.outboundKey.lastIndexOf('|'));
      this.outboundPrefix.set(r.endpointId, prefix);
      const p = this.pools.get(r.endpointId);
      if (p === undefined) this.pools.set(r.endpointId, new KeyPool(keys, this.options));
      else p.redeclare(keys);
    }
    for (const id of [...this.pools.keys()]) {
      if (!keep.has(id)) {
        this.pools.delete(id);
        this.outboundPrefix.delete(id);
      }
    }
    this.version++;
  }
}
