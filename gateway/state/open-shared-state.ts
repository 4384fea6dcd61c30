/**
 * Starts the shared routing state `state:` asks for: nothing for `backend: local`; for `redis`, a
 * `SharedState` (its own clients, started on local state when Redis cannot be reached within
 * `connect_timeout_ms`) bridged to the core's breakers by a `BreakerSync` and to its affinity pins
 * by an `AffinitySync`; with `keyPools` wired, also a `SharedQuotas` (window quotas, concurrency
 * reservations, key silences and bindings) bridged to the core's key pools by a `KeyPoolSync` and to the request
 * path by `SharedUnits` (RouteWise quota and concurrency units, per-target rate limits).
 */
import type { Logger } from 'pino';
import { Counter, Gauge, type Registry } from 'prom-client';
import type { HealthRegistry } from '../../core/health/health-registry.ts';
import type { StateConfig } from '../config/gateway-settings.ts';
import type { AffinityTable } from '../../core/affinity/affinity-table.ts';
import { AffinitySync } from './affinity-sync.ts';
import { BreakerSync } from './breaker-sync.ts';
import { SharedState, type SharedStateHealth } from './shared-state.ts';
import type { KeyPools } from '../../core/keys/key-pools.ts';
import { KeyPoolSync } from './key-pool-sync.ts';
import { SharedQuotas } from './quota-sync.ts';
import { SharedUnits } from './shared-units.ts';
import type { OutboundLimiter } from '../../core/outbound/outbound-limiter.ts';
import { OutboundSync, type OutboundSyncHealth } from './outbound-sync.ts';

/** The running shared state of one gateway process. */
export interface RunningSharedState {
  readonly shared: SharedState;
  /** Shared window quotas, concurrency reservations and key silences (null without `keyPools` wired). */
  readonly quotas: SharedQuotas | null;
  /** The request path's shared units over `quotas` (RouteWise quota and concurrency, target rate limits); null with it. */
  readonly units: SharedUnits | null;
  /** For `/health/deep` (with the outbound leases when the gateway shares its limiter). */
  health(): SharedStateHealth & { outbound?: OutboundSyncHealth };
  close(): Promise<void>;
}

/** What `openSharedState` needs from the gateway. */
export interface SharedStateWiring {
  /** This replica's id (unique among the replicas sharing the server). */
  replicaId: string;
  /** The breaker registry in force. */
  health: () => HealthRegistry;
  /** The core's clock, ms. */
  now: () => number;
  /** The affinity table in force and its pin TTL, ms. */
  affinity: () => AffinityTable;
  affinityTtlMs: () => number;
  /** The configured endpoint ids. */
  endpoints: () => Iterable<string>;
  log: Pick<Logger, 'warn'>;
  /** The core's key pools, whose silences are shared (not shared when absent). */
  keyPools?: () => KeyPools;
  /** Where the shared state's gauges go (none when absent). */
  registry?: Registry;
  /** The core's outbound limiter in force, to share its limits replica-wide (not shared when absent). */
  limiter?: () => OutboundLimiter;
  /** Steps the lives a slot was granted to outside a request's own step (the core's wake-ups). */
  deliverWakeups?: () => void;
  /** The longest a request may run, ms (a concurrency hold lapses in Redis after it). Default 30 min. */
  overallDeadlineMs?: () => number;
}

/**
 * Opens the shared state of `cfg`; null for `backend: local`. Never throws because Redis is
 * down: the replica then starts on local state and reconnects in the background.
 */
export async function openSharedState(cfg: StateConfig, w: SharedStateWiring): Promise<RunningSharedState | null> {
  if (cfg.backend === 'local') return null;
  const h = w.health();
  let sync: BreakerSync | null = null;
  let pins: AffinitySync | null = null;
  const shared = new SharedState(cfg, {
    replicaId: w.replicaId,
    failureThreshold: h.options.failureThreshold,
    cooldownMs: h.options.cooldownMs,
    warn: (m) => w.log.warn({ backend: 'redis', url: redact(cfg.url) }, m),
    listener: {
      onBreakerOpen: (ep) => sync?.onSharedOpen(ep),
      onPin: (key, ep, expiresAtMs) => pins?.onSharedPin(key, ep, expiresAtMs, Date.now()),
    },
  });
  sync = new BreakerSync(shared, {
    health: w.health,
    now: w.now,
    endpoints: w.endpoints,
    pollMs: Math.max(5, Math.min(25, cfg.max_staleness_ms / 4)),
    leadMs: cfg.acquire_timeout_ms * 2,
  });
  pins = new AffinitySync(shared, w.affinity, w.now, w.affinityTtlMs, 100);
  const limiter = w.limiter;
  const outbound = limiter ? new OutboundSync(cfg, { replicaId: w.replicaId, limiter, deliverWakeups: w.deliverWakeups ?? (() => {}), warn: (m) => w.log.warn({ backend: 'redis', url: redact(cfg.url) }, m) }) : null;
  await Promise.all([shared.start(), outbound?.start()]);
  let keySync: KeyPoolSync | null = null;
  const quotas = w.keyPools
    ? new SharedQuotas(cfg, {
        replicaId: w.replicaId,
        onSilence: (name, untilMs) => keySync?.onSharedSilence(name, untilMs),
        onBinding: (name, fingerprint, expiresAtMs) => keySync?.onSharedBinding(name, fingerprint, expiresAtMs),
      })
    : null;
  if (quotas && w.keyPools) {
    keySync = new KeyPoolSync(quotas, { pools: w.keyPools, now: w.now, pollMs: Math.max(5, Math.min(25, cfg.max_staleness_ms / 4)) });
    await quotas.start();
  }
  const units = quotas ? new SharedUnits(quotas, { now: w.now, factTtlMs: cfg.max_staleness_ms, holdMs: () => (w.overallDeadlineMs?.() ?? 1_800_000) + 10_000 }) : null;
  if (w.registry) {
    const reg = [w.registry];
    new Gauge({ name: 'switchyard_shared_state_up', help: 'Whether the shared routing state (Redis) is reachable (1) or the replica serves on local state (0).', registers: reg, collect() { this.set(shared.health().status === 'up' ? 1 : 0); } });
    countFrom(reg, 'switchyard_shared_state_outages_total', 'Redis outages seen since start.', () => shared.health().outages);
    countFrom(reg, 'switchyard_shared_state_fallbacks_total', 'Shared-unit claims answered from local state (Redis down or slower than state.acquire_timeout_ms).', () => shared.health().fallbacks);
    if (quotas) countFrom(reg, 'switchyard_shared_quota_fallbacks_total', 'Shared quota takes and concurrency reservations answered from the local share (Redis down or slower than state.acquire_timeout_ms).', () => quotas.health().fallbacks);
    if (units) {
      const seen = { quota: 0, concurrency: 0, rate_limit: 0 };
      new Counter({
        name: 'switchyard_shared_units_refused_total',
        help: 'Attempts not sent because a limit shared with the other replicas (RouteWise quota or concurrency, target rate limit) was spent; the request fell to its next route or target.',
        labelNames: ['unit'],
        registers: reg,
        collect() {
          for (const unit of ['quota', 'concurrency', 'rate_limit'] as const) {
            const now = units.refused[unit];
            if (now > seen[unit]) this.inc({ unit }, now - seen[unit]);
            seen[unit] = Math.max(seen[unit], now);
          }
        },
      });
    }
    if (outbound) countFrom(reg, 'switchyard_shared_state_outbound_fallbacks_total', 'Outbound slots beyond the leased share whose Redis ask timed out (state.acquire_timeout_ms) or failed; the request waited on the local share.', () => outbound.health().fallbacks);
    countFrom(reg, 'switchyard_shared_state_failed_writes_total', 'Shared-state writes that could not reach Redis (kept locally, pushed on reconcile).', () => shared.health().failedWrites);
  }
  return {
    shared,
    quotas,
    units,
    health: () => (outbound ? { ...shared.health(), outbound: outbound.health() } : shared.health()),
    close: async () => {
      keySync?.close();
      await quotas?.close();
      sync?.close();
      pins?.close();
      await outbound?.close();
      await shared.close();
    },
  };
}

/** A counter that follows a monotonic count kept elsewhere (`read`), brought up to date at each scrape. */
function countFrom(registers: Registry[], name: string, help: string, read: () => number): void {
  let seen = 0;
  new Counter({
    name,
    help,
    registers,
    collect() {
      const now = read();
      if (now > seen) this.inc(now - seen);
      seen = Math.max(seen, now);
    },
  });
}

/** `url` without its password, for logs. */
function redact(url: string): string {
  return url.replace(/\/\/([^:@/]*):[^@/]*@/, '//$1:***@');
}
