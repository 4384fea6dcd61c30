/**
 * Keeps one replica's core breakers (`HealthRegistry`) in step with the shared state, through the
 * registry's existing API only (the core stays sans-I/O and never sees Redis):
 *
 * - Local → shared: every `pollMs` the registry's snapshots are compared with the last ones. New
 *   consecutive failures are counted in Redis (`reportFailure`, so the threshold is reached by the
 *   failures of all replicas together); a reset of the count or a close is a success
 *   (`reportSuccess`); a half-open breaker that re-opened is a failed probe (`reportProbeFailed`).
 * - Shared → local: a breaker opened anywhere opens here with `markDegraded` (open at once,
 *   cooldown from now).
 * - One probe across replicas: shortly before a local cooldown ends (`leadMs` before, enough for
 *   `claimProbe` to answer within `acquire_timeout_ms`), the replica claims the probe in Redis;
 *   a replica that loses restarts its cooldown (`markDegraded`) and tries again at its end, so
 *   only the winner's breaker admits the probe. Redis down or slow ⇒ the claim falls back to
 *   local state (this replica may probe) and is counted in the shared state's `fallbacks`.
 *
 * A breaker that another replica's probe closed stays open here until this replica's own
 * cooldown ends and its own (then successful) probe closes it: the registry has no call that
 * closes a breaker from outside, by design.
 */
import type { HealthRegistry } from '../../core/health/health-registry.ts';
import { applySharedOpen, breakerReports, UNSEEN_BREAKER, type BreakerSeen } from '../../core/index.ts';
import type { SharedState } from './shared-state.ts';

/** Options of a `BreakerSync`. */
export interface BreakerSyncOptions {
  /** The registry in force (it may change with a reload that changes the health options). */
  health: () => HealthRegistry;
  /** The core's clock (ms; the same one the gateway passes to the core). */
  now: () => number;
  /** The endpoints to watch (the configured routes' endpoint ids). */
  endpoints: () => Iterable<string>;
  /** How often local snapshots are compared, ms (> 0). */
  pollMs: number;
  /** How long before a cooldown ends the probe is claimed, ms (≥ 0). */
  leadMs: number;
}

/** Bridges a `HealthRegistry` and a `SharedState`; see the module comment. */
export class BreakerSync {
  private readonly seen = new Map<string, BreakerSeen>();
  private readonly claimTimers = new Map<string, NodeJS.Timeout>();
  private readonly timer: NodeJS.Timeout;

  /**
   * Starts polling at once.
   * @throws RangeError when `pollMs` is not > 0 or `leadMs` is negative.
   */
  constructor(private readonly shared: SharedState, private readonly opts: BreakerSyncOptions) {
    if (!(opts.pollMs > 0)) throw new RangeError(`BreakerSync: pollMs must be > 0, got ${opts.pollMs}`);
    if (!(opts.leadMs >= 0)) throw new RangeError(`BreakerSync: leadMs must be >= 0, got ${opts.leadMs}`);
    this.timer = setInterval(() => this.poll(), opts.pollMs);
    this.timer.unref();
  }

  /** Another replica (or a reconcile) reports `endpointId` open: open it here too. */
  onSharedOpen(endpointId: string): void {
    applySharedOpen(this.opts.health(), endpointId, this.opts.now());
    this.poll();
  }

  /** Compares every watched endpoint's snapshot with the last one and reports the differences. */
  poll(): void {
    const h = this.opts.health();
    const now = this.opts.now();
    for (const ep of this.opts.endpoints()) {
      const s = h.snapshotOf(ep, now);
      const r = breakerReports(this.seen.get(ep) ?? UNSEEN_BREAKER, s, h.options.failureThreshold);
      for (const e of r.events) {
        if (e.kind === 'failure_counted') for (let i = 0; i < e.count; i++) this.shared.reportFailure(ep);
        else if (e.kind === 'success_counted') this.shared.reportSuccess(ep);
        else if (e.kind === 'probe_failed') this.shared.reportProbeFailed(ep);
      }
      if (r.opened) this.scheduleClaim(ep, s.openedAtMs!);
      this.seen.set(ep, r.seen);
    }
  }

  /** Stops polling and every pending claim. */
  close(): void {
    clearInterval(this.timer);
    for (const t of this.claimTimers.values()) clearTimeout(t);
    this.claimTimers.clear();
  }

  private scheduleClaim(endpointId: string, openedAtMs: number): void {
    const cooldownMs = this.opts.health().options.cooldownMs;
    const inMs = Math.max(0, openedAtMs + cooldownMs - this.opts.leadMs - this.opts.now());
    clearTimeout(this.claimTimers.get(endpointId));
    const t = setTimeout(() => void this.claim(endpointId, openedAtMs, cooldownMs), inMs);
    t.unref();
    this.claimTimers.set(endpointId, t);
  }

  private async claim(endpointId: string, openedAtMs: number, cooldownMs: number): Promise<void> {
    this.claimTimers.delete(endpointId);
    const snap = this.opts.health().snapshotOf(endpointId, this.opts.now());
    if (snap.state !== 'open' || snap.openedAtMs !== openedAtMs) return; // already moved on
    // Held for a cooldown plus the lead: the winner's probe settles (and frees it) well before.
    const won = await this.shared.claimProbe(endpointId, cooldownMs + this.opts.leadMs);
    if (won) return;
    const h = this.opts.health();
    const now = this.opts.now();
    if (h.snapshotOf(endpointId, now).probeInFlight) return;
    h.markDegraded(endpointId, now); // restart the cooldown; the poll schedules the next claim
    this.poll();
  }
}
