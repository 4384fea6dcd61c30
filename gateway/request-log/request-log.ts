/**
 * The gateway's request log, gateway-thread side. `append` only pushes the row into a bounded
 * buffer (no I/O on the hot path); a timer, or a full batch, posts the buffered rows to the
 * writer thread (`log-worker.mjs`), which appends them to DuckDB and commits them in batches.
 * When `bufferRows` rows are held on this side (buffered here, or posted and not yet taken by the
 * writer), further rows are dropped and counted (`droppedRows`, exported as a metric) rather than
 * growing memory without bound. Rows the writer takes are acknowledged at once (`accepted`) and
 * end either committed or lost to a writer error (`lostRows`, `writerError`). `close()` writes
 * every row appended before it returns and waits until the writer has closed the file.
 */
import { Worker } from 'node:worker_threads';
import { ATTEMPT_LOG_COLUMNS, POSTED_ATTEMPT_FIELDS, REQUEST_LOG_MIGRATIONS, WRITER_ATTEMPT_SOURCES } from './log-layout.ts';
import { REQUEST_LOG_COLUMNS, REQUEST_LOG_DDL, type RequestLogRow } from './log-row.ts';

/**
 * What the gateway thread posts to the writer (`log-worker.mjs`). Rows travel as columns, in
 * `REQUEST_LOG_COLUMNS` order (`columns[c][r]`), and their attempts as the columns of
 * `POSTED_ATTEMPT_FIELDS` (`attemptRows` of them, in request order; `attemptCounts[r]` of them
 * belong to row `r`; the writer adds the request's id and arrival and the attempt index): cheaper
 * to post than one object per row, and no row object outlives its request (none is promoted to
 * the old generation while it waits).
 */
export type LogWorkerMessage =
  | { columns: unknown[][]; rows: number; attemptColumns: unknown[][]; attemptCounts: number[]; attemptRows: number }
  | { flush: number }
  | { query: number; sql: string; params: unknown[] }
  | { close: true };

const newColumns = (): unknown[][] => REQUEST_LOG_COLUMNS.map(() => []);
const newAttemptColumns = (): unknown[][] => POSTED_ATTEMPT_FIELDS.map(() => []);

/** Options of `RequestLog.open`. */
export interface RequestLogOptions {
  /** DuckDB file (created if absent; rows are appended to existing `requests` and `attempts` tables). */
  path: string;
  /** Most rows held in the gateway thread before new ones are dropped. */
  bufferRows: number;
  /** Rows per post to the writer. */
  batchRows: number;
  /** Longest time a row waits in the buffer, ms. */
  flushIntervalMs: number;
  /** DuckDB `memory_limit`, MB. */
  memoryLimitMb: number;
  /** Called with the writer's message each time it reports an error, and the rows that cost (0 when none). */
  onWriterError?: (message: string, lostRows: number) => void;
}

/** Young-generation cap of the writer thread, MB (V8's default lets it grow to tens of MB). */
const WRITER_YOUNG_GEN_MB = 4;

/** The request log (one per gateway process). */
export class RequestLog {
  /** Buffered rows, as columns. */
  private columns = newColumns();
  private attemptColumns = newAttemptColumns();
  private attemptCounts: number[] = [];
  private bufferedAttempts = 0;
  private buffered = 0;
  private dropped = 0;
  /** Rows posted to the writer and not yet taken by it. */
  private inFlight = 0;
  /** Rows the writer took and has neither committed nor lost. */
  private uncommitted = 0;
  private lost = 0;
  private flushSeq = 0;
  private readonly flushWaiters = new Map<number, () => void>();
  private readonly queryWaiters = new Map<number, { resolve: (rows: Array<Record<string, unknown>>) => void; reject: (e: Error) => void }>();
  private querySeq = 0;
  private closed = false;
  private readonly timer: NodeJS.Timeout;
  private closedPromise: Promise<void> | null = null;
  private lastError: string | null = null;
  private exited = false;

  private constructor(
    private readonly worker: Worker,
    private readonly opts: RequestLogOptions,
  ) {
    this.timer = setInterval(() => this.post(), opts.flushIntervalMs);
    this.timer.unref();
    worker.on('message', (m: { flushed?: number; accepted?: number; committed?: number; lostRows?: number; error?: string; queryId?: number; rows?: Array<Record<string, unknown>>; queryError?: string }) => {
      if (m.queryId !== undefined) {
        const w = this.queryWaiters.get(m.queryId);
        this.queryWaiters.delete(m.queryId);
        if (m.queryError !== undefined) w?.reject(new Error(`request log query failed: ${m.queryError}`));
        else w?.resolve(m.rows ?? []);
        return;
      }
      if (m.accepted !== undefined) {
        this.inFlight -= m.accepted;
        this.uncommitted += m.accepted;
      }
      if (m.committed !== undefined) this.uncommitted -= m.committed;
      if (m.lostRows !== undefined) {
        this.uncommitted -= m.lostRows;
        this.lost += m.lostRows;
      }
      if (m.flushed !== undefined) {
        this.flushWaiters.get(m.flushed)?.();
        this.flushWaiters.delete(m.flushed);
      }
      if (m.error !== undefined) {
        this.lastError = m.error;
        opts.onWriterError?.(m.error, m.lostRows ?? 0);
      }
    });
    // A writer that dies must not hang a flush or a drain: release the waiters, drop from now on.
    worker.on('exit', () => {
      this.exited = true;
      this.closed = true;
      for (const w of this.flushWaiters.values()) w();
      this.flushWaiters.clear();
      for (const w of this.queryWaiters.values()) w.reject(new Error('request log closed'));
      this.queryWaiters.clear();
    });
    worker.on('error', (e) => {
      this.lastError = e.message;
      opts.onWriterError?.(e.message, 0);
    });
  }

  /**
   * Starts the writer thread and opens the database.
   * @throws Error with DuckDB's message when the file cannot be opened (locked, not a DuckDB file).
   */
  static async open(opts: RequestLogOptions): Promise<RequestLog> {
    const worker = new Worker(new URL('./log-worker.mjs', import.meta.url), {
      workerData: {
        path: opts.path,
        memoryLimitMb: opts.memoryLimitMb,
        ddl: REQUEST_LOG_DDL,
        migrations: REQUEST_LOG_MIGRATIONS,
        types: REQUEST_LOG_COLUMNS.map((c) => c.type),
        notNull: REQUEST_LOG_COLUMNS.map((c) => c.notNull),
        attemptTypes: ATTEMPT_LOG_COLUMNS.map((c) => c.type),
        attemptNotNull: ATTEMPT_LOG_COLUMNS.map((c) => c.notNull),
        attemptSources: WRITER_ATTEMPT_SOURCES,
      },
      // The writer allocates little: a small young generation keeps its resident memory down.
      resourceLimits: { maxYoungGenerationSizeMb: WRITER_YOUNG_GEN_MB },
    });
    await new Promise<void>((resolve, reject) => {
      worker.once('message', (m: { ready?: boolean; error?: string }) => (m.ready ? resolve() : reject(new Error(`request log ${opts.path}: ${m.error ?? 'writer failed'}`))));
      worker.once('error', reject);
    });
    return new RequestLog(worker, opts);
  }

  /** Rows dropped because the buffer was full (since start). */
  get droppedRows(): number {
    return this.dropped;
  }

  /** Rows accepted and not yet committed to the database (buffered here or in the writer). */
  get unwrittenRows(): number {
    return this.buffered + this.inFlight + this.uncommitted;
  }

  /**
   * Rows held on the gateway side: buffered here, or posted and not yet taken by the writer. The
   * `bufferRows` bound applies to these alone; rows the writer took no longer count against it.
   */
  get heldRows(): number {
    return this.buffered + this.inFlight;
  }

  /** Rows the writer took but could not write (a writer error; see `writerError`). */
  get lostRows(): number {
    return this.lost;
  }

  /** The writer's last error message, if any (rows of that batch are lost). */
  get writerError(): string | null {
    return this.lastError;
  }

  /** Queues one row and its attempts; O(attempts), no I/O. A full buffer (or a closed log) drops it and counts it. */
  append(row: RequestLogRow): void {
    if (this.closed || this.heldRows >= this.opts.bufferRows) {
      this.dropped++;
      return;
    }
    const cols = this.columns;
    for (let c = 0; c < cols.length; c++) cols[c]!.push(row[REQUEST_LOG_COLUMNS[c]!.field]);
    const acols = this.attemptColumns;
    const log = row.attemptLog;
    for (let i = 0; i < log.length; i++) {
      const a = log[i]!;
      for (let c = 0; c < acols.length; c++) acols[c]!.push(a[POSTED_ATTEMPT_FIELDS[c]!]);
    }
    this.attemptCounts.push(log.length);
    this.bufferedAttempts += log.length;
    this.buffered++;
    if (this.buffered >= this.opts.batchRows) this.post();
  }

  /** Resolves when every row appended so far is in the database. */
  async flush(): Promise<void> {
    if (this.exited) return;
    this.post();
    const id = ++this.flushSeq;
    await new Promise<void>((resolve) => {
      this.flushWaiters.set(id, resolve);
      this.worker.postMessage({ flush: id } satisfies LogWorkerMessage);
    });
  }

  /**
   * Runs a read on the writer thread (which owns the file) after handing it every row appended so
   * far and committing them; rows come back as JSON-safe objects (DuckDB's `getRowObjectsJson`:
   * BIGINT and DECIMAL as strings, lists as arrays).
   * @param params values of `$1`, `$2`, …
   * @throws Error with DuckDB's message, or `request log closed`.
   */
  query(sql: string, params: unknown[] = []): Promise<Array<Record<string, unknown>>> {
    if (this.exited || this.closed) return Promise.reject(new Error('request log closed'));
    this.post();
    const id = ++this.querySeq;
    return new Promise((resolve, reject) => {
      this.queryWaiters.set(id, { resolve, reject });
      this.worker.postMessage({ query: id, sql, params } satisfies LogWorkerMessage);
    });
  }

  /** Flushes, closes the database and ends the writer thread. Idempotent. */
  close(): Promise<void> {
    if (this.closedPromise) return this.closedPromise;
    this.closedPromise = (async () => {
      await this.flush();
      this.closed = true;
      clearInterval(this.timer);
      if (this.exited) return;
      // Rows appended while the flush ran: the writer commits them before it closes.
      this.post();
      await new Promise<void>((resolve) => {
        this.worker.once('exit', () => resolve());
        this.worker.postMessage({ close: true } satisfies LogWorkerMessage);
      });
    })();
    return this.closedPromise;
  }

  private post(): void {
    if (this.buffered === 0 || this.exited) return;
    const msg: LogWorkerMessage = { columns: this.columns, rows: this.buffered, attemptColumns: this.attemptColumns, attemptCounts: this.attemptCounts, attemptRows: this.bufferedAttempts };
    this.columns = newColumns();
    this.attemptColumns = newAttemptColumns();
    this.attemptCounts = [];
    this.bufferedAttempts = 0;
    this.inFlight += this.buffered;
    this.buffered = 0;
    this.worker.postMessage(msg);
  }
}
