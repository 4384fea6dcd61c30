/**
 * Engine hold (seed 000 "引擎队列上限"): per local engine, at most N streaming attempts sent that
 * have not produced a first output; the rest wait FIFO in the gateway. N comes with each request
 * (its model's `offload.engine_queue_limit`); the latest request's N applies to the engine from
 * then on, including to those already waiting. A place is given up at the attempt's first
 * output or its end. Holding never fails a request: the lifecycle forces a non-offloadable
 * waiter in over the limit at its acquire timeout.
 */
import { SlotPool, type GrantSink, type SlotTicket } from './slot-pool.ts';

/** Per-engine hold pools. Owned by `RoutingCore`. */
export class EngineHold {
  private readonly pools = new Map<string, SlotPool>();

  constructor(private readonly sink: GrantSink) {}

  /** A ticket on `endpointId`'s hold with limit `limit` (applied to the engine first). */
  acquire(endpointId: string, limit: number, owner: unknown, attemptId: number): SlotTicket {
    let pool = this.pools.get(endpointId);
    if (!pool) {
      pool = new SlotPool(endpointId, limit, this.sink);
      this.pools.set(endpointId, pool);
    } else if (pool.limit !== limit) {
      pool.setLimit(limit);
    }
    return pool.acquire(owner, attemptId);
  }

  /** `{endpointId, limit, held, waiting}` per engine. */
  snapshot(): Array<{ endpointId: string; limit: number; held: number; waiting: number }> {
    return [...this.pools.values()].map((p) => ({ endpointId: p.key, limit: p.limit, held: p.held, waiting: p.waiting }));
  }

  /** @throws Error when a pool is inconsistent. */
  invariants(): void {
    for (const p of this.pools.values()) p.invariants();
  }

  /** Places held plus waiters across engines (0 when idle: the no-leak check). */
  totalHeld(): number {
    let n = 0;
    for (const p of this.pools.values()) n += p.held + p.waiting;
    return n;
  }
}
