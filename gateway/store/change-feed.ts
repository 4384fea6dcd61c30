/**
 * How replicas sharing one PostgreSQL server learn of each other's overlay changes within
 * moments: every overlay write commits inside `SqlStore.transaction`, which sends
 * `NOTIFY switchyard_overlay` in the same transaction (PostgreSQL delivers it at commit and
 * drops it on rollback), and every replica holds one connection of its own that `LISTEN`s on
 * that channel. A notification carries nothing the listener needs: it only says "read the whole
 * overlay again", so a table added to the overlay later is covered as long as its writes go
 * through `transaction`.
 *
 * PostgreSQL does not queue notifications for a session that is gone: whatever was sent while
 * the listening connection was down is lost. So after every (re)connection, once `LISTEN` is in
 * place, the feed signals `reconnected` and the caller reloads the whole overlay, which covers
 * every change made in the gap. A lost connection is retried with a delay that doubles from
 * `retryMs` up to `maxRetryMs`.
 *
 * PGlite is one process with one connection: it has no other replica to tell, so a gateway on
 * PGlite runs no feed (several replicas need `kind: postgres`).
 */
import type { Logger } from 'pino';

/** The channel overlay changes are announced on. */
export const CHANGE_CHANNEL = 'switchyard_overlay';

/** The statement that announces a change (run inside the writing transaction). */
export const NOTIFY_CHANGE_SQL = `SELECT pg_notify('${CHANGE_CHANNEL}', '')`;

/** Why the feed asks for a reload. */
export type ChangeSignal = 'notified' | 'reconnected';

/** Options of a feed. */
export interface ChangeFeedOptions {
  /** `postgres://…` of the store. */
  url: string;
  /** Bound on one connection attempt, ms. */
  connectTimeoutMs: number;
  /** First delay before reconnecting, ms (default 100). */
  retryMs?: number;
  /** Longest delay between reconnection attempts, ms (default 2000). */
  maxRetryMs?: number;
  /** Called on every notification and after every successful (re)connection; must not throw. */
  onSignal: (s: ChangeSignal) => void;
  log: Logger;
}

/** Minimal view of a `pg.Client` this module uses. */
interface ListenClient {
  connect(): Promise<void>;
  query(sql: string): Promise<{ rows: Array<Record<string, unknown>> }>;
  end(): Promise<void>;
  on(event: 'notification', fn: (m: { channel: string }) => void): void;
  on(event: 'error' | 'end', fn: (e?: Error) => void): void;
  removeAllListeners(): void;
}

/** One replica's listening connection, kept up until `close`. */
export class ChangeFeed {
  private client: ListenClient | null = null;
  private timer: NodeJS.Timeout | null = null;
  private closed = false;
  private delayMs: number;
  private connecting: Promise<void> | null = null;
  /** Backend pid of the listening connection while it is up (null while down). */
  pid: number | null = null;
  /** Successful connections so far (the first one included). */
  connections = 0;

  constructor(private readonly o: ChangeFeedOptions) {
    this.delayMs = o.retryMs ?? 100;
  }

  /** Connects and listens (in the background: failures are retried, never thrown). */
  start(): void {
    this.connecting = this.connect();
  }

  private async connect(): Promise<void> {
    if (this.closed) return;
    const { default: pg } = await import('pg');
    const c = new pg.Client({ connectionString: this.o.url, connectionTimeoutMillis: this.o.connectTimeoutMs, keepAlive: true, application_name: 'switchyard-listener' }) as unknown as ListenClient;
    let lost = false;
    const onLost = (e?: Error): void => {
      if (lost) return;
      lost = true;
      const wasUp = this.client === c;
      this.pid = null;
      if (this.client === c) this.client = null;
      c.removeAllListeners();
      c.on('error', () => {}); // late errors of a dead client
      void c.end().catch(() => {});
      if (this.closed) return;
      // One warning per outage; the attempts during it are debug lines.
      this.o.log[wasUp ? 'warn' : 'debug']({ reason: e?.message ?? 'connection ended', retryMs: this.delayMs }, wasUp ? 'store change feed lost its connection; reconnecting, then reloading the overlay' : 'store change feed could not connect; retrying');
      this.retry();
    };
    c.on('error', onLost);
    c.on('end', () => onLost());
    c.on('notification', (m) => {
      if (m.channel === CHANGE_CHANNEL) this.o.onSignal('notified');
    });
    try {
      await c.connect();
      await c.query(`LISTEN ${CHANGE_CHANNEL}`);
      const r = await c.query('SELECT pg_backend_pid() AS pid');
      if (lost) return;
      if (this.closed) {
        c.removeAllListeners();
        c.on('error', () => {});
        await c.end().catch(() => {});
        return;
      }
      this.client = c;
      this.pid = Number(r.rows[0]!.pid);
      this.connections++;
      this.delayMs = this.o.retryMs ?? 100;
      // Changes committed before LISTEN took effect (or while the last connection was down)
      // were announced to nobody: read everything again.
      this.o.onSignal('reconnected');
    } catch (e) {
      onLost(e as Error);
    }
  }

  private retry(): void {
    if (this.closed || this.timer) return;
    const wait = this.delayMs;
    this.delayMs = Math.min(this.delayMs * 2, this.o.maxRetryMs ?? 2_000);
    this.timer = setTimeout(() => {
      this.timer = null;
      this.connecting = this.connect();
    }, wait);
    this.timer.unref();
  }

  /** Stops listening and closes the connection. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.connecting?.catch(() => {});
    const c = this.client;
    this.client = null;
    this.pid = null;
    if (c) {
      c.removeAllListeners();
      c.on('error', () => {});
      await c.end().catch(() => {});
    }
  }
}
