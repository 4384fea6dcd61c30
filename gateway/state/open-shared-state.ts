/**
 * Starts the shared routing state `state:` asks for: nothing for `backend: local`; for `redis`, a
 * `SharedState` (its own clients, started on local state when Redis cannot be reached within
 * `connect_timeout_ms`) bridged to the core's breakers by a `BreakerSync` and to its affinity pins
 * by an `AffinitySync`.
 */
import type { Logger } from 'pino';
import { Gauge, type Registry } from 'prom-client';
import type { HealthRegistry } from '../../core/health/health-registry.ts';
import type { StateConfig } from '../config/gateway-settings.ts';
import type { AffinityTable } from '../../core/affinity/affinity-table.ts';
import { AffinitySync } from './affinity-sync.ts';
import { BreakerSync } from './breaker-sync.ts';
import { SharedState, type SharedStateHealth } from './shared-state.ts';

/** The running shared state of one gateway process. */
export interface RunningSharedState {
  readonly shared: SharedState;
  /** For `/health/deep`. */
  health(): SharedStateHealth;
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
  /** Where the shared state's gauges go (none when absent). */
  registry?: Registry;
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
  await shared.start();
  if (w.registry) {
    const reg = [w.registry];
    new Gauge({ name: 'switchyard_shared_state_up', help: 'Whether the shared routing state (Redis) is reachable (1) or the replica serves on local state (0).', registers: reg, collect() { this.set(shared.health().status === 'up' ? 1 : 0); } });
    new Gauge({ name: 'switchyard_shared_state_outages', help: 'Redis outages seen since start.', registers: reg, collect() { this.set(shared.health().outages); } });
    new Gauge({ name: 'switchyard_shared_state_fallbacks', help: 'Shared-unit claims answered from local state (Redis down or slower than state.acquire_timeout_ms).', registers: reg, collect() { this.set(shared.health().fallbacks); } });
    new Gauge({ name: 'switchyard_shared_state_failed_writes', help: 'Shared-state writes that could not reach Redis (kept locally, pushed on reconcile).', registers: reg, collect() { this.set(shared.health().failedWrites); } });
  }
  return {
    shared,
    health: () => shared.health(),
    close: async () => {
      sync?.close();
      pins?.close();
      await shared.close();
    },
  };
}

/** `url` without its password, for logs. */
function redact(url: string): string {
  return url.replace(/\/\/([^:@/]*):[^@/]*@/, '//$1:***@');
}
