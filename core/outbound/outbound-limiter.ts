/**
 * Adaptive outbound concurrency (seed 000 "出站并发"): one `SlotPool` per (provider label, API
 * key) of non-local routes. The limit starts at `initial`, drops by one per 429 (never below 1),
 * rises by one per `probeInterval` successes (never above `max`). Waiters queue FIFO; the
 * lifecycle gives up on a wait at the acquire timeout (or the offload wait) itself.
 */
import { SlotPool, type GrantSink, type SlotTicket } from './slot-pool.ts';

/** The limiter's tunables, from `RoutingSettings.upstreamConcurrency*`. */
export interface OutboundLimiterOptions {
  readonly enabled: boolean;
  readonly initialLimit: number;
  readonly maxLimit: number;
  readonly probeSuccessInterval: number;
}

/** What an ended attempt tells the limiter. */
export type SlotResult = 'success' | 'rate_limited' | 'other';

/** Per-key adaptive pools. Owned by `RoutingCore`; lives take and release tickets. */
export class OutboundLimiter {
  private readonly pools = new Map<string, SlotPool>();
  private readonly successes = new Map<string, number>();

  constructor(
    readonly options: OutboundLimiterOptions,
    private readonly sink: GrantSink,
  ) {}

  /** A ticket on `key`'s pool (held or queued), creating the pool at the initial limit. */
  acquire(key: string, owner: unknown, attemptId: number): SlotTicket {
    let pool = this.pools.get(key);
    if (!pool) {
      pool = new SlotPool(key, Math.min(this.options.initialLimit, this.options.maxLimit), this.sink);
      this.pools.set(key, pool);
    }
    return pool.acquire(owner, attemptId);
  }

  /**
   * Releases a ticket and adapts its pool's limit: `rate_limited` −1 (floor 1), every
   * `probeSuccessInterval`-th `success` +1 (cap `maxLimit`). Only held tickets adapt the limit.
   */
  release(t: SlotTicket, result: SlotResult): void {
    const wasHeld = t.state === 'held';
    const pool = t.pool;
    if (wasHeld && result === 'rate_limited') {
      pool.setLimit(Math.max(1, pool.limit - 1));
      this.successes.set(pool.key, 0);
    } else if (wasHeld && result === 'success') {
      const n = (this.successes.get(pool.key) ?? 0) + 1;
      if (n >= this.options.probeSuccessInterval) {
        this.successes.set(pool.key, 0);
        if (pool.limit < this.options.maxLimit) pool.setLimit(pool.limit + 1);
      } else {
        this.successes.set(pool.key, n);
      }
    }
    pool.release(t);
  }

  /** Whether an `acquire` on `key` now would be granted at once (no pool yet ⇒ true). */
  hasFreeSlot(key: string): boolean {
    const pool = this.pools.get(key);
    return pool === undefined ? this.options.initialLimit > 0 : pool.held < pool.limit && pool.waiting === 0;
  }

  /** `{key, limit, held, waiting}` per pool, for health pages and tests. */
  snapshot(): Array<{ key: string; limit: number; held: number; waiting: number }> {
    return [...this.pools.values()].map((p) => ({ key: p.key, limit: p.limit, held: p.held, waiting: p.waiting }));
  }

  /** @throws Error when a pool is inconsistent or a limit is outside [1, max]. */
  invariants(): void {
    for (const p of this.pools.values()) {
      p.invariants();
      if (p.limit < 1 || p.limit > Math.max(1, this.options.maxLimit)) throw new Error(`outbound pool ${p.key}: limit ${p.limit} outside [1, ${this.options.maxLimit}]`);
    }
  }

  /** Places held across every pool (0 when nothing is in flight: the no-leak check). */
  totalHeld(): number {
    let n = 0;
    for (const p of this.pools.values()) n += p.held + p.waiting;
    return n;
  }
}
