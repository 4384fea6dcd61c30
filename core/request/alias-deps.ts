/** The process-wide state a multi-target alias's life works with, owned by `RoutingCore`. */
import type { HealthRegistry } from '../health/health-registry.ts';
import type { EndpointStats } from '../stats/endpoint-stats.ts';
import type { RoutingSettings } from '../config/routing-settings.ts';
import type { OutboundLimiter } from '../outbound/outbound-limiter.ts';
import type { RetryAfterTable } from '../health/retry-after.ts';
import type { Admission } from '../admission/admission.ts';
import type { CooldownRegistry } from '../health/cooldown.ts';
import type { MultiTargetOptions } from '../multi-target/multi-target-options.ts';

/** Process-wide state a multi-target life uses. */
export interface MultiTargetDeps {
  readonly health: HealthRegistry;
  readonly stats: EndpointStats;
  readonly cooldowns: CooldownRegistry;
  readonly options: Readonly<MultiTargetOptions>;
  readonly settings: Readonly<RoutingSettings>;
  /** Outbound slots per provider key, shared with per-model routers. */
  readonly limiter: OutboundLimiter;
  /** Retry-After not-before times per endpoint, shared with per-model routers. */
  readonly retryAfter: RetryAfterTable;
  /** The gates every attempt asks (checks: Retry-After, cooldown; rate limit; outbound slot). */
  readonly admission: Admission;
}
