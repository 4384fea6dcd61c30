/**
 * The gateway's driver of RouteWise's quota sources (seed 000 "RouteWise", quota sources). The
 * core holds the data (`QuotaSnapshotStore`, `RouteWisePlanner.applyQuotaSnapshots`); this
 * module owns the timer and the calls:
 *
 * - Every `intervalMs` (default 60 s) it collects the providers named by the `quota_source:` of
 *   every RouteWise route in force, calls each provider's registered fetcher (in parallel, each
 *   bounded by `timeoutMs`), and puts the records in the store (a failure keeps the last ones).
 *   Then every planner resolves its sources against the store and plans with what resolved.
 * - The gateway awaits the first poll before it listens, so a source that does not resolve is
 *   reported at start: one `warn` line per route (`quota source unresolved`, with the reason —
 *   no fetcher registered for the provider, the fetch failed, or the labels and units the
 *   fetcher did return), again each time it becomes unresolved after having resolved, and the
 *   gauge `switchyard_routewise_quota_source_unresolved{model,route}` (1 unresolved, 0
 *   resolved) for as long as it lasts. The seed warns that an unreported typo leaves a route
 *   silently skipped forever.
 * - A fetched limit that agrees with none of the route's configured `quota:` limits is logged
 *   (`warn`, `quota limit differs from route`) once per change; RouteWise plans with the fetched one.
 * - A failed fetch is logged (`warn`, `quota refresh failed`) when its message changes.
 * - Each poll also hands the planners the wall clock (`setLocalTime`: Unix ms − monotonic ms
 *   and the local UTC offset) for the local daily counters of `local_quota_fallback` routes.
 *
 * One poller per gateway, across generations (the store outlives reloads); `apply()` after a
 * generation swap lets the new planners plan with the store at once. Timers are unref'd.
 */
import type { Logger } from 'pino';
import { describeSelector, QuotaSnapshotStore, RouteWisePlanner, type QuotaSourceSelector, type RoutingCore } from '../../core/index.ts';
import type { QuotaFetcher } from './quota-fetchers.ts';

/** Default poll period, ms. */
export const DEFAULT_QUOTA_POLL_MS = 60_000;
/** Default bound on one fetch, ms. */
export const DEFAULT_QUOTA_FETCH_TIMEOUT_MS = 10_000;

/** One quota-source route, as the poller last saw it. */
export interface QuotaSourceState {
  readonly model: string;
  readonly route: string;
  readonly selector: QuotaSourceSelector;
  /** Whether its selector resolved at the last poll. */
  readonly resolved: boolean;
  /** Why it did not resolve (null when it did). */
  readonly reason: string | null;
}

/** What the poller needs from its gateway. */
export interface QuotaPollerDeps {
  /** The core in force (changes on reload). */
  core(): RoutingCore;
  /** Monotonic clock, ms (the gateway's `now`). */
  now(): number;
  /** Wall clock, Unix ms. */
  wallNow(): number;
  /** The local offset from UTC, minutes east, at `unixMs`. */
  utcOffsetMin(unixMs: number): number;
  /** The fetcher of a provider, or undefined when none is registered. */
  fetcherFor(provider: string): QuotaFetcher | undefined;
  readonly log: Logger;
  /** Poll period, ms (> 0); default `DEFAULT_QUOTA_POLL_MS`. */
  readonly intervalMs?: number;
  /** Bound on one fetch, ms (> 0); default `DEFAULT_QUOTA_FETCH_TIMEOUT_MS`. */
  readonly timeoutMs?: number;
}

/** The RouteWise models of `core`, in declaration order. */
function routeWiseModels(core: RoutingCore): Array<{ id: string; planner: RouteWisePlanner }> {
  const out: Array<{ id: string; planner: RouteWisePlanner }> = [];
  for (const m of core.allModels()) if (m.planner instanceof RouteWisePlanner) out.push({ id: m.id, planner: m.planner });
  return out;
}

/** The quota-source poller of a gateway (see the module comment). */
export class QuotaPoller {
  readonly store = new QuotaSnapshotStore();
  readonly intervalMs: number;
  private readonly timeoutMs: number;
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;
  private polled = false;
  private polling: Promise<void> | null = null;
  private readonly controllers = new Set<AbortController>();
  private states: QuotaSourceState[] = [];
  /** `model\0route` of the sources reported unresolved and not resolved since. */
  private readonly warned = new Set<string>();
  /** Last fetched limit reported as disagreeing, per `model\0route`. */
  private readonly mismatch = new Map<string, number>();
  private readonly lastError = new Map<string, string>();

  /** @throws RangeError for an interval or timeout that is not > 0. */
  constructor(private readonly deps: QuotaPollerDeps) {
    this.intervalMs = deps.intervalMs ?? DEFAULT_QUOTA_POLL_MS;
    this.timeoutMs = deps.timeoutMs ?? DEFAULT_QUOTA_FETCH_TIMEOUT_MS;
    if (!(this.intervalMs > 0)) throw new RangeError(`quota poll interval must be > 0 ms, got ${this.intervalMs}`);
    if (!(this.timeoutMs > 0)) throw new RangeError(`quota fetch timeout must be > 0 ms, got ${this.timeoutMs}`);
  }

  /** Arms the (unref'd) poll timer. No-op when running or stopped. */
  start(): void {
    if (this.timer || this.stopped) return;
    this.timer = setInterval(() => void this.poll(), this.intervalMs);
    this.timer.unref();
  }

  /** Stops polling for good and aborts fetches in flight. */
  stop(): void {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    for (const c of this.controllers) c.abort();
  }

  /** Every quota-source route at the last poll (for the gauge and tests). */
  sourceStates(): readonly QuotaSourceState[] {
    return this.states;
  }

  /**
   * One poll: fetches every provider the routes in force name, then `apply()`. A poll already
   * running is joined rather than doubled. Never rejects.
   */
  poll(): Promise<void> {
    this.polling ??= this.fetchAll().finally(() => {
      this.polling = null;
    });
    return this.polling;
  }

  /**
   * Hands the store and the wall clock to every RouteWise planner in force and reports what
   * changed (unresolved sources once polled, limits that disagree). Never throws.
   */
  apply(): void {
    const d = this.deps;
    try {
      const nowMs = d.now();
      const unix = d.wallNow();
      const states: QuotaSourceState[] = [];
      for (const m of routeWiseModels(d.core())) {
        m.planner.setLocalTime(unix - nowMs, d.utcOffsetMin(unix));
        for (const s of m.planner.applyQuotaSnapshots(this.store)) {
          const key = `${m.id}\0${s.endpointId}`;
          const reason = s.record ? null : this.whyUnresolved(s.selector);
          states.push({ model: m.id, route: s.endpointId, selector: s.selector, resolved: s.record !== null, reason });
          if (s.record) this.warned.delete(key);
          else if (this.polled && !this.warned.has(key)) {
            this.warned.add(key);
            d.log.warn({ model: m.id, route: s.endpointId, quota_source: { provider: s.selector.provider, usage_label: s.selector.usageLabel, unit: s.selector.unit }, reason }, 'quota source unresolved; the route is skipped until it resolves');
          }
          if (s.limitMismatch === null) this.mismatch.delete(key);
          else if (this.mismatch.get(key) !== s.limitMismatch) {
            this.mismatch.set(key, s.limitMismatch);
            d.log.warn({ model: m.id, route: s.endpointId, quota_source: describeSelector(s.selector), fetchedLimit: s.limitMismatch, configuredLimits: s.configuredLimits }, 'quota limit differs from route; planning with the fetched limit');
          }
        }
      }
      this.states = states;
    } catch (e) {
      d.log.error({ err: e }, 'quota snapshot could not be applied');
    }
  }

  private async fetchAll(): Promise<void> {
    const d = this.deps;
    const providers = new Set<string>();
    for (const m of routeWiseModels(d.core())) for (const s of m.planner.quotaSources()) providers.add(s.selector.provider);
    await Promise.all(
      [...providers].map(async (provider) => {
        const fetcher = d.fetcherFor(provider);
        if (!fetcher || this.stopped) return;
        const controller = new AbortController();
        this.controllers.add(controller);
        const timer = setTimeout(() => controller.abort(), this.timeoutMs);
        timer.unref();
        const startedMs = d.now();
        // A fetcher that ignores the signal must not hold the poll (and the gateway's start) open.
        const aborted = new Promise<never>((_, reject) => controller.signal.addEventListener('abort', () => reject(new Error('aborted')), { once: true }));
        aborted.catch(() => {});
        try {
          const records = await Promise.race([fetcher.fetch(controller.signal), aborted]);
          this.store.ingest(provider, records, startedMs);
          this.lastError.delete(provider);
        } catch (e) {
          const message = controller.signal.aborted && !this.stopped ? `no answer within ${this.timeoutMs} ms` : (e as Error).message;
          this.store.fail(provider, message);
          if (this.lastError.get(provider) !== message) {
            this.lastError.set(provider, message);
            d.log.warn({ provider, reason: message }, 'quota refresh failed; the last records stay in use');
          }
        } finally {
          clearTimeout(timer);
          this.controllers.delete(controller);
        }
      }),
    );
    if (this.stopped) return;
    this.polled = true;
    this.apply();
  }

  private whyUnresolved(s: QuotaSourceSelector): string {
    if (!this.deps.fetcherFor(s.provider)) return `no quota fetcher is registered for provider '${s.provider}' (registerQuotaFetcher)`;
    const snap = this.store.provider(s.provider);
    if (!snap || snap.fetchedAtMs === null) return snap?.lastError ? `the fetch failed: ${snap.lastError}` : 'not polled yet';
    const seen = snap.records.map((r) => `${r.usageLabel}/${r.unit}`);
    return `the fetcher of '${s.provider}' returned no record with usage_label '${s.usageLabel}' and unit '${s.unit}' (it returned: ${seen.length > 0 ? seen.join(', ') : 'none'})`;
  }
}
