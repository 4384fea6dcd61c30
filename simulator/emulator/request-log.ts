/**
 * What the emulator received and what became of it: one record per request, kept in a bounded
 * ring, with waiters so tests can await "the upstream saw the abort" instead of sleeping.
 * Times are `performance.now()` ms of the emulator's process.
 */

/** How a request ended at the emulator. */
export type RecordOutcome =
  | 'ok'
  | 'error' // answered with an error status
  | 'rate_limited'
  | 'unauthorized'
  | 'bad_request'
  | 'reset' // connection closed before any byte (fault)
  | 'disconnected' // connection dropped mid-stream (fault)
  | 'midstream_error' // in-band error event (fault)
  | 'malformed' // bytes that are not a valid answer: JSON cut short (fault)
  | 'client_gone'; // the client (the gateway) went away first

/** One received request. */
export interface RequestRecord {
  /** Arrival order, from 1. */
  readonly seq: number;
  /** The `x-request-id` header, or null. */
  readonly requestId: string | null;
  readonly path: string;
  readonly receivedAtMs: number;
  /** The parsed JSON body (null when it was not JSON). */
  readonly body: unknown;
  /** The `authorization` header as received (tests check which key a route sent). */
  readonly authorization: string;
  /** The `x-api-key`, `anthropic-version`, `anthropic-beta`, `traceparent` and `tracestate` headers that were sent; absent when none was. */
  readonly headers?: Readonly<Record<string, string>>;
  stream: boolean;
  /** HTTP status sent, or null while none was. */
  status: number | null;
  /** When the first output token went out, or null. */
  firstTokenAtMs: number | null;
  /** Output tokens written to the client. */
  tokensSent: number;
  /** When the request ended (any outcome), or null while it runs. */
  endedAtMs: number | null;
  outcome: RecordOutcome | null;
}

type Waiter = { pred: (r: RequestRecord) => boolean; resolve: (r: RequestRecord) => void };

/** A bounded log of request records. */
export class RequestLog {
  private readonly ring: RequestRecord[] = [];
  private seq = 0;
  private waiters: Waiter[] = [];

  /** @param capacity records kept; older ones are dropped first. */
  constructor(private readonly capacity = 10_000) {}

  /** Starts a record for a request that just arrived. */
  open(fields: Pick<RequestRecord, 'requestId' | 'path' | 'receivedAtMs' | 'body' | 'authorization' | 'headers' | 'stream'>): RequestRecord {
    const r: RequestRecord = { seq: ++this.seq, ...fields, status: null, firstTokenAtMs: null, tokensSent: 0, endedAtMs: null, outcome: null };
    this.ring.push(r);
    if (this.ring.length > this.capacity) this.ring.shift();
    this.notify(r);
    return r;
  }

  /** Ends a record (first call wins) and wakes the waiters it satisfies. */
  end(r: RequestRecord, outcome: RecordOutcome, atMs: number): void {
    if (r.outcome !== null) return;
    r.outcome = outcome;
    r.endedAtMs = atMs;
    this.notify(r);
  }

  /** Records kept, oldest first. */
  all(): readonly RequestRecord[] {
    return this.ring;
  }

  /** Forgets every record (the sequence keeps counting). */
  clear(): void {
    this.ring.length = 0;
  }

  /**
   * Resolves with the first record (kept or future) matching `pred` when it is opened or ended.
   * @throws Error (rejects) after `timeoutMs` without a match.
   */
  waitFor(pred: (r: RequestRecord) => boolean, timeoutMs = 5_000): Promise<RequestRecord> {
    const hit = this.ring.find(pred);
    if (hit) return Promise.resolve(hit);
    return new Promise((resolve, reject) => {
      const w: Waiter = {
        pred,
        resolve: (r) => {
          clearTimeout(t);
          resolve(r);
        },
      };
      const t = setTimeout(() => {
        this.waiters = this.waiters.filter((x) => x !== w);
        reject(new Error(`emulator: no matching request record within ${timeoutMs} ms`));
      }, timeoutMs);
      this.waiters.push(w);
    });
  }

  private notify(r: RequestRecord): void {
    if (this.waiters.length === 0) return;
    const still: Waiter[] = [];
    for (const w of this.waiters) (w.pred(r) ? w.resolve(r) : still.push(w));
    this.waiters = still;
  }
}
