/**
 * Background health checks of endpoints, as state (seed 000's route `health_check:` probes, which
 * only report; seed 003's health checks of direct models, which take a target that fails them out
 * of candidate sets and hash rings until it passes again). The driver owns the timers and sends
 * the probes; it hands each probe's result to `record` with its `nowMs`, and this registry applies
 * it deterministically. No clock, no timer, no I/O.
 *
 * The state machine per endpoint is the threshold rule of Envoy's active health checking
 * (`unhealthy_threshold` / `healthy_threshold`) and of Kubernetes probes (`failureThreshold` /
 * `successThreshold`): an endpoint starts `healthy` (a check is opt-in, so turning it on never
 * takes traffic away before a probe has failed); `unhealthyThreshold` failed probes in a row make
 * it `unhealthy`; `healthyThreshold` passed probes in a row make it `healthy` again. A pass
 * resets the failure run and a failure resets the pass run, so the state is a function of the
 * results alone: unhealthy iff some run of `unhealthyThreshold` failures has not been followed by
 * a run of `healthyThreshold` passes.
 *
 * Two modes, named as the seeds' two kinds: `report_only` (seed 000: shown in GET /health/deep,
 * never changes routing) and `enforce` (seed 003: while unhealthy the endpoint is refused by the
 * `health_check` admission gate, so it leaves every candidate set and is skipped on the ring).
 */
import type { HealthCheckConfig, ModelConfig, ModelsConfig } from '../config/models-config.ts';
import type { ResolvedModel } from '../model/resolved-model.ts';

/** The two kinds of background check (see the module comment). */
export type HealthCheckMode = 'report_only' | 'enforce';

/** A configured check of one endpoint, resolved from models.yaml's `health_check:` block. */
export interface HealthCheckPolicy {
  readonly mode: HealthCheckMode;
  /** Between the starts of two probes of this endpoint, ms > 0. */
  readonly intervalMs: number;
  /** Bound on one probe, ms > 0; a probe still running then is aborted and counts as failed. */
  readonly timeoutMs: number;
  /** Failed probes in a row that make a healthy endpoint unhealthy, integer ≥ 1. */
  readonly unhealthyThreshold: number;
  /** Passed probes in a row that make an unhealthy endpoint healthy, integer ≥ 1. */
  readonly healthyThreshold: number;
}

/** One probe's result as the driver reports it. */
export interface HealthCheckResult {
  readonly passed: boolean;
  /**
   * Why it failed (`timeout`, `transport_error`, `http_503`, …); null when it passed. Kept as the
   * endpoint's `lastReason` and reported as the reason of an unhealthy transition.
   */
  readonly reason: string | null;
  /** From sending the probe to its end (or its timeout), ms ≥ 0. */
  readonly latencyMs: number;
}

/** The health-check state of one endpoint, the `status_reason` of an enforced exclusion. */
export const HEALTH_CHECK_FAILED = 'health_check_failed';

/** One endpoint's health-check state as data (GET /health/deep, /status/models). */
export interface HealthCheckStatus {
  readonly endpointId: string;
  readonly mode: HealthCheckMode;
  readonly state: 'healthy' | 'unhealthy';
  /** Whether routing leaves the endpoint out now: `enforce` and `unhealthy`. */
  readonly excluded: boolean;
  /** Length of the current run of failed / passed probes (one of the two is 0 after a probe). */
  readonly consecutiveFailures: number;
  readonly consecutivePasses: number;
  /** Probes recorded since the check was configured (carried over a reload that keeps it). */
  readonly probes: number;
  /** `pass` / `fail` of the last probe; null before the first. */
  readonly lastResult: 'pass' | 'fail' | null;
  /** The last failure's reason (kept after later passes, for the operator); null if none yet. */
  readonly lastFailureReason: string | null;
  /** The last probe's latency, ms; null before the first. */
  readonly lastLatencyMs: number | null;
  /** `nowMs` of the last probe; null before the first. */
  readonly lastCheckedAtMs: number | null;
  /** `nowMs` of the last state change; null while it never changed. */
  readonly changedAtMs: number | null;
}

/** A state change (for driver logs and metrics). */
export interface HealthCheckTransition {
  readonly endpointId: string;
  readonly mode: HealthCheckMode;
  readonly from: 'healthy' | 'unhealthy';
  readonly to: 'healthy' | 'unhealthy';
  readonly atMs: number;
  /** The failing probe's reason for `to: unhealthy`; null for `to: healthy`. */
  readonly reason: string | null;
}

interface Entry {
  readonly policy: HealthCheckPolicy;
  unhealthy: boolean;
  failures: number;
  passes: number;
  probes: number;
  lastResult: 'pass' | 'fail' | null;
  lastFailureReason: string | null;
  lastLatencyMs: number | null;
  lastCheckedAtMs: number | null;
  changedAtMs: number | null;
}

const MODES: readonly HealthCheckMode[] = ['report_only', 'enforce'];

/**
 * Validates a policy (the config schema already did for YAML; this guards hand-built ones).
 * @throws RangeError naming the field and the allowed range.
 */
export function checkHealthCheckPolicy(p: HealthCheckPolicy, where: string): void {
  if (!MODES.includes(p.mode)) throw new RangeError(`${where}: mode must be report_only or enforce, got ${String(p.mode)}`);
  for (const k of ['intervalMs', 'timeoutMs'] as const) {
    if (!(Number.isFinite(p[k]) && p[k] > 0)) throw new RangeError(`${where}: ${k} must be a finite number of ms > 0, got ${p[k]}`);
  }
  for (const k of ['unhealthyThreshold', 'healthyThreshold'] as const) {
    if (!(Number.isSafeInteger(p[k]) && p[k] >= 1)) throw new RangeError(`${where}: ${k} must be an integer >= 1, got ${p[k]}`);
  }
}

function samePolicy(a: HealthCheckPolicy, b: HealthCheckPolicy): boolean {
  return a.mode === b.mode && a.unhealthyThreshold === b.unhealthyThreshold && a.healthyThreshold === b.healthyThreshold;
}

/**
 * Health-check state of every endpoint with a configured check, keyed by endpoint id. One per
 * configuration generation (built with the core); `carryFrom` takes over the previous one's state.
 */
export class HealthCheckRegistry {
  private readonly entries = new Map<string, Entry>();
  /** Endpoints `enforce` and `unhealthy` now; 0 lets the gate answer without a lookup. */
  private excludedCount = 0;

  /** True when no endpoint has a check configured. */
  get isEmpty(): boolean {
    return this.entries.size === 0;
  }

  /** True when no endpoint is excluded now (then the gate admits every target). */
  get excludesNone(): boolean {
    return this.excludedCount === 0;
  }

  /**
   * Opts `endpointId` into a check with `policy`; fresh state (healthy, no probes). Configuring
   * an endpoint twice keeps the first policy (one endpoint id is one route).
   * @throws RangeError for a bad policy (`checkHealthCheckPolicy`).
   */
  configure(endpointId: string, policy: HealthCheckPolicy): void {
    checkHealthCheckPolicy(policy, `health_check of '${endpointId}'`);
    if (this.entries.has(endpointId)) return;
    this.entries.set(endpointId, {
      policy,
      unhealthy: false,
      failures: 0,
      passes: 0,
      probes: 0,
      lastResult: null,
      lastFailureReason: null,
      lastLatencyMs: null,
      lastCheckedAtMs: null,
      changedAtMs: null,
    });
  }

  /** The policy of `endpointId`'s check, or null when it has none. */
  policyOf(endpointId: string): HealthCheckPolicy | null {
    return this.entries.get(endpointId)?.policy ?? null;
  }

  /** Every configured endpoint and its policy, in configuration order. */
  configured(): Array<{ endpointId: string; policy: HealthCheckPolicy }> {
    return [...this.entries].map(([endpointId, e]) => ({ endpointId, policy: e.policy }));
  }

  /**
   * Applies one probe's `result` for `endpointId` at `nowMs` (the threshold rule of the module
   * comment). Returns the state change it caused, or null.
   * @throws Error when `endpointId` has no check configured (a driver bug); RangeError when
   *   `nowMs` or `result.latencyMs` is not finite.
   */
  record(endpointId: string, result: HealthCheckResult, nowMs: number): HealthCheckTransition | null {
    if (!Number.isFinite(nowMs)) throw new RangeError(`nowMs must be a finite number of ms, got ${nowMs}`);
    if (!Number.isFinite(result.latencyMs)) throw new RangeError(`latencyMs must be a finite number of ms, got ${result.latencyMs}`);
    const e = this.entries.get(endpointId);
    if (!e) throw new Error(`health check result for '${endpointId}', which has no health_check configured`);
    e.probes++;
    e.lastCheckedAtMs = nowMs;
    e.lastLatencyMs = result.latencyMs;
    const from = e.unhealthy ? 'unhealthy' : 'healthy';
    if (result.passed) {
      e.lastResult = 'pass';
      e.failures = 0;
      e.passes++;
      if (e.unhealthy && e.passes >= e.policy.healthyThreshold) this.set(e, false);
    } else {
      e.lastResult = 'fail';
      e.lastFailureReason = result.reason ?? 'failed';
      e.passes = 0;
      e.failures++;
      if (!e.unhealthy && e.failures >= e.policy.unhealthyThreshold) this.set(e, true);
    }
    const to = e.unhealthy ? 'unhealthy' : 'healthy';
    if (from === to) return null;
    e.changedAtMs = nowMs;
    return { endpointId, mode: e.policy.mode, from, to, atMs: nowMs, reason: e.unhealthy ? e.lastFailureReason : null };
  }

  /** Whether routing must leave `endpointId` out: its check enforces and reads unhealthy. Pure. */
  excludes(endpointId: string): boolean {
    if (this.excludedCount === 0) return false;
    const e = this.entries.get(endpointId);
    return e !== undefined && e.unhealthy && e.policy.mode === 'enforce';
  }

  /** `endpointId`'s state, or null when it has no check configured. Pure. */
  status(endpointId: string): HealthCheckStatus | null {
    const e = this.entries.get(endpointId);
    if (!e) return null;
    return {
      endpointId,
      mode: e.policy.mode,
      state: e.unhealthy ? 'unhealthy' : 'healthy',
      excluded: e.unhealthy && e.policy.mode === 'enforce',
      consecutiveFailures: e.failures,
      consecutivePasses: e.passes,
      probes: e.probes,
      lastResult: e.lastResult,
      lastFailureReason: e.lastFailureReason,
      lastLatencyMs: e.lastLatencyMs,
      lastCheckedAtMs: e.lastCheckedAtMs,
      changedAtMs: e.changedAtMs,
    };
  }

  /** Every configured endpoint's state, in configuration order. Pure. */
  snapshot(): HealthCheckStatus[] {
    return [...this.entries.keys()].map((id) => this.status(id)!);
  }

  /**
   * Takes over `prev`'s state for every endpoint configured in both with the same mode and
   * thresholds (a reload that leaves a check alone keeps its verdict and its runs); an endpoint
   * whose check changed starts fresh. Interval and timeout may change without losing state.
   */
  carryFrom(prev: HealthCheckRegistry): void {
    for (const [id, e] of this.entries) {
      const old = prev.entries.get(id);
      if (!old || !samePolicy(old.policy, e.policy)) continue;
      if (old.unhealthy !== e.unhealthy) this.set(e, old.unhealthy);
      e.failures = old.failures;
      e.passes = old.passes;
      e.probes = old.probes;
      e.lastResult = old.lastResult;
      e.lastFailureReason = old.lastFailureReason;
      e.lastLatencyMs = old.lastLatencyMs;
      e.lastCheckedAtMs = old.lastCheckedAtMs;
      e.changedAtMs = old.changedAtMs;
    }
  }

  /**
   * Checks the registry's consistency (tests, the simulator's checked mode).
   * @throws Error describing the first violation: negative or non-integer runs, both runs > 0,
   *   an unhealthy endpoint whose pass run reached `healthyThreshold`, a healthy one whose failure
   *   run reached `unhealthyThreshold`, or an excluded count that disagrees with the entries.
   */
  invariants(): void {
    let excluded = 0;
    for (const [id, e] of this.entries) {
      for (const k of ['failures', 'passes', 'probes'] as const) {
        if (!Number.isSafeInteger(e[k]) || e[k] < 0) throw new Error(`health check '${id}': ${k} ${e[k]} is not an integer >= 0`);
      }
      if (e.failures > 0 && e.passes > 0) throw new Error(`health check '${id}': a failure run (${e.failures}) and a pass run (${e.passes}) at once`);
      if (e.unhealthy && e.passes >= e.policy.healthyThreshold) throw new Error(`health check '${id}': unhealthy after ${e.passes} passes (healthy_threshold ${e.policy.healthyThreshold})`);
      if (!e.unhealthy && e.failures >= e.policy.unhealthyThreshold) throw new Error(`health check '${id}': healthy after ${e.failures} failures (unhealthy_threshold ${e.policy.unhealthyThreshold})`);
      if (e.unhealthy && e.policy.mode === 'enforce') excluded++;
    }
    if (excluded !== this.excludedCount) throw new Error(`health checks: ${excluded} endpoints excluded, counted ${this.excludedCount}`);
  }

  private set(e: Entry, unhealthy: boolean): void {
    if (e.unhealthy === unhealthy) return;
    e.unhealthy = unhealthy;
    if (e.policy.mode === 'enforce') this.excludedCount += unhealthy ? 1 : -1;
  }
}

/** A `health_check:` block as a policy. */
export function healthCheckPolicy(c: HealthCheckConfig): HealthCheckPolicy {
  return {
    mode: c.mode,
    intervalMs: c.interval_sec * 1000,
    timeoutMs: c.timeout_ms,
    unhealthyThreshold: c.unhealthy_threshold,
    healthyThreshold: c.healthy_threshold,
  };
}

/**
 * Opts into `registry` every route of a direct model that has a `health_check:` (its own, else its
 * model's). Multi-target models have none (the schema refuses one); their targets are the direct
 * models' routes, so a target's check is its direct model's.
 * @param direct the resolved model for a config entry (undefined when it was not resolved).
 * @throws RangeError for a bad policy (only when the config bypassed `ModelsConfigSchema`).
 */
export function configureHealthChecks(config: ModelsConfig, direct: (m: ModelConfig) => ResolvedModel | undefined, registry: HealthCheckRegistry): void {
  for (const m of config.models) {
    if (m.routing) continue;
    const resolved = direct(m);
    if (!resolved) continue;
    for (const r of resolved.routes) {
      const block = m.route[r.routeIndex]?.health_check ?? m.health_check;
      if (block) registry.configure(r.endpointId, healthCheckPolicy(block));
    }
  }
}
