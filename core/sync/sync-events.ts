/**
 * Shared routing state between gateway replicas, as data: the facts one replica's core learns
 * that the others should hear (a failure counted toward a breaker's threshold, a success, a failed
 * half-open probe, a breaker opened or closed across replicas, an affinity pin set), how a
 * replica turns its own breaker snapshots into those reports, and how a replica applies the
 * shared facts it hears to its own core — through the core's public API only (`markDegraded`,
 * `AffinityTable.pin`), so the core stays sans-I/O and never sees the transport.
 *
 * Both drivers use these: the gateway carries them over Redis (gateway/state/), where the
 * failure count, open mark and probe claim live in atomic scripts; the simulator delivers them
 * through its event queue after a configured propagation delay, to measure what staleness costs.
 *
 * Breaker protocol (the store is Redis in the gateway, a model of it in the simulator):
 * - a replica reports `failure_counted` for new consecutive failures; the store counts them
 *   across replicas and, at the health `failureThreshold`, sets the open mark and announces
 *   `breaker_opened` to every replica, which opens its own breaker (`applySharedOpen`);
 * - `success_counted` resets the shared count; from the replica holding the probe claim it also
 *   clears the open mark and announces `breaker_closed` (a replica's breaker closes only by its
 *   own probe: the registry has no call that closes a breaker from outside, by design);
 * - one half-open probe across replicas: shortly before its cooldown ends a replica claims the
 *   probe in the store; a loser restarts its cooldown (`markDegraded`); a failed probe is
 *   reported as `probe_failed`, which re-opens the shared breaker for another cooldown.
 */
import type { AffinityTable } from '../affinity/affinity-table.ts';
import type { EndpointHealthSnapshot, HealthRegistry } from '../health/health-registry.ts';
import type { BreakerState } from '../health/circuit-breaker.ts';

/**
 * One shared fact. `endpointId` is the core's endpoint id (`<model>:<name>`); times are on the
 * driver's clock, ms.
 * - `failure_counted`: `count` (≥ 1) new consecutive failures this replica recorded;
 * - `success_counted`: this replica's count reset (a success) or its breaker closed;
 * - `probe_failed`: this replica's half-open probe failed (its breaker re-opened);
 * - `breaker_opened`: the breaker is open across replicas until `untilMs`;
 * - `breaker_closed`: the probe-holding replica's probe succeeded;
 * - `pin_set`: (callerKey, modelId) was pinned to `endpointId` on some replica.
 */
export type SyncEvent =
  | { readonly kind: 'failure_counted'; readonly endpointId: string; readonly count: number }
  | { readonly kind: 'success_counted'; readonly endpointId: string }
  | { readonly kind: 'probe_failed'; readonly endpointId: string }
  | { readonly kind: 'breaker_opened'; readonly endpointId: string; readonly untilMs: number }
  | { readonly kind: 'breaker_closed'; readonly endpointId: string }
  | { readonly kind: 'pin_set'; readonly callerKey: string; readonly modelId: string; readonly endpointId: string };

/** What a replica last reported of one endpoint's breaker (`breakerReports` compares against it). */
export interface BreakerSeen {
  readonly fails: number;
  readonly state: BreakerState;
  readonly openedAtMs: number | null;
}

/** The state of an endpoint never reported: closed, no failures. */
export const UNSEEN_BREAKER: BreakerSeen = Object.freeze({ fails: 0, state: 'closed', openedAtMs: null });

/** What `breakerReports` found: the reports to send, whether the breaker (re)opened, and what to remember. */
export interface BreakerReport {
  /** `failure_counted`, `success_counted` and `probe_failed` events, in that order where several. */
  readonly events: SyncEvent[];
  /** The breaker is open with a new `openedAtMs` since `prev`: the driver schedules its probe claim. */
  readonly opened: boolean;
  /** The snapshot as `prev` for the next comparison. */
  readonly seen: BreakerSeen;
}

/**
 * Local → shared: compares a replica's breaker snapshot of one endpoint with what it reported
 * last. New consecutive failures are reported (at most `failureThreshold` at once: more cannot
 * change the shared verdict); a reset of the count, or a close, is a success; a half-open breaker
 * that re-opened is a failed probe. Pure.
 */
export function breakerReports(prev: BreakerSeen, snap: EndpointHealthSnapshot, failureThreshold: number): BreakerReport {
  const events: SyncEvent[] = [];
  const ep = snap.endpointId;
  if (snap.consecutiveFailures > prev.fails) {
    events.push({ kind: 'failure_counted', endpointId: ep, count: Math.min(snap.consecutiveFailures - prev.fails, failureThreshold) });
  } else if ((snap.consecutiveFailures === 0 && prev.fails > 0) || (snap.state === 'closed' && prev.state !== 'closed')) {
    events.push({ kind: 'success_counted', endpointId: ep });
  }
  if (snap.state === 'open' && prev.state === 'half_open') events.push({ kind: 'probe_failed', endpointId: ep });
  const opened = snap.state === 'open' && snap.openedAtMs !== null && snap.openedAtMs !== prev.openedAtMs;
  return { events, opened, seen: { fails: snap.consecutiveFailures, state: snap.state, openedAtMs: snap.openedAtMs } };
}

/**
 * Shared → local: the breaker of `endpointId` is open across replicas; open it in `health` at
 * `nowMs` (cooldown from now). A breaker that is already open or half-open with its probe in
 * flight is left alone (the probe settles it). Returns whether the breaker was marked.
 * @throws RangeError when `nowMs` is not finite.
 */
export function applySharedOpen(health: HealthRegistry, endpointId: string, nowMs: number): boolean {
  const snap = health.snapshotOf(endpointId, nowMs);
  if (snap.state !== 'closed' && snap.probeInFlight) return false;
  health.markDegraded(endpointId, nowMs);
  return true;
}

/**
 * Shared → local: a pin set on another replica. Applies it to `table` at `nowMs` with `pin`
 * (default the table's own; a driver that wraps `table.pin` to publish passes the unwrapped one,
 * so a learnt pin is not echoed back). A pin already naming the same endpoint is left as it is.
 * Returns whether the table changed.
 */
export function applySharedPin(
  table: AffinityTable,
  ev: Extract<SyncEvent, { kind: 'pin_set' }>,
  nowMs: number,
  pin: AffinityTable['pin'] = table.pin,
): boolean {
  if (table.lookup(ev.callerKey, ev.modelId, nowMs)?.endpointId === ev.endpointId) return false;
  pin.call(table, ev.callerKey, ev.modelId, ev.endpointId, nowMs);
  return true;
}
