/**
 * The gateway's driver of RouteWise's idle-route prober ("an optional prober
 * (gateway: 1-token requests to routes idle ≥ 900 s, every 300 s, one probe per process at a
 * time)"). The planner decides (`RouteWisePlanner.probeDue` / `recordProbe`, `ProbeScheduler` in
 * core/strategies/routewise/cold-start.ts); this module owns the timer and the socket:
 *
 * - Every `tickMs` (default: a tenth of the smallest `probe_interval_sec` of the probing models,
 *   clamped to 10 ms … 30 s) it asks each model with `probe_enabled: true`, in turn, which route
 *   is due — idle ≥ `probe_idle_sec`, at most one round per `probe_interval_sec`, and a slot of
 *   the process-wide `ProbeGate` free (cap: the smallest `probe_max_concurrency` of the models;
 *   1 by default).
 * - The probe is one chat request to that route's upstream through the gateway's own upstream
 *   client (`runAttempt`, the route's undici pool and key): `max_tokens: 1`, `stream: true`, a
 *   one-character user message, `x-request-id: probe-<uuid>`. Its time to first token (first
 *   content delta; the end of the stream if none came) goes to `recordProbe`; a failure before
 *   the first token, or no answer within `timeoutMs` (default 60 s; the probe is then aborted),
 *   goes as a failure (`ttftMs` null). Either way the route's latency profile gains an
 *   observation and the gate slot is returned.
 * - Probes are not client requests: they never pass through the routing core's lifecycle (no
 *   breaker, outbound-limiter or RouteWise reservation is touched), are not written to the
 *   request log (it is a replayable trace of client traffic), and are counted apart in the
 *   metrics (`switchyard_probes_total{model,endpoint,result}`,
 *   `switchyard_probe_ttft_seconds{model,endpoint}`). Each probe logs one `probe` line.
 *
 * Lifecycle (gateway.ts): one prober per configuration generation, started with it; a SIGHUP
 * reload stops the old one (a probe in flight finishes and reports to the old planner, whose
 * gate slot it holds — the gate is shared by all generations of a gateway, so a reload never
 * lets two probes overlap) and starts one on the new generation; drain / close stop it and
 * abort a probe in flight (nothing is recorded for it: the planner goes with the gateway).
 * Timers are unref'd, so an idle prober never keeps the process alive.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { RouteWisePlanner, type ProbeGate, type RoutingCore } from '../../core/index.ts';
import type { ProbeObservation } from '../metrics.ts';
import type { RouteTarget } from '../server/exchange-context.ts';
import { runAttempt, UPSTREAM_PATH } from '../upstream/openai-compat.ts';

/** Default bound on one probe, ms: it is aborted and recorded as a failure after this long. */
export const DEFAULT_PROBE_TIMEOUT_MS = 60_000;

/** Bounds of the default tick, ms. */
const MIN_TICK_MS = 10;
const MAX_TICK_MS = 30_000;

/** One model that probes: its id and its planner. */
export interface ProbingModel {
  readonly id: string;
  readonly planner: RouteWisePlanner;
}

/** Counters of a gateway's probes, shared by the probers of all its generations. */
export interface ProbeCounters {
  /** Probes started. */
  sent: number;
  /** Probes running now. */
  inFlight: number;
  /** The most probes ever running at once. */
  maxInFlight: number;
}

/** What a prober needs from its gateway and generation. */
export interface ProberDeps {
  readonly core: RoutingCore;
  /** The generation's upstream targets by endpoint id. */
  readonly routes: ReadonlyMap<string, RouteTarget>;
  /** Monotonic clock, ms (the generation's `now`). */
  now(): number;
  readonly log: Logger;
  /** Error bodies are cut at this many bytes. */
  readonly maxErrorBodyBytes: number;
  /** The process-wide probe cap, shared by every generation of the gateway. */
  readonly gate: ProbeGate;
  /** Shared counters (see `ProbeCounters`). */
  readonly counters: ProbeCounters;
  /** Called once per finished probe (metrics); must not throw. */
  onProbe?(o: ProbeObservation): void;
  /** Tick period, ms (> 0); default from the models' `probe_interval_sec` (module comment). */
  readonly tickMs?: number;
  /** Bound on one probe, ms (> 0); default `DEFAULT_PROBE_TIMEOUT_MS`. */
  readonly timeoutMs?: number;
}

/** The RouteWise models of `core` with `probe_enabled: true`, in declaration order (aliases once). */
export function probingModels(core: RoutingCore): ProbingModel[] {
  const out: ProbingModel[] = [];
  for (const m of core.allModels()) {
    if (m.planner instanceof RouteWisePlanner && m.planner.params.probe_enabled) out.push({ id: m.id, planner: m.planner });
  }
  return out;
}

/**
 * The default tick, ms: a tenth of the smallest `probe_interval_sec` (so a due round starts at
 * most 10 % late), clamped to [10 ms, 30 s]. @throws RangeError for an empty list.
 */
export function defaultProbeTickMs(models: readonly ProbingModel[]): number {
  if (models.length === 0) throw new RangeError('defaultProbeTickMs: no probing model');
  const intervalMs = Math.min(...models.map((m) => m.planner.params.probe_interval_sec * 1000));
  return Math.min(MAX_TICK_MS, Math.max(MIN_TICK_MS, intervalMs / 10));
}

/** One probe running. */
interface RunningProbe {
  readonly model: ProbingModel;
  readonly endpointId: string;
  readonly controller: AbortController;
  /** Aborted by our own deadline (recorded as a failure) rather than by `stop`. */
  timedOut: boolean;
}

/** The prober of one configuration generation (see the module comment). */
export class RouteWiseProber {
  /** Tick period in use, ms. */
  readonly tickMs: number;
  private readonly timeoutMs: number;
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;
  /** Index of the model asked first on the next tick (round robin across models). */
  private next = 0;
  private readonly running = new Set<RunningProbe>();

  /**
   * @param models the probing models (non-empty; `probingModels`).
   * @throws RangeError for an empty model list, or a `tickMs` / `timeoutMs` that is not > 0.
   */
  constructor(
    private readonly deps: ProberDeps,
    readonly models: readonly ProbingModel[],
  ) {
    if (models.length === 0) throw new RangeError('RouteWiseProber: no probing model');
    this.tickMs = deps.tickMs ?? defaultProbeTickMs(models);
    this.timeoutMs = deps.timeoutMs ?? DEFAULT_PROBE_TIMEOUT_MS;
    if (!(this.tickMs > 0)) throw new RangeError(`probe tick must be > 0 ms, got ${this.tickMs}`);
    if (!(this.timeoutMs > 0)) throw new RangeError(`probe timeout must be > 0 ms, got ${this.timeoutMs}`);
    // The smallest cap any model asks for wins (cold-start.ts: one shared cap per process).
    deps.gate.setLimit(Math.min(...models.map((m) => m.planner.params.probe_max_concurrency)));
  }

  /**
   * A started prober for the generation, or null when no model of `deps.core` probes.
   * @throws RangeError as the constructor.
   */
  static start(deps: ProberDeps): RouteWiseProber | null {
    const models = probingModels(deps.core);
    if (models.length === 0) return null;
    const p = new RouteWiseProber(deps, models);
    p.start();
    return p;
  }

  /** Arms the (unref'd) tick timer. No-op when running or stopped. */
  start(): void {
    if (this.timer || this.stopped) return;
    this.timer = setInterval(() => this.tick(), this.tickMs);
    this.timer.unref();
  }

  /** True while the tick timer is armed. */
  get active(): boolean {
    return this.timer !== null;
  }

  /** Probes of this prober running now. */
  get inFlight(): number {
    return this.running.size;
  }

  /**
   * Stops ticking for good. With `abortInFlight` (drain / close) a probe in flight is aborted and
   * nothing is recorded for it; without (reload) it runs to its end and reports to its planner.
   */
  stop(abortInFlight: boolean): void {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    if (abortInFlight) for (const p of this.running) p.controller.abort();
  }

  /** One round: starts the probes the planners say are due, while the gate has room. Never throws. */
  tick(): void {
    if (this.stopped) return;
    const { gate } = this.deps;
    const n = this.models.length;
    try {
      for (let k = 0; k < n; k++) {
        if (gate.inFlight >= gate.limit) return;
        const i = (this.next + k) % n;
        const model = this.models[i]!;
        const endpointId = model.planner.probeDue(this.deps.now(), gate);
        if (endpointId === null) continue;
        this.next = (i + 1) % n;
        this.launch(model, endpointId);
      }
    } catch (e) {
      this.deps.log.error({ err: e }, 'probe tick failed');
    }
  }

  private launch(model: ProbingModel, endpointId: string): void {
    const d = this.deps;
    const probe: RunningProbe = { model, endpointId, controller: new AbortController(), timedOut: false };
    this.running.add(probe);
    d.counters.sent++;
    d.counters.inFlight++;
    if (d.counters.inFlight > d.counters.maxInFlight) d.counters.maxInFlight = d.counters.inFlight;
    const requestId = `probe-${randomUUID()}`;
    const startMs = d.now();
    const target = d.routes.get(endpointId);
    if (!target) {
      // A config/core mismatch is a bug; report the probe as failed so the gate slot comes back.
      d.log.error({ model: model.id, endpointId }, 'no upstream target for probed endpoint');
      this.finish(probe, requestId, startMs, null, 'failed');
      return;
    }
    let firstTokenAtMs: number | null = null;
    const deadline = setTimeout(() => {
      probe.timedOut = true;
      probe.controller.abort();
    }, this.timeoutMs);
    deadline.unref();
    const body = JSON.stringify({
      model: target.upstreamModel,
      messages: [{ role: 'user', content: '.' }],
      max_tokens: 1,
      stream: true,
      stream_options: { include_usage: true },
    });
    void runAttempt(
      {
        pool: target.pool,
        path: target.basePath + UPSTREAM_PATH.chat,
        body,
        apiKey: target.apiKey,
        requestId,
        stream: true,
        endpoint: 'chat',
        includeUsage: false,
        publicModel: model.id,
        maxErrorBodyBytes: d.maxErrorBodyBytes,
      },
      probe.controller.signal,
      {
        headers: () => undefined,
        events: (events) => {
          if (firstTokenAtMs === null && events.some((e) => e.kind === 'frame' && e.token)) firstTokenAtMs = d.now();
        },
      },
    ).then((end) => {
      clearTimeout(deadline);
      switch (end.kind) {
        case 'streamed':
        case 'body':
          // No content delta (an empty 1-token answer): the end of the stream bounds TTFT.
          return this.finish(probe, requestId, startMs, (firstTokenAtMs ?? d.now()) - startMs, 'ok');
        case 'failed':
          return this.finish(probe, requestId, startMs, null, 'failed', end.outcome);
        case 'aborted':
          return this.finish(probe, requestId, startMs, null, probe.timedOut ? 'timeout' : 'stopped');
      }
    });
  }

  private finish(probe: RunningProbe, requestId: string, startMs: number, ttftMs: number | null, result: ProbeObservation['result'] | 'stopped', outcome?: unknown): void {
    const d = this.deps;
    this.running.delete(probe);
    d.counters.inFlight--;
    const endMs = d.now();
    const fields = { probe: true, requestId, model: probe.model.id, endpointId: probe.endpointId, result, ttftMs: ttftMs === null ? null : Math.round(ttftMs), durationMs: Math.round(endMs - startMs), ...(outcome !== undefined && { outcome }) };
    if (result === 'stopped') {
      d.log.info(fields, 'probe');
      return;
    }
    try {
      probe.model.planner.recordProbe(probe.endpointId, ttftMs, endMs, d.gate);
      d.onProbe?.({ model: probe.model.id, endpoint: probe.endpointId, result, ttftSec: ttftMs === null ? null : ttftMs / 1000 });
    } catch (e) {
      d.log.error({ ...fields, err: e }, 'probe result could not be recorded');
      return;
    }
    d.log[result === 'ok' ? 'info' : 'warn'](fields, 'probe');
  }
}
