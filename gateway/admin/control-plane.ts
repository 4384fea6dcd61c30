/**
 * The gateway's control plane state: the store (when `store:` is configured), the overlay read
 * from it, the store's health, and what picks up changes other replicas (or other workers)
 * wrote: on PostgreSQL a change feed (`LISTEN`/`NOTIFY`, `store/change-feed.ts`) that reloads
 * the whole overlay on every notification and after every reconnection, and on every store a
 * poller that reads it back every `store_poll_ms` as a safety net. The effective configuration of a generation is the YAML plus
 * `routeOverlay()`; the gateway builds a new generation whenever the overlay changes.
 *
 * Without a store the overlay lives in this process (`MemoryOverlayRepo`): changes apply at once
 * and are lost at exit, and the `routing.yaml` local/remote split still applies. With a store the
 * split never applies (seed 000: with a database it does not act on weights).
 */
import type { Logger } from 'pino';
import type { RouteOverlay } from '../../core/index.ts';
import type { StoreConfig, SqlStore } from '../store/sql-store.ts';
import { emptyOverlay, MemoryOverlayRepo, SqlOverlayRepo, type OverlayRepo, type OverlaySnapshot } from '../store/overlay-repo.ts';
import { routeWiseLayers } from './routewise-settings-admin.ts';
import { ChangeFeed } from '../store/change-feed.ts';
import type { StoreHealth } from '../server/worker-aggregate.ts';

/** Longest wait for the store's answer to a health check, ms. */
const CHECK_TIMEOUT_MS = 1_000;

/** Store, overlay and store health of one gateway. */
export class ControlPlane {
  /** The overlay the current generation was built with. */
  overlay: OverlaySnapshot;
  private state: StoreHealth | null;
  private timer: NodeJS.Timeout | null = null;
  private polling: Promise<void> | null = null;
  /** A reload was asked for while one ran: run another when it ends. */
  private again = false;
  private onChange: ((next: OverlaySnapshot) => void) | null = null;
  /** The `LISTEN` connection (PostgreSQL only, once polling started). */
  feed: ChangeFeed | null = null;

  private constructor(
    readonly store: SqlStore | null,
    readonly repo: OverlayRepo,
    overlay: OverlaySnapshot,
    private readonly log: Logger,
    private readonly config: StoreConfig | null = null,
  ) {
    this.overlay = overlay;
    this.state = store ? { kind: store.kind, status: 'ok', error: null, schema_version: store.schemaVersion } : null;
  }

  /**
   * Opens the store (migrating it) and reads the overlay; no store ⇒ an empty overlay in memory.
   * The store module and its driver are imported only here, and only when `store` is given.
   * @throws Error `store (<kind> <where>): …` when the store cannot be reached, opened or
   *   migrated, or its schema is newer than this gateway's: the gateway refuses to start.
   */
  static async open(store: StoreConfig | undefined, log: Logger): Promise<ControlPlane> {
    if (!store) return new ControlPlane(null, new MemoryOverlayRepo(), emptyOverlay(), log);
    const { openStore } = await import('../store/sql-store.ts');
    const db = await openStore(store);
    const repo = new SqlOverlayRepo(db);
    try {
      const overlay = await repo.load();
      log.info({ store: db.kind, where: db.where, schemaVersion: db.schemaVersion, weightOverrides: overlay.weights.filter((w) => w.weight !== null).length, disabledProviders: overlay.providers.filter((p) => p.disabled).length }, 'store opened');
      return new ControlPlane(db, repo, overlay, log, store);
    } catch (e) {
      await db.close().catch(() => {});
      throw new Error(`store (${db.kind} ${db.where}): cannot read the overlay: ${(e as Error).message}`);
    }
  }

  /** The core's view of an overlay (default: the one in force): active overrides, disabled labels, and the split rule. */
  routeOverlay(overlay: OverlaySnapshot = this.overlay): RouteOverlay {
    const weightOverrides = new Map<string, number>();
    for (const w of overlay.weights) if (w.weight !== null) weightOverrides.set(w.endpointId, w.weight);
    const disabledProviders = new Set(overlay.providers.filter((p) => p.disabled).map((p) => p.provider));
    return { weightOverrides, disabledProviders, ignoreLocalWeightShare: this.store !== null, routewise: routeWiseLayers(overlay) };
  }

  /** The store's state as of the last check (null without a store). */
  health(): StoreHealth | null {
    return this.state && { ...this.state };
  }

  /** Asks the store for `SELECT 1` (bounded) and records the result; never throws. */
  async check(): Promise<void> {
    if (!this.state) return;
    try {
      await withTimeout(this.repo.ping(), CHECK_TIMEOUT_MS);
      this.mark(null);
    } catch (e) {
      this.mark((e as Error).message);
    }
  }

  /**
   * Follows changes made through another replica or worker: reads the overlay back every
   * `everyMs`, and on PostgreSQL also whenever the change feed signals, and calls `onChange`
   * with it when it differs from the one in force. Reloads never overlap (a signal during one
   * runs one more after it). A failed read marks the store down and keeps the generation in
   * force. No-op without a store.
   */
  startPolling(everyMs: number, onChange: (next: OverlaySnapshot) => void): void {
    if (!this.store || this.timer) return;
    this.onChange = onChange;
    this.timer = setInterval(() => this.refresh(Math.max(CHECK_TIMEOUT_MS, everyMs)), everyMs);
    this.timer.unref();
    if (this.config?.kind === 'postgres') {
      this.feed = new ChangeFeed({ url: this.config.url, connectTimeoutMs: this.config.connect_timeout_ms, log: this.log, onSignal: () => this.refresh(Math.max(CHECK_TIMEOUT_MS, everyMs)) });
      this.feed.start();
    }
  }

  /** One reload of the whole overlay (coalesced with one in flight); never throws. */
  private refresh(timeoutMs: number): void {
    if (this.polling) {
      this.again = true;
      return;
    }
    this.polling = (async () => {
      do {
        this.again = false;
        try {
          const seen = this.overlay;
          const next = await withTimeout(this.repo.load(), timeoutMs);
          this.mark(null);
          // An admin change applied while this read was in flight may be newer than what it
          // read: read again rather than put an older overlay back in force.
          if (this.overlay !== seen) {
            this.again = true;
            continue;
          }
          if (JSON.stringify(next) !== JSON.stringify(this.overlay)) this.onChange?.(next);
        } catch (e) {
          this.mark((e as Error).message);
        }
      } while (this.again && this.timer);
      this.polling = null;
    })();
  }

  /** Stops polling and closes the store. */
  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.feed?.close();
    await this.polling;
    await this.store?.close().catch((e: unknown) => this.log.warn({ reason: (e as Error).message }, 'store close failed'));
  }

  private mark(error: string | null): void {
    if (!this.state) return;
    const was = this.state.status;
    this.state = { ...this.state, status: error === null ? 'ok' : 'down', error };
    if (was !== this.state.status) {
      if (error === null) this.log.info({ store: this.state.kind }, 'store reachable again');
      else this.log.error({ store: this.state.kind, reason: error }, 'store unreachable; serving on the last applied configuration');
    }
  }
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
    p.then(
      (v) => {
        clearTimeout(t);
        resolve(v);
      },
      (e: unknown) => {
        clearTimeout(t);
        reject(e);
      },
    );
  });
}
