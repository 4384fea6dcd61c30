/**
 * Scarce units shared between gateway replicas through Redis (`state: {backend: redis}`), via
 * `ioredis`, with its own two clients (commands, subscription):
 *
 * - **Window quotas** (RouteWise quota windows, per-target rate-limit windows): a fixed window of
 *   `windowMs` per name, counted in Redis by one atomic script, so that the units taken by all
 *   replicas together never exceed `limit` while Redis answers. A replica takes a unit from Redis
 *   *before* spending it (`takeWindow`).
 * - **Rolling windows** (RouteWise quota pools, whose windows roll): one log per window (a sorted
 *   set of uses by Redis time, their units in a hash, a running total), several windows of one
 *   pool admitted together by one script (`takeRolling`, `adjustRolling` for the real token count).
 * - **Token buckets** (per-target rate limits, `requests_per_minute` and `burst` as in the core's
 *   `TargetRateLimit`), refilled by Redis time in one script (`takeBucket`).
 * - **Concurrency reservations** (RouteWise concurrency ledgers): a sorted set of holders per
 *   name, each with an expiry (so a crashed replica's holds lapse), admitted by one atomic script
 *   while fewer than `limit` are held (`reserve` / `release`).
 * - **Key-pool facts** (silences and caller → key bindings): set on one replica, mirrored on all
 *   through pub/sub, and re-read in full every `max_staleness_ms` (`silence`, `silencedUntil`,
 *   `bind`, `bindingOf`). Local reads only; writes are asynchronous.
 *
 * Waits: `takeWindow` and `reserve` wait on Redis at most `acquire_timeout_ms`. On timeout, or
 * while Redis is down, they answer from the **local share** and count a fallback (`fallbacks`).
 * The local share of a limit is `floor(limit / replicasSeen)` units per window (or concurrent
 * holds), where `replicasSeen` is the number of replicas that sent a heartbeat to Redis within the
 * last three staleness bounds (at least 1; the last value seen is kept while Redis is down), minus
 * what this replica already took from Redis in the same window. With `fallbackShare: 'none'` the
 * local share is zero and a fallback always refuses.
 *
 * The local share is the only way the replicas together can spend more than `limit`. Within a
 * window in which Redis is unreachable throughout and `replicasSeen` is right, the shares add up
 * to at most `limit`. A window in which Redis fails part-way, or a replica that joined while
 * Redis was down (not yet counted), can exceed `limit` by at most `(replicas − 1) ·
 * floor(limit / replicasSeen)`; `fallbackShare: 'none'` never exceeds it (it refuses instead).
 *
 * Keys (each script's keys share one hash tag, so every script also runs on Redis Cluster):
 * `<prefix>{win:<name>}:<windowIndex>`, `<prefix>{roll:<name>}:<w>:{log,units,total}`,
 * `<prefix>{tb:<name>}`, `<prefix>{cc:<name>}`, `<prefix>{sil:<fingerprint>}`,
 * `<prefix>{bind:<caller>}`, `<prefix>{replicas}`; events on `<prefix>keyfacts`.
 */
import { Redis } from 'ioredis';
import type { RedisStateConfig } from './shared-state.ts';

/**
 * KEYS[1] window counter; ARGV units, limit, TTL ms. Adds `units` when the total stays within
 * `limit`; returns the new total, or -1 (nothing added) when it would exceed it.
 */
const TAKE_LUA = `
local n = tonumber(redis.call('GET', KEYS[1]) or '0')
local u = tonumber(ARGV[1])
if n + u > tonumber(ARGV[2]) then return -1 end
n = redis.call('INCRBY', KEYS[1], u)
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return n`;

/**
 * KEYS[1] holders (sorted set, score = expiry in Redis ms); ARGV holder id, limit, hold ms. Drops
 * lapsed holds, then admits the holder when fewer than `limit` are held. Returns 1 or 0.
 */
const RESERVE_LUA = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then return 0 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[1])
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[3]) * 2)
return 1`;

/**
 * KEYS: per window w (three each) its log (sorted set member → Redis ms), units (hash member →
 * units), total (string). ARGV: member, units, then per window its limit and window ms. Drops
 * uses that left each window, then adds the use to every window when every window keeps within
 * its limit. Returns {1 | 0, ms until enough units leave the fullest window (0 when taken, -1
 * when the units exceed a limit outright), total of each window after the call}.
 */
const ROLL_LUA = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local u = tonumber(ARGV[2])
local n = #KEYS / 3
local totals = {}
local ok, wait = 1, 0
for w = 1, n do
  local log, units, tk = KEYS[3 * w - 2], KEYS[3 * w - 1], KEYS[3 * w]
  local lim, win = tonumber(ARGV[1 + 2 * w]), tonumber(ARGV[2 + 2 * w])
  local total = tonumber(redis.call('GET', tk) or '0')
  for _, m in ipairs(redis.call('ZRANGEBYSCORE', log, '-inf', now - win)) do
    total = total - tonumber(redis.call('HGET', units, m) or '0')
    redis.call('HDEL', units, m)
    redis.call('ZREM', log, m)
  end
  if redis.call('ZCARD', log) == 0 or total < 0 then total = 0 end
  redis.call('SET', tk, total, 'PX', win * 2)
  totals[w] = total
  if total + u > lim then
    ok = 0
    if u > lim then wait = -1
    elseif wait >= 0 then
      local need, freed = total + u - lim, 0
      local entries = redis.call('ZRANGE', log, 0, -1, 'WITHSCORES')
      freed = 0
      for i = 1, #entries, 2 do
        freed = freed + tonumber(redis.call('HGET', units, entries[i]) or '0')
        if freed >= need then
          local ms = tonumber(entries[i + 1]) + win - now
          if ms > wait then wait = ms end
          break
        end
      end
    end
  end
end
if ok == 1 then
  for w = 1, n do
    local win = tonumber(ARGV[2 + 2 * w])
    redis.call('ZADD', KEYS[3 * w - 2], now, ARGV[1])
    redis.call('HSET', KEYS[3 * w - 1], ARGV[1], u)
    totals[w] = totals[w] + u
    redis.call('SET', KEYS[3 * w], totals[w], 'PX', win * 2)
    redis.call('PEXPIRE', KEYS[3 * w - 2], win * 2)
    redis.call('PEXPIRE', KEYS[3 * w - 1], win * 2)
  end
end
local out = {ok, wait}
for w = 1, n do out[2 + w] = totals[w] end
return out`;

/** KEYS as `ROLL_LUA`'s; ARGV member, new units. Sets a use still in its windows to `units`. */
const ADJUST_LUA = `
local u = tonumber(ARGV[2])
for w = 1, #KEYS / 3 do
  local old = redis.call('HGET', KEYS[3 * w - 1], ARGV[1])
  if old then
    redis.call('HSET', KEYS[3 * w - 1], ARGV[1], u)
    redis.call('INCRBY', KEYS[3 * w], u - tonumber(old))
  end
end
return 1`;

/**
 * KEYS[1] bucket (hash tokens, ms); ARGV requests per minute, burst. Refills by Redis time, takes
 * one token when there is one. Returns {1 | 0, ms until a token (0 when taken), tokens left as a string}.
 */
const BUCKET_LUA = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local perMs = tonumber(ARGV[1]) / 60000
local burst = tonumber(ARGV[2])
local v = redis.call('HMGET', KEYS[1], 'tokens', 'ms')
local tokens = tonumber(v[1] or ARGV[2])
local last = tonumber(v[2] or now)
if now > last then tokens = math.min(burst, tokens + (now - last) * perMs) end
local ok, wait = 0, 0
if tokens >= 1 then
  tokens = tokens - 1
  ok = 1
else
  wait = math.ceil((1 - tokens) / perMs)
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'ms', math.max(now, last))
redis.call('PEXPIRE', KEYS[1], math.ceil(burst / perMs) * 2 + 1000)
return {ok, wait, tostring(tokens)}`;

/**
 * KEYS[1] holders as `RESERVE_LUA`'s; ARGV holder id, limit, hold ms. As `RESERVE_LUA`, and
 * returns {1 | 0, holds in force after the call}.
 */
const RESERVE_COUNT_LUA = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local n = redis.call('ZCARD', KEYS[1])
if n >= tonumber(ARGV[2]) then return {0, n} end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[1])
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[3]) * 2)
return {1, n + 1}`;

/** One window of a rolling quota: `limit` units per `windowMs`. */
export interface RollingWindow {
  readonly limit: number;
  readonly windowMs: number;
}

/**
 * What a shared take answered. `taken`: the unit is this replica's to spend. `shared`: the
 * answer came from Redis (false: from the local share, a counted fallback). `retryAfterMs`: when
 * refused, ms until a unit frees (null: unknown or never). `level`: what Redis said — per-window
 * totals after the call (`takeRolling`), tokens left (`takeBucket`), holds in force (`reserveCounted`).
 */
export interface SharedTake {
  readonly taken: boolean;
  readonly shared: boolean;
  readonly retryAfterMs: number | null;
  readonly level: readonly number[];
}

/** What `SharedQuotas` reports to metrics and `/health/deep`. */
export interface SharedQuotasHealth {
  status: 'up' | 'down';
  /** Takes and reservations answered from the local share (Redis down or slower than `acquire_timeout_ms`). */
  fallbacks: number;
  /** Replicas seen in the last three staleness bounds (this one included; ≥ 1). */
  replicasSeen: number;
  /** Fact writes (silences, bindings) that could not reach Redis (kept, pushed on reconcile). */
  failedWrites: number;
}

/** Options of a `SharedQuotas`. */
export interface SharedQuotasOptions {
  /** This replica's id (unique among the replicas sharing the server). */
  replicaId: string;
  /** `split` (default): the local share is `floor(limit / replicasSeen)`; `none`: zero. */
  fallbackShare?: 'split' | 'none';
  /** Wall clock, epoch ms. Default `Date.now`. */
  nowMs?: () => number;
  /** A silence or binding set by another replica (or read on a full re-read). */
  onSilence?(fingerprint: string, untilMs: number): void;
  onBinding?(caller: string, fingerprint: string, expiresAtMs: number): void;
}

type Fact = { t: 'sil' | 'bind'; k: string; v: string; exp: number; from: string };

/** Shared window quotas, concurrency reservations and key-pool facts; see the module comment. */
export class SharedQuotas {
  private readonly client: Redis;
  private readonly sub: Redis;
  private readonly channel: string;
  private readonly now: () => number;
  private up = false;
  private fallbacks = 0;
  private failedWrites = 0;
  private replicasSeen = 1;
  /** name:windowIndex → units taken here (from Redis or the local share). */
  private readonly takenHere = new Map<string, number>();
  /** name → holder ids held here from the local share. */
  private readonly localHolds = new Map<string, Set<string>>();
  /** name → the local-share bucket used while Redis is unreachable. */
  private readonly localBuckets = new Map<string, { tokens: number; ms: number }>();
  private readonly silences = new Map<string, number>();
  private readonly bindings = new Map<string, { fp: string; exp: number }>();
  private readonly unsent: Fact[] = [];
  private timer: NodeJS.Timeout | null = null;
  private closed = false;

  /** Creates the clients; connects nothing until `start`. */
  constructor(private readonly cfg: RedisStateConfig, private readonly opts: SharedQuotasOptions) {
    this.now = opts.nowMs ?? Date.now;
    this.channel = `${cfg.prefix}keyfacts`;
    const common = { lazyConnect: true, connectTimeout: cfg.connect_timeout_ms, retryStrategy: (n: number) => Math.min(50 * n, 1_000) };
    this.client = new Redis(cfg.url, { ...common, enableOfflineQueue: false, maxRetriesPerRequest: 0, commandTimeout: Math.max(cfg.acquire_timeout_ms, cfg.max_staleness_ms) });
    this.sub = new Redis(cfg.url, { ...common, enableOfflineQueue: true, maxRetriesPerRequest: null });
    this.client.defineCommand('syTake', { numberOfKeys: 1, lua: TAKE_LUA });
    this.client.defineCommand('syReserve', { numberOfKeys: 1, lua: RESERVE_LUA });
    this.client.defineCommand('syReserveCount', { numberOfKeys: 1, lua: RESERVE_COUNT_LUA });
    this.client.defineCommand('syBucket', { numberOfKeys: 1, lua: BUCKET_LUA });
    // Rolling quotas take three keys per window: the key count goes first on each call.
    this.client.defineCommand('syRoll', { lua: ROLL_LUA });
    this.client.defineCommand('syAdjust', { lua: ADJUST_LUA });
    this.client.on('error', () => (this.up = false));
    this.client.on('close', () => (this.up = false));
    this.client.on('ready', () => void this.onReady());
    this.sub.on('error', () => {});
    this.sub.on('message', (_c: string, m: string) => this.onMessage(m));
  }

  /** Connects (waiting at most `connect_timeout_ms`) and starts the heartbeat / re-read timer. Never throws. */
  async start(): Promise<void> {
    const connect = Promise.all([this.client.connect(), this.sub.connect().then(() => this.sub.subscribe(this.channel))]).catch(() => {});
    await Promise.race([connect, new Promise((r) => setTimeout(r, this.cfg.connect_timeout_ms).unref())]);
    this.timer = setInterval(() => void this.tick(), this.cfg.max_staleness_ms);
    this.timer.unref();
  }

  /** Closes both connections and the timer. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    this.client.disconnect();
    this.sub.disconnect();
  }

  /** The backend's state, for metrics. */
  health(): SharedQuotasHealth {
    return { status: this.up ? 'up' : 'down', fallbacks: this.fallbacks, replicasSeen: this.replicasSeen, failedWrites: this.failedWrites };
  }

  // ---- window quotas --------------------------------------------------------------------

  /**
   * Takes `units` (> 0) of `name`'s window of `windowMs` (> 0) holding `limit` units, across
   * replicas. Resolves true when taken (spend them), false when the window is spent. Waits on
   * Redis at most `acquire_timeout_ms`; then, or while Redis is down, answers from the local
   * share (see the module comment) and counts a fallback. Never rejects.
   * @throws RangeError when `units`, `limit` or `windowMs` is not a positive number.
   */
  async takeWindow(name: string, limit: number, windowMs: number, units = 1): Promise<boolean> {
    if (!(units > 0) || !(limit > 0) || !(windowMs > 0)) throw new RangeError(`takeWindow: units, limit and windowMs must be > 0 (got ${units}, ${limit}, ${windowMs})`);
    const idx = Math.floor(this.now() / windowMs);
    const local = `${name}:${idx}`;
    const r = await this.bounded(() =>
      (this.client as unknown as { syTake(...a: (string | number)[]): Promise<number> }).syTake(`${this.cfg.prefix}{win:${name}}:${idx}`, units, limit, windowMs * 2),
    );
    const had = this.takenHere.get(local) ?? 0;
    let ok: boolean;
    if (r === null) ok = had + units <= this.share(limit);
    else ok = r >= 0;
    if (ok) {
      this.takenHere.set(local, had + units);
      if (this.takenHere.size > 10_000) for (const k of [...this.takenHere.keys()].slice(0, 5_000)) this.takenHere.delete(k);
    }
    return ok;
  }

  /**
   * Takes `units` (> 0) of rolling quota `name` for use `member` (unique per use), in every
   * window of `windows` at once, across replicas: a use counts in a window for `windowMs` after
   * Redis took it. Waits on Redis at most `acquire_timeout_ms`; then, or while Redis is down,
   * answers from the local share of each window (counted per fixed window of `windowMs` there)
   * and counts a fallback. Never rejects.
   * @throws RangeError when `units` is not > 0, `windows` is empty, or a limit or window is not > 0.
   */
  async takeRolling(name: string, member: string, windows: readonly RollingWindow[], units: number): Promise<SharedTake> {
    if (!(units > 0) || windows.length === 0 || windows.some((w) => !(w.limit > 0) || !(w.windowMs > 0))) throw new RangeError(`takeRolling '${name}': units, every limit and every windowMs must be > 0, with one window at least`);
    const keys = this.rollKeys(name, windows.length);
    const args: Array<string | number> = [`${this.opts.replicaId}/${member}`, units];
    for (const w of windows) args.push(w.limit, Math.round(w.windowMs));
    const r = await this.bounded(() => this.evalRoll(keys, args));
    if (r !== null) {
      const [ok, wait, ...totals] = r.map(Number);
      return { taken: ok === 1, shared: true, retryAfterMs: ok === 1 || wait! < 0 ? null : wait!, level: totals };
    }
    const now = this.now();
    const locals = windows.map((w) => `${name}:${w.windowMs}:${Math.floor(now / w.windowMs)}`);
    const taken = windows.every((w, i) => (this.takenHere.get(locals[i]!) ?? 0) + units <= this.share(w.limit));
    if (taken) for (const k of locals) this.takenHere.set(k, (this.takenHere.get(k) ?? 0) + units);
    return { taken, shared: false, retryAfterMs: null, level: [] };
  }

  /** Sets use `member` of rolling quota `name` (as taken here) to `units`, in the windows it is still in. Asynchronous; a lost call is harmless. */
  adjustRolling(name: string, member: string, windowCount: number, units: number): void {
    if (!this.up || !(units >= 0)) return;
    const keys = this.rollKeys(name, windowCount);
    (this.client as unknown as { syAdjust(...a: (string | number)[]): Promise<number> }).syAdjust(keys.length, ...keys, `${this.opts.replicaId}/${member}`, Math.round(units)).catch(() => {});
  }

  /**
   * Takes one token of bucket `name` (`requestsPerMinute` > 0, `burst` ≥ 1), across replicas.
   * Waits at most `acquire_timeout_ms`; then, or while Redis is down, takes from a local bucket
   * of the local share (rate and burst divided by the replicas seen) and counts a fallback.
   */
  async takeBucket(name: string, requestsPerMinute: number, burst: number): Promise<SharedTake> {
    const r = await this.bounded(() =>
      (this.client as unknown as { syBucket(...a: (string | number)[]): Promise<Array<number | string>> }).syBucket(`${this.cfg.prefix}{tb:${name}}`, requestsPerMinute, burst),
    );
    if (r !== null) {
      const ok = Number(r[0]) === 1;
      return { taken: ok, shared: true, retryAfterMs: ok ? null : Number(r[1]), level: [Number(r[2])] };
    }
    const n = this.opts.fallbackShare === 'none' ? Infinity : Math.max(1, this.replicasSeen);
    const rate = requestsPerMinute / n;
    const cap = Math.max(n === Infinity ? 0 : 1, Math.floor(burst / n));
    const now = this.now();
    const b = this.localBuckets.get(name) ?? { tokens: cap, ms: now };
    b.tokens = Math.min(cap, b.tokens + Math.max(0, now - b.ms) * (rate / 60_000));
    b.ms = Math.max(b.ms, now);
    const taken = b.tokens >= 1;
    if (taken) b.tokens -= 1;
    this.localBuckets.set(name, b);
    return { taken, shared: false, retryAfterMs: null, level: [] };
  }

  // ---- concurrency reservations ---------------------------------------------------------

  /**
   * `reserve`, answering with the holds in force in Redis after the call (`level[0]`, this one
   * included when taken) so the caller can mirror what other replicas hold.
   */
  async reserveCounted(name: string, holder: string, limit: number, holdMs: number): Promise<SharedTake> {
    const r = await this.bounded(() =>
      (this.client as unknown as { syReserveCount(...a: (string | number)[]): Promise<number[]> }).syReserveCount(`${this.cfg.prefix}{cc:${name}}`, `${this.opts.replicaId}/${holder}`, limit, Math.max(1, Math.round(holdMs))),
    );
    if (r !== null) return { taken: Number(r[0]) === 1, shared: true, retryAfterMs: null, level: [Number(r[1])] };
    const held = this.localHolds.get(name) ?? new Set<string>();
    if (held.size >= this.share(limit)) return { taken: false, shared: false, retryAfterMs: null, level: [] };
    held.add(holder);
    this.localHolds.set(name, held);
    return { taken: true, shared: false, retryAfterMs: null, level: [] };
  }

  /**
   * Reserves one of `limit` concurrent holds of `name` for `holder` (unique per use), lapsing after
   * `holdMs` unless released. Resolves true when held. Waits at most `acquire_timeout_ms`; then,
   * or while Redis is down, holds from the local share and counts a fallback. Never rejects.
   */
  async reserve(name: string, holder: string, limit: number, holdMs: number): Promise<boolean> {
    const r = await this.bounded(() =>
      (this.client as unknown as { syReserve(...a: (string | number)[]): Promise<number> }).syReserve(`${this.cfg.prefix}{cc:${name}}`, `${this.opts.replicaId}/${holder}`, limit, Math.max(1, Math.round(holdMs))),
    );
    if (r !== null) return r === 1;
    const held = this.localHolds.get(name) ?? new Set<string>();
    if (held.size >= this.share(limit)) return false;
    held.add(holder);
    this.localHolds.set(name, held);
    return true;
  }

  /** Releases `holder`'s hold on `name` (asynchronous; a hold that lapsed or was local is fine). */
  release(name: string, holder: string): void {
    if (this.localHolds.get(name)?.delete(holder)) return;
    this.client.zrem(`${this.cfg.prefix}{cc:${name}}`, `${this.opts.replicaId}/${holder}`).catch(() => {});
  }

  // ---- key-pool facts -------------------------------------------------------------------

  /** Silences key `fingerprint` on every replica until `untilMs` (epoch ms): here at once, elsewhere via pub/sub. */
  silence(fingerprint: string, untilMs: number): void {
    this.silences.set(fingerprint, Math.max(untilMs, this.silences.get(fingerprint) ?? 0));
    this.push({ t: 'sil', k: fingerprint, v: '', exp: untilMs, from: this.opts.replicaId });
  }

  /** Until when `fingerprint` is silenced (epoch ms), or null. Local read. */
  silencedUntil(fingerprint: string): number | null {
    const u = this.silences.get(fingerprint);
    return u !== undefined && u > this.now() ? u : null;
  }

  /** Binds `caller` to key `fingerprint` on every replica until `expiresAtMs` (epoch ms). */
  bind(caller: string, fingerprint: string, expiresAtMs: number): void {
    this.bindings.set(caller, { fp: fingerprint, exp: expiresAtMs });
    this.push({ t: 'bind', k: caller, v: fingerprint, exp: expiresAtMs, from: this.opts.replicaId });
  }

  /** The key `caller` is bound to, or undefined. Local read. */
  bindingOf(caller: string): string | undefined {
    const b = this.bindings.get(caller);
    return b !== undefined && b.exp > this.now() ? b.fp : undefined;
  }

  // ---- internals ------------------------------------------------------------------------

  private rollKeys(name: string, windows: number): string[] {
    const keys: string[] = [];
    for (let w = 0; w < windows; w++) for (const part of ['log', 'units', 'total']) keys.push(`${this.cfg.prefix}{roll:${name}}:${w}:${part}`);
    return keys;
  }

  private evalRoll(keys: string[], args: Array<string | number>): Promise<Array<number | string>> {
    return (this.client as unknown as { syRoll(n: number, ...a: (string | number)[]): Promise<Array<number | string>> }).syRoll(keys.length, ...keys, ...args);
  }

  private share(limit: number): number {
    return this.opts.fallbackShare === 'none' ? 0 : Math.floor(limit / Math.max(1, this.replicasSeen));
  }

  /** Runs `f` against Redis within `acquire_timeout_ms`; null (a fallback, counted) on timeout, error or outage. */
  private async bounded<T>(f: () => Promise<T>): Promise<T | null> {
    if (!this.up) {
      this.fallbacks++;
      return null;
    }
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<null>((r) => (timer = setTimeout(() => r(null), this.cfg.acquire_timeout_ms)));
    try {
      const r = await Promise.race([f(), timeout]);
      if (r === null) this.fallbacks++;
      return r;
    } catch {
      this.fallbacks++;
      return null;
    } finally {
      clearTimeout(timer);
    }
  }

  private factKey(f: Pick<Fact, 't' | 'k'>): string {
    return `${this.cfg.prefix}{${f.t}:${f.k}}`;
  }

  private push(f: Fact): void {
    const ttl = Math.round(f.exp - this.now());
    if (ttl <= 0) return;
    if (!this.up) {
      this.unsent.push(f);
      return;
    }
    this.client
      .set(this.factKey(f), JSON.stringify([f.v, f.exp]), 'PX', ttl)
      .then(() => this.client.publish(this.channel, JSON.stringify(f)))
      .catch(() => {
        this.failedWrites++;
        this.unsent.push(f);
      });
  }

  private learn(f: Pick<Fact, 't' | 'k' | 'v' | 'exp'>): void {
    if (f.t === 'sil') {
      const was = this.silences.get(f.k) ?? 0;
      if (f.exp > was) {
        this.silences.set(f.k, f.exp);
        this.opts.onSilence?.(f.k, f.exp);
      }
    } else {
      const was = this.bindings.get(f.k);
      this.bindings.set(f.k, { fp: f.v, exp: f.exp });
      if (was?.fp !== f.v) this.opts.onBinding?.(f.k, f.v, f.exp);
    }
  }

  private onMessage(raw: string): void {
    try {
      const f = JSON.parse(raw) as Fact;
      if (f.from !== this.opts.replicaId) this.learn(f);
    } catch {
      // not ours
    }
  }

  private async onReady(): Promise<void> {
    if (this.closed) return;
    this.up = true;
    for (const f of this.unsent.splice(0)) this.push(f);
    await this.tick();
  }

  /** Heartbeat, replica count, and the full re-read of silences and bindings. */
  private async tick(): Promise<void> {
    if (!this.up || this.closed) return;
    try {
      const now = this.now();
      const rk = `${this.cfg.prefix}{replicas}`;
      // Plain awaited commands (no pipeline): a connection that closes mid-way rejects each here.
      await this.client.zadd(rk, now, this.opts.replicaId);
      await this.client.zremrangebyscore(rk, '-inf', now - 3 * this.cfg.max_staleness_ms);
      const seen = await this.client.zcard(rk);
      // Only a real count replaces the last one: undercounting replicas would enlarge every local share.
      this.replicasSeen = Math.max(1, seen);
      for (const t of ['sil', 'bind'] as const) {
        const keys: string[] = [];
        let cursor = '0';
        do {
          const [next, ks] = await this.client.scan(cursor, 'MATCH', `${this.cfg.prefix}{${t}:*}`, 'COUNT', 500);
          cursor = next;
          keys.push(...ks);
        } while (cursor !== '0');
        if (keys.length === 0) continue;
        const vals = await this.client.mget(...keys);
        keys.forEach((k, i) => {
          const v = vals[i];
          if (!v) return;
          const [val, exp] = JSON.parse(v) as [string, number];
          this.learn({ t, k: k.slice(this.cfg.prefix.length + t.length + 2, -1), v: val, exp });
        });
      }
    } catch {
      // the next tick retries; reads stay on the mirror
    }
  }
}
