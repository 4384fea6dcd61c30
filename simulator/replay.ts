/**
 * One run of an experiment: a trace replayed through the routing core onto simulated replicas,
 * in virtual time. The discrete-event loop owns the clock; the core decides where each request
 * goes through the lifecycle seam (`RoutingCore.start` / `RequestLife.step`); each replica is an
 * `EngineModel` that reports first tokens and completions. Deterministic: the same experiment,
 * run and seed give identical rows.
 */
import { deriveRng } from '../core/rng.ts';
import { RoutingCore } from '../core/routing-core.ts';
import { parseModelsConfig } from '../core/config/models-config.ts';
import type { LifecycleAction, RequestLife } from '../core/lifecycle/seam.ts';
import { classifyStatus } from '../core/lifecycle/outcome.ts';
import type { TraceRow } from '../traces/trace-row.ts';
import type { EngineEvent, EngineModel } from './engine/engine-model.ts';
import { EventQueue } from './event-queue.ts';
import type { Experiment } from './experiment.ts';
import type { AttemptRow, EndpointSampleRow, EventRow, RequestRow } from './results/result-rows.ts';
import { assignCallers } from './workload.ts';

/** The run to replay: a strategy, its params and a label. */
export interface RunSpec {
  strategy: string;
  params: Record<string, unknown>;
  label: string;
}

/** Everything a run produced, ready for the results store. */
export interface RunResult {
  requests: RequestRow[];
  attempts: AttemptRow[];
  samples: EndpointSampleRow[];
  events: EventRow[];
  /** Virtual time of the last event, ms. */
  durationMs: number;
  /** Events the loop processed. */
  eventsProcessed: number;
  prefixCache: { lookupTokens: number; hitTokens: number };
}

/** Inputs of `replayRun`. */
export interface ReplayOptions {
  experiment: Experiment;
  rows: readonly TraceRow[];
  run: RunSpec;
  runId: string;
  seed: number;
  /** Builds replica `i`; the experiment's engine settings are applied by the caller. */
  makeReplica: (index: number) => EngineModel;
  /** Check every invariant after every event (tests; slower). */
  checkInvariants?: boolean;
  /** Called every ~2,000 events with (requests done, total). */
  onProgress?: (done: number, total: number) => void;
}

type SimEvent =
  | { k: 'arrival'; req: number }
  | { k: 'step'; replica: number }
  | { k: 'sample' }
  | { k: 'fault_reply'; gid: number }
  | { k: 'fault_edge'; fault: number; start: boolean }
  | { k: 'deadline'; req: number; deadlineId: number };

interface LiveRequest {
  life: RequestLife;
  firstTokenAtMs: number | null;
  cachedTokens: number;
  errorStatus: string | null;
  /** life attempt id → global attempt id. */
  gids: Map<number, number>;
}

interface AttemptRef {
  req: number;
  attemptId: number;
  replica: number;
  endpointId: string;
  startMs: number;
}

/** The models config a simulated experiment routes with: one model, one route per replica. */
export function simulatedModelsConfig(exp: Experiment, run: RunSpec) {
  return parseModelsConfig(
    {
      models: [
        {
          id: exp.model,
          router: run.strategy,
          router_params: run.params,
          route: Array.from({ length: exp.replicas.count }, (_, i) => ({
            kind: 'openai_compat',
            base_url: `sim://replica-${i}`,
            weight: exp.replicas.weights?.[i] ?? 1,
          })),
        },
      ],
    },
    `${exp.file} (runs: ${run.label})`,
  );
}

/**
 * Replays `rows` (sorted by arrival) for one run.
 * @throws Error when a request does not end exactly once (a conservation bug) or an invariant fails.
 */
export function replayRun(opts: ReplayOptions): RunResult {
  const { experiment: exp, rows, run, runId, seed } = opts;
  const core = new RoutingCore(simulatedModelsConfig(exp, run), { settings: exp.routing });
  const model = core.model(exp.model)!;
  const endpointIds = model.routes.map((r) => r.endpointId);
  const replicaOf = new Map(endpointIds.map((id, i) => [id, i]));
  const replicas = endpointIds.map((_, i) => opts.makeReplica(i));
  const strategyRng = deriveRng(seed, `strategy/${run.strategy}`);
  const callers = assignCallers(
    rows.map((r) => r.sessionId),
    exp.callers.count,
    exp.callers.zipf_s,
    deriveRng(seed, 'workload/callers'),
  );

  const q = new EventQueue<SimEvent>();
  const live: (LiveRequest | null)[] = new Array(rows.length).fill(null);
  const attemptsByGid = new Map<number, AttemptRef>();
  const result: RunResult = { requests: [], attempts: [], samples: [], events: [], durationMs: 0, eventsProcessed: 0, prefixCache: { lookupTokens: 0, hitTokens: 0 } };
  const endedOnce = new Uint8Array(rows.length);
  let nextGid = 1;
  let done = 0;
  let now = 0;
  const activeFaults = new Set<number>();
  const emitted: EngineEvent[] = [];
  const emit = (e: EngineEvent) => emitted.push(e);

  for (let i = 0; i < rows.length; i++) q.push(rows[i]!.arrivalMs / exp.rate_scale, { k: 'arrival', req: i });
  exp.faults.forEach((f, i) => {
    q.push(f.from_ms, { k: 'fault_edge', fault: i, start: true });
    q.push(f.to_ms, { k: 'fault_edge', fault: i, start: false });
  });
  if (rows.length > 0) q.push(rows[0]!.arrivalMs / exp.rate_scale, { k: 'sample' });

  const faultFor = (replica: number): number | null => {
    for (const fi of activeFaults) if (exp.faults[fi]!.endpoint === `replica-${replica}`) return fi;
    return null;
  };

  const apply = (reqIdx: number, actions: readonly LifecycleAction[]) => {
    const lr = live[reqIdx]!;
    for (const a of actions) {
      switch (a.kind) {
        case 'dispatch': {
          const replica = replicaOf.get(a.endpointId)!;
          const gid = nextGid++;
          lr.gids.set(a.attemptId, gid);
          attemptsByGid.set(gid, { req: reqIdx, attemptId: a.attemptId, replica, endpointId: a.endpointId, startMs: now });
          const fault = faultFor(replica);
          if (fault !== null) {
            q.push(now + exp.faults[fault]!.latency_ms, { k: 'fault_reply', gid });
            break;
          }
          const row = rows[reqIdx]!;
          const t = replicas[replica]!.enqueue(
            { attemptId: gid, inputTokens: row.inputTokens, outputTokens: row.outputTokens, hashIds: row.hashIds },
            now,
            emit,
          );
          if (t !== null) q.push(t, { k: 'step', replica });
          break;
        }
        case 'cancel': {
          const gid = lr.gids.get(a.attemptId);
          const ref = gid === undefined ? undefined : attemptsByGid.get(gid);
          if (gid !== undefined && ref) {
            replicas[ref.replica]!.cancel(gid);
            attemptsByGid.delete(gid);
          }
          break;
        }
        case 'wait_until':
          q.push(a.atMs, { k: 'deadline', req: reqIdx, deadlineId: a.deadlineId });
          break;
        case 'commit':
          break;
        case 'respond_error':
          lr.errorStatus = a.code;
          break;
        case 'done':
          finish(reqIdx, lr, a.metadata);
          break;
      }
    }
  };

  const finish = (reqIdx: number, lr: LiveRequest, md: Extract<LifecycleAction, { kind: 'done' }>['metadata']) => {
    if (endedOnce[reqIdx]) throw new Error(`request ${rows[reqIdx]!.requestId} ended twice`);
    endedOnce[reqIdx] = 1;
    const row = rows[reqIdx]!;
    const arrival = row.arrivalMs / exp.rate_scale;
    const ok = md.status === 'ok';
    const ttft = ok && md.firstTokenAtMs !== null ? md.firstTokenAtMs - arrival : null;
    const e2e = ok && md.finishedAtMs !== null ? md.finishedAtMs - arrival : null;
    const route = model.routes.find((r) => r.endpointId === md.endpointId);
    const cached = ok ? lr.cachedTokens : 0;
    const cost = ok && route
      ? ((row.inputTokens - cached) * route.pricing.inputUsdPer1M + cached * route.pricing.cachedInputUsdPer1M + row.outputTokens * route.pricing.outputUsdPer1M) / 1e6
      : 0;
    result.requests.push({
      runId,
      requestId: row.requestId,
      sessionId: row.sessionId,
      callerId: callers[reqIdx]!,
      arrivalMs: arrival,
      endpointId: md.endpointId,
      queueWaitMs: null,
      ttftMs: ttft,
      tpotMs: ttft !== null && e2e !== null && row.outputTokens > 1 ? (e2e - ttft) / (row.outputTokens - 1) : null,
      e2eMs: e2e,
      inputTokens: row.inputTokens,
      outputTokens: row.outputTokens,
      cachedTokens: cached,
      status: md.status,
      costUsd: cost,
      fallbacks: Math.max(0, md.attempts.length - 1),
      offloadReason: md.offloadReason,
    });
    for (const at of md.attempts) {
      result.attempts.push({
        runId,
        requestId: row.requestId,
        attemptId: at.attemptId,
        endpointId: at.endpointId,
        startMs: at.startMs,
        endMs: at.endMs,
        outcome: at.outcome.kind,
        status: at.outcome.kind === 'http_status' ? at.outcome.status : null,
      });
    }
    for (const gid of lr.gids.values()) attemptsByGid.delete(gid);
    live[reqIdx] = null;
    done++;
  };

  const drainEngineEvents = () => {
    // Engine events are handled after the engine call returns, so a fallback dispatch never
    // re-enters a replica in the middle of its own step.
    for (let i = 0; i < emitted.length; i++) {
      const e = emitted[i]!;
      const ref = attemptsByGid.get(e.attemptId);
      if (!ref) continue; // attempt already cancelled or its request finished
      const lr = live[ref.req];
      if (!lr) continue;
      if (e.kind === 'first_token') {
        lr.firstTokenAtMs ??= e.atMs;
        lr.cachedTokens = e.cachedTokens;
        apply(ref.req, lr.life.step({ kind: 'first_token', attemptId: ref.attemptId }, now));
      } else if (e.kind === 'finished') {
        const row = rows[ref.req]!;
        apply(ref.req, lr.life.step({ kind: 'finished', attemptId: ref.attemptId, usage: { inputTokens: row.inputTokens, outputTokens: row.outputTokens, cachedTokens: lr.cachedTokens } }, now));
      } else {
        apply(ref.req, lr.life.step({ kind: 'failed', attemptId: ref.attemptId, outcome: { kind: 'http_status', status: 400, errorClass: 'context_length', retryAfterMs: null } }, now));
      }
    }
    emitted.length = 0;
  };

  const drainBreakerEvents = () => {
    for (const t of core.health.drainTransitions()) {
      result.events.push({ runId, atMs: t.atMs, kind: 'breaker', endpointId: t.endpointId, detailJson: JSON.stringify({ from: t.from, to: t.to, reason: t.reason }) });
    }
  };

  for (let ev = q.pop(); ev; ev = q.pop()) {
    now = ev.atMs;
    const d = ev.data;
    switch (d.k) {
      case 'arrival': {
        const row = rows[d.req]!;
        const { life, actions } = core.start(
          {
            requestId: row.requestId,
            model: exp.model,
            sessionId: row.sessionId,
            callerId: callers[d.req]!,
            inputTokens: row.inputTokens,
            outputTokensHint: row.outputTokens,
            stream: row.stream,
            modalities: [],
            pin: null,
            prefixHashes: row.hashIds,
          },
          now,
          strategyRng,
        );
        live[d.req] = { life, firstTokenAtMs: null, cachedTokens: 0, errorStatus: null, gids: new Map() };
        apply(d.req, actions);
        drainEngineEvents();
        break;
      }
      case 'step': {
        const t = replicas[d.replica]!.completeStep(now, emit);
        if (t !== null) q.push(t, { k: 'step', replica: d.replica });
        drainEngineEvents();
        break;
      }
      case 'fault_reply': {
        const ref = attemptsByGid.get(d.gid);
        const lr = ref ? live[ref.req] : null;
        if (ref && lr) {
          const fault = exp.faults.find((f) => f.endpoint === `replica-${ref.replica}`);
          const status = fault?.status ?? 503;
          apply(ref.req, lr.life.step({ kind: 'failed', attemptId: ref.attemptId, outcome: { kind: 'http_status', status, errorClass: classifyStatus(status), retryAfterMs: null } }, now));
          drainEngineEvents();
        }
        break;
      }
      case 'fault_edge': {
        const f = exp.faults[d.fault]!;
        if (d.start) activeFaults.add(d.fault);
        else activeFaults.delete(d.fault);
        result.events.push({ runId, atMs: now, kind: 'fault', endpointId: `${exp.model}:${f.endpoint}`, detailJson: JSON.stringify({ phase: d.start ? 'start' : 'end', status: f.status }) });
        break;
      }
      case 'deadline': {
        const lr = live[d.req];
        if (lr) apply(d.req, lr.life.step({ kind: 'deadline', deadlineId: d.deadlineId }, now));
        drainEngineEvents();
        break;
      }
      case 'sample': {
        replicas.forEach((r, i) => {
          const l = r.load();
          result.samples.push({ runId, endpointId: endpointIds[i]!, atMs: now, running: l.running, waiting: l.waiting, kvUsage: l.kvUsage, prefillBacklogTokens: l.prefillBacklogTokens });
        });
        if (done < rows.length) q.push(now + exp.sample_interval_ms, { k: 'sample' });
        break;
      }
    }
    drainBreakerEvents();
    result.eventsProcessed++;
    if (opts.checkInvariants) {
      for (const r of replicas) r.invariants();
      core.health.invariants();
      for (const lr of live) lr?.life.invariants();
    }
    if (opts.onProgress && (result.eventsProcessed & 2047) === 0) opts.onProgress(done, rows.length);
  }
  result.durationMs = now;
  if (done !== rows.length) {
    throw new Error(`conservation broken: ${rows.length - done} of ${rows.length} requests never ended`);
  }
  for (const r of replicas) {
    const s = r.prefixCacheStats();
    result.prefixCache.lookupTokens += s.lookupTokens;
    result.prefixCache.hitTokens += s.hitTokens;
  }
  opts.onProgress?.(done, rows.length);
  return result;
}
