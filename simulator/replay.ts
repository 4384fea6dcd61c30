/**
 * One run of an experiment: a trace replayed through the routing core onto simulated endpoints —
 * local replicas (an `EngineModel` each) and hosted providers (`HostedProvider`) — in virtual
 * time, with faults and client behaviour. The discrete-event loop owns the clock; the core
 * decides where each attempt goes through the lifecycle seam (`RoutingCore.start` /
 * `RequestLife.step`); endpoints report first tokens and completions, faults delay, refuse or
 * break them, and clients time out, abandon or retry.
 *
 * Deterministic: the same experiment, run and seed give identical rows. Randomness comes from
 * one stream per purpose — `strategy/<name>` (the core's draws), `workload/callers`,
 * `client/*`, `provider/<name>`, `faults` — and the last three are keyed draws (crn.ts), so two
 * strategies replaying the same cell see the same arrivals, client behaviour, provider latencies
 * and fault draws for every request (common random numbers).
 */
import { deriveRng } from '../core/rng.ts';
import { RoutingCore } from '../core/routing-core.ts';
import { parseModelsConfig } from '../core/config/models-config.ts';
import type { AttemptDeadlines, LifecycleAction, RequestLife, RoutingMetadata } from '../core/lifecycle/seam.ts';
import type { Outcome } from '../core/lifecycle/outcome.ts';
import type { TraceRow } from '../traces/trace-row.ts';
import { firstTokenDelayMs, streamDelayMs } from './engine/api-server.ts';
import type { EngineEvent, EngineModel } from './engine/engine-model.ts';
import { replicaApiServer } from './engine/replica-config.ts';
import { EngineEndpoint } from './engine-endpoint.ts';
import { EventQueue } from './event-queue.ts';
import { healthOptions, resolveProviders, runLabel, type Experiment } from './experiment.ts';
import { faultParams } from './faults/fault-config.ts';
import { FaultPlan, type AttemptFaultEffect } from './faults/fault-plan.ts';
import { HostedProvider } from './providers/hosted-provider.ts';
import { isRetryable, planClients, retryDelayMs } from './client-behaviour.ts';
import { runCosts, type RunCosts } from './costs.ts';
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
  /** Virtual time the last request ended, ms (the run's duration: throughput, GPU-hours). */
  durationMs: number;
  /** Events the loop processed. */
  eventsProcessed: number;
  prefixCache: { lookupTokens: number; hitTokens: number };
  /** Token, subscription and GPU costs of the run. */
  costs: RunCosts;
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
  /** Tokens per trace prefix block (providers' prompt cache); default 512 (Mooncake). */
  hashBlockTokens?: number;
  /** Check every invariant after every event (tests; slower). */
  checkInvariants?: boolean;
  /** Called every ~2,000 events with (requests done, total). */
  onProgress?: (done: number, total: number) => void;
}

type SimEvent =
  | { k: 'arrival'; req: number }
  | { k: 'retry'; req: number; tryNo: number }
  | { k: 'step'; ep: number; gen: number }
  | { k: 'att_fail'; gid: number; outcome: Outcome }
  | { k: 'att_first'; gid: number }
  | { k: 'att_finish'; gid: number }
  /** A dispatch deadline of the core: first token (`first`) or whole response (`total`). */
  | { k: 'att_deadline'; gid: number; first: boolean }
  | { k: 'fault_edge'; fault: number; start: boolean }
  | { k: 'deadline'; req: number; tryNo: number; deadlineId: number }
  | { k: 'client_timeout'; req: number; tryNo: number }
  | { k: 'abandon'; req: number }
  | { k: 'sample' };

/** A trace request while it is being served (over all its client tries). */
interface ReqState {
  life: RequestLife | null;
  tryNo: number;
  /** life attempt id → global attempt id, for the current try. */
  gids: Map<number, number>;
  /** Attempt ids of earlier tries (rows number attempts across tries). */
  attemptBase: number;
  /** The client has seen output (first token when streaming, the answer otherwise). */
  visible: boolean;
  costUsd: number;
  cachedTokens: number;
  /** Why the client ended the current try, when it did. */
  endReason: 'client_timeout' | 'client_abandoned' | null;
  lastError: { status: number; retryAfterSec: number | null } | null;
  lastEndpointId: string | null;
  /** Attempts queued for a gateway slot (life attempt id → since when), current try. */
  queuedAt: Map<number, number>;
  /** Total time the request's attempts waited for gateway slots, ms; null if none ever did. */
  queueWaitMs: number | null;
}

/** One attempt (dispatch) as the loop tracks it; indexed by its global id. */
interface Attempt {
  readonly req: number;
  /** The life's attempt id (within the try). */
  readonly attemptId: number;
  readonly tryNo: number;
  readonly ep: number;
  readonly startMs: number;
  live: boolean;
  fx: AttemptFaultEffect | null;
  /** Delivered first token minus produced first token, ms (faults). */
  shiftMs: number;
  firstDeliveredAtMs: number | null;
  cachedTokens: number;
  costUsd: number;
  /** Provider attempts: when the provider produced the first token, and the per-token time. */
  rawFirstAtMs: number;
  tpotMs: number;
  /** The provider limit that refused the attempt (`rpm`, `tpm`, `concurrency`, `quota`), if one did. */
  limit: string | null;
  /** Engine attempts: handed to the engine and not yet finished or rejected there. */
  inEngine: boolean;
}

interface Endpoint {
  readonly name: string;
  readonly endpointId: string;
  readonly engine: EngineEndpoint | null;
  readonly provider: HostedProvider | null;
}

/** Endpoint names in route order: `replica-0..n-1`, then the providers. */
export function endpointNames(exp: Experiment): string[] {
  const names: string[] = [];
  for (let i = 0; i < (exp.replicas.count); i++) names.push(`replica-${i}`);
  for (const p of exp.providers) names.push(p.name);
  return names;
}

/**
 * The models config a simulated experiment routes with: one model, one route per replica
 * (`sim://replica-<i>`, local) then one per provider (`sim://<name>`, remote) with its prices
 * and resource semantics (`provider_type`; the quota windows of a `quota` provider; the slots of
 * a `concurrency` provider), so strategies that read them (RouteWise) see what the provider model
 * enforces.
 * @throws Error naming the experiment and run when the core rejects the config.
 */
export function simulatedModelsConfig(exp: Experiment, run: RunSpec) {
  const entry = runEntry(exp, run);
  const replicas = Array.from({ length: exp.replicas.count }, (_, i) => ({
    kind: 'openai_compat',
    base_url: `sim://replica-${i}`,
    weight: exp.replicas.weights?.[i] ?? 1,
    local: true,
  }));
  const providers = resolveProviders(exp).map((p) => ({
    kind: 'openai_compat',
    base_url: `sim://${p.name}`,
    weight: p.weight,
    local: false,
    provider: p.name,
    pricing: {
      input_usd_per_1m: p.pricing.inputUsdPer1M,
      output_usd_per_1m: p.pricing.outputUsdPer1M,
      cached_input_usd_per_1m: p.pricing.cachedInputUsdPer1M,
    },
    ...(p.contextLength !== null && { context_length: p.contextLength }),
    provider_type: p.type,
    ...(p.type === 'quota' && {
      quota: p.limits.quota.flatMap((w) => [
        ...(w.requests !== undefined ? [{ limit: w.requests, window_sec: w.windowMs / 1000, unit: 'requests' }] : []),
        ...(w.tokens !== undefined ? [{ limit: w.tokens, window_sec: w.windowMs / 1000, unit: 'tokens' }] : []),
      ]),
    }),
    ...(p.type === 'concurrency' && p.limits.concurrency !== undefined && { concurrency: { limit: p.limits.concurrency } }),
  }));
  const routing = exp.local_weight_share !== undefined ? { routing: { default_router: 'fixed', local_weight_share: exp.local_weight_share } } : {};
  const where = `${exp.file} (runs: ${run.label})`;
  if (entry?.style === 'multi_target') {
    const mt = exp.multi_target!;
    const cooldown = { ...mt.cooldown, ...(entry.multi_target?.cooldown ?? {}) };
    const routes = [...replicas, ...providers];
    const names = endpointNames(exp);
    const direct = names.map((name, i) => ({ id: name, route: [routes[i]!], ...(cooldown[name] !== undefined && { cooldown: cooldown[name] }) }));
    const alias = {
      id: exp.model,
      routing: {
        strategy: run.strategy,
        params: run.params,
        ...mt.routing,
        ...(entry.multi_target?.routing ?? {}),
        targets: mt.targets.map(({ endpoint, ...fields }) => ({ model: endpoint, ...fields })),
      },
    };
    return parseModelsConfig({ models: [...direct, alias], ...routing }, where);
  }
  const off = exp.offload;
  const offload = off && {
    route: `${exp.model}:${off.provider}`,
    wait_sec: off.wait_sec,
    ...(off.engine_queue_limit != null && off.engine_queue_limit > 0 && { engine_queue_limit: off.engine_queue_limit }),
    ...(off.max_input_tokens !== undefined && { max_input_tokens: off.max_input_tokens }),
  };
  return parseModelsConfig(
    {
      models: [{ id: exp.model, router: run.strategy, router_params: run.params, route: [...replicas, ...providers], ...(offload && { offload }) }],
      ...routing,
    },
    where,
  );
}

/** The experiment's run entry a run spec came from (by label), if any. */
function runEntry(exp: Experiment, run: RunSpec): Experiment['runs'][number] | undefined {
  return exp.runs.find((r) => runLabel(r) === run.label);
}

/**
 * Endpoint id of each endpoint, in `endpointNames` order: `<model>:<name>` for per-model runs,
 * `<name>:<name>` (the endpoint's own direct model) for `style: multi_target` runs. Looked up in
 * the core by model, so the order of the alias's targets does not matter.
 * @throws Error naming the endpoint when the core has no route for it.
 */
export function endpointIdsOf(core: RoutingCore, exp: Experiment, run: RunSpec): string[] {
  const multi = runEntry(exp, run)?.style === 'multi_target';
  const model = core.model(exp.model);
  return endpointNames(exp).map((name) => {
    const id = multi ? core.model(name)?.routes[0]?.endpointId : model?.routes.find((r) => r.endpointId === `${exp.model}:${name}`)?.endpointId;
    if (id === undefined) throw new Error(`${exp.file} (runs: ${run.label}): no route for endpoint '${name}'`);
    return id;
  });
}

const RESET: Outcome = { kind: 'transport', cause: 'reset' };

/**
 * Replays `rows` (sorted by arrival) for one run.
 * @throws Error when a request does not end exactly once (a conservation bug) or an invariant fails.
 */
export function replayRun(opts: ReplayOptions): RunResult {
  const { experiment: exp, rows, run, runId, seed } = opts;
  const core = new RoutingCore(simulatedModelsConfig(exp, run), { settings: exp.routing, health: healthOptions(exp) });
  const names = endpointNames(exp);
  const endpointIds = endpointIdsOf(core, exp, run);
  const providerSpecs = resolveProviders(exp);
  const replicaCount = exp.replicas.count;
  const hashBlockTokens = opts.hashBlockTokens ?? 512;
  const endpoints: Endpoint[] = names.map((name, i) => ({
    name,
    endpointId: endpointIds[i]!,
    engine: i < replicaCount ? new EngineEndpoint(opts.makeReplica(i), () => opts.makeReplica(i)) : null,
    provider: i < replicaCount ? null : new HostedProvider(providerSpecs[i - replicaCount]!, seed, hashBlockTokens),
  }));
  const epOf = new Map(endpoints.map((e, i) => [e.endpointId, i]));
  const faults = exp.faults.length > 0 ? new FaultPlan(exp.faults, new Map(names.map((n, i) => [n, i])), names.length, seed) : null;
  const client = exp.client;
  const plan = planClients(rows.map((r) => r.stream), client, seed);
  const strategyRng = deriveRng(seed, `strategy/${run.strategy}`);
  const callers = assignCallers(
    rows.map((r) => r.sessionId),
    exp.callers.count,
    exp.callers.zipf_s,
    deriveRng(seed, 'workload/callers'),
  );
  const arrivalOf = (i: number) => rows[i]!.arrivalMs / exp.rate_scale;
  /** The replicas' API server delays what their engines produce (`replicaApiServer`: calibrated by default). */
  const apiServer = replicaApiServer(exp.replicas);

  const q = new EventQueue<SimEvent>();
  const reqs: (ReqState | null)[] = new Array(rows.length).fill(null);
  const ended = new Uint8Array(rows.length);
  const atts: Attempt[] = [];
  const liveByEp: Set<number>[] = endpoints.map(() => new Set());
  const result: RunResult = {
    requests: [],
    attempts: [],
    samples: [],
    events: [],
    durationMs: 0,
    eventsProcessed: 0,
    prefixCache: { lookupTokens: 0, hitTokens: 0 },
    costs: { tokenUsd: 0, fixedUsd: 0, gpuHours: 0, gpuUsd: 0 },
  };
  let nextGid = 1;
  let done = 0;
  let now = 0;
  /** When the last request ended: the run's duration. */
  let lastEndMs = 0;
  const emitted: EngineEvent[] = [];
  const emit = (e: EngineEvent) => emitted.push(e);
  /** The request each live try belongs to, for the core's slot wake-ups. */
  const reqOfLife = new Map<RequestLife, number>();

  // Fault edges first, so a window [from, to) covers arrivals at from_ms and not at to_ms.
  if (faults) for (const e of faults.edges) q.push(e.atMs, { k: 'fault_edge', fault: e.fault, start: e.start });
  for (let i = 0; i < rows.length; i++) q.push(arrivalOf(i), { k: 'arrival', req: i });
  if (rows.length > 0) q.push(arrivalOf(0), { k: 'sample' });

  /**
   * Ends an attempt on the endpoint side: frees it, bills it. `completed` = all tokens produced;
   * `hedgeLost` = cancelled because the other attempt of a hedge race answered first (billed at
   * least its prompt: RouteWise counts both attempts of a hedge as paid).
   */
  const endAttempt = (gid: number, completed: boolean, hedgeLost = false) => {
    const a = atts[gid]!;
    a.live = false;
    liveByEp[a.ep]!.delete(gid);
    const ep = endpoints[a.ep]!;
    if (ep.engine) {
      if (a.inEngine) {
        a.inEngine = false;
        const t = ep.engine.cancel(gid, now);
        if (t !== null) q.push(t, { k: 'step', ep: a.ep, gen: ep.engine.generation });
      }
      return;
    }
    const p = ep.provider!;
    p.release(gid);
    const row = rows[a.req]!;
    // Billed: the whole response when complete; when cut short after the provider produced its
    // first token, the prompt and the tokens produced so far; nothing before the first token
    // (an assumption: providers differ on billing cancelled prompts).
    let out = 0;
    if (completed) out = row.outputTokens;
    else if (a.rawFirstAtMs <= now) out = Math.min(row.outputTokens, 1 + Math.floor((now - a.rawFirstAtMs) / Math.max(a.tpotMs, 1e-9)));
    if (out > 0 || completed || hedgeLost) {
      a.costUsd = p.costUsd(row.inputTokens, a.cachedTokens, out);
      reqs[a.req]!.costUsd += a.costUsd;
      result.costs.tokenUsd += a.costUsd;
    }
  };

  const dispatch = (reqIdx: number, lr: ReqState, attemptId: number, endpointId: string, deadlines: AttemptDeadlines) => {
    const epIdx = epOf.get(endpointId)!;
    const gid = nextGid++;
    const a: Attempt = { req: reqIdx, attemptId, tryNo: lr.tryNo, ep: epIdx, startMs: now, live: true, fx: null, shiftMs: 0, firstDeliveredAtMs: null, cachedTokens: 0, costUsd: 0, rawFirstAtMs: Infinity, tpotMs: 0, limit: null, inEngine: false };
    atts[gid] = a;
    lr.gids.set(attemptId, gid);
    liveByEp[epIdx]!.add(gid);
    // The core's deadlines, enforced as the gateway does: no first token by firstTokenAtMs ⇒
    // first_token_timeout; not finished by totalAtMs ⇒ transport timeout.
    if (deadlines.firstTokenAtMs !== null) q.push(Math.max(now, deadlines.firstTokenAtMs), { k: 'att_deadline', gid, first: true });
    if (deadlines.totalAtMs !== null) q.push(Math.max(now, deadlines.totalAtMs), { k: 'att_deadline', gid, first: false });
    const fx = faults ? faults.onDispatch(epIdx, reqIdx, lr.tryNo) : null;
    if (fx?.reply) {
      q.push(now + fx.reply.delayMs, { k: 'att_fail', gid, outcome: fx.reply.outcome });
      return;
    }
    a.fx = fx;
    const ep = endpoints[epIdx]!;
    const row = rows[reqIdx]!;
    if (ep.engine) {
      a.inEngine = true;
      const t = ep.engine.enqueue({ attemptId: gid, inputTokens: row.inputTokens, outputTokens: row.outputTokens, hashIds: row.hashIds }, now, emit);
      if (t !== null) q.push(t, { k: 'step', ep: epIdx, gen: ep.engine.generation });
      return;
    }
    const p = ep.provider!;
    const adm = p.admit(
      { gid, reqIndex: reqIdx, tryNo: lr.tryNo, inputTokens: row.inputTokens, outputTokens: row.outputTokens, hashIds: row.hashIds },
      now,
      faults ? faults.slowFactor(epIdx) : 1,
    );
    if (!adm.ok) {
      a.limit = adm.limit;
      q.push(now + p.spec.rejectLatencyMs, { k: 'att_fail', gid, outcome: { kind: 'http_status', status: 429, errorClass: 'rate_limited', retryAfterMs: adm.retryAfterMs } });
      return;
    }
    a.cachedTokens = adm.cachedTokens;
    a.rawFirstAtMs = adm.firstTokenAtMs;
    a.tpotMs = adm.tpotMs;
    const first = deliveredFirst(a, adm.firstTokenAtMs);
    a.shiftMs = first - adm.firstTokenAtMs;
    q.push(first, { k: 'att_first', gid });
    q.push(deliveredFinish(a, adm.finishedAtMs, first, row.outputTokens), { k: 'att_finish', gid });
  };

  /** When the client gets a first token the endpoint produced at `producedAtMs`. */
  const deliveredFirst = (a: Attempt, producedAtMs: number): number => {
    const fx = a.fx;
    if (!fx) return producedAtMs;
    return a.startMs + (producedAtMs - a.startMs) * fx.ttftFactor + fx.ttftAddMs;
  };

  /** When the client gets the last token produced at `producedAtMs` (never before the first). */
  const deliveredFinish = (a: Attempt, producedAtMs: number, firstAtMs: number, outputTokens: number): number => {
    const mid = a.fx && outputTokens > 1 ? a.fx.midStallMs : 0;
    return Math.max(producedAtMs + a.shiftMs + mid, firstAtMs);
  };

  const onFirstToken = (gid: number) => {
    const a = atts[gid]!;
    const lr = reqs[a.req]!;
    a.firstDeliveredAtMs = now;
    if (plan.stream[a.req] === 1) lr.visible = true;
    if (a.fx && a.fx.disconnectAfterMs !== null) q.push(now + a.fx.disconnectAfterMs, { k: 'att_fail', gid, outcome: RESET });
    apply(a.req, lr, lr.life!.step({ kind: 'first_token', attemptId: a.attemptId }, now));
  };

  const onFinished = (gid: number) => {
    const a = atts[gid]!;
    const lr = reqs[a.req]!;
    endAttempt(gid, true);
    lr.cachedTokens = a.cachedTokens;
    lr.visible = true;
    const row = rows[a.req]!;
    apply(a.req, lr, lr.life!.step({ kind: 'finished', attemptId: a.attemptId, usage: { inputTokens: row.inputTokens, outputTokens: row.outputTokens, cachedTokens: a.cachedTokens } }, now));
  };

  const failAttempt = (gid: number, outcome: Outcome) => {
    const a = atts[gid]!;
    if (!a.live) return;
    endAttempt(gid, false);
    const lr = reqs[a.req]!;
    apply(a.req, lr, lr.life!.step({ kind: 'failed', attemptId: a.attemptId, outcome }, now));
  };

  const apply = (reqIdx: number, lr: ReqState, actions: readonly LifecycleAction[]) => {
    for (const a of actions) {
      switch (a.kind) {
        case 'dispatch': {
          const queuedAt = lr.queuedAt.get(a.attemptId);
          if (queuedAt !== undefined) {
            lr.queueWaitMs = (lr.queueWaitMs ?? 0) + (now - queuedAt);
            lr.queuedAt.delete(a.attemptId);
          }
          dispatch(reqIdx, lr, a.attemptId, a.endpointId, a.deadlines);
          break;
        }
        case 'acquire_slot':
          // Queued in the gateway for an outbound slot or engine-hold place; `dispatch` follows.
          lr.queuedAt.set(a.attemptId, now);
          break;
        case 'cancel': {
          const gid = lr.gids.get(a.attemptId);
          if (gid !== undefined && atts[gid]!.live) endAttempt(gid, false, a.reason === 'hedge_lost');
          break;
        }
        case 'wait_until':
          q.push(a.atMs, { k: 'deadline', req: reqIdx, tryNo: lr.tryNo, deadlineId: a.deadlineId });
          break;
        case 'commit':
          break;
        case 'respond_error':
          lr.lastError = { status: a.status, retryAfterSec: a.retryAfterSec };
          break;
        case 'done':
          tryDone(reqIdx, lr, a.metadata);
          break;
      }
    }
  };

  /** The life of one client try ended: record its attempts, then finish or retry the request. */
  const tryDone = (reqIdx: number, lr: ReqState, md: RoutingMetadata) => {
    const row = rows[reqIdx]!;
    for (const at of md.attempts) {
      const gid = lr.gids.get(at.attemptId);
      const a = gid === undefined ? undefined : atts[gid];
      if (gid !== undefined && a?.live) endAttempt(gid, false); // the life ended it; free the endpoint too
      const o = at.outcome;
      result.attempts.push({
        runId,
        requestId: row.requestId,
        attemptId: lr.attemptBase + at.attemptId,
        endpointId: at.endpointId,
        startMs: at.startMs,
        endMs: at.endMs,
        outcome: o.kind,
        status: o.kind === 'http_status' ? o.status : null,
        clientTry: lr.tryNo,
        retryAfterMs: o.kind === 'http_status' ? o.retryAfterMs : null,
        cause: a?.limit ?? (o.kind === 'http_status' ? o.errorClass : o.kind === 'transport' ? o.cause : null),
        costUsd: a?.costUsd ?? 0,
      });
    }
    lr.attemptBase += md.attempts.length;
    lr.gids.clear();
    lr.queuedAt.clear();
    if (lr.life) reqOfLife.delete(lr.life);
    lr.life = null;
    lr.lastEndpointId = md.endpointId ?? lr.lastEndpointId;
    if (md.status === 'ok') return finish(reqIdx, lr, 'ok', md);
    const reason = lr.endReason ?? md.status;
    if (reason !== 'client_abandoned' && lr.tryNo < client.retries.max) {
      const key = reason === 'client_timeout' ? 'timeout' : lr.lastError?.status;
      if (key !== undefined && isRetryable(client, key)) {
        const retryAfterMs = lr.lastError?.retryAfterSec == null ? null : lr.lastError.retryAfterSec * 1000;
        q.push(now + retryDelayMs(client, plan, reqIdx, lr.tryNo, reason === 'client_timeout' ? null : retryAfterMs), { k: 'retry', req: reqIdx, tryNo: lr.tryNo + 1 });
        return;
      }
    }
    finish(reqIdx, lr, reason, md);
  };

  const finish = (reqIdx: number, lr: ReqState, status: string, md: RoutingMetadata | null) => {
    if (ended[reqIdx]) throw new Error(`request ${rows[reqIdx]!.requestId} ended twice`);
    ended[reqIdx] = 1;
    const row = rows[reqIdx]!;
    const arrival = arrivalOf(reqIdx);
    const ok = status === 'ok' && md !== null;
    const ttft = ok && md.firstTokenAtMs !== null ? md.firstTokenAtMs - arrival : null;
    const e2e = ok && md.finishedAtMs !== null ? md.finishedAtMs - arrival : null;
    result.requests.push({
      runId,
      requestId: row.requestId,
      sessionId: row.sessionId,
      callerId: callers[reqIdx]!,
      arrivalMs: arrival,
      endpointId: md?.endpointId ?? lr.lastEndpointId,
      queueWaitMs: lr.queueWaitMs,
      ttftMs: ttft,
      tpotMs: ttft !== null && e2e !== null && row.outputTokens > 1 ? (e2e - ttft) / (row.outputTokens - 1) : null,
      e2eMs: e2e,
      inputTokens: row.inputTokens,
      outputTokens: row.outputTokens,
      cachedTokens: ok ? lr.cachedTokens : 0,
      status,
      costUsd: lr.costUsd,
      fallbacks: md ? md.fallbacks ?? Math.max(0, md.attempts.length - 1) : 0,
      offloadReason: md?.offloadReason ?? null,
      stream: plan.stream[reqIdx] === 1,
      tries: lr.tryNo + 1,
    });
    reqs[reqIdx] = null;
    done++;
    lastEndMs = now;
  };

  const startTry = (reqIdx: number, lr: ReqState) => {
    const row = rows[reqIdx]!;
    lr.endReason = null;
    lr.lastError = null;
    const { life, actions } = core.start(
      {
        requestId: row.requestId,
        model: exp.model,
        sessionId: row.sessionId,
        callerId: callers[reqIdx]!,
        inputTokens: row.inputTokens,
        outputTokensHint: row.outputTokens,
        stream: plan.stream[reqIdx] === 1,
        modalities: [],
        pin: null,
        prefixHashes: row.hashIds,
      },
      now,
      strategyRng,
    );
    lr.life = life;
    reqOfLife.set(life, reqIdx);
    if (client.timeout_ms !== undefined) q.push(now + client.timeout_ms, { k: 'client_timeout', req: reqIdx, tryNo: lr.tryNo });
    apply(reqIdx, lr, actions);
  };

  /** The client disconnects from its current try (timeout or abandonment). */
  const clientGone = (reqIdx: number, lr: ReqState, reason: 'client_timeout' | 'client_abandoned') => {
    lr.endReason = reason;
    apply(reqIdx, lr, lr.life!.step({ kind: 'client_gone' }, now));
  };

  const drainEngineEvents = () => {
    // Engine events are handled after the engine call returns, so a fallback dispatch never
    // re-enters a replica in the middle of its own step.
    for (let i = 0; i < emitted.length; i++) {
      const e = emitted[i]!;
      const a = atts[e.attemptId];
      if (!a || !a.live) continue; // cancelled, failed, or its request finished
      if (e.kind !== 'first_token') a.inEngine = false; // finished or rejected: the engine let it go
      const row = rows[a.req]!;
      if (e.kind === 'first_token') {
        a.cachedTokens = e.cachedTokens;
        const apiMs = firstTokenDelayMs(apiServer, row.inputTokens);
        if (a.fx || apiMs > 0) {
          const at = deliveredFirst(a, now + apiMs);
          a.shiftMs = at - now;
          if (at > now) {
            q.push(at, { k: 'att_first', gid: e.attemptId });
            continue;
          }
        }
        onFirstToken(e.attemptId);
      } else if (e.kind === 'finished') {
        const apiMs = streamDelayMs(apiServer, row.outputTokens);
        if (a.fx || a.firstDeliveredAtMs === null || apiMs > 0) {
          const at = deliveredFinish(a, now + apiMs, a.firstDeliveredAtMs ?? now + a.shiftMs, row.outputTokens);
          if (at > now || a.firstDeliveredAtMs === null) {
            q.push(at, { k: 'att_finish', gid: e.attemptId });
            continue;
          }
        }
        onFinished(e.attemptId);
      } else {
        failAttempt(e.attemptId, { kind: 'http_status', status: 400, errorClass: 'context_length', retryAfterMs: null });
      }
    }
    emitted.length = 0;
  };

  const drainBreakerEvents = () => {
    for (const t of core.health.drainTransitions()) {
      result.events.push({ runId, atMs: t.atMs, kind: 'breaker', endpointId: t.endpointId, detailJson: JSON.stringify({ from: t.from, to: t.to, reason: t.reason }) });
    }
  };

  const onFaultEdge = (fi: number, start: boolean) => {
    const f = faults!.faults[fi]!;
    const effect = faults!.applyEdge(fi, start);
    const ep = endpoints[effect.endpoint]!;
    result.events.push({
      runId,
      atMs: now,
      kind: 'fault',
      endpointId: ep.endpointId,
      detailJson: JSON.stringify({ phase: start ? 'start' : 'end', fault: f.kind, index: fi, from_ms: f.from_ms, to_ms: f.to_ms, ...faultParams(f) }),
    });
    if (effect.kind === 'crash_start') {
      // Everything in flight on the endpoint is lost; the core sees transport resets.
      ep.engine?.crash(now);
      for (const gid of [...liveByEp[effect.endpoint]!]) failAttempt(gid, RESET);
    } else if (effect.kind === 'slow_change' && ep.engine) {
      const t = ep.engine.setSlowFactor(effect.factor, now);
      if (t !== null) q.push(t, { k: 'step', ep: effect.endpoint, gen: ep.engine.generation });
    }
  };

  for (let ev = q.pop(); ev; ev = q.pop()) {
    now = ev.atMs;
    const d = ev.data;
    // Once every request has ended, what is left is stale (timeouts, deadlines of ended lives)
    // except fault windows, which are still written to `events`.
    if (done === rows.length && d.k !== 'fault_edge') continue;
    switch (d.k) {
      case 'arrival': {
        const lr: ReqState = {
          life: null,
          tryNo: 0,
          gids: new Map(),
          attemptBase: 0,
          visible: false,
          costUsd: 0,
          cachedTokens: 0,
          endReason: null,
          lastError: null,
          lastEndpointId: null,
          queuedAt: new Map(),
          queueWaitMs: null,
        };
        reqs[d.req] = lr;
        const patience = plan.patienceMs[d.req]!;
        if (patience !== Infinity) q.push(now + patience, { k: 'abandon', req: d.req });
        startTry(d.req, lr);
        break;
      }
      case 'step': {
        const e = endpoints[d.ep]!.engine!;
        if (d.gen !== e.generation) break; // rescheduled or crashed since
        const t = e.completeStep(now, emit);
        if (t !== null) q.push(t, { k: 'step', ep: d.ep, gen: e.generation });
        break;
      }
      case 'att_first': {
        const a = atts[d.gid]!;
        if (a.live) onFirstToken(d.gid);
        break;
      }
      case 'att_finish': {
        const a = atts[d.gid]!;
        if (a.live) onFinished(d.gid);
        break;
      }
      case 'att_fail':
        failAttempt(d.gid, d.outcome);
        break;
      case 'att_deadline': {
        const a = atts[d.gid]!;
        if (d.first && a.firstDeliveredAtMs === null) failAttempt(d.gid, { kind: 'first_token_timeout' });
        else if (!d.first) failAttempt(d.gid, { kind: 'transport', cause: 'timeout' });
        break;
      }
      case 'fault_edge':
        onFaultEdge(d.fault, d.start);
        break;
      case 'deadline': {
        const lr = reqs[d.req];
        if (lr?.life && lr.tryNo === d.tryNo) apply(d.req, lr, lr.life.step({ kind: 'deadline', deadlineId: d.deadlineId }, now));
        break;
      }
      case 'client_timeout': {
        const lr = reqs[d.req];
        if (lr?.life && lr.tryNo === d.tryNo) clientGone(d.req, lr, 'client_timeout');
        break;
      }
      case 'abandon': {
        const lr = reqs[d.req];
        if (!lr || lr.visible) break;
        if (lr.life) clientGone(d.req, lr, 'client_abandoned');
        else finish(d.req, lr, 'client_abandoned', null); // waiting to retry: it never comes
        break;
      }
      case 'retry': {
        const lr = reqs[d.req];
        if (!lr || lr.life) break; // abandoned meanwhile
        lr.tryNo = d.tryNo;
        startTry(d.req, lr);
        break;
      }
      case 'sample': {
        for (let i = 0; i < endpoints.length; i++) {
          const ep = endpoints[i]!;
          if (ep.engine) {
            const l = ep.engine.load();
            result.samples.push({ runId, endpointId: ep.endpointId, atMs: now, running: l.running, waiting: l.waiting, kvUsage: l.kvUsage, prefillBacklogTokens: l.prefillBacklogTokens, batchTokens: l.batchTokens, steps: l.steps, preemptions: l.preemptions });
          } else {
            result.samples.push({ runId, endpointId: ep.endpointId, atMs: now, running: ep.provider!.running, waiting: 0, kvUsage: 0, prefillBacklogTokens: 0, batchTokens: 0, steps: 0, preemptions: 0 });
          }
        }
        if (done < rows.length) q.push(now + exp.sample_interval_ms, { k: 'sample' });
        break;
      }
    }
    if (emitted.length > 0) drainEngineEvents();
    // Slots the core granted to queued attempts: tell their lives (which then dispatch).
    for (let w = core.drainWakeups(); w.length > 0; w = core.drainWakeups()) {
      for (const { life, event } of w) {
        const reqIdx = reqOfLife.get(life);
        const lr = reqIdx === undefined ? null : reqs[reqIdx];
        if (lr && lr.life === life) apply(reqIdx!, lr, life.step(event, now));
      }
      if (emitted.length > 0) drainEngineEvents();
    }
    drainBreakerEvents();
    result.eventsProcessed++;
    if (opts.checkInvariants) checkAll();
    if (opts.onProgress && (result.eventsProcessed & 2047) === 0) opts.onProgress(done, rows.length);
  }

  function checkAll() {
    for (const ep of endpoints) {
      ep.engine?.invariants();
      ep.provider?.invariants();
    }
    core.health.invariants();
    faults?.invariants();
    for (const lr of reqs) lr?.life?.invariants();
    endpoints.forEach((ep, i) => {
      if (ep.provider && ep.provider.running > liveByEp[i]!.size) throw new Error(`${ep.name}: provider holds ${ep.provider.running} attempts, loop has ${liveByEp[i]!.size} live`);
    });
  }

  result.durationMs = lastEndMs;
  if (done !== rows.length) {
    throw new Error(`conservation broken: ${rows.length - done} of ${rows.length} requests never ended`);
  }
  for (const ep of endpoints) {
    if (!ep.engine) continue;
    const s = ep.engine.prefixCacheStats();
    result.prefixCache.lookupTokens += s.lookupTokens;
    result.prefixCache.hitTokens += s.hitTokens;
  }
  const fixedPerHour = providerSpecs.reduce((s, p) => s + p.fixedUsdPerHour, 0);
  result.costs = runCosts(exp.costs, replicaCount, result.durationMs, result.costs.tokenUsd, fixedPerHour);
  opts.onProgress?.(done, rows.length);
  return result;
}

/** The label of each run entry of an experiment, in order. */
export function runSpecs(exp: Experiment): RunSpec[] {
  return exp.runs.map((r) => ({ strategy: r.strategy, params: r.params, label: runLabel(r) }));
}
