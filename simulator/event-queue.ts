/**
 * The simulator's future-event list: a binary min-heap ordered by (time, sequence number).
 * The sequence number is owned by the queue (one per simulation, never global), so events at
 * equal times pop in the order they were scheduled — the tie rule that makes a run replayable
 * (SimPy's event ids, TigerBeetle's VOPR).
 */

/** A scheduled event: `atMs` virtual ms, `seq` assigned by the queue, `data` the payload. */
export interface Scheduled<T> {
  readonly atMs: number;
  readonly seq: number;
  readonly data: T;
}

/** Min-heap of events by (atMs, seq). O(log n) push and pop. */
export class EventQueue<T> {
  private readonly heap: Scheduled<T>[] = [];
  private seq = 0;

  /** Number of pending events. */
  get size(): number {
    return this.heap.length;
  }

  /**
   * Schedules `data` at `atMs`. Returns the event's sequence number.
   * @throws RangeError when `atMs` is not a finite number.
   */
  push(atMs: number, data: T): number {
    if (!Number.isFinite(atMs)) throw new RangeError(`event time must be finite, got ${atMs}`);
    const e: Scheduled<T> = { atMs, seq: this.seq++, data };
    const h = this.heap;
    h.push(e);
    let i = h.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!before(e, h[p]!)) break;
      h[i] = h[p]!;
      i = p;
    }
    h[i] = e;
    return e.seq;
  }

  /** Earliest event without removing it, or undefined when empty. */
  peek(): Scheduled<T> | undefined {
    return this.heap[0];
  }

  /** Removes and returns the earliest event, or undefined when empty. */
  pop(): Scheduled<T> | undefined {
    const h = this.heap;
    const top = h[0];
    if (top === undefined) return undefined;
    const last = h.pop()!;
    if (h.length > 0) {
      let i = 0;
      const n = h.length;
      for (;;) {
        const l = 2 * i + 1;
        if (l >= n) break;
        const r = l + 1;
        const c = r < n && before(h[r]!, h[l]!) ? r : l;
        if (!before(h[c]!, last)) break;
        h[i] = h[c]!;
        i = c;
      }
      h[i] = last;
    }
    return top;
  }
}

function before<T>(a: Scheduled<T>, b: Scheduled<T>): boolean {
  return a.atMs < b.atMs || (a.atMs === b.atMs && a.seq < b.seq);
}
