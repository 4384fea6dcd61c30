/**
 * One client response on uWebSockets.js, made safe to use from async code:
 * - every write is corked (`res.cork`), so status, headers and body leave in one syscall;
 * - nothing touches `res` after `onAborted` fired or after it was ended (uWS forbids it);
 * - backpressure: a stream `write` that uWS had to buffer returns false, and `drained()`
 *   resolves at the next `onWritable`, so the upstream is not read faster than the client
 *   takes it; a whole body goes out with `tryEnd`, resumed from `onWritable` at the offset
 *   uWS reports (the pattern of uWS's own `VideoStreamer` example).
 */
import { STATUS_CODES } from 'node:http';
import type { HttpResponse } from '@trufflesuite/uws-js-unofficial';

/** Response headers as pairs (names lowercase). */
export type HeaderPairs = ReadonlyArray<readonly [string, string]>;

/**
 * Reason phrases: Node's table of the IANA registry (RFC 9110 and its extensions), plus 499
 * (nginx's "client closed request", which the request log records for a client gone away).
 */
const REASONS: Readonly<Record<number, string>> = { ...STATUS_CODES, 499: 'Client Closed Request' } as Record<number, string>;

/** `200 OK`-style status line for uWS's `writeStatus`; a status without a registered phrase gets its class's (`2xx` → `Success`, …). */
export function statusLine(status: number): string {
  return `${status} ${REASONS[status] ?? CLASS_REASONS[Math.floor(status / 100)] ?? 'Unknown'}`;
}

const CLASS_REASONS: Readonly<Record<number, string>> = { 1: 'Informational', 2: 'Success', 3: 'Redirection', 4: 'Client Error', 5: 'Server Error' };

/** A uWS response with abort tracking, corking and backpressure. */
export class ClientResponse {
  /** The client went away (uWS `onAborted`). */
  aborted = false;
  /** We ended the response (or closed the connection). */
  ended = false;
  /** Status and headers are out (a stream started); errors can only be in-band now. */
  headersSent = false;
  /** The HTTP status sent, or null before the status line went out. */
  status: number | null = null;
  private waiters: Array<() => void> = [];
  private body: Buffer | null = null;
  private bodyOffset = 0;

  /**
   * Must be constructed inside the uWS request handler (it registers `onAborted`).
   * @param onAbort called once when the client disconnects before the response ended.
   */
  constructor(
    private readonly res: HttpResponse,
    onAbort: () => void,
  ) {
    res.onAborted(() => {
      this.aborted = true;
      this.wake();
      onAbort();
    });
    res.onWritable((offset) => this.onWritable(offset));
  }

  /** The response can still be written to. */
  get open(): boolean {
    return !this.aborted && !this.ended;
  }

  /** Sends a whole response (text as UTF-8, or bytes as they are). Large bodies continue from `onWritable`. */
  send(status: number, headers: HeaderPairs, body: string | Buffer): void {
    if (!this.open) return;
    const buf = typeof body === 'string' ? Buffer.from(body, 'utf8') : body;
    this.res.cork(() => {
      this.res.writeStatus(statusLine(status));
      for (const [k, v] of headers) this.res.writeHeader(k, v);
      this.headersSent = true;
      this.status = status;
      this.bodyOffset = this.res.getWriteOffset();
      const [ok, done] = this.res.tryEnd(buf, buf.length);
      if (done) this.ended = true;
      else if (!ok) this.body = buf;
      else this.ended = true;
    });
  }

  /**
   * Sends a small whole response and closes the connection after it — for a request whose body
   * will not be read (413), so the connection cannot be reused.
   */
  sendAndClose(status: number, headers: HeaderPairs, body: string): void {
    if (!this.open) return;
    this.ended = true;
    this.headersSent = true;
    this.status = status;
    this.res.cork(() => {
      this.res.writeStatus(statusLine(status));
      for (const [k, v] of headers) this.res.writeHeader(k, v);
      this.res.end(body, true);
    });
  }

  /** Starts a streamed 200 response with `headers`, and writes `first` if non-empty. */
  startStream(headers: HeaderPairs, first: string): boolean {
    if (!this.open) return false;
    let ok = true;
    this.res.cork(() => {
      this.res.writeStatus('200 OK');
      for (const [k, v] of headers) this.res.writeHeader(k, v);
      this.headersSent = true;
      this.status = 200;
      // Never write '' — a zero-length write ends a chunked body in uWS.
      if (first.length > 0) ok = this.res.write(first);
    });
    return ok;
  }

  /** Writes part of a stream. False: uWS buffered it (congested) — wait for `drained()`. */
  write(text: string): boolean {
    if (!this.open) return false;
    if (text.length === 0) return true;
    let ok = true;
    this.res.cork(() => {
      ok = this.res.write(text);
    });
    return ok;
  }

  /** Resolves when the client can take more (or went away). */
  drained(): Promise<void> {
    if (!this.open) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** Ends a stream, optionally with a last piece. */
  end(text = ''): void {
    if (!this.open) return;
    this.ended = true;
    this.res.cork(() => {
      this.res.end(text);
    });
    this.wake();
  }

  /** Drops the connection (used when the request cannot be read to its end). */
  close(): void {
    if (!this.open) return;
    this.ended = true;
    this.res.close();
    this.wake();
  }

  private onWritable(offset: number): boolean {
    if (this.body) {
      const buf = this.body;
      let ok = false;
      this.res.cork(() => {
        const [o, done] = this.res.tryEnd(buf.subarray(offset - this.bodyOffset), buf.length);
        ok = o;
        if (done) {
          this.body = null;
          this.ended = true;
        }
      });
      return ok;
    }
    this.wake();
    return true;
  }

  private wake(): void {
    if (this.waiters.length === 0) return;
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }
}
