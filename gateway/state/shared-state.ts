/**
 * Routing state shared between gateway replicas through one Redis (or Valkey) server, via
 * `ioredis`: breaker failure counts and open marks, the single half-open probe claim, and
 * session-affinity pins.
 *
 * Hot paths stay local. A replica reads a local mirror (`isOpen`, `pinOf`) that pub/sub keeps
 * fresh and that is re-read in full every `max_staleness_ms` (the staleness bound: a lost message
 * costs at most that long). Writes are fire-and-forget. The only wait on Redis is `claimProbe`,
 * bounded by `acquire_timeout_ms`; on timeout or while Redis is down the replica takes its local
 * share (it may probe) and counts that in `fallbacks`.
 *
 * Redis down or slow, at start or later, never fails a call: every method answers from the
 * mirror and local state, `health()` says `down` with the last error, a warning is logged once
 * per outage, and when the connection is back the replica reconciles (pushes what it learnt
 * while cut off, then re-reads the mirror).
 *
 * Keys: `<prefix>{brk:<endpoint>}:fails|open|probe` and `<prefix>{pin:<key>}`; each script's keys
 * share one hash tag, so the scripts also run on Redis Cluster. Events go on `<prefix>events`.
 */
import { Redis } from 'ioredis';
import type { StateConfig } from '../config/gateway-settings.ts';

/** The `backend: redis` variant of `state:`. */
export type RedisStateConfig = Extract<StateConfig, { backend: 'redis' }>;

/** What the shared state reports on `/health/deep` and to metrics. */
export interface SharedStateHealth {
  backend: 'redis';
  /** `up`: connected and the mirror is fresh; `down`: serving on local state only. */
  status: 'up' | 'down';
  /** The configured staleness bound, ms. */
  maxStalenessMs: number;
  /** Milliseconds since the mirror was last re-read in full (null before the first read). */
  mirrorAgeMs: number | null;
  /** The last connection or command error while down ('' when up). */
  lastError: string;
  /** Outages seen since start (transitions up → down, and a failed start). */
  outages: number;
  /** Probe claims answered from local state (Redis down or slower than `acquire_timeout_ms`). */
  fallbacks: number;
  /** Writes that could not reach Redis (kept locally and pushed again on reconcile). */
  failedWrites: number;
}

/** Facts pushed by other replicas, for the gateway to feed into its core. */
export interface SharedStateListener {
  /** Another replica (or a reconcile) found `endpointId`'s breaker open until `untilMs` (epoch ms). */
  onBreakerOpen?(endpointId: string, untilMs: number): void;
  /** A replica's half-open probe to `endpointId` succeeded: the endpoint is healthy again. */
  onBreakerClosed?(endpointId: string): void;
  /** A pin `key → endpointId` was set (by any replica) until `expiresAtMs` (epoch ms). */
  onPin?(key: string, endpointId: string, expiresAtMs: number): void;
}

/** Options of a `SharedState` besides `state:` itself. */
export interface SharedStateOptions {
  /** This replica's id (in events, so it ignores its own). */
  replicaId: string;
  /** Consecutive failures, counted across replicas, that open a breaker (core `failureThreshold`). */
  failureThreshold: number;
  /** How long an opened breaker stays open before one probe may go out, ms (core `cooldownMs`). */
  cooldownMs: number;
  /** Wall clock, epoch ms (injected so tests can drive it). Default `Date.now`. */
  nowMs?: () => number;
  /** Where warnings go. Default: `console.warn`. */
  warn?: (msg: string) => void;
  listener?: SharedStateListener;
}

/** An event on `<prefix>events`. */
type Event =
  | { t: 'open'; ep: string; until: number; from: string }
  | { t: 'close'; ep: string; from: string }
  | { t: 'pin'; k: string; ep: string; exp: number; from: string };

/**
 * KEYS[1] fails counter, KEYS[2] open mark; ARGV threshold, counter TTL ms, replica id, open TTL ms.
 * Counts one failure; at the threshold sets the open mark (NX) and resets the counter. Returns
 * the count, negated when this call opened the breaker (so exactly one replica announces it).
 */
const FAIL_LUA = `
local n = redis.call('INCR', KEYS[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
if n >= tonumber(ARGV[1]) then
  if redis.call('SET', KEYS[2], ARGV[3], 'PX', ARGV[4], 'NX') then
    redis.call('DEL', KEYS[1])
    return -n
  end
end
return n`;

/**
 * KEYS[1] fails counter, KEYS[2] open mark, KEYS[3] probe claim; ARGV replica id. A success:
 * resets the count; from the replica holding the probe claim it also clears the open mark and
 * the claim. Returns 1 when it closed the breaker.
 */
const SUCCESS_LUA = `
redis.call('DEL', KEYS[1])
if redis.call('GET', KEYS[3]) == ARGV[1] then
  redis.call('DEL', KEYS[2], KEYS[3])
  return 1
end
return 0`;

interface Pin {
  endpointId: string;
  expiresAtMs: number;
}

/** Shared routing state on Redis with a local mirror; see the module comment. */
export class SharedState {
  private readonly cfg: RedisStateConfig;
  private readonly opts: Required<Omit<SharedStateOptions, 'listener'>> & { listener: SharedStateListener };
  private readonly client: Redis;
  private readonly sub: Redis;
  private readonly channel: string;
  /** Mirror: endpoint → epoch ms until which it is open. */
  private readonly open = new Map<string, number>();
  /** Mirror: endpoint → `learnt` count when its open mark was last learnt (a full read started earlier does not drop it). */
  private readonly openSeq = new Map<string, number>();
  private learnt = 0;
  /** Mirror: pin key → pin. */
  private readonly pins = new Map<string, Pin>();
  /** What this replica learnt while cut off, pushed on reconcile. */
  private readonly unsentOpen = new Map<string, number>();
  private readonly unsentPins = new Map<string, Pin>();
  private up = false;
  private lastError = '';
  private outages = 0;
  private fallbacks = 0;
  private failedWrites = 0;
  private mirrorReadAtMs: number | null = null;
  private refreshTimer: NodeJS.Timeout | null = null;
  private closed = false;

  /**
   * Creates the clients; connects nothing until `start`.
   * @param cfg the validated `state:` block with `backend: redis`.
   * @throws RangeError when `failureThreshold` is not an integer ≥ 1 or `cooldownMs` not > 0.
   */
  constructor(cfg: RedisStateConfig, opts: SharedStateOptions) {
    if (!Number.isInteger(opts.failureThreshold) || opts.failureThreshold < 1) {
      throw new RangeError(`failureThreshold must be an integer >= 1, got ${opts.failureThreshold}`);
    }
    if (!(opts.cooldownMs > 0)) throw new RangeError(`cooldownMs must be > 0, got ${opts.cooldownMs}`);
    this.cfg = cfg;
    this.opts = {
      replicaId: opts.replicaId,
      failureThreshold: opts.failureThreshold,
      cooldownMs: opts.cooldownMs,
      nowMs: opts.nowMs ?? Date.now,
      warn: opts.warn ?? ((m) => console.warn(m)),
      listener: opts.listener ?? {},
    };
    this.channel = `${cfg.prefix}events`;
    const common = {
      lazyConnect: true,
      connectTimeout: cfg.connect_timeout_ms,
      // Reconnect forever with a capped back-off: the replica serves locally meanwhile.
      retryStrategy: (n: number) => Math.min(50 * n, 1_000),
    };
    // Commands fail at once while disconnected (no offline queue): callers never wait on an outage.
    this.client = new Redis(cfg.url, { ...common, enableOfflineQueue: false, maxRetriesPerRequest: 0, commandTimeout: Math.max(cfg.acquire_timeout_ms, cfg.max_staleness_ms) });
    this.sub = new Redis(cfg.url, { ...common, enableOfflineQueue: true, maxRetriesPerRequest: null });
    this.client.defineCommand('syFail', { numberOfKeys: 2, lua: FAIL_LUA });
    this.client.defineCommand('sySuccess', { numberOfKeys: 3, lua: SUCCESS_LUA });
    this.client.on('error', (e: Error) => this.markDown(e.message));
    this.sub.on('error', () => {}); // the command client reports outages; its errors are the same
    this.client.on('close', () => this.markDown(this.lastError || 'connection closed'));
    this.client.on('ready', () => void this.onReady());
    this.sub.on('message', (_ch: string, msg: string) => this.onMessage(msg));
  }

  /**
   * Connects and reads the mirror, waiting at most `connect_timeout_ms`. Never throws: when Redis
   * is unreachable the replica starts on local state (`health().status === 'down'`) and keeps
   * reconnecting in the background.
   */
  async start(): Promise<void> {
    const timeout = new Promise<void>((resolve) => setTimeout(resolve, this.cfg.connect_timeout_ms).unref());
    const connect = (async () => {
      try {
        await Promise.all([this.client.connect(), this.sub.connect()]);
        await this.sub.subscribe(this.channel);
      } catch (e) {
        this.markDown((e as Error).message);
      }
    })();
    await Promise.race([connect, timeout]);
    if (!this.up) this.markDown(this.lastError || `no connection within ${this.cfg.connect_timeout_ms} ms`);
    this.refreshTimer = setInterval(() => void this.refresh(), this.cfg.max_staleness_ms);
    this.refreshTimer.unref();
  }

  /** Closes both connections and stops the refresh timer. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.refreshTimer) clearInterval(this.refreshTimer);
    this.client.disconnect();
    this.sub.disconnect();
  }

  /** The state of the backend for `/health/deep` and metrics. */
  health(): SharedStateHealth {
    return {
      backend: 'redis',
      status: this.up ? 'up' : 'down',
      maxStalenessMs: this.cfg.max_staleness_ms,
      mirrorAgeMs: this.mirrorReadAtMs === null ? null : Math.max(0, this.opts.nowMs() - this.mirrorReadAtMs),
      lastError: this.up ? '' : this.lastError,
      outages: this.outages,
      fallbacks: this.fallbacks,
      failedWrites: this.failedWrites,
    };
  }

  // ---- breakers -------------------------------------------------------------------------

  /**
   * Whether the mirror holds `endpointId` open now (some replica saw the threshold of failures
   * counted across replicas and the cooldown has not elapsed). Local read; never waits.
   */
  isOpen(endpointId: string): boolean {
    const until = this.open.get(endpointId);
    return until !== undefined && until > this.opts.nowMs();
  }

  /**
   * Counts one health failure of `endpointId` across replicas (asynchronous). When the shared
   * count reaches `failureThreshold`, exactly one replica sets the open mark and announces it;
   * every replica (this one included) then gets `onBreakerOpen`.
   */
  reportFailure(endpointId: string): void {
    const k = this.breakerKeys(endpointId);
    const openTtlMs = this.opts.cooldownMs;
    const run = (this.client as unknown as { syFail(...a: (string | number)[]): Promise<number> }).syFail;
    run.call(this.client, k.fails, k.open, this.opts.failureThreshold, openTtlMs * 10, this.opts.replicaId, openTtlMs)
      .then((n) => {
        if (n < 0) this.announceOpen(endpointId, this.opts.nowMs() + openTtlMs);
      })
      .catch((e: Error) => this.writeFailed(e));
  }

  /**
   * Records a success of `endpointId` (asynchronous): resets the shared failure count, and, when
   * this replica holds the probe claim, closes the shared breaker and announces it.
   */
  reportSuccess(endpointId: string): void {
    const k = this.breakerKeys(endpointId);
    const run = (this.client as unknown as { sySuccess(...a: string[]): Promise<number> }).sySuccess;
    run.call(this.client, k.fails, k.open, k.probe, this.opts.replicaId)
      .then((closed) => {
        if (closed === 1) {
          this.open.delete(endpointId);
          this.publish({ t: 'close', ep: endpointId, from: this.opts.replicaId });
          this.opts.listener.onBreakerClosed?.(endpointId);
        }
      })
      .catch((e: Error) => this.writeFailed(e));
  }

  /**
   * Tries to take the one half-open probe of `endpointId` across replicas: `SET NX PX` on the
   * probe key, held `ttlMs`. Waits at most `acquire_timeout_ms`. Resolves true when this replica
   * won, false when another replica holds it, and true (its local share; counted in `fallbacks`)
   * when Redis is down or did not answer in time. Never rejects.
   */
  async claimProbe(endpointId: string, ttlMs: number): Promise<boolean> {
    if (!this.up) {
      this.fallbacks++;
      return true;
    }
    const k = this.breakerKeys(endpointId);
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), this.cfg.acquire_timeout_ms);
    });
    try {
      const r = await Promise.race([this.client.set(k.probe, this.opts.replicaId, 'PX', Math.max(1, Math.round(ttlMs)), 'NX'), timedOut]);
      if (r === 'timeout') {
        this.fallbacks++;
        return true;
      }
      return r === 'OK';
    } catch {
      this.fallbacks++;
      return true;
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * The probe this replica holds on `endpointId` failed: the breaker re-opens across replicas for
   * another cooldown (the open mark is set again, the claim freed) and every replica is told.
   */
  reportProbeFailed(endpointId: string): void {
    const k = this.breakerKeys(endpointId);
    const until = this.opts.nowMs() + this.opts.cooldownMs;
    this.client
      .multi()
      .set(k.open, this.opts.replicaId, 'PX', this.opts.cooldownMs)
      .del(k.probe)
      .exec()
      .then(() => this.announceOpen(endpointId, until))
      .catch((e: Error) => {
        this.writeFailed(e);
        this.unsentOpen.set(endpointId, until);
      });
  }

  // ---- affinity pins --------------------------------------------------------------------

  /**
   * The endpoint `key` is pinned to, from the mirror (undefined: none, or expired). Local read.
   */
  pinOf(key: string): string | undefined {
    const p = this.pins.get(key);
    if (p === undefined) return undefined;
    if (p.expiresAtMs <= this.opts.nowMs()) {
      this.pins.delete(key);
      return undefined;
    }
    return p.endpointId;
  }

  /**
   * Pins `key` to `endpointId` for `ttlMs` on every replica: the mirror at once, Redis and the
   * other replicas asynchronously. While Redis is down the pin is kept and pushed on reconcile.
   * @throws RangeError when `ttlMs` is not > 0.
   */
  pin(key: string, endpointId: string, ttlMs: number): void {
    if (!(ttlMs > 0)) throw new RangeError(`pin ttlMs must be > 0, got ${ttlMs}`);
    const p = { endpointId, expiresAtMs: this.opts.nowMs() + ttlMs };
    this.pins.set(key, p);
    this.pushPin(key, p);
  }

  // ---- internals ------------------------------------------------------------------------

  private breakerKeys(endpointId: string): { fails: string; open: string; probe: string } {
    const base = `${this.cfg.prefix}{brk:${endpointId}}`;
    return { fails: `${base}:fails`, open: `${base}:open`, probe: `${base}:probe` };
  }

  private pinKey(key: string): string {
    return `${this.cfg.prefix}{pin:${key}}`;
  }

  private pushPin(key: string, p: Pin): void {
    const ttl = Math.round(p.expiresAtMs - this.opts.nowMs());
    if (ttl <= 0) return;
    if (!this.up) {
      this.unsentPins.set(key, p);
      return;
    }
    this.client
      .set(this.pinKey(key), JSON.stringify([p.endpointId, p.expiresAtMs]), 'PX', ttl)
      .then(() => this.publish({ t: 'pin', k: key, ep: p.endpointId, exp: p.expiresAtMs, from: this.opts.replicaId }))
      .catch((e: Error) => {
        this.writeFailed(e);
        this.unsentPins.set(key, p);
      });
  }

  private announceOpen(endpointId: string, untilMs: number): void {
    this.publish({ t: 'open', ep: endpointId, until: untilMs, from: this.opts.replicaId });
    this.learnOpen(endpointId, untilMs);
  }

  /** Mirrors an open mark; tells the listener only when the mirror did not already hold it open. */
  private learnOpen(endpointId: string, untilMs: number): void {
    const was = this.isOpen(endpointId);
    this.open.set(endpointId, Math.max(untilMs, this.open.get(endpointId) ?? 0));
    this.openSeq.set(endpointId, ++this.learnt);
    if (!was) this.opts.listener.onBreakerOpen?.(endpointId, untilMs);
  }

  private publish(e: Event): void {
    this.client.publish(this.channel, JSON.stringify(e)).catch((err: Error) => this.writeFailed(err));
  }

  private onMessage(raw: string): void {
    let e: Event;
    try {
      e = JSON.parse(raw) as Event;
    } catch {
      return;
    }
    if (e.from === this.opts.replicaId) return;
    const l = this.opts.listener;
    if (e.t === 'open') {
      this.learnOpen(e.ep, e.until);
    } else if (e.t === 'close') {
      this.open.delete(e.ep);
      l.onBreakerClosed?.(e.ep);
    } else if (e.t === 'pin') {
      this.pins.set(e.k, { endpointId: e.ep, expiresAtMs: e.exp });
      l.onPin?.(e.k, e.ep, e.exp);
    }
  }

  private writeFailed(e: Error): void {
    this.failedWrites++;
    if (this.up && !this.client.status.startsWith('ready')) this.markDown(e.message);
  }

  private markDown(reason: string): void {
    this.lastError = reason;
    if (this.closed) return;
    if (this.up || this.outages === 0) {
      this.outages++;
      this.opts.warn(`shared state: Redis unavailable (${reason}); serving on local state until it returns`);
    }
    this.up = false;
  }

  private async onReady(): Promise<void> {
    if (this.closed) return;
    const wasDown = this.outages > 0;
    this.up = true;
    this.lastError = '';
    // Reconcile: push what was learnt while cut off, then re-read everything.
    for (const [ep, until] of this.unsentOpen) {
      const ttl = Math.round(until - this.opts.nowMs());
      if (ttl > 0) this.client.set(this.breakerKeys(ep).open, this.opts.replicaId, 'PX', ttl, 'NX').catch(() => {});
    }
    this.unsentOpen.clear();
    const pins = [...this.unsentPins];
    this.unsentPins.clear();
    for (const [k, p] of pins) this.pushPin(k, p);
    await this.refresh();
    if (wasDown) this.opts.warn('shared state: Redis is back; local state reconciled');
  }

  /** Re-reads open marks and pins into the mirror (the staleness bound's full read). */
  private async refresh(): Promise<void> {
    if (!this.up || this.closed) return;
    try {
      const now = this.opts.nowMs();
      const seqAtStart = this.learnt;
      const openKeys = await this.scan(`${this.cfg.prefix}{brk:*}:open`);
      const pinKeys = await this.scan(`${this.cfg.prefix}{pin:*}`);
      const pipe = this.client.pipeline();
      for (const k of openKeys) pipe.pttl(k);
      for (const k of pinKeys) pipe.get(k);
      const res = (await pipe.exec()) ?? [];
      const open = new Map<string, number>();
      openKeys.forEach((k, i) => {
        const ttl = res[i]?.[1] as number;
        const ep = k.slice(this.cfg.prefix.length + 5, -'}:open'.length);
        if (ttl > 0) open.set(ep, now + ttl);
      });
      for (const ep of [...this.open.keys()]) if (!open.has(ep) && (this.openSeq.get(ep) ?? 0) <= seqAtStart) this.open.delete(ep);
      for (const [ep, until] of open) this.learnOpen(ep, until);
      pinKeys.forEach((k, i) => {
        const v = res[openKeys.length + i]?.[1] as string | null;
        if (!v) return;
        const [ep, exp] = JSON.parse(v) as [string, number];
        const key = k.slice(this.cfg.prefix.length + 5, -1);
        const had = this.pins.get(key);
        this.pins.set(key, { endpointId: ep, expiresAtMs: exp });
        if (had?.endpointId !== ep) this.opts.listener.onPin?.(key, ep, exp);
      });
      this.mirrorReadAtMs = now;
    } catch (e) {
      this.writeFailed(e as Error);
    }
  }

  private async scan(match: string): Promise<string[]> {
    const out: string[] = [];
    let cursor = '0';
    do {
      const [next, keys] = await this.client.scan(cursor, 'MATCH', match, 'COUNT', 500);
      cursor = next;
      out.push(...keys);
    } while (cursor !== '0');
    return out;
  }
}
