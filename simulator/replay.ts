/**
 * One run of an experiment: a trace replayed through the routing core onto simulated endpoints —
 * local replicas (an `EngineModel` each) and hosted providers (`HostedProvider`) — in virtual
 * time, with faults and client behaviour. The discrete-event loop here owns the clock; the core
 * decides where each attempt goes through the lifecycle seam (replay/actions.ts); endpoints
 * report first tokens and completions (replay/dispatch.ts), faults delay, refuse or break them
 * (replay/faults.ts), and clients time out, abandon or retry (replay/client.ts); replay/rows.ts
 * writes the rows, replay/sampling.ts the endpoint time series, replay/billing.ts the costs.
 *
 * Event sources (event-queue.ts): arrivals are read from a sorted array, each replica's next
 * step end is a re-armable timer, deadlines and client timeouts go on FIFO lanes, the rest on
 * the heap — all in one (time, schedule order) order.
 *
 * Deterministic: the same experiment, run and seed give identical rows. Randomness comes from
 * one stream per purpose — `strategy/<name>` (the core's draws), `workload/callers`,
 * `client/*`, `provider/<name>`, `faults` — and the last three are keyed draws (crn.ts), so two
 * strategies replaying the same cell see the same arrivals, client behaviour, provider latencies
 * and fault draws for every request (common random numbers).
 */
import { KeyLimits } from './providers/key-limits.ts';
import type { CallerRole } from '../core/index.ts';
import { deriveRng } from '../core/rng.ts';
import type { RoutingCore } from '../core/routing-core.ts';
import type { TraceRow } from '../traces/trace-row.ts';
import { replicaApiServer } from './engine/replica-config.ts';
import type { EngineEvent, EngineModel } from './engine/engine-model.ts';
import { EngineEndpoint } from './engine-endpoint.ts';
import { EventQueue, Popped } from './event-queue.ts';
import { resolveProviders, runLabel, type Experiment } from './experiment.ts';
import { effectiveGatewayReplicas } from './gateway-replicas.ts';
import { buildGateways, GatewayPicker, onProbeClaim, onSync, pollBreakers, publishPins, replicaSync } from './replay/gateways.ts';
import { FaultPlan } from './faults/fault-plan.ts';
import { HostedProvider } from './providers/hosted-provider.ts';
import { planClients } from './client-behaviour.ts';
import { runCosts } from './costs.ts';
import { assignCallerRoles, assignCallers } from './workload.ts';
import { apply, drainEngineEvents, failAttempt, onFinished, onFirstToken } from './replay/actions.ts';
import { onAbandon, onArrival, onClientTimeout, onRetry } from './replay/client.ts';
import { onFaultEdge } from './replay/faults.ts';
import { directEndpointIdsOf, endpointIdsOf, endpointNames, simulatedModelsConfig, type RunSpec } from './replay/models-config.ts';
import { onSample } from './replay/sampling.ts';
import { LANES, type Endpoint, type ReplayState, type RunResult, type SimEvent } from './replay/state.ts';

export { endpointIdsOf, endpointNames, simulatedModelsConfig, type RunSpec } from './replay/models-config.ts';
export type { RunResult } from './replay/state.ts';

/** Inputs of `replayRun`. */
export interface ReplayOptions {
  experiment: Experiment;
  rows: readonly TraceRow[];
  run: RunSpec;
  runId: string;
  seed: number;
  /** Builds replica `i`; the experiment's engine settings are applied by the caller. */
  makeReplica: (index: number) => EngineModel;
  /** Tokens per trace prefix block (providers' prompt cache); default 512 (Mooncake). */
  hashBlockTokens?: number;
  /** Check every invariant after every event (tests; slower). */
  checkInvariants?: boolean;
  /**
   * Called every ~2,000 events with (requests done, total, the result so far). The caller may
   * take rows out of the result's arrays (the loop only appends to them).
   */
  onProgress?: (done: number, total: number, partial: RunResult) => void;
}

/** The state of a run before its first event: endpoints built, draws made, arrivals and fault edges queued. */
function initialState(opts: ReplayOptions): ReplayState {
  const { experiment: exp, rows, run, runId, seed } = opts;
  const config = simulatedModelsConfig(exp, run);
  const gw = effectiveGatewayReplicas(exp.gateway_replicas, exp.runs.find((r) => runLabel(r) === run.label)?.gateway_replicas);
  const gateways = buildGateways(exp, gw, config, run.strategy, seed, `${exp.file} (runs: ${run.label})`);
  const core = gateways[0]!.core;
  const names = endpointNames(exp);
  const endpointIds = endpointIdsOf(core, exp, run);
  // Auto candidates are the endpoints' own direct models: their endpoint ids lead to the same endpoints.
  const epOf = new Map(endpointIds.map((id, i) => [id, i]));
  directEndpointIdsOf(core, exp, run).forEach((id, i) => id !== null && epOf.set(id, i));
  const providerSpecs = resolveProviders(exp);
  const replicaCount = exp.replicas.count;
  const hashBlockTokens = opts.hashBlockTokens ?? 512;
  const endpoints: Endpoint[] = names.map((name, i) => ({
    name,
    endpointId: endpointIds[i]!,
    engine: i < replicaCount ? new EngineEndpoint(opts.makeReplica(i), () => opts.makeReplica(i)) : null,
    provider: i < replicaCount ? null : new HostedProvider(providerSpecs[i - replicaCount]!, seed, hashBlockTokens),
  }));
  // A planner that reads engine signals hears each replica's KV events (BlockStored /
  // BlockRemoved from a vLLM block pool or an SGLang radix cache), as Dynamo's KvIndexer does;
  // others skip the cost (an engine with no sink counts nothing).
  if (core.model(exp.model)?.planner.readsEngineSignals) {
    for (const ep of endpoints) {
      ep.engine?.setKvEventSink(gateways.length === 1 ? (e) => core.engineSignals.applyKvEvent(ep.endpointId, e) : (e) => {
        for (const g of gateways) g.core.engineSignals.applyKvEvent(ep.endpointId, e);
      });
    }
  }
  const faults = exp.faults.length > 0 ? new FaultPlan(exp.faults, new Map(names.map((n, i) => [n, i])), names.length, seed) : null;
  const arrivalsMs = new Float64Array(rows.length);
  for (let i = 0; i < rows.length; i++) arrivalsMs[i] = rows[i]!.arrivalMs / exp.rate_scale;
  // One timer per endpoint: a replica's next step end (re-armed when it moves, disarmed on a crash).
  const q = new EventQueue<SimEvent>(LANES, endpoints.length);
  // Fault edges first, so a window [from, to) covers arrivals at from_ms and not at to_ms.
  if (faults) for (const e of faults.edges) q.push(e.atMs, { k: 'fault_edge', fault: e.fault, start: e.start });
  q.setArrivals(arrivalsMs);
  if (rows.length > 0) q.push(arrivalsMs[0]!, { k: 'sample' });
  const emitted: EngineEvent[] = [];
  const callers = assignCallers(rows.map((r) => r.sessionId), exp.callers.count, exp.callers.zipf_s, deriveRng(seed, 'workload/callers'));
  // Tiers for key pools when the experiment declares them; else every request is unrestricted.
  const tiers: { callers: readonly string[]; roles: readonly (CallerRole | null)[] } = exp.callers.roles ? assignCallerRoles(callers, exp.callers.roles) : { callers, roles: [] };
  const state: ReplayState = {
    exp,
    rows,
    runId,
    core,
    gateways,
    picker: new GatewayPicker(gw.load_balancer, gw.count, seed),
    sync: replicaSync(gw, gateways, [...epOf.keys()]),
    endpoints,
    epOf,
    faults,
    client: exp.client,
    plan: planClients(rows.map((r) => r.stream), exp.client, seed),
    callers: tiers.callers,
    callerRoles: tiers.roles,
    keyLimits: new KeyLimits(exp.providers, (name) => endpoints.find((e) => e.name === name)?.endpointId),
    arrivalsMs,
    apiServer: replicaApiServer(exp.replicas),
    q,
    reqs: new Array(rows.length).fill(null),
    ended: new Uint8Array(rows.length),
    atts: [],
    liveByEp: endpoints.map(() => new Set()),
    result: {
      requests: [],
      attempts: [],
      samples: [],
      events: [],
      durationMs: 0,
      eventsProcessed: 0,
      prefixCache: { lookupTokens: 0, hitTokens: 0 },
      costs: { tokenUsd: 0, fixedUsd: 0, gpuHours: 0, gpuUsd: 0 },
    },
    emitted,
    emit: (e: EngineEvent) => emitted.push(e),
    reqOfLife: new Map(),
    nextGid: 1,
    done: 0,
    now: 0,
    lastEndMs: 0,
  };
  if (state.sync) publishPins(state);
  return state;
}

/** A heap or lane event. */
function onEvent(s: ReplayState, d: SimEvent): void {
  switch (d.k) {
    case 'att_first':
      if (s.atts[d.gid]!.live) onFirstToken(s, d.gid);
      break;
    case 'att_finish':
      if (s.atts[d.gid]!.live) onFinished(s, d.gid);
      break;
    case 'att_fail':
      failAttempt(s, d.gid, d.outcome);
      break;
    case 'fault_edge':
      onFaultEdge(s, d.fault, d.start);
      break;
    case 'deadline': {
      const lr = s.reqs[d.req];
      if (lr?.life && lr.tryNo === d.tryNo) apply(s, d.req, lr, lr.life.step({ kind: 'deadline', deadlineId: d.deadlineId }, s.now));
      break;
    }
    case 'client_timeout':
      onClientTimeout(s, d.req, d.tryNo);
      break;
    case 'abandon':
      onAbandon(s, d.req);
      break;
    case 'retry':
      onRetry(s, d.req, d.tryNo);
      break;
    case 'sample':
      onSample(s);
      break;
    case 'sync':
      onSync(s, d.from, d.ev);
      break;
    case 'probe_claim':
      onProbeClaim(s, d.gateway, d.endpointId, d.openedAtMs);
      break;
  }
}

/**
 * After every event: engine events, slots each replica's core granted meanwhile, breaker
 * transitions, and (shared state) the replicas' breaker reports.
 */
function afterEvent(s: ReplayState): void {
  if (s.emitted.length > 0) drainEngineEvents(s);
  if (s.gateways.length === 1) afterEventOn(s, s.core, null);
  else for (const g of s.gateways) afterEventOn(s, g.core, g.index);
  if (s.sync) pollBreakers(s);
}

/** `afterEvent` for one replica's core (`gateway`: its index in the rows; null with one replica). */
function afterEventOn(s: ReplayState, core: RoutingCore, gateway: number | null): void {
  // Slots the core granted to queued attempts: tell their lives (which then dispatch).
  while (core.hasWakeups) {
    for (const { life, event } of core.drainWakeups()) {
      const reqIdx = s.reqOfLife.get(life);
      const lr = reqIdx === undefined ? null : s.reqs[reqIdx];
      if (lr && lr.life === life) apply(s, reqIdx!, lr, life.step(event, s.now));
    }
    if (s.emitted.length > 0) drainEngineEvents(s);
  }
  if (core.health.hasTransitions) {
    for (const t of core.health.drainTransitions()) {
      const detail = gateway === null ? { from: t.from, to: t.to, reason: t.reason } : { from: t.from, to: t.to, reason: t.reason, gateway };
      s.result.events.push({ runId: s.runId, atMs: t.atMs, kind: 'breaker', endpointId: t.endpointId, detailJson: JSON.stringify(detail) });
    }
  }
}

/** @throws Error when an endpoint, the health registry, the fault plan or a life breaks an invariant. */
function checkAll(s: ReplayState): void {
  for (const ep of s.endpoints) {
    ep.engine?.invariants();
    ep.provider?.invariants();
  }
  for (const g of s.gateways) g.core.health.invariants();
  s.faults?.invariants();
  for (const lr of s.reqs) lr?.life?.invariants();
  s.endpoints.forEach((ep, i) => {
    if (ep.provider && ep.provider.running > s.liveByEp[i]!.size) throw new Error(`${ep.name}: provider holds ${ep.provider.running} attempts, loop has ${s.liveByEp[i]!.size} live`);
  });
}

/**
 * Replays `rows` (sorted by arrival) for one run.
 * @throws Error when a request does not end exactly once (a conservation bug) or an invariant fails.
 */
export function replayRun(opts: ReplayOptions): RunResult {
  const s = initialState(opts);
  const { q, rows, result, endpoints } = s;
  const total = rows.length;
  for (let src = q.next(); src !== Popped.None; src = q.next()) {
    s.now = q.atMs;
    if (src === Popped.Timer) {
      // Once every request has ended, what is left is stale (timeouts, deadlines of ended lives)
      // except fault windows, which are still written to `events`.
      if (s.done === total) continue;
      const t = endpoints[q.timer]!.engine!.completeStep(s.now, s.emit);
      if (t !== null) q.arm(q.timer, t);
    } else if (src === Popped.Arrival) {
      onArrival(s, q.arrival);
    } else {
      const d = q.data!;
      if (s.done === total && d.k !== 'fault_edge') continue;
      onEvent(s, d);
    }
    afterEvent(s);
    result.eventsProcessed++;
    if (opts.checkInvariants) checkAll(s);
    if (opts.onProgress && (result.eventsProcessed & 2047) === 0) opts.onProgress(s.done, total, result);
  }
  result.durationMs = s.lastEndMs;
  if (s.done !== total) throw new Error(`conservation broken: ${total - s.done} of ${total} requests never ended`);
  for (const ep of endpoints) {
    if (!ep.engine) continue;
    const st = ep.engine.prefixCacheStats();
    result.prefixCache.lookupTokens += st.lookupTokens;
    result.prefixCache.hitTokens += st.hitTokens;
  }
  const exp = s.exp;
  const fixedPerHour = resolveProviders(exp).reduce((sum, p) => sum + p.fixedUsdPerHour, 0);
  result.costs = runCosts(exp.costs, exp.replicas.count, result.durationMs, result.costs.tokenUsd, fixedPerHour);
  opts.onProgress?.(s.done, total, result);
  return result;
}

/** The label of each run entry of an experiment, in order. */
export function runSpecs(exp: Experiment): RunSpec[] {
  return exp.runs.map((r) => ({ strategy: r.strategy, params: r.params, label: runLabel(r) }));
}
