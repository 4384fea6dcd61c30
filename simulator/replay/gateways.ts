/**
 * Gateway replicas in a replay (`gateway_replicas:`): N routing cores in front of the same
 * endpoints, a load balancer that picks one per client try, and — with `state: shared` — the
 * core's sync events (core/sync/sync-events.ts) carried between them through the event queue
 * after `propagation_delay_ms`, as the gateway carries them over Redis (gateway/state/).
 *
 * The shared store is a model of what the gateway keeps in Redis (`SharedStore`): the failure
 * count per endpoint counted across replicas (its threshold opens the breaker everywhere), the
 * open mark with its cooldown, and the single half-open probe claim. A replica's fact reaches
 * the store, and through it every replica, `propagation_delay_ms` after the replica learnt it
 * (one delay stands for the gateway's poll, write and pub/sub hops together). The probe claim is
 * answered at once: the gateway claims it ahead of the cooldown's end by a lead meant to cover
 * the round trip, modelled here as `PROBE_LEAD_MS`.
 *
 * Outbound limits per provider key: with `local` state each replica's limiter takes the full
 * `upstream_concurrency_*` limits (N× the total a provider sees); with `shared` every replica uses
 * replica 0's limiter, one replica-wide adaptive limit per key that all replicas' 429s and
 * successes adapt. That is the gateway's lease scheme at its bound (Σ shares ≤ the limit, idle
 * shares lent to busy replicas) without its lease traffic: the outbound limit is not delayed.
 *
 * One gateway (the default) builds exactly the core a single-gateway run always had, with the
 * same strategy stream, and shares nothing: its rows equal a run without the block.
 */
import type { AffinityTable } from '../../core/affinity/affinity-table.ts';
import { applySharedOpen, applySharedPin, breakerReports, UNSEEN_BREAKER, type BreakerSeen, type SyncEvent } from '../../core/index.ts';
import { deriveRng, type Rng } from '../../core/rng.ts';
import { RoutingCore } from '../../core/routing-core.ts';
import type { ModelsConfig } from '../../core/config/models-config.ts';
import { keyedBase, keyedUniform } from '../crn.ts';
import { healthOptions, type Experiment } from '../experiment.ts';
import type { GatewayReplicas } from '../gateway-replicas.ts';
import { strategyRegistry } from '../strategy-modules.ts';
import { simulatedAuto, type SimAuto } from './auto-profiles.ts';
import type { ReplayState } from './state.ts';

/** How long before its cooldown ends a replica claims the shared half-open probe, ms. */
export const PROBE_LEAD_MS = 1;

/** One gateway replica of a run: its own core, auto router and strategy stream. */
export interface GatewayReplica {
  readonly index: number;
  readonly core: RoutingCore;
  readonly auto: SimAuto | null;
  readonly strategyRng: Rng;
  /** What this replica last reported of each endpoint's breaker (shared state only). */
  readonly seen: Map<string, BreakerSeen>;
  /** The affinity table's own `pin`, before the wrapper that publishes pins (shared state only). */
  unwrappedPin: AffinityTable['pin'] | null;
}

/**
 * Builds the replicas of a run. Replica 0 uses the stream `strategy/<name>` (as a single-gateway
 * run does); replica i > 0 uses `strategy/<name>/gateway<i>`.
 * @throws Error as `RoutingCore` and `simulatedAuto` do for a bad configuration.
 */
export function buildGateways(exp: Experiment, gw: GatewayReplicas, config: ModelsConfig, strategy: string, seed: number, where: string): GatewayReplica[] {
  const registry = strategyRegistry(exp.strategyModules ?? []);
  const out: GatewayReplica[] = [];
  for (let i = 0; i < gw.count; i++) {
    const outboundFrom = i > 0 && gw.state === 'shared' ? out[0]!.core : undefined;
    const core = new RoutingCore(config, { settings: exp.routing, health: healthOptions(exp), registry, ...(outboundFrom && { outboundFrom }) });
    out.push({
      index: i,
      core,
      auto: simulatedAuto(config, core, where),
      strategyRng: deriveRng(seed, i === 0 ? `strategy/${strategy}` : `strategy/${strategy}/gateway${i}`),
      seen: new Map(),
      unwrappedPin: null,
    });
  }
  return out;
}

/** FNV-1a 32-bit hash of a string (the sticky load balancer's caller hash). */
function fnv1a(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/**
 * The client-side load balancer: which replica gets each client try (a client retry is a new
 * HTTP request, so `random` and `round_robin` may send it elsewhere). Deterministic:
 * `random` is a keyed draw of (request, try) from stream `gateway/load_balancer`, so cells with
 * the same seed send the same try to the same replica; `round_robin` follows the order tries
 * start; `sticky_caller` hashes the caller id.
 */
export class GatewayPicker {
  private next = 0;
  private readonly base: number;

  constructor(private readonly policy: GatewayReplicas['load_balancer'], private readonly count: number, seed: number) {
    this.base = keyedBase(seed, 'gateway/load_balancer');
  }

  /** The replica index in [0, count) for try `tryNo` of request `reqIdx` from `callerId`. */
  pick(reqIdx: number, tryNo: number, callerId: string): number {
    if (this.count === 1) return 0;
    switch (this.policy) {
      case 'round_robin':
        return this.next++ % this.count;
      case 'random':
        return Math.floor(keyedUniform(this.base, reqIdx, tryNo, 0) * this.count);
      case 'sticky_caller':
        return fnv1a(callerId) % this.count;
    }
  }
}

/**
 * What the gateway keeps in Redis, as a pure model: per endpoint the failure count across
 * replicas (expiring 10 cooldowns after its last increment), the open mark (one cooldown) and
 * the probe claim (holder and expiry). Each method is one of the gateway's atomic scripts and
 * returns the facts it announces.
 */
export class SharedStore {
  private readonly fails = new Map<string, { n: number; expiresAtMs: number }>();
  private readonly openUntil = new Map<string, number>();
  private readonly probe = new Map<string, { holder: number; untilMs: number }>();

  /**
   * @param failureThreshold failures counted across replicas that open a breaker (≥ 1).
   * @param cooldownMs how long the open mark lasts, ms (> 0).
   */
  constructor(readonly failureThreshold: number, readonly cooldownMs: number) {}

  /** Applies replica `from`'s report `ev` at `nowMs`; returns the announcements (`breaker_opened` / `breaker_closed`). */
  report(from: number, ev: SyncEvent, nowMs: number): SyncEvent[] {
    const ep = ev.kind === 'pin_set' ? '' : ev.endpointId;
    switch (ev.kind) {
      case 'failure_counted': {
        const cur = this.fails.get(ep);
        let n = cur !== undefined && cur.expiresAtMs > nowMs ? cur.n : 0;
        const out: SyncEvent[] = [];
        for (let i = 0; i < ev.count; i++) {
          n++;
          if (n >= this.failureThreshold && !this.isOpen(ep, nowMs)) {
            this.openUntil.set(ep, nowMs + this.cooldownMs);
            n = 0;
            out.push({ kind: 'breaker_opened', endpointId: ep, untilMs: nowMs + this.cooldownMs });
          }
        }
        this.fails.set(ep, { n, expiresAtMs: nowMs + 10 * this.cooldownMs });
        return out;
      }
      case 'success_counted': {
        this.fails.delete(ep);
        const p = this.probe.get(ep);
        if (p !== undefined && p.holder === from && p.untilMs > nowMs) {
          this.openUntil.delete(ep);
          this.probe.delete(ep);
          return [{ kind: 'breaker_closed', endpointId: ep }];
        }
        return [];
      }
      case 'probe_failed':
        this.openUntil.set(ep, nowMs + this.cooldownMs);
        this.probe.delete(ep);
        return [{ kind: 'breaker_opened', endpointId: ep, untilMs: nowMs + this.cooldownMs }];
      default:
        return [];
    }
  }

  /** Whether the open mark of `endpointId` is live at `nowMs`. */
  isOpen(endpointId: string, nowMs: number): boolean {
    return (this.openUntil.get(endpointId) ?? -Infinity) > nowMs;
  }

  /** `SET probe NX PX ttlMs`: true when replica `from` now holds the probe of `endpointId`. */
  claimProbe(from: number, endpointId: string, nowMs: number, ttlMs: number): boolean {
    const p = this.probe.get(endpointId);
    if (p !== undefined && p.untilMs > nowMs) return false;
    this.probe.set(endpointId, { holder: from, untilMs: nowMs + ttlMs });
    return true;
  }
}

/** The shared state of a run with `state: shared` and more than one replica. */
export interface ReplicaSync {
  readonly store: SharedStore;
  readonly delayMs: number;
  /** Endpoint ids whose breakers are watched (every id the loop routes to). */
  readonly endpointIds: readonly string[];
}

/** The sync of a run, or null when its replicas share nothing (one replica, or `state: local`). */
export function replicaSync(gw: GatewayReplicas, gateways: readonly GatewayReplica[], endpointIds: readonly string[]): ReplicaSync | null {
  if (gw.count < 2 || gw.state !== 'shared') return null;
  const h = gateways[0]!.core.health.options;
  return { store: new SharedStore(h.failureThreshold, h.cooldownMs), delayMs: gw.propagation_delay_ms, endpointIds };
}

/**
 * Wraps each replica's affinity `pin` on the instance (as the gateway's `AffinitySync` does) so a
 * new pin is also sent to the others. Call once, after `replicaSync` returned non-null.
 */
export function publishPins(s: ReplayState): void {
  for (const g of s.gateways) {
    const t = g.core.affinity;
    const original = t.pin;
    g.unwrappedPin = original;
    t.pin = (callerKey: string, modelId: string, endpointId: string, nowMs: number): void => {
      original.call(t, callerKey, modelId, endpointId, nowMs);
      send(s, g.index, { kind: 'pin_set', callerKey, modelId, endpointId });
    };
  }
}

/** Replica `from`'s fact `ev` leaves now and reaches the store `delayMs` later. */
function send(s: ReplayState, from: number, ev: SyncEvent): void {
  s.q.push(s.now + s.sync!.delayMs, { k: 'sync', from, ev });
}

/**
 * After each event (shared state): compares every replica's breakers with what it last reported
 * and sends the differences; a breaker that (re)opened schedules its replica's probe claim.
 */
export function pollBreakers(s: ReplayState): void {
  const sync = s.sync!;
  for (const g of s.gateways) {
    const h = g.core.health;
    for (const ep of sync.endpointIds) {
      const snap = h.snapshotOf(ep, s.now);
      const prev = g.seen.get(ep) ?? UNSEEN_BREAKER;
      if (snap.consecutiveFailures === prev.fails && snap.state === prev.state && snap.openedAtMs === prev.openedAtMs) continue;
      const r = breakerReports(prev, snap, h.options.failureThreshold);
      for (const e of r.events) send(s, g.index, e);
      if (r.opened) {
        const at = Math.max(s.now, snap.openedAtMs! + h.options.cooldownMs - PROBE_LEAD_MS);
        s.q.push(at, { k: 'probe_claim', gateway: g.index, endpointId: ep, openedAtMs: snap.openedAtMs! });
      }
      g.seen.set(ep, r.seen);
    }
  }
}

/** A sync event from replica `from` reaches the store now: pins go to the other replicas, breaker facts through the store to all. */
export function onSync(s: ReplayState, from: number, ev: SyncEvent): void {
  if (ev.kind === 'pin_set') {
    for (const g of s.gateways) if (g.index !== from) applySharedPin(g.core.affinity, ev, s.now, g.unwrappedPin ?? g.core.affinity.pin);
    return;
  }
  for (const a of s.sync!.store.report(from, ev, s.now)) {
    s.result.events.push({ runId: s.runId, atMs: s.now, kind: 'sync', endpointId: a.kind === 'pin_set' ? null : a.endpointId, detailJson: JSON.stringify({ event: a.kind, gateway: from }) });
    if (a.kind === 'breaker_opened') for (const g of s.gateways) applySharedOpen(g.core.health, a.endpointId, s.now);
    // `breaker_closed`: each replica's breaker closes by its own probe (sync-events.ts).
  }
}

/**
 * Replica `gateway`'s cooldown of `endpointId` (opened at `openedAtMs`) is about to end: it claims
 * the one shared probe; a loser restarts its cooldown (as the gateway's `BreakerSync` does).
 */
export function onProbeClaim(s: ReplayState, gateway: number, endpointId: string, openedAtMs: number): void {
  const h = s.gateways[gateway]!.core.health;
  const snap = h.snapshotOf(endpointId, s.now);
  if (snap.state !== 'open' || snap.openedAtMs !== openedAtMs) return; // already moved on
  if (s.sync!.store.claimProbe(gateway, endpointId, s.now, h.options.cooldownMs + PROBE_LEAD_MS)) return;
  if (snap.probeInFlight) return;
  h.markDegraded(endpointId, s.now);
}
