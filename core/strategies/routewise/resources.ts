/**
 * Quota and concurrency resources of subscription routes (seed 000
 * "RouteWise": `provider_type`, `quota`, `concurrency`, `quota_pool`, `concurrency_pool`, and the
 * process-local reservations that make them stateful).
 *
 * A quota pool has one or more rolling windows (`limit` requests or tokens per `window_sec`);
 * its used fraction z is the largest used/limit over its windows, counting reservations. A
 * concurrency pool has `limit` slots. Several routes may share a pool (one subscription behind
 * several base URLs) by naming the same pool id.
 *
 * Around each dispatch a route's resources go reserve → commit → release:
 * - reserve when the router chooses the route (a concurrency slot is held; a quota reservation
 *   counts towards z so concurrent decisions see it); refused when the slot or quota is gone, and
 *   the router re-solves without the route;
 * - commit when the attempt is really dispatched: the quota use is stamped into the windows;
 * - release when the attempt ends (the slot frees; a committed quota use stays in its windows,
 *   adjusted to the real token count for token quotas; an uncommitted reservation is returned).
 * A 429 from a subscription blocks its pool until the Retry-After passes (the provider knows
 * about use this process cannot see: other clients, restarts).
 *
 * Two other ways to count a quota pool (seed 000 "RouteWise", quota sources):
 * - a pool with a `quota_source` selector plans with the provider's own numbers: once the driver
 *   hands it a resolved usage record (`setQuotaSnapshot`), z = (used + local uses committed since
 *   that snapshot + reservations) / limit, in the record's unit (local uses are added for the
 *   units `requests` and `tokens`; any other unit moves only with the next snapshot; a record
 *   whose reset time has passed counts only the local uses). Until a record resolves the pool is
 *   unready (z = 1): its routes are skipped, and the driver reports it.
 * - a pool with `localDaily` counts requests since local midnight against its one window's
 *   limit (`LocalDailyCounter`); the ledger turns its monotonic `nowMs` into wall time with the
 *   offset and UTC offset the driver gives it (`setLocalTime`).
 *
 * Shared facts (several gateway replicas over one subscription): the driver takes each unit from
 * a replica-wide counter as well and hands the ledger what that counter said, as data with a
 * validity (`applySharedQuota`, `applySharedConcurrency`): replica-wide use per window (local
 * uses committed since are added on top, and the larger of that and the local count plans), a
 * window spent replica-wide until a time (z = 1 until then), and slots held by other replicas.
 * (A quota-source or local-daily pool takes only the spent-until.) A fact past its `untilMs` is ignored, so a stale one never blocks a route for long. The ledger
 * stays the driver's mirror: the replica-wide counter, not these facts, is what never over-spends.
 */
import { LocalDailyCounter } from './local-daily-counter.ts';
import type { QuotaSourceSelector } from './quota-source.ts';


/** What a quota window counts. */
export type QuotaUnit = 'requests' | 'tokens';

/** One quota window: `limit` units per rolling `windowMs`. */
export interface QuotaWindow {
  readonly limit: number;
  readonly windowMs: number;
  readonly unit: QuotaUnit;
}

/** A route's resources: its quota pool and concurrency pool, each optional. */
export interface RouteResources {
  /**
   * `source`: the route's `quota_source` selector (absent / null: none). `localDaily`: count
   * requests per local day against the single `requests` window's limit (`local_quota_fallback`).
   */
  readonly quota: { readonly poolId: string; readonly windows: readonly QuotaWindow[]; readonly source?: QuotaSourceSelector | null; readonly localDaily?: boolean } | null;
  readonly concurrency: { readonly poolId: string; readonly limit: number } | null;
}

/**
 * A resolved usage record as a quota pool plans with it: `used` of `limit`, fetched at
 * `fetchedAtMs` (monotonic). Once the wall clock passes `resetsAtUnixMs` (when the provider said
 * when its window resets) the fetched `used` no longer counts, until the next snapshot.
 */
export interface QuotaSnapshot {
  readonly used: number;
  readonly limit: number;
  readonly fetchedAtMs: number;
  readonly resetsAtUnixMs?: number | null;
}

/** Wall-clock view the ledger needs for local-day counters: Unix ms = monotonic ms + `wallMinusMonoMs`. */
interface LocalTime {
  wallMinusMonoMs: number;
  utcOffsetMin: number;
}

/** How long a pool stays blocked after a 429 without Retry-After, ms. */
export const DEFAULT_QUOTA_BLOCK_MS = 60_000;
/** How long a concurrency pool stays blocked after a 429 without Retry-After, ms. */
export const DEFAULT_CONCURRENCY_BLOCK_MS = 1_000;

class QuotaPool {
  readonly windows: readonly QuotaWindow[];
  // FIFO of committed uses: time and tokens (each entry is one request).
  private times = new Float64Array(32);
  private tokens = new Float64Array(32);
  private head = 0;
  private size = 0;
  /** Sequence number of the entry at `head`. */
  private base = 0;
  private readonly wHead: number[];
  private readonly wRequests: number[];
  private readonly wTokens: number[];
  reservedRequests = 0;
  reservedTokens = 0;
  blockedUntilMs = Number.NEGATIVE_INFINITY;
  /** The provider's numbers (quota_source pools); null until a record resolves. */
  external: QuotaSnapshot | null = null;
  /** Committed uses since `external` was set: entries from sequence `sinceSeq` on. */
  private sinceSeq = 0;
  private sinceRequests = 0;
  private sinceTokens = 0;
  readonly daily: LocalDailyCounter | null;
  /** Replica-wide committed use per window as of entry `sinceSeq` (`SharedQuotaFact`), and local uses since. */
  shared: { used: readonly number[]; untilMs: number; sinceSeq: number; sinceRequests: number; sinceTokens: number } | null = null;
  /** Spent replica-wide until then (z = 1). */
  sharedFullUntilMs = Number.NEGATIVE_INFINITY;

  constructor(
    readonly id: string,
    windows: readonly QuotaWindow[],
    readonly source: QuotaSourceSelector | null,
    localDaily: boolean,
    private readonly time: LocalTime,
  ) {
    this.windows = windows;
    this.daily = localDaily ? new LocalDailyCounter(windows[0]!.limit) : null;
    this.wHead = windows.map(() => 0);
    this.wRequests = windows.map(() => 0);
    this.wTokens = windows.map(() => 0);
  }

  expire(nowMs: number): void {
    let minHead = this.base + this.size;
    for (let w = 0; w < this.windows.length; w++) {
      const cutoff = nowMs - this.windows[w]!.windowMs;
      let h = this.wHead[w]!;
      while (h < this.base + this.size) {
        const slot = (this.head + (h - this.base)) % this.times.length;
        if (this.times[slot]! > cutoff) break;
        this.wRequests[w]! -= 1;
        this.wTokens[w]! -= this.tokens[slot]!;
        h++;
      }
      this.wHead[w] = h;
      if (this.wRequests[w] === 0) this.wTokens[w] = 0; // no float residue once empty
      if (h < minHead) minHead = h;
    }
    while (this.base < minHead) {
      this.head = (this.head + 1) % this.times.length;
      this.size--;
      this.base++;
    }
  }

  usedFraction(nowMs: number): number {
    if (nowMs < this.blockedUntilMs || nowMs < this.sharedFullUntilMs) return 1;
    this.expire(nowMs);
    if (this.source) {
      const e = this.external;
      if (!e) return 1; // unready until its source resolves
      const unit = this.source.unit;
      const extra = unit === 'requests' ? this.sinceRequests + this.reservedRequests : unit === 'tokens' ? this.sinceTokens + this.reservedTokens : 0;
      const reset = e.resetsAtUnixMs != null && nowMs + this.time.wallMinusMonoMs >= e.resetsAtUnixMs;
      return ((reset ? 0 : e.used) + extra) / e.limit;
    }
    if (this.daily) return (this.daily.used(nowMs + this.time.wallMinusMonoMs, this.time.utcOffsetMin) + this.reservedRequests) / this.daily.limit;
    let z = 0;
    const sh = this.shared !== null && nowMs < this.shared.untilMs ? this.shared : null;
    for (let w = 0; w < this.windows.length; w++) {
      const win = this.windows[w]!;
      const req = win.unit === 'requests';
      let committed = req ? this.wRequests[w]! : this.wTokens[w]!;
      if (sh !== null) {
        const wide = (sh.used[w] ?? 0) + (req ? sh.sinceRequests : sh.sinceTokens);
        if (wide > committed) committed = wide;
      }
      const used = committed + (req ? this.reservedRequests : this.reservedTokens);
      const f = used / win.limit;
      if (f > z) z = f;
    }
    return z;
  }

  /** Appends a committed use; returns its sequence number. */
  commit(tokens: number, nowMs: number): number {
    this.expire(nowMs);
    if (this.size === this.times.length) this.grow();
    const slot = (this.head + this.size) % this.times.length;
    // Keep the FIFO in time order even if a driver reports a slightly older time.
    const last = this.size > 0 ? this.times[(this.head + this.size - 1) % this.times.length]! : Number.NEGATIVE_INFINITY;
    this.times[slot] = nowMs > last ? nowMs : last;
    this.tokens[slot] = tokens;
    this.size++;
    for (let w = 0; w < this.windows.length; w++) {
      this.wRequests[w]! += 1;
      this.wTokens[w]! += tokens;
    }
    this.sinceRequests += 1;
    this.sinceTokens += tokens;
    if (this.shared !== null) {
      this.shared.sinceRequests += 1;
      this.shared.sinceTokens += tokens;
    }
    this.daily?.record(nowMs + this.time.wallMinusMonoMs, this.time.utcOffsetMin);
    return this.base + this.size - 1;
  }

  /** Takes a replica-wide fact (see `SharedQuotaFact`); local uses committed from now on are counted on top of it. */
  setShared(fact: SharedQuotaFact): void {
    this.shared = { used: fact.usedPerWindow.slice(), untilMs: fact.untilMs, sinceSeq: this.base + this.size, sinceRequests: 0, sinceTokens: 0 };
    if (fact.fullUntilMs != null && fact.fullUntilMs > this.sharedFullUntilMs) this.sharedFullUntilMs = fact.fullUntilMs;
  }

  /** Takes the provider's numbers; local uses are counted on top of them from now on. */
  setExternal(snapshot: QuotaSnapshot | null): void {
    this.external = snapshot;
    this.sinceSeq = this.base + this.size;
    this.sinceRequests = 0;
    this.sinceTokens = 0;
  }

  /**
   * Copies `previous`'s committed uses and block (a pool of the same id and windows in the
   * previous generation); reservations stay this pool's own (zero at construction).
   */
  copyUsesFrom(previous: QuotaPool): void {
    this.times = previous.times.slice();
    this.tokens = previous.tokens.slice();
    this.head = previous.head;
    this.size = previous.size;
    this.base = previous.base;
    for (let w = 0; w < this.windows.length; w++) {
      this.wHead[w] = previous.wHead[w]!;
      this.wRequests[w] = previous.wRequests[w]!;
      this.wTokens[w] = previous.wTokens[w]!;
    }
    this.blockedUntilMs = previous.blockedUntilMs;
    this.external = previous.external;
    this.sinceSeq = previous.sinceSeq;
    this.sinceRequests = previous.sinceRequests;
    this.sinceTokens = previous.sinceTokens;
    this.shared = previous.shared === null ? null : { ...previous.shared };
    this.sharedFullUntilMs = previous.sharedFullUntilMs;
    if (this.daily && previous.daily) this.daily.copyFrom(previous.daily);
  }

  /** Sets a committed use's token count (token quotas learn the real count at the end). */
  adjust(seq: number, tokens: number): void {
    if (seq < this.base || seq >= this.base + this.size) return; // already out of every window
    const slot = (this.head + (seq - this.base)) % this.times.length;
    const delta = tokens - this.tokens[slot]!;
    this.tokens[slot] = tokens;
    for (let w = 0; w < this.windows.length; w++) if (seq >= this.wHead[w]!) this.wTokens[w]! += delta;
    if (seq >= this.sinceSeq) this.sinceTokens += delta;
    if (this.shared !== null && seq >= this.shared.sinceSeq) this.shared.sinceTokens += delta;
  }

  invariants(): void {
    if (this.reservedRequests < 0 || this.reservedTokens < -1e-6) throw new Error(`quota pool '${this.id}': negative reservations`);
    for (let w = 0; w < this.windows.length; w++) {
      const n = this.base + this.size - this.wHead[w]!;
      if (n !== this.wRequests[w]) throw new Error(`quota pool '${this.id}': window ${w} counts ${this.wRequests[w]} != entries ${n}`);
      if (this.wHead[w]! < this.base) throw new Error(`quota pool '${this.id}': window ${w} head before the FIFO`);
    }
  }

  private grow(): void {
    const cap = this.times.length * 2;
    const times = new Float64Array(cap);
    const tokens = new Float64Array(cap);
    for (let n = 0; n < this.size; n++) {
      const i = (this.head + n) % this.times.length;
      times[n] = this.times[i]!;
      tokens[n] = this.tokens[i]!;
    }
    this.times = times;
    this.tokens = tokens;
    this.head = 0;
  }
}

class ConcurrencyPool {
  inUse = 0;
  reserved = 0;
  blockedUntilMs = Number.NEGATIVE_INFINITY;
  /** Slots other replicas hold, valid until `sharedUntilMs` (`applySharedConcurrency`). */
  heldElsewhere = 0;
  sharedUntilMs = Number.NEGATIVE_INFINITY;
  constructor(readonly id: string, readonly limit: number) {}
  free(nowMs: number): boolean {
    const elsewhere = nowMs < this.sharedUntilMs ? this.heldElsewhere : 0;
    return nowMs >= this.blockedUntilMs && this.inUse + this.reserved + elsewhere < this.limit;
  }
}

/**
 * What a replica-wide quota counter said when the driver took (or failed to take) a unit:
 * `usedPerWindow[w]` units committed in window `w` (the pool's windows, in declaration order)
 * across every replica, this one included, at the time of the call; `fullUntilMs`: the counter
 * refused, no unit frees before then (null / absent: it admitted); `untilMs`: when the use counts
 * stop counting (the driver's staleness bound). Times are the ledger's `nowMs` clock.
 */
export interface SharedQuotaFact {
  readonly usedPerWindow: readonly number[];
  readonly untilMs: number;
  readonly fullUntilMs?: number | null;
}

/** One route's hold on its resources, from reserve to release. */
export interface Reservation {
  readonly id: number;
  readonly endpointId: string;
  /** Tokens counted against token quotas (the estimate until release). */
  readonly tokens: number;
  state: 'reserved' | 'committed' | 'released';
  /** Whether it took a slot or quota beyond the limit (a dispatch the router did not choose). */
  readonly forced: boolean;
  /** Sequence of the committed quota use, or −1. */
  quotaSeq: number;
}

interface RouteEntry {
  readonly quota: QuotaPool | null;
  readonly concurrency: ConcurrencyPool | null;
}

/**
 * Quota and concurrency pools of a set of routes, with reservations. Deterministic; reads no
 * clock. One ledger per RouteWise planner (pools are shared between that model's routes).
 */
export class ResourceLedger {
  private readonly quotaPools = new Map<string, QuotaPool>();
  private readonly concurrencyPools = new Map<string, ConcurrencyPool>();
  private readonly routes = new Map<string, RouteEntry>();
  private readonly live = new Map<number, Reservation>();
  private nextId = 1;
  private readonly time: LocalTime = { wallMinusMonoMs: 0, utcOffsetMin: 0 };

  /**
   * The wall-clock view of local-day counters: Unix ms = monotonic `nowMs` + `wallMinusMonoMs`;
   * local midnight at `utcOffsetMin` minutes east of UTC. Until set: monotonic ms read as Unix ms
   * at UTC. The gateway sets it at start and on every quota poll.
   */
  setLocalTime(wallMinusMonoMs: number, utcOffsetMin: number): void {
    this.time.wallMinusMonoMs = wallMinusMonoMs;
    this.time.utcOffsetMin = utcOffsetMin;
  }

  /**
   * Sets the provider's numbers of the route's quota pool (its `quota_source` resolved), or
   * clears them (null: unready again). No-op for a route without a quota source.
   */
  setQuotaSnapshot(endpointId: string, snapshot: QuotaSnapshot | null): void {
    const q = this.routes.get(endpointId)?.quota;
    if (q?.source) q.setExternal(snapshot);
  }

  /** The provider's numbers the route's pool plans with, or null (no source, or not resolved). */
  quotaSnapshot(endpointId: string): QuotaSnapshot | null {
    return this.routes.get(endpointId)?.quota?.external ?? null;
  }

  /** Requests left today on a `localDaily` pool at `nowMs`, or null for other routes. */
  localDailyRemaining(endpointId: string, nowMs: number): number | null {
    const d = this.routes.get(endpointId)?.quota?.daily;
    return d ? d.remaining(nowMs + this.time.wallMinusMonoMs, this.time.utcOffsetMin) : null;
  }

  /**
   * Declares a route's resources. Routes naming the same pool id must declare the same limits.
   * @throws Error when the route is declared twice, or a pool id is redeclared with other limits
   *   (naming the pool and both declarations).
   */
  defineRoute(endpointId: string, resources: RouteResources): void {
    if (this.routes.has(endpointId)) throw new Error(`route '${endpointId}' declared twice in the resource ledger`);
    let quota: QuotaPool | null = null;
    if (resources.quota) {
      const { poolId, windows } = resources.quota;
      if (windows.length === 0) throw new Error(`quota pool '${poolId}' of route '${endpointId}' has no window`);
      for (const w of windows) {
        if (!(w.limit > 0) || !(w.windowMs > 0)) throw new Error(`quota pool '${poolId}' of route '${endpointId}': limit and window must be > 0`);
      }
      const existing = this.quotaPools.get(poolId);
      if (existing) {
        if (!sameWindows(existing.windows, windows)) throw new Error(`quota_pool '${poolId}': route '${endpointId}' declares ${describeWindows(windows)} but an earlier route declared ${describeWindows(existing.windows)}`);
        quota = existing;
      } else {
        const localDaily = resources.quota.localDaily === true;
        if (localDaily && (windows.length !== 1 || windows[0]!.unit !== 'requests')) throw new Error(`quota pool '${poolId}' of route '${endpointId}': a local daily counter counts requests in one window`);
        quota = new QuotaPool(poolId, windows, resources.quota.source ?? null, localDaily, this.time);
        this.quotaPools.set(poolId, quota);
      }
    }
    let concurrency: ConcurrencyPool | null = null;
    if (resources.concurrency) {
      const { poolId, limit } = resources.concurrency;
      if (!(Number.isInteger(limit) && limit > 0)) throw new Error(`concurrency pool '${poolId}' of route '${endpointId}': limit must be an integer > 0`);
      const existing = this.concurrencyPools.get(poolId);
      if (existing) {
        if (existing.limit !== limit) throw new Error(`concurrency_pool '${poolId}': route '${endpointId}' declares limit ${limit} but an earlier route declared ${existing.limit}`);
        concurrency = existing;
      } else {
        concurrency = new ConcurrencyPool(poolId, limit);
        this.concurrencyPools.set(poolId, concurrency);
      }
    }
    this.routes.set(endpointId, { quota, concurrency });
  }

  /**
   * Takes over the spend of `previous` (the ledger of the same model's planner in the previous
   * configuration generation): every quota pool declared here with the same id and windows there
   * gets its committed uses and its 429 block; a concurrency pool of the same id and limit gets
   * its block. Reservations and slots in use are not copied: lives of the previous generation
   * settle theirs in its ledger, so until they end this ledger does not count their slots (their
   * quota uses, committed before the change, are counted). Call before any `reserve`.
   */
  carryFrom(previous: ResourceLedger): void {
    for (const [id, q] of this.quotaPools) {
      const p = previous.quotaPools.get(id);
      if (p && sameWindows(p.windows, q.windows)) q.copyUsesFrom(p);
    }
    for (const [id, c] of this.concurrencyPools) {
      const p = previous.concurrencyPools.get(id);
      if (p && p.limit === c.limit) c.blockedUntilMs = p.blockedUntilMs;
    }
  }

  /** z of the route's quota pool at `nowMs` (max over windows, reservations included; 1 while blocked); 0 without a quota. */
  quotaUsedFraction(endpointId: string, nowMs: number): number {
    const q = this.routes.get(endpointId)?.quota;
    return q ? q.usedFraction(nowMs) : 0;
  }

  /** Whether the route's concurrency pool has a free slot at `nowMs`; true without one. */
  slotFree(endpointId: string, nowMs: number): boolean {
    const c = this.routes.get(endpointId)?.concurrency;
    return c ? c.free(nowMs) : true;
  }

  /** Whether the route can take one more request now (slot free and quota not exhausted). */
  available(endpointId: string, nowMs: number): boolean {
    return this.slotFree(endpointId, nowMs) && this.quotaUsedFraction(endpointId, nowMs) < 1;
  }

  /**
   * Reserves the route's resources for one request of about `tokens` tokens.
   * @param force take them even beyond the limits (a dispatch the router did not choose, e.g. a
   *   fallback or a pin: the provider may refuse it, the ledger must still count it).
   * @returns the reservation, or null when the slot or quota is gone (and `force` is false).
   */
  reserve(endpointId: string, tokens: number, nowMs: number, force = false): Reservation | null {
    const e = this.routes.get(endpointId);
    if (!force && e && !this.available(endpointId, nowMs)) return null;
    const r: Reservation = { id: this.nextId++, endpointId, tokens: tokens > 0 ? tokens : 0, state: 'reserved', forced: force, quotaSeq: -1 };
    if (e?.concurrency) e.concurrency.reserved += 1;
    if (e?.quota) {
      e.quota.reservedRequests += 1;
      e.quota.reservedTokens += r.tokens;
    }
    this.live.set(r.id, r);
    return r;
  }

  /** The attempt was dispatched: a reserved slot becomes in use, a quota reservation a committed use. No-op unless reserved. */
  commit(r: Reservation, nowMs: number): void {
    if (r.state !== 'reserved') return;
    const e = this.routes.get(r.endpointId);
    if (e?.concurrency) {
      e.concurrency.reserved -= 1;
      e.concurrency.inUse += 1;
    }
    if (e?.quota) {
      e.quota.reservedRequests -= 1;
      e.quota.reservedTokens -= r.tokens;
      r.quotaSeq = e.quota.commit(r.tokens, nowMs);
    }
    r.state = 'committed';
  }

  /**
   * The attempt ended (or was never dispatched): frees the slot; returns an uncommitted quota
   * reservation; sets a committed token use to `actualTokens` when given. Idempotent.
   */
  release(r: Reservation, nowMs: number, actualTokens: number | null = null): void {
    if (r.state === 'released') return;
    const e = this.routes.get(r.endpointId);
    if (r.state === 'reserved') {
      if (e?.concurrency) e.concurrency.reserved -= 1;
      if (e?.quota) {
        e.quota.reservedRequests -= 1;
        e.quota.reservedTokens -= r.tokens;
      }
    } else {
      if (e?.concurrency) e.concurrency.inUse -= 1;
      if (e?.quota && actualTokens !== null && actualTokens >= 0) {
        e.quota.expire(nowMs);
        e.quota.adjust(r.quotaSeq, actualTokens);
      }
    }
    r.state = 'released';
    this.live.delete(r.id);
  }

  /**
   * A replica-wide fact about the route's quota pool (module comment, `SharedQuotaFact`).
   * No-op for a route without a quota pool. Deterministic: the fact is plain data.
   */
  applySharedQuota(endpointId: string, fact: SharedQuotaFact): void {
    this.routes.get(endpointId)?.quota?.setShared(fact);
  }

  /**
   * Slots of the route's concurrency pool held by other replicas (≥ 0), as the replica-wide
   * counter said; counted by `slotFree` until `untilMs`. No-op without a concurrency pool.
   */
  applySharedConcurrency(endpointId: string, heldElsewhere: number, untilMs: number): void {
    const c = this.routes.get(endpointId)?.concurrency;
    if (!c) return;
    c.heldElsewhere = heldElsewhere > 0 ? heldElsewhere : 0;
    c.sharedUntilMs = untilMs;
  }

  /** A 429 from the route: blocks its quota and concurrency pools until `untilMs`. */
  block(endpointId: string, untilMs: number): void {
    const e = this.routes.get(endpointId);
    if (e?.quota && untilMs > e.quota.blockedUntilMs) e.quota.blockedUntilMs = untilMs;
    if (e?.concurrency && untilMs > e.concurrency.blockedUntilMs) e.concurrency.blockedUntilMs = untilMs;
  }

  /** Whether the route has a quota pool / concurrency pool. */
  kinds(endpointId: string): { quota: boolean; concurrency: boolean } {
    const e = this.routes.get(endpointId);
    return { quota: !!e?.quota, concurrency: !!e?.concurrency };
  }

  /** Slots in use plus reserved in the route's concurrency pool (0 without one). */
  slotsHeld(endpointId: string): number {
    const c = this.routes.get(endpointId)?.concurrency;
    return c ? c.inUse + c.reserved : 0;
  }

  /** Reservations not yet released. */
  get liveReservations(): number {
    return this.live.size;
  }

  /**
   * @throws Error when a pool's counts are negative or disagree with the live reservations, or
   *   an unforced hold exceeds a slot limit.
   */
  invariants(): void {
    const held = new Map<string, { reserved: number; inUse: number }>();
    const quotaReserved = new Map<string, number>();
    for (const r of this.live.values()) {
      const e = this.routes.get(r.endpointId);
      if (e?.concurrency) {
        const h = held.get(e.concurrency.id) ?? { reserved: 0, inUse: 0 };
        if (r.state === 'reserved') h.reserved++;
        else h.inUse++;
        held.set(e.concurrency.id, h);
      }
      if (e?.quota && r.state === 'reserved') quotaReserved.set(e.quota.id, (quotaReserved.get(e.quota.id) ?? 0) + 1);
    }
    for (const c of this.concurrencyPools.values()) {
      const h = held.get(c.id) ?? { reserved: 0, inUse: 0 };
      if (c.reserved !== h.reserved || c.inUse !== h.inUse) throw new Error(`concurrency pool '${c.id}': counts ${c.inUse}+${c.reserved} != live reservations ${h.inUse}+${h.reserved}`);
      if (c.inUse < 0 || c.reserved < 0) throw new Error(`concurrency pool '${c.id}': negative counts`);
    }
    for (const q of this.quotaPools.values()) {
      if (q.reservedRequests !== (quotaReserved.get(q.id) ?? 0)) throw new Error(`quota pool '${q.id}': ${q.reservedRequests} reserved != live ${quotaReserved.get(q.id) ?? 0}`);
      q.invariants();
    }
  }
}

function sameWindows(a: readonly QuotaWindow[], b: readonly QuotaWindow[]): boolean {
  return a.length === b.length && a.every((w, i) => w.limit === b[i]!.limit && w.windowMs === b[i]!.windowMs && w.unit === b[i]!.unit);
}

function describeWindows(ws: readonly QuotaWindow[]): string {
  return ws.map((w) => `${w.limit} ${w.unit}/${w.windowMs / 1000}s`).join(', ');
}
