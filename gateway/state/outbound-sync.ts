/**
 * Shares the core's adaptive outbound limits (`OutboundLimiter`, one pool per provider key)
 * between gateway replicas through Redis, so that a key's limit holds replica-wide rather than
 * once per replica. The core stays sans-I/O and unchanged: the limiter instance's `acquire` and
 * `release` are wrapped (as `AffinitySync` wraps the affinity table's `pin`), and each local pool's
 * limit is set to this replica's share with the pool's public `setLimit`.
 *
 * Leases. Per key, Redis holds the replica-wide limit `L` (adapted there: −1 per 429, +1 per
 * `probeSuccessInterval` successes, within [1, max]) and each live replica's leased share. A
 * replica's local pool limit is its share, so the hot path (a slot within the share) is local.
 * One Lua script (`LEASE_LUA`, keys under one hash tag `{out:<key>}`) drops expired leases,
 * applies the adaptation counts sent with the call, and grants `min(want, L − Σ other shares)`.
 * A lease lives `leaseTtlMs` unless renewed (every third of it, and at every demand change), so a
 * dead replica's share returns to the others within that time.
 *
 * - A slot beyond the share (a ticket queued locally) asks Redis for more at once and waits at
 *   most `acquire_timeout_ms`; a late answer is still applied when it comes. A timeout, or Redis
 *   down, counts one fallback; the request waits on the local share meanwhile (it never fails
 *   because of Redis) and the ask is retried every `retryMs` while it waits.
 * - An idle share is kept (the next request is local) until another replica asks for slots
 *   nobody has free: the script then reports `others_wanting`, and the replica caps its share at
 *   the fair share `max(1, ⌊L / replicas⌋)`, lowering its local limit before it tells Redis (the
 *   slots it holds above it are given back as they end), so the shares recorded in Redis never
 *   undercount what a replica may hold.
 * - Redis down (or never reached): the local limit is `max(share, ⌈L / replicas⌉)` with `L` and
 *   the replica count last learnt (the full limit when none was), adapted locally; on return the
 *   next lease call reconciles (Redis records at least what the replica holds).
 *
 * Bound: while Redis is up, Σ local limits ≤ L; in-flight counts can exceed L only after L fell
 * (a 429) until the excess is released, as in one process.
 */
import { Redis } from 'ioredis';
import type { OutboundLimiter, SlotResult } from '../../core/outbound/outbound-limiter.ts';
import type { SlotPool, SlotTicket } from '../../core/outbound/slot-pool.ts';
import type { RedisStateConfig } from './shared-state.ts';

/**
 * KEYS[1] limit, KEYS[2] success counter, KEYS[3] shares (hash replica → slots), KEYS[4] demands
 * (hash replica → held + waiting), KEYS[5] lease expiries (zset replica → epoch ms, server time).
 * ARGV: replica id, want, floor (the most the replica may hold until it reads the answer), demand,
 * lease TTL ms, initial limit, max limit, probe success interval, successes, 429s since last call.
 * Returns {grant, L, live replicas, others_wanting (0|1)}. Records max(grant, floor) as the share.
 */
const LEASE_LUA = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
for _, r in ipairs(redis.call('ZRANGEBYSCORE', KEYS[5], '-inf', now)) do
  redis.call('HDEL', KEYS[3], r)
  redis.call('HDEL', KEYS[4], r)
  redis.call('ZREM', KEYS[5], r)
end
local maxL = tonumber(ARGV[7])
local L = tonumber(redis.call('GET', KEYS[1]) or ARGV[6])
if L > maxL then L = maxL end
local succ = tonumber(redis.call('GET', KEYS[2]) or '0')
local rl = tonumber(ARGV[10])
if rl > 0 then
  L = math.max(1, L - rl)
  succ = 0
end
succ = succ + tonumber(ARGV[9])
local iv = tonumber(ARGV[8])
while succ >= iv do
  succ = succ - iv
  if L < maxL then L = L + 1 end
end
local me = ARGV[1]
local others, n, wanting = 0, 1, 0
local all = redis.call('HGETALL', KEYS[3])
for i = 1, #all, 2 do
  if all[i] ~= me then
    local s = tonumber(all[i + 1])
    others = others + s
    n = n + 1
    if tonumber(redis.call('HGET', KEYS[4], all[i]) or '0') > s then wanting = 1 end
  end
end
local free = L - others
if free < 0 then free = 0 end
local grant = math.min(tonumber(ARGV[2]), free)
local ttl = tonumber(ARGV[5])
redis.call('HSET', KEYS[3], me, math.max(grant, tonumber(ARGV[3])))
redis.call('HSET', KEYS[4], me, ARGV[4])
redis.call('ZADD', KEYS[5], now + ttl, me)
redis.call('SET', KEYS[1], L, 'PX', ttl * 20)
redis.call('SET', KEYS[2], succ, 'PX', ttl * 20)
for k = 3, 5 do redis.call('PEXPIRE', KEYS[k], ttl * 2) end
return {grant, L, n, wanting}`;

/** What the outbound sync reports (on `/health/deep` beside the shared state, and to metrics). */
export interface OutboundSyncHealth {
  /** Slot asks beyond the share answered from local state (Redis down or slower than `acquire_timeout_ms`). */
  fallbacks: number;
  /** Lease calls sent to Redis since start. */
  leaseCalls: number;
  /** Per provider key: replica-wide limit last learnt, this replica's share, local limit in force, held, waiting. */
  keys: Array<{ key: string; sharedLimit: number; share: number; localLimit: number; held: number; waiting: number }>;
}

/** Options of an `OutboundSync` besides `state:`. */
export interface OutboundSyncOptions {
  /** This replica's id (unique among the replicas sharing the server). */
  replicaId: string;
  /** The core's limiter in force (a reload that changes the routing settings builds a new one; re-wrapped within `tickMs`). */
  limiter: () => OutboundLimiter;
  /** Steps the lives a `setLimit` granted a slot to (the core's wake-ups). */
  deliverWakeups: () => void;
  /** How long a lease lives unless renewed, ms. Default `max(1000, 3 × max_staleness_ms)`. */
  leaseTtlMs?: number;
  /** Timer period: renewals, retries of waiting asks, re-wrapping, ms. Default 20. */
  tickMs?: number;
  /** Wall clock, epoch ms. Default `Date.now`. */
  nowMs?: () => number;
  /** Where warnings go. Default `console.warn`. */
  warn?: (msg: string) => void;
}

interface KeyState {
  readonly key: string;
  readonly pool: SlotPool;
  /** Slots Redis granted this replica (the local limit while up). */
  share: number;
  /** The share Redis recorded at the last answer: max(share, what the replica could hold then). */
  recorded: number;
  /** The replica-wide limit last learnt (or adapted locally while down). */
  sharedLimit: number;
  replicas: number;
  othersWanting: boolean;
  /** Adaptation not yet sent. */
  successes: number;
  rateLimited: number;
  /** Successes since the last local rise (local adaptation while down). */
  localSuccesses: number;
  inFlight: boolean;
  again: boolean;
  lastCallMs: number;
}

type LeaseReply = [number, number, number, number];

/** Replica-wide outbound limits on Redis; see the module comment. */
export class OutboundSync {
  private readonly client: Redis;
  private readonly keys = new Map<string, KeyState>();
  private readonly leaseTtlMs: number;
  private readonly renewMs: number;
  private readonly retryMs: number;
  private readonly nowMs: () => number;
  private readonly warn: (msg: string) => void;
  private wrapped: OutboundLimiter | null = null;
  private timer: NodeJS.Timeout | null = null;
  private up = false;
  private fallbacks = 0;
  private leaseCalls = 0;
  private closed = false;

  /**
   * Creates the client (connects nothing until `start`).
   * @throws RangeError when `leaseTtlMs` or `tickMs` is not > 0.
   */
  constructor(private readonly cfg: RedisStateConfig, private readonly opts: OutboundSyncOptions) {
    this.leaseTtlMs = opts.leaseTtlMs ?? Math.max(1_000, 3 * cfg.max_staleness_ms);
    const tick = opts.tickMs ?? 20;
    if (!(this.leaseTtlMs > 0)) throw new RangeError(`OutboundSync: leaseTtlMs must be > 0, got ${this.leaseTtlMs}`);
    if (!(tick > 0)) throw new RangeError(`OutboundSync: tickMs must be > 0, got ${tick}`);
    this.renewMs = this.leaseTtlMs / 3;
    this.retryMs = Math.min(tick, cfg.acquire_timeout_ms);
    this.nowMs = opts.nowMs ?? Date.now;
    this.warn = opts.warn ?? ((m) => console.warn(m));
    this.client = new Redis(cfg.url, {
      lazyConnect: true,
      connectTimeout: cfg.connect_timeout_ms,
      retryStrategy: (n: number) => Math.min(50 * n, 1_000),
      // Asks fail at once while disconnected: a request never waits on an outage.
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
    });
    this.client.defineCommand('syLease', { numberOfKeys: 5, lua: LEASE_LUA });
    this.client.on('error', () => {}); // the shared state warns about outages; same server
    this.client.on('close', () => this.setUp(false));
    this.client.on('ready', () => this.setUp(true));
    this.timerTick = this.timerTick.bind(this);
  }

  /**
   * Wraps the limiter and connects, waiting at most `connect_timeout_ms`. Never throws: without
   * Redis the pools run on local limits and the client keeps reconnecting.
   */
  async start(): Promise<void> {
    this.wrap();
    const timeout = new Promise<void>((resolve) => setTimeout(resolve, this.cfg.connect_timeout_ms).unref());
    await Promise.race([this.client.connect().catch(() => {}), timeout]);
    this.timer = setInterval(this.timerTick, this.opts.tickMs ?? 20);
    this.timer.unref();
  }

  /** Stops the timer and the connection (the wrapped limiter keeps its last local limits). */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    this.client.disconnect();
  }

  /** Counters and per-key shares, for `/health/deep` and metrics. */
  health(): OutboundSyncHealth {
    return {
      fallbacks: this.fallbacks,
      leaseCalls: this.leaseCalls,
      keys: [...this.keys.values()].map((k) => ({ key: k.key, sharedLimit: k.sharedLimit, share: k.share, localLimit: k.pool.limit, held: k.pool.held, waiting: k.pool.waiting })),
    };
  }

  // ---- wrapping -------------------------------------------------------------------------

  private wrap(): void {
    const lim = this.opts.limiter();
    if (lim === this.wrapped) return;
    this.wrapped = lim;
    this.keys.clear();
    const acquire = lim.acquire.bind(lim);
    lim.acquire = (key: string, owner: unknown, attemptId: number): SlotTicket => {
      let ks = this.keys.get(key);
      if (!ks) {
        // Create the pool with a throw-away ticket, then set the local limit before any real one.
        const probe = acquire(key, null, -1);
        ks = this.newKey(key, probe.pool, lim);
        probe.pool.setLimit(this.localLimit(ks));
        probe.pool.release(probe);
        this.keys.set(key, ks);
      }
      const t = acquire(key, owner, attemptId);
      if (t.state === 'queued') this.lease(ks); // beyond the share: ask Redis (bounded wait)
      return t;
    };
    lim.release = (t: SlotTicket, result: SlotResult): void => {
      const ks = this.keys.get(t.pool.key);
      if (!ks || t.pool !== ks.pool) {
        t.pool.release(t);
        return;
      }
      if (t.state === 'held') this.adapt(ks, lim, result);
      t.pool.release(t);
      if (ks.rateLimited > 0 || (ks.othersWanting && ks.pool.held < ks.recorded)) this.lease(ks); // give back at once
    };
  }

  private newKey(key: string, pool: SlotPool, lim: OutboundLimiter): KeyState {
    return { key, pool, share: 0, recorded: 0, sharedLimit: Math.min(lim.options.initialLimit, lim.options.maxLimit), replicas: 1, othersWanting: false, successes: 0, rateLimited: 0, localSuccesses: 0, inFlight: false, again: false, lastCallMs: -Infinity };
  }

  /** The core's adaptation rule, applied to the local mirror of L and queued for Redis. */
  private adapt(ks: KeyState, lim: OutboundLimiter, result: SlotResult): void {
    if (result === 'rate_limited') {
      ks.rateLimited++;
      ks.localSuccesses = 0;
      ks.sharedLimit = Math.max(1, ks.sharedLimit - 1);
    } else if (result === 'success') {
      ks.successes++;
      if (++ks.localSuccesses >= lim.options.probeSuccessInterval) {
        ks.localSuccesses = 0;
        ks.sharedLimit = Math.min(lim.options.maxLimit, ks.sharedLimit + 1);
      }
    } else {
      return;
    }
    if (!this.up) this.apply(ks);
  }

  /** The limit this replica's pool runs at now. */
  private localLimit(ks: KeyState): number {
    if (this.up) return ks.share; // 0 before the first lease: the first request asks Redis
    return Math.max(ks.share, Math.ceil(ks.sharedLimit / ks.replicas));
  }

  /** `max(1, ⌊L / replicas⌋)`: with fewer slots than replicas, one held slot is kept while it has demand. */
  private fairShare(ks: KeyState): number {
    return Math.max(1, Math.floor(ks.sharedLimit / ks.replicas));
  }

  private apply(ks: KeyState): void {
    const limit = this.localLimit(ks);
    if (limit !== ks.pool.limit) {
      ks.pool.setLimit(limit);
      this.opts.deliverWakeups();
    }
  }

  // ---- leases ---------------------------------------------------------------------------

  private lease(ks: KeyState): void {
    if (this.closed) return;
    if (ks.inFlight) {
      ks.again = true;
      return;
    }
    const pool = ks.pool;
    const waiting = pool.waiting;
    if (!this.up) {
      if (waiting > 0) this.fallbacks++;
      return;
    }
    const lim = this.wrapped!;
    const demand = pool.held + waiting;
    let want: number;
    if (ks.othersWanting) {
      // Another replica waits: ask for at most the fair share and give back the rest, lowering
      // the local limit first (slots held above it are returned as they end).
      want = Math.min(demand, this.fairShare(ks));
      if (want < pool.limit) pool.setLimit(want);
    } else if (waiting > 0) {
      want = demand;
    } else {
      want = pool.limit; // keep the idle share: the next request stays local
    }
    const floor = Math.max(pool.limit, pool.held);
    const [succ, rl] = [ks.successes, ks.rateLimited];
    ks.successes = 0;
    ks.rateLimited = 0;
    ks.inFlight = true;
    ks.again = false;
    ks.lastCallMs = this.nowMs();
    this.leaseCalls++;
    const base = `${this.cfg.prefix}{out:${ks.key}}`;
    const run = (this.client as unknown as { syLease(...a: (string | number)[]): Promise<LeaseReply> }).syLease;
    const call = run.call(this.client, `${base}:limit`, `${base}:succ`, `${base}:shares`, `${base}:demand`, `${base}:exp`, this.opts.replicaId, want, floor, demand, Math.round(this.leaseTtlMs), lim.options.initialLimit, lim.options.maxLimit, lim.options.probeSuccessInterval, succ, rl);
    let timer: NodeJS.Timeout | undefined;
    if (waiting > 0) {
      // A slot beyond the share waits on Redis at most acquire_timeout_ms; a late answer still applies.
      let answered = false;
      timer = setTimeout(() => {
        if (!answered) this.fallbacks++;
      }, this.cfg.acquire_timeout_ms);
      void call.finally(() => {
        answered = true;
        clearTimeout(timer);
      }).catch(() => {});
    }
    call.then(
      ([grant, L, n, wanting]) => {
        ks.inFlight = false;
        ks.share = grant;
        ks.recorded = Math.max(grant, floor);
        ks.sharedLimit = L;
        ks.replicas = n;
        ks.othersWanting = wanting === 1;
        this.apply(ks);
        if (ks.again) this.lease(ks);
      },
      () => {
        ks.inFlight = false;
        ks.successes += succ;
        ks.rateLimited += rl;
        if (waiting > 0) this.fallbacks++;
        this.apply(ks);
      },
    );
  }

  private timerTick(): void {
    this.wrap();
    if (!this.up) return;
    const now = this.nowMs();
    for (const ks of this.keys.values()) {
      if (ks.inFlight) continue;
      const since = now - ks.lastCallMs;
      const active = ks.share > 0 || ks.pool.held + ks.pool.waiting > 0;
      if ((ks.pool.waiting > 0 && since >= this.retryMs) || (ks.rateLimited > 0 && since >= this.retryMs) || (active && since >= this.renewMs)) this.lease(ks);
    }
  }

  private setUp(up: boolean): void {
    if (this.up === up) return;
    this.up = up;
    // Back: every key re-leases at once (reconcile); down: local limits.
    for (const ks of this.keys.values()) {
      if (up) {
        ks.lastCallMs = -Infinity;
        this.lease(ks);
      } else {
        this.apply(ks);
      }
    }
  }
}
