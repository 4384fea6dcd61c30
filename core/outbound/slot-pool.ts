/**
 * A counted set of places with a FIFO queue of waiters: the mechanism under both the adaptive
 * outbound limiter (seed 000 "出站并发": slots per provider key) and the engine hold (seed 000
 * "引擎队列上限": places per local engine). Sans-I/O: granting a queued waiter does not call it;
 * the pool puts the ticket on `granted` and the owner (the routing core) delivers the wakeup.
 */

/** One request's claim on a place. Owned by exactly one lifecycle attempt. */
export interface SlotTicket {
  readonly pool: SlotPool;
  /** `queued` → `held` → `released`, or `queued` → `released` (left the queue). */
  state: 'queued' | 'held' | 'released';
  /** True when it was let in past the limit (engine hold: a non-offloadable waiter at its acquire timeout). */
  forced: boolean;
  /** What to wake when a queued ticket is granted; opaque to the pool. */
  readonly owner: unknown;
  readonly attemptId: number;
}

/** Receives tickets granted from the queue (the core's wakeup list). */
export type GrantSink = (ticket: SlotTicket) => void;

/** Places with a limit (changeable) and a FIFO queue. */
export class SlotPool {
  private inUse = 0;
  private readonly queue: SlotTicket[] = [];

  /**
   * @param key the pool's identity for errors and snapshots (provider|key hash, or endpoint id).
   * @param limit places, integer ≥ 1.
   * @param sink called for every queued ticket granted by `release` or `setLimit`.
   */
  constructor(
    readonly key: string,
    private limitPlaces: number,
    private readonly sink: GrantSink,
  ) {}

  /** Current limit (places). */
  get limit(): number {
    return this.limitPlaces;
  }

  /** Places held now (including forced ones). */
  get held(): number {
    return this.inUse;
  }

  /** Tickets waiting. */
  get waiting(): number {
    return this.queue.length;
  }

  /**
   * A new ticket: `held` at once when a place is free and nobody is queued (FIFO fairness), else
   * `queued` at the tail.
   */
  acquire(owner: unknown, attemptId: number): SlotTicket {
    const t: SlotTicket = { pool: this, state: 'queued', forced: false, owner, attemptId };
    if (this.queue.length === 0 && this.inUse < this.limitPlaces) {
      t.state = 'held';
      this.inUse++;
    } else {
      this.queue.push(t);
    }
    return t;
  }

  /** Lets a queued ticket in over the limit (a waiter that must not fail). No-op unless queued. */
  force(t: SlotTicket): void {
    if (t.state !== 'queued') return;
    this.removeQueued(t);
    t.state = 'held';
    t.forced = true;
    this.inUse++;
  }

  /** Ends a ticket (held: frees the place and grants waiters; queued: leaves the queue). Idempotent. */
  release(t: SlotTicket): void {
    if (t.state === 'released') return;
    if (t.state === 'queued') this.removeQueued(t);
    else this.inUse--;
    t.state = 'released';
    this.pump();
  }

  /** Changes the limit (integer ≥ 1); a rise grants waiters, a fall waits for releases. */
  setLimit(places: number): void {
    this.limitPlaces = places;
    this.pump();
  }

  /** @throws Error when counts are negative or a queued ticket is not `queued`. */
  invariants(): void {
    if (this.inUse < 0) throw new Error(`slot pool ${this.key}: ${this.inUse} places held`);
    for (const t of this.queue) if (t.state !== 'queued') throw new Error(`slot pool ${this.key}: ${t.state} ticket in queue`);
    if (this.queue.length > 0 && this.inUse < this.limitPlaces) throw new Error(`slot pool ${this.key}: waiters while a place is free`);
  }

  private removeQueued(t: SlotTicket): void {
    const i = this.queue.indexOf(t);
    if (i >= 0) this.queue.splice(i, 1);
  }

  private pump(): void {
    while (this.queue.length > 0 && this.inUse < this.limitPlaces) {
      const t = this.queue.shift()!;
      t.state = 'held';
      this.inUse++;
      this.sink(t);
    }
  }
}
