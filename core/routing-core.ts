/**
 * The routing core's composition root: it builds the process-wide state every model kind shares
 * (endpoint health, cooldowns, Retry-After table, outbound slots, engine hold, prefill load,
 * session affinity, endpoint statistics), the admission gates over it (`admission/`), the model
 * registry (`model/model-registry.ts`), and hands each request to `request/request-life.ts`.
 * It decides nothing itself. One instance per process (gateway) or per run (simulator).
 * Sans-I/O: no clock, no randomness of its own, no environment.
 */
import type { Rng } from './rng.ts';
import type { ModelsConfig } from './config/models-config.ts';
import { StrategyRegistry } from './strategies/registry.ts';
import { HealthRegistry, type HealthOptions } from './health/health-registry.ts';
import type { LifecycleAction, RequestLife, RouteRequest } from './lifecycle/seam.ts';
import type { LifecycleDeps } from './request/router-deps.ts';
import { resolveRoutingSettings, type RoutingSettings } from './config/routing-settings.ts';
import { PrefillLoad } from './prefill/prefill-load.ts';
import { AffinityTable } from './affinity/affinity-table.ts';
import type { MultiTargetDeps } from './request/alias-deps.ts';
import { EndpointStats } from './stats/endpoint-stats.ts';
import { EngineSignals } from './stats/engine-signals.ts';
import { CooldownRegistry } from './health/cooldown.ts';
import { configureHealthChecks, HealthCheckRegistry, type HealthCheckResult, type HealthCheckTransition } from './health/health-checks.ts';
import { configureCooldowns } from './multi-target/multi-target-model.ts';
import { resolveMultiTargetOptions, type MultiTargetOptions } from './multi-target/multi-target-options.ts';
import { multiTargetStatuses, type MultiTargetStatus } from './multi-target/target-status.ts';
import { OutboundLimiter } from './outbound/outbound-limiter.ts';
import { EngineHold } from './outbound/engine-hold.ts';
import type { SlotTicket } from './outbound/slot-pool.ts';
import { RetryAfterTable } from './health/retry-after.ts';
import { buildAdmissions } from './admission/admission.ts';
import { KeyPools, type RouteKeyDeclaration } from './keys/key-pools.ts';
import { kindTakesReservations } from './keys/own-credential-kinds.ts';
import { routerPolicy } from './request/policy/kind-policy.ts';
import type { OffloadPolicy } from './offload/offload-policy.ts';
import { resolveModels } from './model/model-registry.ts';
import type { LifecycleEvent } from './lifecycle/seam.ts';
import type { ResolvedModel, RouteExclusion } from './model/resolved-model.ts';
import { startRequestLife, type LifeDeps } from './request/request-life.ts';
import type { RouteOverlay } from './config/route-overlay.ts';
import type { DefaultEndpoints } from './model/route-endpoints.ts';

/** Options of the core. */
export interface RoutingCoreOptions {
  health?: Partial<HealthOptions>;
  /**
   * Routing tunables (prefill-aware P2C, affinity): the snake_case `routing:` block of an
   * experiment file (any subset of keys), or a complete `RoutingSettings` such as
   * `routingSettingsFromEnv(process.env)`. Validated at construction; absent ⇒ the defaults.
   */
  settings?: Record<string, unknown> | RoutingSettings;
  registry?: StrategyRegistry;
  /** Deployment defaults of multi-target models (last-target retries, backoff, latency EWMA). */
  multiTarget?: Partial<MultiTargetOptions>;
  /** Weight overrides and disabled providers laid over the configured weights (`route-overlay.ts`). */
  overlay?: RouteOverlay;
  /**
   * The endpoint families a route of a given `kind` serves when its `endpoints:` lists none (the
   * gateway passes its adapters' lists). Absent, or undefined for a kind: such routes serve
   * every family.
   */
  defaultEndpoints?: DefaultEndpoints;
  /**
   * The previous configuration generation's core: its learned state (breakers and claims,
   * prefill leases and hints, affinity pins, outbound slots and limits, engine-hold places,
   * Retry-After times, endpoint latency and in-flight stats) is shared with this core instead of
   * starting fresh, and what is rebuilt with the models is taken over (cooldowns, multi-target
   * rate-limit buckets, planners' own state through `Planner.carryFrom`: RouteWise latency
   * profiles and quota spend), so every endpoint whose id is unchanged keeps what was learnt
   * about it. A piece whose options changed (health options; routing settings; multi-target
   * options; a cooldown or rate limit's own settings) starts fresh.
   */
  carryFrom?: RoutingCore;
  /**
   * Another core whose adaptive outbound limiter this core uses instead of its own: several
   * gateway replicas modelled with one replica-wide limit per provider key (the simulator's
   * shared-state replicas). Slots it grants to this core's lives are announced by that core's
   * `drainWakeups`, so a driver drains every core that shares it. Takes precedence over
   * `carryFrom` for the limiter.
   */
  outboundFrom?: RoutingCore;
}

/** The core. Construct once from a validated config; throws on unknown strategies or params. */
export class RoutingCore {
  /** Endpoint health shared by every model's router. */
  readonly health: HealthRegistry;
  /** The validated routing settings in force (frozen). */
  readonly settings: Readonly<RoutingSettings>;
  /** Prefill leases and prompt-size hints per endpoint, shared by every model. */
  readonly prefill: PrefillLoad;
  /** Session-affinity pins of (caller, model). */
  readonly affinity: AffinityTable;
  /** In-flight attempts and latency per endpoint (least_busy, least_latency), shared by every model. */
  readonly endpointStats: EndpointStats;
  /**
   * Engine load reports and KV events the driver forwards (cache-aware strategies), shared by
   * every model and carried to the next configuration generation.
   */
  readonly engineSignals: EngineSignals;
  /** Opt-in cooldown of direct models used as multi-target targets. */
  readonly cooldowns: CooldownRegistry;
  /**
   * Background health checks of routes (`health_check:`): their state, which the driver's probe
   * results feed through `recordHealthCheck`; enforcing ones refuse unhealthy endpoints.
   */
  readonly healthChecks: HealthCheckRegistry;
  /** Adaptive outbound slots per (provider, API key). */
  readonly limiter: OutboundLimiter;
  /** Engine-hold places per local engine. */
  readonly hold: EngineHold;
  /** Retry-After not-before times per endpoint. */
  readonly retryAfter: RetryAfterTable;
  /**
   * Upstream key pools by endpoint (seed 000 "为某个层级预留上游 key"): silence, bindings and the
   * operators' reservations and provider keys, carried to the next configuration generation.
   */
  readonly keyPools: KeyPools;
  /** Tickets granted from a queue whose lives have not been told yet (see `drainWakeups`). */
  private readonly wakeups: SlotTicket[];
  private readonly deps: LifecycleDeps;
  private readonly multiTargetDeps: MultiTargetDeps;
  private readonly lives: LifeDeps;
  private readonly models = new Map<string, ResolvedModel>();
  private readonly ordered: ResolvedModel[] = [];
  /** Latency EWMA alpha `endpointStats` was built with (decides whether a successor may share it). */
  private readonly mtAlpha: number;

  /**
   * @throws Error naming the model and field for an unknown router, bad router_params, a
   *   duplicate model id/alias, or two routes of one model with the same endpoint id; naming
   *   the key for bad routing settings; naming the model and `routing.strategy` for an unknown
   *   multi-target strategy or bad `routing.params`; RangeError for bad `multiTarget` options;
   *   Error naming the id when one `api_keys[].id` names two different keys.
   */
  constructor(config: ModelsConfig, options: RoutingCoreOptions = {}) {
    const prev = options.carryFrom;
    const health = new HealthRegistry(options.health ?? {});
    this.health = prev && sameValue(prev.health.options, health.options) ? prev.health : health;
    this.settings = resolveRoutingSettings(options.settings);
    const carry = prev !== undefined && sameValue(prev.settings, this.settings);
    this.wakeups = carry ? prev.wakeups : [];
    this.prefill = carry ? prev.prefill : new PrefillLoad(this.settings);
    this.affinity = carry ? prev.affinity : new AffinityTable(this.settings);
    const sink = (t: SlotTicket) => this.wakeups.push(t);
    const st = this.settings;
    this.limiter = options.outboundFrom ? options.outboundFrom.limiter : carry ? prev.limiter : new OutboundLimiter(
      {
        enabled: st.upstreamConcurrencyEnabled,
        initialLimit: st.upstreamConcurrencyInitialLimit,
        maxLimit: st.upstreamConcurrencyMaxLimit,
        probeSuccessInterval: st.upstreamConcurrencyProbeSuccessInterval,
      },
      sink,
    );
    this.hold = carry ? prev.hold : new EngineHold(sink);
    this.retryAfter = carry ? prev.retryAfter : new RetryAfterTable();
    this.cooldowns = new CooldownRegistry();
    this.healthChecks = new HealthCheckRegistry();
    this.keyPools = prev ? prev.keyPools : new KeyPools();
    const admissions = buildAdmissions({
      keyPools: this.keyPools,
      health: this.health,
      retryAfter: this.retryAfter,
      cooldowns: this.cooldowns,
      healthChecks: this.healthChecks,
      limiter: this.limiter,
      hold: this.hold,
      outboundLimitEnabled: st.upstreamConcurrencyEnabled,
    });
    this.deps = {
      health: this.health,
      prefill: this.prefill,
      affinity: this.affinity,
      settings: this.settings,
      limiter: this.limiter,
      hold: this.hold,
      retryAfter: this.retryAfter,
      admission: admissions.router,
      kindPolicy: routerPolicy(this.settings),
    };
    const mtOptions = resolveMultiTargetOptions(options.multiTarget);
    this.endpointStats = carry && prev.mtAlpha === mtOptions.latencyEwmaAlpha ? prev.endpointStats : new EndpointStats(mtOptions.latencyEwmaAlpha);
    this.mtAlpha = mtOptions.latencyEwmaAlpha;
    this.multiTargetDeps = {
      health: this.health,
      stats: this.endpointStats,
      cooldowns: this.cooldowns,
      options: mtOptions,
      settings: this.settings,
      limiter: this.limiter,
      retryAfter: this.retryAfter,
      admission: admissions.alias,
    };
    this.lives = { router: this.deps, alias: this.multiTargetDeps, stats: this.endpointStats };
    // Outbound keys by endpoint id, filled as routes resolve; read at decision time only.
    const outboundKeys = new Map<string, string | null>();
    const outbound = {
      slotFree: (endpointId: string): boolean => {
        const key = outboundKeys.get(endpointId);
        return key == null || !this.settings.upstreamConcurrencyEnabled || this.limiter.hasFreeSlot(key);
      },
    };
    this.engineSignals = prev ? prev.engineSignals : new EngineSignals();
    const context = { settings: this.settings, prefill: this.prefill, endpoints: this.endpointStats, outbound, engines: this.engineSignals };
    const registry = options.registry ?? new StrategyRegistry();
    resolveModels(config, registry, context, outboundKeys, this.models, this.ordered, options.overlay, options.defaultEndpoints);
    configureCooldowns(config, (m) => this.models.get(m.id), this.cooldowns);
    configureHealthChecks(config, (m) => this.models.get(m.id), this.healthChecks);
    const declared: RouteKeyDeclaration[] = [];
    for (const m of this.ordered) {
      if (m.multiTarget) continue; // its routes are its targets', declared under their own models
      for (const r of m.routes) declared.push({ endpointId: r.endpointId, provider: r.provider, outboundKey: r.outboundKey, listed: r.keysListed, keys: r.keys, reservable: kindTakesReservations(r.kind) });
    }
    this.keyPools.configure(declared);
    if (prev) this.carryModelState(prev);
  }

  /**
   * Takes over, model by model (same id), what `prev`'s models learnt: cooldowns, planners' own
   * state, and multi-target rate-limit buckets of targets whose endpoint id is unchanged.
   */
  private carryModelState(prev: RoutingCore): void {
    this.cooldowns.carryFrom(prev.cooldowns);
    this.healthChecks.carryFrom(prev.healthChecks);
    for (const m of this.ordered) {
      const p = prev.models.get(m.id);
      if (!p || p.id !== m.id) continue;
      m.planner.carryFrom?.(p.planner);
      for (const t of m.multiTarget?.targets ?? []) {
        const old = p.multiTarget?.targets.find((o) => o.endpointId === t.endpointId);
        if (t.rateLimit && old?.rateLimit) t.rateLimit.carryFrom(old.rateLimit);
      }
    }
  }

  /** The model for an id or alias, or undefined. */
  model(idOrAlias: string): ResolvedModel | undefined {
    return this.models.get(idOrAlias);
  }

  /** Every model once, in configuration order. */
  allModels(): readonly ResolvedModel[] {
    return this.ordered;
  }

  /** Routes with effective weight 0 or a weight different from the configured one, with reasons. */
  routeExclusions(): RouteExclusion[] {
    const out: RouteExclusion[] = [];
    for (const m of this.ordered) {
      if (m.multiTarget) continue; // its routes are its targets', reported under their own models
      for (const r of m.routes) {
        if (r.exclusionReasons.length === 0) continue;
        out.push({
          modelId: m.id,
          endpointId: r.endpointId,
          baseUrl: r.baseUrl,
          configuredWeight: r.configuredWeight,
          effectiveWeight: r.effectiveWeight,
          reasons: [...r.exclusionReasons],
        });
      }
    }
    return out;
  }

  /**
   * Begins a request's life at `nowMs`. `rng` is the caller's stream for this strategy; the
   * life keeps it for later draws. Returns the life and its first actions.
   * @throws RangeError when `request.inputTokens` is not an integer ≥ 0 (a driver bug: the
   *   prefill accounting needs exact integer sums).
   */
  start(request: RouteRequest, nowMs: number, rng: Rng): { life: RequestLife; actions: LifecycleAction[] } {
    const t = request.inputTokens;
    if (!Number.isSafeInteger(t) || t < 0) throw new RangeError(`request ${request.requestId}: inputTokens must be an integer >= 0, got ${t}`);
    const model = this.models.get(request.model) ?? null;
    return startRequestLife(model, request, this.lives, nowMs, rng);
  }

  /** The shared state lives run on; for code that builds a `router:` life itself (`routerLife`, RouteWise tap). */
  get lifecycleDeps(): LifecycleDeps {
    return this.deps;
  }

  /**
   * Slots and hold places granted from a queue since the last call, as `slot_acquired` events
   * for the lives that waited. A driver calls this after every `start`/`step` it performs and
   * steps each `life` with its `event` (applying the actions as usual); repeat until empty.
   * A driver that never calls it still works: a granted waiter is sent at its give-up deadline.
   */
  /** Whether granted slots wait for `drainWakeups` (a check that allocates nothing). */
  get hasWakeups(): boolean {
    return this.wakeups.length > 0;
  }

  drainWakeups(): Array<{ life: RequestLife; event: LifecycleEvent }> {
    const out: Array<{ life: RequestLife; event: LifecycleEvent }> = [];
    for (const t of this.wakeups.splice(0)) {
      if (t.state !== 'held') continue; // the life ended or gave up meanwhile
      const owner = t.owner as { outerLife: RequestLife | null } & RequestLife; // a `Life`
      const life = owner.outerLife ?? owner;
      if (life && !life.isDone) out.push({ life, event: { kind: 'slot_acquired', attemptId: t.attemptId } });
    }
    return out;
  }

  /** Offload policies of per-model routers (admin view), with `active` and `inactiveReason`. */
  offloadPolicies(): Array<{ modelId: string; policy: OffloadPolicy }> {
    const out: Array<{ modelId: string; policy: OffloadPolicy }> = [];
    for (const m of this.ordered) if (m.offload) out.push({ modelId: m.id, policy: m.offload });
    return out;
  }

  /**
   * Multi-target models and their targets' status at `nowMs` (GET /health/deep): each model
   * `not_applicable`, each target `healthy` or `cooldown` with its reason. Pure.
   */
  multiTargetStatus(nowMs: number): MultiTargetStatus[] {
    return multiTargetStatuses(this.ordered, nowMs, this.health, this.cooldowns, this.endpointStats, this.healthChecks);
  }

  /**
   * Applies one background health-check probe's `result` for `endpointId` at `nowMs` (the driver
   * calls it as each probe ends). An enforcing check that turns unhealthy takes the endpoint out
   * of every candidate set and hash ring from this call on; one that turns healthy puts it back.
   * Returns the state change, or null.
   * @throws Error when `endpointId` has no health check in this core (a driver bug).
   */
  recordHealthCheck(endpointId: string, result: HealthCheckResult, nowMs: number): HealthCheckTransition | null {
    return this.healthChecks.record(endpointId, result, nowMs);
  }

  /**
   * Checks the shared state: health (claims, breakers), prefill (leases sum to the loads, none
   * negative), affinity (size bound, max age), endpoint stats (in-flight ≥ 0), cooldowns,
   * multi-target rate limits, outbound slots, engine-hold places and Retry-After times. For tests and the simulator's checked mode.
   * @throws Error describing the first violation.
   */
  invariants(): void {
    this.health.invariants();
    this.prefill.invariants();
    this.affinity.invariants();
    this.endpointStats.invariants();
    this.engineSignals.invariants();
    this.cooldowns.invariants();
    this.healthChecks.invariants();
    this.limiter.invariants();
    this.hold.invariants();
    this.retryAfter.invariants();
    for (const m of this.ordered) for (const t of m.multiTarget?.targets ?? []) t.rateLimit?.invariants();
  }
}

/** Structural equality of two option objects (plain data: numbers, strings, booleans, arrays). */
function sameValue(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}
