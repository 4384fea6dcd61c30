/**
 * One route's pool of upstream keys (seed 000 "为某个层级预留上游 key"). Each key carries a
 * `minRole`; the pool answers "which key does this request send with?" from its own state and
 * the request's role and caller id, never from a clock of its own (`nowMs` is an argument).
 *
 * Rules, as the seed states them:
 * - selection: a key reserved above the request's role is invisible to it; among the visible
 *   keys the most reserved tier comes first, so an eligible caller drains the capacity kept for
 *   it before falling back to the shared keys. Within one tier new callers rotate.
 * - affinity: the pool binds a caller to the key it was given for `bindingTtlMs` (five minutes),
 *   so its prompt cache stays warm. A binding is valid only for the role that created it. When
 *   the declaration changes (a key's tier changes, a key is added, re-enabled or removed) every
 *   binding whose preferred key changed is dropped: the bound key left the pool or the role's
 *   view, its own tier changed, or the role's top tier changed. A binding to a key that is only
 *   *silenced* stays: silence is temporary, and acquire routes around it.
 * - silence: a key that failed for a key-related reason (401/402/403/429) leaves the rotation
 *   until `silencedUntilMs` and comes back by itself; it is still declared.
 * - exhaustion: when every key the request may use is silenced (or it may use none) the pool
 *   answers `exhausted`; `roleRestricted` says an unrestricted request could still be served,
 *   so the refusal is about the caller's tier, not the endpoint's health.
 */
import { roleMeets, roleRank, type CallerRole, type RequestRole } from './caller-role.ts';

/** One declared key as a pool holds it (never the secret itself). */
export interface PoolKeyDeclaration {
  /** Display id for logs and the admin API (config `id`, or derived from the fingerprint). */
  readonly keyId: string;
  /** A stable hash of the secret (`fnv1a64Hex`); the same secret has the same fingerprint everywhere. */
  readonly fingerprint: string;
  /** The lowest tier that may use the key; `free` = not reserved. */
  readonly minRole: CallerRole;
}

/** A pool's answer to `acquire`. */
export type KeyPick =
  | { readonly kind: 'key'; readonly keyId: string; readonly fingerprint: string; readonly reason: 'binding' | 'order' }
  | { readonly kind: 'exhausted'; readonly roleRestricted: boolean };

/** Tunables of a pool; times in ms. */
export interface KeyPoolOptions {
  /** How long a caller stays bound to its key after its last use (seed: five minutes). */
  readonly bindingTtlMs: number;
  /** Most bindings kept; the least recently used goes first beyond it. */
  readonly maxBindings: number;
}

/** Five minutes (the seed's key binding) and a bounded table. */
export const DEFAULT_KEY_POOL_OPTIONS: KeyPoolOptions = Object.freeze({ bindingTtlMs: 5 * 60_000, maxBindings: 10_000 });

/** A caller bound to a key for a role until `expiresAtMs` (the pool's clock), as replicas share it. */
export interface SharedBinding {
  readonly callerId: string;
  readonly fingerprint: string;
  readonly role: RequestRole;
  readonly expiresAtMs: number;
}

interface Binding {
  readonly fingerprint: string;
  readonly role: RequestRole;
  expiresAtMs: number;
}

/**
 * Merges duplicate declarations of one secret (same fingerprint): the strictest `minRole` wins
 * whatever the order (`free` declares nothing, so a looser duplicate cannot widen access); the
 * id is the first declaration's. The result is ordered most reserved first, ties in first
 * declaration order.
 */
export function mergeKeyDeclarations(decls: readonly PoolKeyDeclaration[]): PoolKeyDeclaration[] {
  const byFp = new Map<string, { d: PoolKeyDeclaration; order: number }>();
  for (const d of decls) {
    const seen = byFp.get(d.fingerprint);
    if (seen === undefined) byFp.set(d.fingerprint, { d, order: byFp.size });
    else if (roleRank(d.minRole) > roleRank(seen.d.minRole)) seen.d = { keyId: seen.d.keyId, fingerprint: d.fingerprint, minRole: d.minRole };
  }
  return [...byFp.values()].sort((a, b) => roleRank(b.d.minRole) - roleRank(a.d.minRole) || a.order - b.order).map((x) => x.d);
}

/** One pool. Owned by `KeyPools`; lives ask it through the key-pool gate. */
export class KeyPool {
  private keysOrdered: PoolKeyDeclaration[];
  private readonly silencedUntil = new Map<string, number>();
  private readonly bindings = new Map<string, Binding>();
  /** Rotation among the keys of one tier for callers without a binding. */
  private cursor = 0;
  /** Bindings made by `acquire` since the last `takeNewBindings`; null until `trackBindings`. */
  private fresh: SharedBinding[] | null = null;

  constructor(
    decls: readonly PoolKeyDeclaration[],
    readonly options: KeyPoolOptions = DEFAULT_KEY_POOL_OPTIONS,
  ) {
    this.keysOrdered = mergeKeyDeclarations(decls);
  }

  /** The merged keys, most reserved first. */
  get keys(): readonly PoolKeyDeclaration[] {
    return this.keysOrdered;
  }

  /** Number of live bindings (expired ones included until touched). */
  get bindingCount(): number {
    return this.bindings.size;
  }

  /** The key `fingerprint` (merged), or undefined. */
  key(fingerprint: string): PoolKeyDeclaration | undefined {
    return this.keysOrdered.find((k) => k.fingerprint === fingerprint);
  }

  /** The keys a request with `role` may see, most reserved first (silenced ones included). */
  visibleTo(role: RequestRole): PoolKeyDeclaration[] {
    return this.keysOrdered.filter((k) => roleMeets(role, k.minRole));
  }

  /** Whether key `fingerprint` is out of the rotation at `nowMs`. */
  isSilenced(fingerprint: string, nowMs: number): boolean {
    const until = this.silencedUntil.get(fingerprint);
    return until !== undefined && nowMs < until;
  }

  /** When key `fingerprint` comes back (absolute ms), or null when it is in the rotation. */
  silencedUntilMs(fingerprint: string, nowMs: number): number | null {
    return this.isSilenced(fingerprint, nowMs) ? this.silencedUntil.get(fingerprint)! : null;
  }

  /** Takes key `fingerprint` out of the rotation for `forMs` from `nowMs` (a later end wins). */
  silence(fingerprint: string, nowMs: number, forMs: number): void {
    const until = nowMs + Math.max(0, forMs);
    const prev = this.silencedUntil.get(fingerprint);
    if (prev === undefined || prev < until) this.silencedUntil.set(fingerprint, until);
  }

  /** Whether a request with `role` has a visible key in the rotation at `nowMs`. */
  usableBy(role: RequestRole, nowMs: number): boolean {
    for (const k of this.keysOrdered) if (roleMeets(role, k.minRole) && !this.isSilenced(k.fingerprint, nowMs)) return true;
    return false;
  }

  /** Whether every declared key is silenced at `nowMs` (then the endpoint itself is degraded). */
  allSilenced(nowMs: number): boolean {
    return !this.usableBy(null, nowMs);
  }

  /**
   * The key for a request with `role` from `callerId` (null: no binding) at `nowMs`: the
   * caller's binding when it was made for this role, has not expired and its key is in the
   * rotation; else the first tier (most reserved first) with a key in the rotation, rotating
   * within it, and the caller is bound to what it got (a binding to a silenced key is kept).
   */
  acquire(role: RequestRole, callerId: string | null, nowMs: number): KeyPick {
    const b = callerId === null ? undefined : this.bindings.get(callerId);
    const bindingValid = b !== undefined && b.role === role && nowMs < b.expiresAtMs;
    if (bindingValid) {
      const k = this.key(b.fingerprint);
      if (k !== undefined && roleMeets(role, k.minRole) && !this.isSilenced(k.fingerprint, nowMs)) {
        b.expiresAtMs = nowMs + this.options.bindingTtlMs;
        return { kind: 'key', keyId: k.keyId, fingerprint: k.fingerprint, reason: 'binding' };
      }
    }
    const visible = this.visibleTo(role);
    let tier: PoolKeyDeclaration[] = [];
    for (let i = 0; i < visible.length && tier.length === 0; ) {
      const rank = roleRank(visible[i]!.minRole);
      let j = i;
      while (j < visible.length && roleRank(visible[j]!.minRole) === rank) j++;
      tier = visible.slice(i, j).filter((k) => !this.isSilenced(k.fingerprint, nowMs));
      i = j;
    }
    if (tier.length === 0) return { kind: 'exhausted', roleRestricted: role !== null && this.usableBy(null, nowMs) };
    const k = tier[this.cursor++ % tier.length]!;
    if (callerId !== null && !bindingValid) this.bind(callerId, k.fingerprint, role, nowMs);
    return { kind: 'key', keyId: k.keyId, fingerprint: k.fingerprint, reason: 'order' };
  }

  private bind(callerId: string, fingerprint: string, role: RequestRole, nowMs: number): void {
    this.bindings.delete(callerId);
    if (this.bindings.size >= this.options.maxBindings) {
      for (const [id, x] of this.bindings) {
        if (x.expiresAtMs <= nowMs || this.bindings.size >= this.options.maxBindings) this.bindings.delete(id);
        if (this.bindings.size < this.options.maxBindings) break;
      }
    }
    this.bindings.set(callerId, { fingerprint, role, expiresAtMs: nowMs + this.options.bindingTtlMs });
    if (this.fresh !== null) {
      if (this.fresh.length >= this.options.maxBindings) this.fresh.shift();
      this.fresh.push({ callerId, fingerprint, role, expiresAtMs: nowMs + this.options.bindingTtlMs });
    }
  }

  /**
   * From now on, keeps the bindings `acquire` makes (at most `maxBindings`, oldest dropped) for
   * `takeNewBindings`: a driver that shares bindings between gateway replicas turns this on.
   */
  trackBindings(): void {
    if (this.fresh === null) this.fresh = [];
  }

  /** The bindings made since the last call (empty unless `trackBindings`), in the order made. */
  takeNewBindings(): SharedBinding[] {
    const f = this.fresh;
    if (f === null || f.length === 0) return [];
    this.fresh = [];
    return f;
  }

  /**
   * A binding another replica made (`SharedBinding`, its expiry on this pool's clock): the caller
   * is bound here too, unless the key is not declared here or the binding has expired. Not
   * reported by `takeNewBindings`. Deterministic: the binding is plain data.
   */
  applyBinding(b: SharedBinding, nowMs: number): void {
    if (!(b.expiresAtMs > nowMs) || this.key(b.fingerprint) === undefined) return;
    const fresh = this.fresh;
    this.fresh = null;
    this.bind(b.callerId, b.fingerprint, b.role, nowMs);
    this.fresh = fresh;
    this.bindings.get(b.callerId)!.expiresAtMs = b.expiresAtMs;
  }

  /** The key `callerId` is bound to for `role` at `nowMs`, or null (tests, the admin view). */
  bindingOf(callerId: string, role: RequestRole, nowMs: number): string | null {
    const b = this.bindings.get(callerId);
    return b !== undefined && b.role === role && nowMs < b.expiresAtMs ? b.fingerprint : null;
  }

  /**
   * Replaces the declaration. Silence carries over for keys still declared; a binding is
   * dropped when its preferred key changed: its key left the pool or its role's view, the key's
   * own tier changed, or the top tier its role sees changed (a key was added, re-enabled or
   * re-tiered above it). Other bindings stay, so an unrelated change keeps prompt caches warm.
   */
  redeclare(decls: readonly PoolKeyDeclaration[]): void {
    const before = this.keysOrdered;
    const after = mergeKeyDeclarations(decls);
    this.keysOrdered = after;
    for (const fp of [...this.silencedUntil.keys()]) if (!after.some((k) => k.fingerprint === fp)) this.silencedUntil.delete(fp);
    const topRank = (keys: readonly PoolKeyDeclaration[], role: RequestRole): number => {
      for (const k of keys) if (roleMeets(role, k.minRole)) return roleRank(k.minRole);
      return -1;
    };
    for (const [id, b] of [...this.bindings]) {
      const old = before.find((k) => k.fingerprint === b.fingerprint);
      const now = after.find((k) => k.fingerprint === b.fingerprint);
      const keep = old !== undefined && now !== undefined && roleMeets(b.role, now.minRole) && old.minRole === now.minRole && topRank(before, b.role) === topRank(after, b.role);
      if (!keep) this.bindings.delete(id);
    }
  }

  /** Throws when a structural invariant fails: keys ordered by tier, unique fingerprints, bindings bounded. */
  invariants(): void {
    const seen = new Set<string>();
    for (let i = 0; i < this.keysOrdered.length; i++) {
      const k = this.keysOrdered[i]!;
      if (seen.has(k.fingerprint)) throw new Error(`key pool: key ${k.keyId} listed twice after merging`);
      seen.add(k.fingerprint);
      if (i > 0 && roleRank(this.keysOrdered[i - 1]!.minRole) < roleRank(k.minRole)) throw new Error('key pool: keys not ordered most reserved first');
    }
    if (this.bindings.size > this.options.maxBindings) throw new Error(`key pool: ${this.bindings.size} bindings > ${this.options.maxBindings}`);
  }
}
