/**
 * The simulator's future-event list, ordered by (time, sequence number). The sequence number is
 * owned by the queue (one per simulation, never global) and taken by every schedule, so events at
 * equal times pop in the order they were scheduled — the tie rule that makes a run replayable
 * (SimPy's event ids, TigerBeetle's VOPR).
 *
 * Four sources share that one order, each shaped for a kind of event a trace replay has many of:
 * - the heap: any event (binary min-heap over parallel arrays; no wrapper object per event);
 * - lanes: FIFOs for events scheduled at a fixed offset from now (deadlines, timeouts), which
 *   therefore arrive in time order — O(1) to schedule and to pop, so a deadline that never fires
 *   costs a slot in an array; one scheduled out of order falls back to the heap;
 * - timers: one re-armable slot per id (an engine's next step end), kept in an indexed heap, so
 *   re-arming replaces the pending time instead of leaving a stale event behind;
 * - arrivals: a sorted array of times read by a cursor (`setArrivals`), so a trace's arrivals are
 *   never pushed at all; their sequence numbers are reserved in one block when they are set.
 *
 * `next()` pops the earliest pending event of any source and says which source it came from;
 * the popped time and payload are in `atMs` and `data` (heap, lane), `timer` or `arrival`.
 */

/** A scheduled event as `pop()` returns it: `atMs` virtual ms, `seq` assigned by the queue, `data` the payload. */
export interface Scheduled<T> {
  readonly atMs: number;
  readonly seq: number;
  readonly data: T;
}

/** What `next()` popped. */
export const Popped = {
  None: 0,
  /** A heap or lane event: `data` (and `lane`: its lane, or -1 for the heap). */
  Event: 1,
  /** A timer fired: `timer` is its id (it is disarmed now). */
  Timer: 2,
  /** The next arrival: `arrival` is its index in the array given to `setArrivals`. */
  Arrival: 3,
} as const;

/** One of the `Popped` values. */
export type Popped = (typeof Popped)[keyof typeof Popped];

/** FIFO of (time, seq, payload), popped from `head`; compacted when half consumed. */
class Lane<T> {
  at: number[] = [];
  seq: number[] = [];
  data: T[] = [];
  head = 0;

  get size(): number {
    return this.at.length - this.head;
  }

  compact(): void {
    if (this.head < 1024 || this.head * 2 < this.at.length) return;
    this.at = this.at.slice(this.head);
    this.seq = this.seq.slice(this.head);
    this.data = this.data.slice(this.head);
    this.head = 0;
  }
}

/** Future-event list over a heap, FIFO lanes, re-armable timers and a sorted arrival array (module doc). */
export class EventQueue<T> {
  private hAt = new Float64Array(1024);
  private hSeq = new Float64Array(1024);
  private hData: (T | undefined)[] = [];
  private hN = 0;
  private readonly lanes: Lane<T>[] = [];
  /** Timer heap: ids ordered by (tAt[id], tSeq[id]); tPos[id] = position, or -1 when disarmed. */
  private tAt = new Float64Array(0);
  private tSeq = new Float64Array(0);
  private tPos = new Int32Array(0);
  private tHeap = new Int32Array(0);
  private tN = 0;
  private arrivals: ArrayLike<number> = [];
  private arrivalSeq0 = 0;
  private cursor = 0;
  private seq = 0;

  /** Time of the event `next()` popped last (virtual ms). */
  atMs = 0;
  /** Payload of the heap or lane event `next()` popped last. */
  data: T | undefined = undefined;
  /** Lane of the event `next()` popped last (-1: the heap). */
  lane = -1;
  /** Id of the timer `next()` popped last. */
  timer = -1;
  /** Index of the arrival `next()` popped last. */
  arrival = -1;
  /** Sequence number of the event `next()` popped last. */
  seqPopped = -1;

  /**
   * @param lanes number of FIFO lanes (ids 0..lanes-1)
   * @param timers number of timers (ids 0..timers-1)
   */
  constructor(lanes = 0, timers = 0) {
    for (let i = 0; i < lanes; i++) this.lanes.push(new Lane<T>());
    this.tAt = new Float64Array(timers);
    this.tSeq = new Float64Array(timers);
    this.tPos = new Int32Array(timers).fill(-1);
    this.tHeap = new Int32Array(timers);
  }

  /** Number of pending events (heap, lanes, armed timers, arrivals not yet popped). */
  get size(): number {
    let n = this.hN + this.tN + (this.arrivals.length - this.cursor);
    for (const l of this.lanes) n += l.size;
    return n;
  }

  /**
   * Schedules `data` at `atMs` on the heap. Returns the event's sequence number.
   * @throws RangeError when `atMs` is not a finite number.
   */
  push(atMs: number, data: T): number {
    if (!Number.isFinite(atMs)) throw new RangeError(`event time must be finite, got ${atMs}`);
    const seq = this.seq++;
    this.heapInsert(atMs, seq, data);
    return seq;
  }

  /**
   * Schedules `data` at `atMs` on FIFO lane `lane` (heap when it would arrive out of order).
   * @throws RangeError when `atMs` is not finite or the lane does not exist.
   */
  pushLane(lane: number, atMs: number, data: T): number {
    if (!Number.isFinite(atMs)) throw new RangeError(`event time must be finite, got ${atMs}`);
    const l = this.lanes[lane];
    if (l === undefined) throw new RangeError(`no lane ${lane} (queue has ${this.lanes.length})`);
    const seq = this.seq++;
    const n = l.at.length;
    if (n > l.head && l.at[n - 1]! > atMs) this.heapInsert(atMs, seq, data);
    else {
      l.at.push(atMs);
      l.seq.push(seq);
      l.data.push(data);
    }
    return seq;
  }

  /**
   * Arms timer `id` at `atMs`, replacing its pending time if it was armed (it takes a new
   * sequence number, as a freshly scheduled event would).
   * @throws RangeError when `atMs` is not finite or the timer does not exist.
   */
  arm(id: number, atMs: number): void {
    if (!Number.isFinite(atMs)) throw new RangeError(`event time must be finite, got ${atMs}`);
    if (!(id >= 0 && id < this.tPos.length)) throw new RangeError(`no timer ${id} (queue has ${this.tPos.length})`);
    this.tAt[id] = atMs;
    this.tSeq[id] = this.seq++;
    let i = this.tPos[id]!;
    if (i < 0) {
      i = this.tN++;
      this.tHeap[i] = id;
      this.tPos[id] = i;
    }
    this.timerSiftDown(this.timerSiftUp(i));
  }

  /** Disarms timer `id` (a no-op when it is not armed). */
  disarm(id: number): void {
    const i = this.tPos[id]!;
    if (i < 0) return;
    this.tPos[id] = -1;
    const last = this.tHeap[--this.tN]!;
    if (i === this.tN) return;
    this.tHeap[i] = last;
    this.tPos[last] = i;
    this.timerSiftDown(this.timerSiftUp(i));
  }

  /**
   * Makes `timesMs` (sorted ascending, finite) the arrivals, each taking the next sequence number
   * in order now (as if all were pushed here), popped lazily by `next()`.
   * @throws RangeError when arrivals were already set or the times are not sorted and finite.
   */
  setArrivals(timesMs: ArrayLike<number>): void {
    if (this.arrivals.length > 0) throw new RangeError('arrivals already set');
    for (let i = 0; i < timesMs.length; i++) {
      const t = timesMs[i]!;
      if (!Number.isFinite(t) || (i > 0 && t < timesMs[i - 1]!)) throw new RangeError(`arrival ${i}: times must be finite and sorted, got ${t}`);
    }
    this.arrivals = timesMs;
    this.arrivalSeq0 = this.seq;
    this.seq += timesMs.length;
  }

  /** Pops the earliest pending event of any source (see `Popped`); `Popped.None` when empty. */
  next(): Popped {
    let bestAt = Infinity;
    let bestSeq = Infinity;
    let src: Popped = Popped.None;
    let lane = -1;
    if (this.hN > 0) {
      bestAt = this.hAt[0]!;
      bestSeq = this.hSeq[0]!;
      src = Popped.Event;
    }
    for (let i = 0; i < this.lanes.length; i++) {
      const l = this.lanes[i]!;
      if (l.head === l.at.length) continue;
      const a = l.at[l.head]!;
      const s = l.seq[l.head]!;
      if (a < bestAt || (a === bestAt && s < bestSeq)) {
        bestAt = a;
        bestSeq = s;
        src = Popped.Event;
        lane = i;
      }
    }
    if (this.tN > 0) {
      const id = this.tHeap[0]!;
      const a = this.tAt[id]!;
      const s = this.tSeq[id]!;
      if (a < bestAt || (a === bestAt && s < bestSeq)) {
        bestAt = a;
        bestSeq = s;
        src = Popped.Timer;
      }
    }
    if (this.cursor < this.arrivals.length) {
      const a = this.arrivals[this.cursor]!;
      const s = this.arrivalSeq0 + this.cursor;
      if (a < bestAt || (a === bestAt && s < bestSeq)) {
        bestAt = a;
        bestSeq = s;
        src = Popped.Arrival;
      }
    }
    this.atMs = bestAt;
    this.seqPopped = bestSeq;
    switch (src) {
      case Popped.Event:
        this.lane = lane;
        if (lane < 0) this.data = this.heapPop();
        else {
          const l = this.lanes[lane]!;
          this.data = l.data[l.head];
          l.data[l.head] = undefined as T;
          l.head++;
          l.compact();
        }
        break;
      case Popped.Timer: {
        const id = this.tHeap[0]!;
        this.timer = id;
        this.disarm(id);
        break;
      }
      case Popped.Arrival:
        this.arrival = this.cursor++;
        break;
    }
    return src;
  }

  /** Earliest heap event without removing it, or undefined when the heap is empty (other sources are not looked at). */
  peek(): Scheduled<T> | undefined {
    return this.hN === 0 ? undefined : { atMs: this.hAt[0]!, seq: this.hSeq[0]!, data: this.hData[0]! };
  }

  /** Removes and returns the earliest heap or lane event, or undefined when none (a queue without timers or arrivals). */
  pop(): Scheduled<T> | undefined {
    if (this.tN > 0 || this.cursor < this.arrivals.length) throw new Error('EventQueue.pop: timers or arrivals pending; use next()');
    if (this.next() === Popped.None) return undefined;
    return { atMs: this.atMs, seq: this.seqPopped, data: this.data! };
  }

  private heapInsert(atMs: number, seq: number, data: T): void {
    if (this.hN === this.hAt.length) {
      const at = new Float64Array(this.hN * 2);
      at.set(this.hAt);
      this.hAt = at;
      const sq = new Float64Array(this.hN * 2);
      sq.set(this.hSeq);
      this.hSeq = sq;
    }
    const hAt = this.hAt;
    const hSeq = this.hSeq;
    const hData = this.hData;
    let i = this.hN++;
    while (i > 0) {
      const p = (i - 1) >> 1;
      const pa = hAt[p]!;
      if (!(atMs < pa || (atMs === pa && seq < hSeq[p]!))) break;
      hAt[i] = pa;
      hSeq[i] = hSeq[p]!;
      hData[i] = hData[p];
      i = p;
    }
    hAt[i] = atMs;
    hSeq[i] = seq;
    hData[i] = data;
  }

  private heapPop(): T {
    const hAt = this.hAt;
    const hSeq = this.hSeq;
    const hData = this.hData;
    const top = hData[0]!;
    const n = --this.hN;
    const la = hAt[n]!;
    const ls = hSeq[n]!;
    const ld = hData[n];
    hData[n] = undefined;
    if (n > 0) {
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        if (l >= n) break;
        const r = l + 1;
        const c = r < n && (hAt[r]! < hAt[l]! || (hAt[r] === hAt[l] && hSeq[r]! < hSeq[l]!)) ? r : l;
        const ca = hAt[c]!;
        if (!(ca < la || (ca === la && hSeq[c]! < ls))) break;
        hAt[i] = ca;
        hSeq[i] = hSeq[c]!;
        hData[i] = hData[c];
        i = c;
      }
      hAt[i] = la;
      hSeq[i] = ls;
      hData[i] = ld;
    }
    return top;
  }

  private timerBefore(a: number, b: number): boolean {
    const x = this.tAt[a]!;
    const y = this.tAt[b]!;
    return x < y || (x === y && this.tSeq[a]! < this.tSeq[b]!);
  }

  private timerSiftUp(i: number): number {
    const h = this.tHeap;
    const id = h[i]!;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!this.timerBefore(id, h[p]!)) break;
      h[i] = h[p]!;
      this.tPos[h[i]!] = i;
      i = p;
    }
    h[i] = id;
    this.tPos[id] = i;
    return i;
  }

  private timerSiftDown(i: number): void {
    const h = this.tHeap;
    const n = this.tN;
    const id = h[i]!;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) break;
      const r = l + 1;
      const c = r < n && this.timerBefore(h[r]!, h[l]!) ? r : l;
      if (!this.timerBefore(h[c]!, id)) break;
      h[i] = h[c]!;
      this.tPos[h[i]!] = i;
      i = c;
    }
    h[i] = id;
    this.tPos[id] = i;
  }
}
