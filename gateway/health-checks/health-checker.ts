/**
 * The gateway's driver of background health checks (`health_check:` on a route or a direct model
 * in models.yaml; seed 000's report-only probes, seed 003's enforcing checks). The core holds the
 * state and decides (`RoutingCore.recordHealthCheck`, `core/health/health-checks.ts`); this module
 * owns the timers and the sockets:
 *
 * - Every endpoint with a check is probed at once when its generation starts, then every
 *   `interval_sec` after the start of its previous probe (never two probes of one endpoint at a
 *   time: a slow probe delays the next).
 * - A probe is the admin verification's small request (`verifyUpstream`: `max_tokens: 1`, a
 *   one-character prompt, not streamed, `x-request-id: health-check-<uuid>`) through the adapter
 *   of the route's kind, its pool and key, bounded by `timeout_ms`. A 2xx answer passes; an error status, a transport failure or no
 *   answer in time fails (reason `http_<status>`, `transport_error`, `timeout`).
 * - At most `health_checks.max_concurrent_probes` (gateway.yaml) probes run at once in a process,
 *   across generations (`ProbeSlots`); a probe that finds no slot waits for one, in order.
 * - Probes are the gateway's own traffic, not a caller's: they bypass the routing core's request
 *   life (no breaker, quota, rate limit, outbound slot or affinity is touched); each is counted in
 *   `switchyard_health_checks_total{model,endpoint,mode,result}` and written to the request log
 *   as one row with caller id `switchyard:health-check` (trace export leaves those rows out); a
 *   state change logs one `health_check_state` line.
 *
 * Lifecycle (gateway.ts): one checker per configuration generation; a reload stops the old one (a
 * probe in flight is aborted and nothing is recorded for it) and starts one on the new core, which
 * has already taken over the verdicts of unchanged checks; drain and close stop it. Timers are
 * unref'd. Several workers each run their own checks (state is per process, like the breakers).
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { HealthCheckPolicy, HealthCheckResult, RoutingCore } from '../../core/index.ts';
import { verificationFamily, verifyUpstream, type VerificationResult } from '../admin/verifications.ts';
import { HEALTH_CHECK_CALLER_ID, type RequestLogRow } from '../request-log/log-row.ts';
import type { RouteTarget } from '../server/exchange-context.ts';

export { HEALTH_CHECK_CALLER_ID } from '../request-log/log-row.ts';

/** What one finished probe reports (metrics). */
export interface HealthCheckObservation {
  readonly model: string;
  readonly endpoint: string;
  readonly mode: HealthCheckPolicy['mode'];
  readonly result: 'pass' | 'fail';
}

/**
 * The process-wide cap on probes in flight (`max_concurrent_probes`), shared by the checkers of
 * every generation. FIFO: a probe waiting for a slot gets the next one freed.
 */
export class ProbeSlots {
  private running = 0;
  private readonly waiting: Array<() => void> = [];

  /** @param limit probes at once, integer ≥ 1. @throws RangeError otherwise. */
  constructor(private limitValue: number) {
    this.setLimit(limitValue);
  }

  /** The cap in force. */
  get limit(): number {
    return this.limitValue;
  }

  /** Probes holding a slot now. */
  get inFlight(): number {
    return this.running;
  }

  /** Changes the cap (a reload); waiting probes start while there is room. @throws RangeError for a limit that is not an integer ≥ 1. */
  setLimit(limit: number): void {
    if (!(Number.isSafeInteger(limit) && limit >= 1)) throw new RangeError(`health_checks.max_concurrent_probes must be an integer >= 1, got ${limit}`);
    this.limitValue = limit;
    this.pump();
  }

  /** Runs `start` now when a slot is free, else when one frees; `start` must call the release it is given exactly once. */
  acquire(start: (release: () => void) => void): void {
    this.waiting.push(() => {
      let released = false;
      start(() => {
        if (released) return;
        released = true;
        this.running--;
        this.pump();
      });
    });
    this.pump();
  }

  private pump(): void {
    while (this.running < this.limitValue && this.waiting.length > 0) {
      this.running++;
      this.waiting.shift()!();
    }
  }
}

/** What a checker needs from its gateway and generation. */
export interface HealthCheckerDeps {
  readonly core: RoutingCore;
  /** The generation's upstream targets by endpoint id. */
  readonly routes: ReadonlyMap<string, RouteTarget>;
  /** Monotonic clock, ms (the generation's `now`). */
  now(): number;
  readonly log: Logger;
  /** The process-wide probe cap. */
  readonly slots: ProbeSlots;
  /** Called once per recorded probe (metrics); must not throw. */
  onProbe?(o: HealthCheckObservation): void;
  /** Called once per recorded probe with its request-log row; must not throw. */
  onLogRow?(row: RequestLogRow): void;
}

/** One checked endpoint's loop. */
interface Loop {
  readonly endpointId: string;
  readonly model: string;
  readonly policy: HealthCheckPolicy;
  timer: NodeJS.Timeout | null;
  controller: AbortController | null;
}

/** The checker of one configuration generation (see the module comment). */
export class HealthChecker {
  private readonly loops: Loop[];
  private stopped = false;

  constructor(private readonly deps: HealthCheckerDeps) {
    const modelOf = new Map<string, string>();
    for (const m of deps.core.allModels()) if (!m.multiTarget) for (const r of m.routes) modelOf.set(r.endpointId, m.id);
    this.loops = deps.core.healthChecks.configured().map(({ endpointId, policy }) => ({ endpointId, model: modelOf.get(endpointId) ?? 'none', policy, timer: null, controller: null }));
  }

  /** A started checker for the generation, or null when no route of `deps.core` has a check. */
  static start(deps: HealthCheckerDeps): HealthChecker | null {
    if (deps.core.healthChecks.isEmpty) return null;
    const c = new HealthChecker(deps);
    for (const loop of c.loops) c.schedule(loop, 0);
    return c;
  }

  /** The endpoints this checker probes. */
  get endpoints(): string[] {
    return this.loops.map((l) => l.endpointId);
  }

  /** Stops every loop for good; a probe in flight (or waiting for a slot) is dropped unrecorded. */
  stop(): void {
    this.stopped = true;
    for (const l of this.loops) {
      if (l.timer) clearTimeout(l.timer);
      l.timer = null;
      l.controller?.abort();
    }
  }

  private schedule(loop: Loop, delayMs: number): void {
    if (this.stopped) return;
    loop.timer = setTimeout(() => {
      loop.timer = null;
      this.deps.slots.acquire((release) => this.probe(loop, release));
    }, delayMs);
    loop.timer.unref();
  }

  private probe(loop: Loop, release: () => void): void {
    const d = this.deps;
    if (this.stopped) return release();
    const target = d.routes.get(loop.endpointId);
    const startMs = d.now();
    const arrivalUnixMs = Date.now();
    const controller = new AbortController();
    loop.controller = controller;
    const requestId = `health-check-${randomUUID()}`;
    const run: Promise<VerificationResult> = target
      ? verifyUpstream(target, loop.policy.timeoutMs, { signal: controller.signal, requestId })
      : Promise.resolve({ endpoint_id: loop.endpointId, status: 'failed', http_status: null, latency_ms: 0, error: 'no upstream target for this endpoint' });
    void run.then((v) => {
      release();
      loop.controller = null;
      if (this.stopped || controller.signal.aborted) return;
      try {
        this.finish(loop, v, requestId, startMs, arrivalUnixMs);
      } catch (e) {
        d.log.error({ err: e, endpointId: loop.endpointId }, 'health check result could not be recorded');
      }
      this.schedule(loop, Math.max(0, startMs + loop.policy.intervalMs - d.now()));
    });
  }

  private finish(loop: Loop, v: VerificationResult, requestId: string, startMs: number, arrivalUnixMs: number): void {
    const d = this.deps;
    const result: HealthCheckResult = {
      passed: v.status === 'ok',
      reason: v.status === 'ok' ? null : v.status === 'timeout' ? 'timeout' : v.http_status !== null ? `http_${v.http_status}` : 'transport_error',
      latencyMs: v.latency_ms,
    };
    const nowMs = d.now();
    const t = d.core.recordHealthCheck(loop.endpointId, result, nowMs);
    const fields = { healthCheck: true, model: loop.model, endpointId: loop.endpointId, mode: loop.policy.mode, passed: result.passed, reason: result.reason, latencyMs: v.latency_ms, ...(v.error && { error: v.error }) };
    if (result.passed) d.log.debug(fields, 'health_check');
    else d.log.info(fields, 'health_check');
    if (t) d.log[t.to === 'unhealthy' ? 'warn' : 'info']({ model: loop.model, endpointId: t.endpointId, mode: t.mode, from: t.from, to: t.to, reason: t.reason, excluded: t.mode === 'enforce' && t.to === 'unhealthy' }, 'health_check_state');
    d.onProbe?.({ model: loop.model, endpoint: loop.endpointId, mode: loop.policy.mode, result: result.passed ? 'pass' : 'fail' });
    const e2eMs = Math.max(0, nowMs - startMs);
    const target = d.routes.get(loop.endpointId);
    d.onLogRow?.({
      arrivalUnixMs,
      requestId,
      sessionId: null,
      callerId: HEALTH_CHECK_CALLER_ID,
      model: loop.model,
      inputTokens: 0,
      outputTokens: 0,
      hashIds: null,
      stream: false,
      ttftMs: null,
      e2eMs,
      api: (target && verificationFamily(target.endpoints)) ?? 'chat',
      endpointId: loop.endpointId,
      attempts: 1,
      // No client got an answer: the upstream's status, or 0 when none came.
      httpStatus: v.http_status ?? 0,
      status: result.passed ? 'ok' : `health_check_${result.reason}`,
      fallback: false,
      cachedTokens: 0,
      costUsd: 0,
      prompt: null,
      offloadReason: null,
      strategy: null,
      attemptLog: [{ endpointId: loop.endpointId, target: null, outcome: result.passed ? 'ok' : result.reason!, reason: 'health_check', startOffsetMs: 0, endOffsetMs: e2eMs, inputTokens: 0, outputTokens: 0, cachedTokens: 0, costUsd: 0 }],
    });
  }
}
