/**
 * Shares one replica's session-affinity pins (core `AffinityTable`) with the other replicas,
 * through the table's existing API only:
 *
 * - Local → shared: the table's `pin` is wrapped on the instance (the core object is unchanged),
 *   so each new pin is also written to the shared state with the table's TTL.
 * - Shared → local: a pin set on another replica is applied with `pin(callerKey, modelId,
 *   endpointId, nowMs)`, so a caller whose requests the load balancer spreads over replicas
 *   keeps its endpoint.
 *
 * What is not shared: the sliding TTL (`refresh`/`slide` stay local, so the shared copy expires
 * one TTL after it was set unless re-pinned), and the max age of a pin learnt from another replica
 * counts from when this replica learnt it.
 */
import type { AffinityTable } from '../../core/affinity/affinity-table.ts';
import { applySharedPin } from '../../core/index.ts';
import type { SharedState } from './shared-state.ts';

/** Separates model id and caller key in a shared pin key (appears in neither). */
const SEP = '\u0001';

/** Bridges the core's affinity table in force and a `SharedState`; see the module comment. */
export class AffinitySync {
  private patched: AffinityTable | null = null;
  private readonly timer: NodeJS.Timeout;
  private original: AffinityTable['pin'] | null = null;

  /**
   * @param table the table in force (a reload may build a new one; it is re-wrapped within `pollMs`).
   * @param ttlMs the pin TTL, ms (`affinity_ttl_sec` × 1000), > 0.
   * @throws RangeError when `ttlMs` or `pollMs` is not > 0.
   */
  constructor(private readonly shared: SharedState, private readonly table: () => AffinityTable, private readonly now: () => number, private readonly ttlMs: () => number, pollMs: number) {
    if (!(pollMs > 0)) throw new RangeError(`AffinitySync: pollMs must be > 0, got ${pollMs}`);
    this.wrap();
    this.timer = setInterval(() => this.wrap(), pollMs);
    this.timer.unref();
  }

  /** A pin from another replica (or a reconcile): apply it here without echoing it back. */
  onSharedPin(key: string, endpointId: string, expiresAtMs: number, wallNowMs: number): void {
    const i = key.indexOf(SEP);
    if (i < 0 || expiresAtMs <= wallNowMs) return;
    this.wrap();
    const t = this.table();
    applySharedPin(t, { kind: 'pin_set', modelId: key.slice(0, i), callerKey: key.slice(i + 1), endpointId }, this.now(), this.original ?? t.pin);
  }

  /** Stops re-wrapping (the wrapped table keeps writing until it is dropped with its core). */
  close(): void {
    clearInterval(this.timer);
  }

  private wrap(): void {
    const t = this.table();
    if (t === this.patched) return;
    const original = t.pin;
    this.original = original;
    this.patched = t;
    t.pin = (callerKey: string, modelId: string, endpointId: string, nowMs: number): void => {
      original.call(t, callerKey, modelId, endpointId, nowMs);
      const ttl = this.ttlMs();
      if (ttl > 0) this.shared.pin(`${modelId}${SEP}${callerKey}`, endpointId, ttl);
    };
  }
}
