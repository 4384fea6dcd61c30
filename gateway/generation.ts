/**
 * Builds one configuration generation of a gateway (`startGateway`, gateway.ts): the routing
 * core for the YAML configuration with the operators' overlay on top, the route targets, the
 * routing streams, the caller keys and the request-log hook. Every start, SIGHUP reload and
 * admin change of the overlay builds one.
 */
import type { SharedUnits } from './state/shared-units.ts';
import type { ServedLedger } from './server/served-ledger.ts';
import { KeySecrets, unrestrictedKey } from './upstream/key-secrets.ts';
import type { Logger } from 'pino';
import { routeNotices } from '../core/config/route-notices.ts';
import { deriveRng, endpointId, routeEndpointFamilies, RoutingCore, type RouteOverlay, type Rng } from '../core/index.ts';
import { buildGatewayAuto } from './auto/gateway-auto.ts';
import { Callers } from './callers.ts';
import { bodyLimitBytes } from './config/gateway-settings.ts';
import { healthOptions, workerSafeModules, workerScopeError, type GatewayConfig } from './config/load.ts';
import { strategyRegistry } from './config/strategy-modules.ts';
import { NO_MODEL_LABEL, type GatewayMetrics } from './metrics.ts';
import { LOG_BLOCK, type RequestLogRow } from './request-log/log-row.ts';
import { prefixBlockHashes, serializedPrompt } from './request-log/prefix-hashes.ts';
import type { RequestLog } from './request-log/request-log.ts';
import type { FinishedExchange, RouteTarget } from './server/exchange-context.ts';
import { attemptReason } from './server/attempt-reason.ts';
import type { Generation } from './server/uws.ts';
import { adoptWakeups } from './server/wakeups.ts';
import type { Tracing } from './tracing/tracing.ts';
import type { UpstreamPools } from './upstream/pools.ts';
import { adapterFor, defaultEndpoints, routeServeProblem } from './upstream/adapters.ts';

/**
 * A route this gateway cannot serve (`upstream/adapters.ts` `routeServeProblem`): the model id,
 * the route's index in the model's `route:` list, and the route field the problem comes from.
 */
export class RouteRefusedError extends Error {
  constructor(
    readonly modelId: string,
    readonly routeIndex: number,
    readonly field: string,
    message: string,
  ) {
    super(message);
  }
}

/** The checks of `buildGeneration` that come before the core: worker scope, then every route. */
function checkRoutes(config: GatewayConfig): void {
  const scope = workerScopeError(config.models, config.settings.server.workers, workerSafeModules(config.strategies ?? []), config.settings.state.backend);
  if (scope) throw new Error(`gateway: configuration refused: ${scope}`);
  for (const m of config.models.models) {
    m.route.forEach((r, i) => {
      const p = routeServeProblem(r);
      if (p) throw new RouteRefusedError(m.id, i, p.field, `model '${m.id}' route ${i} (${r.base_url}): ${p.message}`);
    });
  }
}

/**
 * Every check `buildGeneration` makes, without building or putting anything in force: worker
 * scope, an adapter and endpoint families for every route, an http(s) base URL, and the routing
 * core's own checks with `overlay`. The admin API runs it on the configuration a change would
 * give before writing the change.
 * @throws RouteRefusedError for a route the gateway cannot serve; Error naming the model and
 *   field for the rest.
 */
export function checkGeneration(config: GatewayConfig, overlay: RouteOverlay): void {
  checkRoutes(config);
  new RoutingCore(config.models, { health: healthOptions(config.settings), settings: config.routingSettings, overlay, defaultEndpoints, registry: strategyRegistry(config.strategies ?? []) });
}

/** What a generation needs besides its configuration. */
export interface GenerationDeps {
  seed: number;
  worker: number;
  pools: UpstreamPools;
  log: Logger;
  metrics: GatewayMetrics;
  requestLog: RequestLog | null;
  logPrompts: boolean;
  /** Weight overrides and disabled providers in force. */
  overlay: RouteOverlay;
  /** The generation in force until now, whose learned state the new core shares; null at start. */
  carryFrom: RoutingCore | null;
  /** The gateway's tracing, or null when it is off. */
  tracing: Tracing | null;
  /**
   * The process's pooled-key secrets (`upstream/key-secrets.ts`): the generation registers the
   * keys of its models.yaml there. Absent ⇒ a private table (tests that build one generation).
   */
  keySecrets?: KeySecrets;
  /** Where each finished request's serving endpoint is recorded (`RunningGateway.servedEndpoint`); absent ⇒ nowhere. */
  served?: ServedLedger;
  /**
   * Whether auto models are served (the runtime setting `auto_mode_enabled`: its admin value
   * when one is set, `admin/runtime-settings-admin.ts`); absent ⇒ gateway.yaml's value.
   */
  autoModeEnabled?: boolean;
  /** The limits shared with other replicas, once the shared state is open (`state/shared-units.ts`); absent ⇒ all local. */
  sharedUnits?: () => SharedUnits | null;
}

/**
 * One configuration generation: core (the YAML with the overlay laid over it, sharing the
 * previous generation's learned state), route targets, routing streams, keys.
 * @throws Error when the core rejects the configuration, or when `server.workers` > 1 and some
 *   model keeps routing state per process (`workerScopeError`: names the models, RouteWise
 *   quota / concurrency routes, and the fix).
 */
export function buildGeneration(config: GatewayConfig, d: GenerationDeps): Generation {
  const s = config.settings;
  checkRoutes(config);
  const core = new RoutingCore(config.models, {
    health: healthOptions(s),
    settings: config.routingSettings,
    overlay: d.overlay,
    defaultEndpoints,
    // The gateway.yaml strategy modules, imported in this thread when the configuration was loaded.
    registry: strategyRegistry(config.strategies ?? []),
    ...(d.carryFrom && { carryFrom: d.carryFrom }),
  });
  // Lives of the old generation may wait on slots the new one frees: one wake-up router for both.
  if (d.carryFrom) adoptWakeups(d.carryFrom, core);
  // Routes zeroed or re-weighted at start (or reload) are logged once, with configured and
  // effective weight and the reasons (seed 000: route_weight_zeroed / route_weight_overridden).
  if (d.worker === 0) {
    for (const n of routeNotices(core.routeExclusions())) {
      d.log[n.level]({ model: n.modelId, endpoint: n.endpointId, configured_weight: n.configuredWeight, effective_weight: n.effectiveWeight, reasons: n.reasons }, n.event);
    }
  }
  const routes = new Map<string, RouteTarget>();
  for (const m of config.models.models) {
    for (const r of m.route) {
      const id = endpointId(m.id, r.kind, r.base_url);
      const url = new URL(r.base_url);
      const adapter = adapterFor(r.kind);
      routes.set(id, {
        endpointId: id,
        adapter,
        endpoints: new Set(routeEndpointFamilies(r.kind, r.endpoints, defaultEndpoints) ?? adapter.endpoints),
        pool: d.pools.forOrigin(url.origin),
        basePath: url.pathname.replace(/\/+$/, ''),
        origin: url.origin,
        apiKey: unrestrictedKey(r),
        upstreamModel: r.provider_model_id ?? m.id,
        declaredEndpoints: r.endpoints ?? null,
      });
    }
  }
  const keySecrets = d.keySecrets ?? new KeySecrets();
  keySecrets.setConfigured(config.models.models.flatMap((m) => m.route));
  const streamOf = new Map<string, Rng>();
  const fallbackRng = deriveRng(d.seed, `gateway/worker-${d.worker}/unknown-model`);
  for (const m of core.allModels()) streamOf.set(m.id, deriveRng(d.seed, `gateway/worker-${d.worker}/model/${m.id}`));

  const routingHeaders = new Set<string>(['x-switchyard-routing-key']);
  let routingCookies = false;
  for (const m of config.models.models) {
    // Multi-target `hash_on` sources, read structurally so this stays valid as the core grows.
    const chain = (m as { routing?: { hash_on?: Array<{ type: string; name?: string }> } }).routing?.hash_on ?? [];
    for (const src of chain) {
      if (src.type === 'header' && src.name) routingHeaders.add(src.name.toLowerCase());
      if (src.type === 'cookie') routingCookies = true;
    }
  }
  // Price per endpoint, USD per token, for the log's cost column.
  const price = new Map<string, { input: number; cached: number; output: number }>();
  for (const m of core.allModels()) {
    for (const r of m.routes) price.set(r.endpointId, { input: r.pricing.inputUsdPer1M / 1e6, cached: r.pricing.cachedInputUsdPer1M / 1e6, output: r.pricing.outputUsdPer1M / 1e6 });
  }
  const timeOrigin = performance.timeOrigin;
  const onFinished = (f: FinishedExchange): void => {
    const md = f.metadata;
    const e2eMs = f.endedAtMs - f.startedAtMs;
    const ttftMs = md?.firstTokenAtMs != null ? md.firstTokenAtMs - f.startedAtMs : null;
    const endpoint = md?.endpointId ?? null;
    // A name the core does not resolve is the client's to choose: one label, not a label per name.
    const modelId = md?.modelId ?? core.model(f.req.model)?.id ?? NO_MODEL_LABEL;
    d.metrics.observeRequest({
      model: modelId,
      endpoint: endpoint ?? 'none',
      httpStatus: f.httpStatus,
      stream: f.req.stream,
      // A non-stream's first token is its whole body (the metric's documented meaning).
      ttftSec: ttftMs !== null ? ttftMs / 1000 : !f.req.stream && md?.status === 'ok' ? e2eMs / 1000 : null,
      e2eSec: e2eMs / 1000,
      fallback: md?.fallback ?? false,
      offloadReason: md?.offloadReason ?? null,
      api: f.req.endpoint,
    });
    // One line per request moved to its offload route (seed 000, "queue-wait offload").
    if (md?.offloadReason) d.log.info({ requestId: f.requestId, model: modelId, endpoint, reason: md.offloadReason, httpStatus: f.httpStatus }, 'route_offload');
    d.served?.record(f.requestId, md?.status === 'ok' ? endpoint : null);
    if (!d.requestLog) return;
    const usage = md?.usage ?? null;
    const inputTokens = usage && usage.inputTokens > 0 ? usage.inputTokens : f.req.inputTokens;
    const outputTokens = usage?.outputTokens ?? 0;
    const cached = usage?.cachedTokens ?? 0;
    const costOf = (endpointId: string | null, input: number, cachedIn: number, output: number): number => {
      const p = endpointId ? price.get(endpointId) : undefined;
      return p ? (input - cachedIn) * p.input + cachedIn * p.cached + output * p.output : 0;
    };
    const prompt = serializedPrompt(f.req.body);
    const row: RequestLogRow = {
      arrivalUnixMs: timeOrigin + f.startedAtMs,
      requestId: f.requestId,
      sessionId: f.sessionId,
      callerId: f.callerId,
      model: f.req.model,
      inputTokens,
      outputTokens,
      hashIds: prefixBlockHashes(prompt, LOG_BLOCK.blockSize),
      stream: f.req.stream,
      ttftMs,
      e2eMs,
      api: f.req.endpoint,
      endpointId: endpoint,
      attempts: md?.attempts.length ?? 0,
      httpStatus: f.httpStatus,
      // A request cut at the drain's grace is the gateway's doing (the client got `draining`).
      status: f.cut ? 'draining' : (md?.status ?? f.refusedCode ?? 'internal_error'),
      fallback: md?.fallback ?? false,
      cachedTokens: cached,
      costUsd: costOf(endpoint, inputTokens, cached, outputTokens),
      prompt: d.logPrompts ? prompt : null,
      offloadReason: md?.offloadReason ?? null,
      strategy: md?.strategy ?? null,
      metadata: f.req.auto ? JSON.stringify({ auto: f.req.auto.metadata }) : null,
      attemptLog: [],
    };
    const atts = md?.attempts ?? [];
    for (let i = 0; i < atts.length; i++) {
      const a = atts[i]!;
      // The serving attempt carries the request's tokens when its upstream reported no usage.
      const served = a.outcome.kind === 'ok' && a.endpointId === endpoint;
      const aIn = a.usage && a.usage.inputTokens > 0 ? a.usage.inputTokens : served ? inputTokens : 0;
      const aOut = a.usage?.outputTokens ?? (served ? outputTokens : 0);
      const aCached = a.usage?.cachedTokens ?? (served ? cached : 0);
      row.attemptLog.push({
        endpointId: a.endpointId,
        target: a.target ?? null,
        outcome: a.outcome.kind === 'http_status' ? `http_${a.outcome.status}` : a.outcome.kind,
        reason: attemptReason(md!, i),
        startOffsetMs: a.startMs - f.startedAtMs,
        endOffsetMs: a.endMs - f.startedAtMs,
        inputTokens: aIn,
        outputTokens: aOut,
        cachedTokens: aCached,
        // Priced at the attempt's own endpoint; a failed attempt is not billed (seed 003).
        costUsd: a.outcome.kind === 'ok' ? costOf(a.endpointId, aIn, aCached, aOut) : 0,
      });
    }
    d.requestLog.append(row);
  };
  return {
    core,
    routes,
    rngFor: (name) => {
      const m = core.model(name);
      return (m && streamOf.get(m.id)) ?? fallbackRng;
    },
    now: () => performance.now(),
    log: d.log,
    maxErrorBodyBytes: s.upstream.max_error_body_kb * 1024,
    tracing: d.tracing,
    onFinished,
    keySecret: (fingerprint) => keySecrets.get(fingerprint),
    sharedUnits: d.sharedUnits,
    callers: new Callers(s.auth, core),
    bodyLimitBytes: bodyLimitBytes(s),
    maxInFlight: s.server.max_in_flight,
    bodyReadTimeoutMs: s.server.body_read_timeout_ms,
    overloadRetryAfterSec: s.server.overload_retry_after_sec,
    routingHeaders: [...routingHeaders],
    routingCookies,
    auto: buildGatewayAuto(config.models, core, d.autoModeEnabled ?? s.auto_mode_enabled, d.carryFrom, d.log, d.worker === 0),
  };
}

