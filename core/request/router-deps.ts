/**
 * The process-wide state a per-model (`router:`) life works with, and how a partial set (code
 * that builds deps by hand, tests, benches) is completed with private, unshared tables.
 */
import type { HealthRegistry } from '../health/health-registry.ts';
import type { RoutingSettings } from '../config/routing-settings.ts';
import type { PrefillLoad } from '../prefill/prefill-load.ts';
import type { AffinityTable } from '../affinity/affinity-table.ts';
import { OutboundLimiter } from '../outbound/outbound-limiter.ts';
import { EngineHold } from '../outbound/engine-hold.ts';
import { RetryAfterTable } from '../health/retry-after.ts';
import { CooldownRegistry } from '../health/cooldown.ts';
import { buildAdmissions, type Admission } from '../admission/admission.ts';
import { routerPolicy, type RequestKindPolicy } from './policy/kind-policy.ts';

export interface LifecycleDeps {
  readonly health: HealthRegistry;
  readonly prefill: PrefillLoad;
  readonly affinity: AffinityTable;
  readonly settings: Readonly<RoutingSettings>;
  /**
   * Adaptive outbound slots per provider key (seed 000 "出站并发"). Optional only so that code
   * building deps by hand keeps compiling; absent ⇒ a private, unshared instance (use
   * `RoutingCore.lifecycleDeps` to share the core's).
   */
  readonly limiter?: OutboundLimiter;
  /** Engine-hold places per local engine (seed 000 "引擎队列上限"); absent ⇒ private instance. */
  readonly hold?: EngineHold;
  /** Not-before times from Retry-After; absent ⇒ private instance. */
  readonly retryAfter?: RetryAfterTable;
  /**
   * The gates every attempt asks (`admission/admission.ts`), over the tables above; absent ⇒
   * built from them (use `RoutingCore.lifecycleDeps` to share the core's).
   */
  readonly admission?: Admission;
  /** The `router:` family's attempt policy under `settings`; absent ⇒ derived from them. */
  readonly kindPolicy?: RequestKindPolicy;
}

/** `LifecycleDeps` with every shared table present. */
export type FullDeps = Required<LifecycleDeps>;

/** `d` itself when every table is present, else `d` with the missing ones built from its settings. */
export function completeDeps(d: LifecycleDeps): FullDeps {
  if (d.limiter && d.hold && d.retryAfter && d.admission && d.kindPolicy) return d as FullDeps;
  const s = d.settings;
  const limiter =
    d.limiter ??
    new OutboundLimiter(
      { enabled: s.upstreamConcurrencyEnabled, initialLimit: s.upstreamConcurrencyInitialLimit, maxLimit: s.upstreamConcurrencyMaxLimit, probeSuccessInterval: s.upstreamConcurrencyProbeSuccessInterval },
      () => {},
    );
  const hold = d.hold ?? new EngineHold(() => {});
  const retryAfter = d.retryAfter ?? new RetryAfterTable();
  const admission =
    d.admission ??
    buildAdmissions({ health: d.health, retryAfter, cooldowns: new CooldownRegistry(), limiter, hold, outboundLimitEnabled: s.upstreamConcurrencyEnabled }).router;
  return { ...d, limiter, hold, retryAfter, admission, kindPolicy: d.kindPolicy ?? routerPolicy(s) };
}
