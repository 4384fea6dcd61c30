/**
 * Assembles one gateway (one worker): the routing core built from the validated configuration,
 * undici pools for every upstream origin, the caller keys, one seeded routing stream per model,
 * the uWS server, and — when configured — the admin listener, the request log and the metrics.
 * `startGateway` resolves once it listens; `listen(0)` picks a free port (tests read it back).
 * The clock is `performance.now()` (monotonic); the root seed comes from the options, else
 * `server.seed`, else `crypto`, and is reported so a run can be explained.
 *
 * Operations: `reload(config)` builds a new configuration generation (core, routes, keys) and
 * swaps it in one assignment; requests already running finish on the generation they started
 * with; a configuration the core rejects leaves the old one in place. Admin changes of the
 * overlay (`admin/control-plane.ts`: weight overrides, disabled providers; runtime models and
 * routes, re-points, router switches and offload policies laid over the YAML registry by
 * `admin/effective-models.ts`) build a new generation the same way. Either way the new core shares the learned state of the old one
 * (breakers, claims, affinity pins, prefill hints, outbound limits, latency stats), so every
 * endpoint whose id is unchanged keeps it (`RoutingCoreOptions.carryFrom`). Listener, pool,
 * admin, store and request-log settings need a restart (a reload that changes them says so in
 * the log). A configured store that cannot be opened at start refuses the start. `drain(graceMs)` stops accepting,
 * waits for in-flight requests up to the grace, then closes everything, request log included.
 * A configuration whose routing state several workers would split (`workerScopeError`: learning
 * strategies, RouteWise quota / concurrency routes) is refused at start and on reload when
 * `server.workers` > 1.
 *
 * Tracing (`tracing/`): with `tracing.enabled`, OpenTelemetry is imported at start and every
 * request and upstream attempt gets a span; closing the gateway exports what is left.
 *
 * RouteWise prober (routewise/prober.ts): when a routewise model sets `probe_enabled`, each
 * generation gets a prober that sends 1-token probes to idle routes; it is stopped on reload
 * (and a new one started on the new generation) and on drain / close. One `ProbeGate` per
 * gateway caps probes in flight across generations.
 *
 * Background health checks (health-checks/health-checker.ts): when a route has `health_check:`,
 * each generation gets a checker that probes it every `interval_sec`; like the prober it is
 * stopped on reload (the new core keeps unchanged checks' verdicts) and on drain / close. One
 * `ProbeSlots` per gateway caps health-check probes in flight (`health_checks.max_concurrent_probes`).
 * RouteWise quota sources and warm start: before it listens, the gateway replays its request
 * log into the RouteWise planners (routewise/warm-start.ts, `db_bootstrap_enabled`), refuses to
 * start when a quota-only model's envelope is still uncalibrated (`EnvelopeNotCalibratedError`;
 * a reload or overlay that brings such a model is refused the same way), and polls the
 * registered quota fetchers once (routewise/quota-poller.ts), so an unresolved `quota_source` is
 * reported at start; then it polls on a timer, across generations.
 */
import { randomInt, randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { openSharedState, type RunningSharedState } from './state/open-shared-state.ts';
import { wakeupsFor } from './server/wakeups.ts';
import uWS from '@trufflesuite/uws-js-unofficial';
import type { TemplatedApp, us_listen_socket } from '@trufflesuite/uws-js-unofficial';
import pino from 'pino';
import { IntrusiveList, ProbeGate } from '../core/index.ts';
import { requestLogMemoryLimitMb } from './config/gateway-settings.ts';
import type { GatewayConfig } from './config/load.ts';
import { restartOnly } from './config/restart-only.ts';
import type { GatewayOptions, RunningGateway } from './gateway-options.ts';
import { GatewayMetrics } from './metrics.ts';
import { RequestLog } from './request-log/request-log.ts';
import { loadTracing } from './tracing/tracing.ts';
import { MemoryResponseStore } from './endpoints/responses/response-store.ts';
import { SqlResponseStore } from './store/response-records.ts';
import { createAdminApp, createApp, deepHealthView, type Generation, type ServerContext } from './server/uws.ts';
import { bracket, listen } from './server/listen.ts';
import { aggregateMetricsText, mergeDeepHealth, type WorkerSnapshot } from './server/worker-aggregate.ts';
import { UpstreamPools } from './upstream/pools.ts';
import { AdminApi } from './admin/admin-api.ts';
import { ControlPlane } from './admin/control-plane.ts';
import { composeModels, unusableRecords, type RecordAssessment } from './admin/effective-models.ts';
import { OffloadAdmin } from './admin/offload-admin.ts';
import { RouteAdmin } from './admin/route-admin.ts';
import type { RoutingAdminDeps } from './admin/routing-admin-kit.ts';
import { requestReports } from './admin/request-reports.ts';
import { HealthHistory, liveViews, startHealthSampling } from './admin/live-views.ts';
import type { OverlaySnapshot } from './store/overlay-repo.ts';
import { buildGeneration, checkGeneration } from './generation.ts';
import { ServedLedger } from './server/served-ledger.ts';
import { effectiveAutoModeEnabled } from './admin/runtime-settings-admin.ts';
import { KeySecrets } from './upstream/key-secrets.ts';
import { ProviderKeysAdmin } from './admin/provider-keys-admin.ts';
import { MemoryProviderKeyRepo, SqlProviderKeyRepo } from './store/provider-key-repo.ts';
import { ConfigStatus, type GenerationCause } from './config-status.ts';
import { RouteWiseProber, type ProbeCounters } from './routewise/prober.ts';
import { HealthChecker, ProbeSlots } from './health-checks/health-checker.ts';
import { quotaFetchers } from './routewise/quota-fetchers.ts';
import { QuotaPoller } from './routewise/quota-poller.ts';
import { assertEnvelopesCalibrated, warmStartRouteWise, type WarmStartResult } from './routewise/warm-start.ts';

export type { GatewayOptions, ProbeStatus, RunningGateway } from './gateway-options.ts';
export { restartOnly } from './config/restart-only.ts';
export { assertPortFree } from './server/listen.ts';
export { registerQuotaFetcher, QuotaFetcherRegistry, type QuotaFetcher } from './routewise/quota-fetchers.ts';

/**
 * Builds and starts a gateway.
 * @throws Error when the core rejects the configuration (names the model and field), the
 *   configuration cannot run under `server.workers` (`workerScopeError`), a port cannot be
 *   bound, or the request log cannot be opened or read back for RouteWise's warm start;
 *   EnvelopeNotCalibratedError for a quota-only RouteWise model the warm start left uncalibrated;
 *   RangeError for a probe, quota-poll or warm-start option that is not > 0.
 */
export async function startGateway(opts: GatewayOptions): Promise<RunningGateway> {
  const { config } = opts;
  const s = config.settings;
  const host = opts.host ?? s.server.host;
  const seed = opts.seed ?? s.server.seed ?? randomInt(0, 2 ** 31 - 1);
  const worker = opts.worker ?? 0;
  for (const [name, v] of [['probeTickMs', opts.probeTickMs], ['probeTimeoutMs', opts.probeTimeoutMs], ['quotaPollMs', opts.quotaPollMs], ['quotaFetchTimeoutMs', opts.quotaFetchTimeoutMs]] as const) {
    if (v !== undefined && !(v > 0)) throw new RangeError(`gateway: ${name} must be > 0 ms, got ${v}`);
  }
  if (opts.warmStartMaxRows !== undefined && !(Number.isInteger(opts.warmStartMaxRows) && opts.warmStartMaxRows > 0)) throw new RangeError(`gateway: warmStartMaxRows must be an integer > 0, got ${opts.warmStartMaxRows}`);
  const log = opts.logger ?? pino({ level: s.server.log_level, base: { worker } });
  // Loaded (with OpenTelemetry) only when tracing is on.
  const tracing = await loadTracing(s.tracing, opts.traceExporter ? { exporter: opts.traceExporter } : {});
  /** Exports the spans left and stops; a collector that cannot be reached is logged, never thrown. */
  const stopTracing = async (): Promise<void> => {
    await tracing?.shutdown().catch((e: unknown) => log.warn({ endpoint: s.tracing.endpoint, reason: (e as Error).message }, 'tracing: spans left at close were not exported'));
  };
  const control = await ControlPlane.open(s.store, log).catch(async (e: unknown) => {
    await stopTracing();
    throw e;
  });
  const pools = new UpstreamPools(s.upstream);
  const rl = s.request_log;
  const requestLog = rl.path
    ? await RequestLog.open({
        // Several workers cannot share one DuckDB file: one file per worker.
        path: s.server.workers > 1 ? rl.path.replace(/(\.duckdb)?$/, `.worker-${worker}.duckdb`) : rl.path,
        bufferRows: rl.buffer_rows,
        batchRows: rl.batch_rows,
        flushIntervalMs: rl.flush_interval_ms,
        memoryLimitMb: requestLogMemoryLimitMb(rl),
        onWriterError: (message, lostRows) => log.error({ lostRows, reason: message }, 'request log writer failed; rows lost'),
      })
    : null;

  let metrics: GatewayMetrics;
  let sharedState: RunningSharedState | null = null;
  let quotaPoller: QuotaPoller | null = null;
  const ctx: ServerContext = {
    gen: null as unknown as Generation, // set right below
    draining: false,
    countRefused: (status, model) => metrics.observeRefused(status, model ?? null),
    metricsText: opts.peers
      ? async () => aggregateMetricsText([await snapshot(), ...(await opts.peers!())])
      : () => metrics.registry.metrics(),
    deepHealth: async () => {
      await control.check();
      return opts.peers ? mergeDeepHealth([await snapshot(), ...(await opts.peers!())]) : deepHealthView(ctx);
    },
    startedAtSec: Math.floor(Date.now() / 1000),
    inFlight: 0,
    admin: null,
    metricsWithoutKey: s.server.metrics_without_key,
    storeHealth: () => control.health(),
    sharedStateHealth: () => sharedState?.health() ?? null,
    live: new IntrusiveList(),
    configStatus: new ConfigStatus(Date.now()),
    // With a store every replica and worker shares the stored responses; else this process keeps them.
    responses: control.store ? new SqlResponseStore(control.store) : new MemoryResponseStore(),
  };
  const snapshot = async (): Promise<WorkerSnapshot> => ({ worker, metrics: await metrics.registry.getMetricsAsJSON(), deep: deepHealthView(ctx) });
  metrics = new GatewayMetrics({ core: () => ctx.gen.core, inFlight: () => ctx.inFlight, nowMs: () => performance.now(), requestLog: () => requestLog, upstreams: () => pools.stats(), quotaSources: () => quotaPoller?.sourceStates() ?? [] });
  // request_log settings take effect at restart only (a reload says so): log_prompts too, since
  // the writer's memory limit was sized for it at start.
  const logPrompts = rl.log_prompts;
  // The YAML registry with the overlay's runtime models, routes, re-points, router switches and
  // offload policies laid over it (`admin/effective-models.ts`); weights and labels go to the core.
  // Records a generation cannot be built with (a route kind without an adapter, a router the core
  // refuses, …) are left out, and listed as ignored, rather than failing the start, a reload or
  // the change feed. The last few assessments are kept: an admin write assesses the overlay in
  // force and the one it would give, several times over.
  const assessed: Array<{ base: GatewayConfig; key: string; result: RecordAssessment }> = [];
  const assess = (c: GatewayConfig, o: OverlaySnapshot): RecordAssessment => {
    const key = JSON.stringify(o);
    const hit = assessed.find((a) => a.base === c && a.key === key);
    if (hit) return hit.result;
    const overlay = control.routeOverlay(o);
    const result = unusableRecords(o.routing, (records) => {
      const models = composeModels(c.models, records).config;
      checkGeneration(models === c.models ? c : { ...c, models }, overlay);
    });
    assessed.unshift({ base: c, key, result });
    assessed.length = Math.min(assessed.length, 4);
    return result;
  };
  const withOverlay = (c: GatewayConfig, o: OverlaySnapshot): GatewayConfig => {
    const models = composeModels(c.models, o.routing, assess(c, o).refused).config;
    return models === c.models ? c : { ...c, models };
  };
  // Secrets of pooled keys, shared by every generation and the provider-keys admin.
  const keySecrets = new KeySecrets();
  const served = new ServedLedger();
  let keyRoutes: GatewayConfig['models']['models'][number]['route'] = [];
  // Set once the admin API exists; re-applies run-time key declarations to each new generation.
  let providerKeys: ProviderKeysAdmin | null = null;
  const build = (c: GatewayConfig, prev: Generation | null): Generation => {
    const composed = withOverlay(c, control.overlay);
    const gen = buildGeneration(composed, { seed, worker, pools, log, metrics, requestLog, logPrompts, overlay: control.routeOverlay(), carryFrom: prev?.core ?? null, tracing, keySecrets, served, sharedUnits: () => sharedState?.units ?? null, autoModeEnabled: effectiveAutoModeEnabled(control.overlay, c.settings.auto_mode_enabled) });
    keyRoutes = composed.models.models.flatMap((m) => m.route);
    providerKeys?.apply();
    // At start the check waits for the warm start (below); later generations carry the envelopes.
    if (prev) assertEnvelopesCalibrated(gen.core, gen.now());
    return gen;
  };
  const poller = new QuotaPoller({
    core: () => ctx.gen.core,
    now: () => performance.now(),
    wallNow: () => Date.now(),
    utcOffsetMin: (unixMs) => -new Date(unixMs).getTimezoneOffset(),
    fetcherFor: (provider) => (opts.quotaFetchers ?? quotaFetchers).get(provider),
    log,
    ...(opts.quotaPollMs !== undefined && { intervalMs: opts.quotaPollMs }),
    ...(opts.quotaFetchTimeoutMs !== undefined && { timeoutMs: opts.quotaFetchTimeoutMs }),
  });
  let warmStart: WarmStartResult[] = [];
  try {
    ctx.gen = build(config, null);
    if (requestLog) {
      warmStart = await warmStartRouteWise({ core: ctx.gen.core, log: requestLog, nowMs: ctx.gen.now(), nowUnixMs: Date.now(), logger: log, ...(opts.warmStartMaxRows !== undefined && { maxRows: opts.warmStartMaxRows }) });
    }
    assertEnvelopesCalibrated(ctx.gen.core, ctx.gen.now());
  } catch (e) {
    await pools.close();
    await requestLog?.close();
    await control.close();
    await stopTracing();
    throw e;
  }
  quotaPoller = poller;
  // The first poll before the listeners open, so an unresolved source is reported at start.
  await poller.poll();
  // Shared routing state (breakers, probe claim, affinity pins) with the other replicas; never fails the start
  // because Redis is down: the replica then serves on local state and reconnects.
  sharedState = await openSharedState(s.state, {
    replicaId: `${hostname()}-${process.pid}-${worker}-${randomUUID().slice(0, 8)}`,
    health: () => ctx.gen.core.health,
    now: () => ctx.gen.now(),
    endpoints: () => ctx.gen.routes.keys(),
    affinity: () => ctx.gen.core.affinity,
    affinityTtlMs: () => ctx.gen.core.settings.affinityTtlSec * 1000,
    keyPools: () => ctx.gen.core.keyPools,
    log,
    registry: metrics.registry,
    limiter: () => ctx.gen.core.limiter,
    deliverWakeups: () => {
      if (ctx.gen.core.hasWakeups) wakeupsFor(ctx.gen.core).deliver(ctx.gen.core);
    },
    overallDeadlineMs: () => ctx.gen.core.settings.overallDeadlineSec * 1000,
  });
  /** The YAML configuration in force (the overlay is applied on top of it). */
  let base = config;
  let generation = 1;
  const probeGate = new ProbeGate();
  const probeCounters: ProbeCounters = { sent: 0, inFlight: 0, maxInFlight: 0 };
  const startProber = (g: Generation): RouteWiseProber | null =>
    RouteWiseProber.start({
      core: g.core,
      routes: g.routes,
      now: g.now,
      log: g.log,
      maxErrorBodyBytes: g.maxErrorBodyBytes,
      gate: probeGate,
      counters: probeCounters,
      onProbe: (o) => metrics.observeProbe(o),
      ...(opts.probeTickMs !== undefined && { tickMs: opts.probeTickMs }),
      ...(opts.probeTimeoutMs !== undefined && { timeoutMs: opts.probeTimeoutMs }),
    });

  const app = createApp(ctx);
  // A listener that cannot be bound closes what was opened above (store connection, request-log
  // writer thread, upstream pools), so the process has nothing left keeping it alive.
  const abandon = async (e: unknown, what: string): Promise<never> => {
    (app as TemplatedApp & { close(): void }).close();
    await sharedState?.close();
    await pools.close();
    await requestLog?.close();
    await control.close();
    await stopTracing();
    throw new Error(`${what}${(e as Error).message}`);
  };
  const { port, socket } = await listen(app, host, opts.port ?? s.server.port, !opts.sharedPort).catch((e: unknown) =>
    abandon(new Error(`${(e as Error).message} — fix: stop what listens there, or choose another port with --port N or server.port in gateway.yaml (gateway/example reads SWITCHYARD_PORT)`), ''),
  );
  let admin: { app: TemplatedApp; socket: us_listen_socket; url: string } | null = null;
  if (opts.adminPort !== undefined && opts.adminPort !== null) {
    const adminHost = opts.adminHost ?? s.server.admin_host;
    const aapp = createAdminApp(ctx);
    try {
      const a = await listen(aapp, adminHost, opts.adminPort, true);
      admin = { app: aapp, socket: a.socket, url: `http://${bracket(adminHost)}:${a.port}` };
    } catch (e) {
      await abandon(new Error(`${(e as Error).message} — fix: choose another with --admin-port N (or off) or server.admin_port in gateway.yaml (gateway/example reads SWITCHYARD_ADMIN_PORT)`), 'gateway: admin listener: ');
    }
  }
  let prober = startProber(ctx.gen);
  const probeSlots = new ProbeSlots(s.health_checks.max_concurrent_probes);
  const startChecker = (g: Generation): HealthChecker | null =>
    HealthChecker.start({
      core: g.core,
      routes: g.routes,
      now: g.now,
      log: g.log,
      slots: probeSlots,
      onProbe: (o) => metrics.observeHealthCheck(o),
      onLogRow: (row) => requestLog?.append(row),
    });
  let checker = startChecker(ctx.gen);
  poller.start();
  /** Puts `gen` in force and restarts the prober on it. */
  const swap = (gen: Generation, cause: GenerationCause): void => {
    ctx.gen = gen;
    poller.apply();
    generation++;
    ctx.configStatus.applied(generation, cause, Date.now());
    // The old prober's probe in flight (if any) finishes on the old planner and frees the shared gate.
    prober?.stop(false);
    prober = ctx.draining ? null : startProber(gen);
    checker?.stop();
    checker = ctx.draining ? null : startChecker(gen);
  };
  const applyOverlay = (next: OverlaySnapshot): void => {
    const before = control.overlay;
    // The change feed may have applied this very overlay already (the writer's own NOTIFY).
    if (JSON.stringify(next) === JSON.stringify(before)) return;
    control.overlay = next;
    try {
      swap(build(base, ctx.gen), 'overlay');
    } catch (e) {
      control.overlay = before;
      throw e;
    }
    log.info({ generation, weightOverrides: next.weights.filter((w) => w.weight !== null).length, disabledProviders: next.providers.filter((p) => p.disabled).map((p) => p.provider), routingRecords: next.routing.filter((r) => r.value !== null).length }, 'overlay applied');
  };
  const routingDeps: RoutingAdminDeps = {
    repo: control.repo,
    core: () => ctx.gen.core,
    overlay: () => control.overlay,
    yaml: () => base.models,
    assess: (next) => assess(base, next),
    apply: (next) => applyOverlay(next),
    generation: () => generation,
    writesRefused: control.store === null && s.server.workers > 1 ? `This gateway runs ${s.server.workers} workers and has no store, so a change would reach only the worker that took it; configure store: (kind: postgres) to change routing at run time.` : null,
  };
  const reports = requestReports(requestLog, () => Date.now());
  const liveDeps = { core: () => ctx.gen.core, nowMs: () => ctx.gen.now(), nowUnixMs: () => Date.now(), requestsByEndpoint: () => metrics.requestsByEndpoint(), probes: () => ({ active: prober?.active ?? false, ...probeCounters }), history: new HealthHistory() };
  const live = liveViews(liveDeps);
  const stopHealthSampling = startHealthSampling(liveDeps);
  providerKeys = new ProviderKeysAdmin({
    repo: control.store === null ? new MemoryProviderKeyRepo() : new SqlProviderKeyRepo(control.store),
    core: () => ctx.gen.core,
    routes: () => keyRoutes,
    secrets: keySecrets,
    writesRefused: control.store === null && s.server.workers > 1 ? `This gateway runs ${s.server.workers} workers and has no store, so a change would reach only the worker that took it; configure store: (kind: postgres) to change key reservations at run time.` : null,
  });
  await providerKeys.load().catch((e: unknown) => {
    // The pools run on models.yaml alone until the next change reads the store again.
    log.error({ reason: (e as Error).message }, 'provider keys and reservations could not be read from the store');
  });
  (ctx as { admin: AdminApi | null }).admin = new AdminApi({
    repo: control.repo,
    core: () => ctx.gen.core,
    overlay: () => control.overlay,
    apply: applyOverlay,
    generation: () => generation,
    persistent: control.store !== null,
    writesRefused: control.store === null && s.server.workers > 1 ? `This gateway runs ${s.server.workers} workers and has no store, so a change would reach only the worker that took it; configure store: (kind: postgres) to change routing at run time.` : null,
    log,
    modules: [new RouteAdmin(routingDeps), new OffloadAdmin(routingDeps), providerKeys],
    extraRoutes: (call) => reports(call) ?? live(call),
    targets: () => ctx.gen.routes,
    yamlRouterParams: (id) => base.models.models.find((m) => m.id === id)?.router_params ?? null,
    yamlSettings: () => ({ auto_mode_enabled: base.settings.auto_mode_enabled }),
    ...(opts.refusedAudit && { refusedAudit: opts.refusedAudit }),
  });
  // Provider keys and reservations other replicas wrote are read back at the store's poll interval.
  const keyPoll =
    control.store === null
      ? null
      : setInterval(() => {
          providerKeys?.load().catch((e: unknown) => log.error({ reason: (e as Error).message }, 'provider keys and reservations could not be read from the store'));
        }, s.store_poll_ms);
  keyPoll?.unref();
  control.startPolling(s.store_poll_ms, (next) => {
    try {
      applyOverlay(next);
    } catch (e) {
      log.error({ reason: (e as Error).message }, 'overlay from the store refused; the configuration in force stays');
    }
  });
  log.info(
    { host, port, admin: admin?.url ?? null, seed, probing: prober ? prober.models.map((m) => m.id) : [], healthChecks: checker?.endpoints ?? [], models: ctx.gen.core.allModels().map((m) => m.id), endpoints: [...ctx.gen.routes.keys()], auth: s.auth.mode, requestLog: rl.path, tracing: s.tracing.enabled ? s.tracing.endpoint : null },
    'gateway listening',
  );
  // What this process runs with for the restart-only settings: the start configuration (a
  // reload never applies them, so every reload is compared with it, not with the last file).
  const running = config;
  let closing: Promise<void> | null = null;
  const close = (): Promise<void> => {
    closing ??= (async () => {
      ctx.draining = true;
      if (keyPoll) clearInterval(keyPoll);
      prober?.stop(true);
      checker?.stop();
      poller.stop();
      stopHealthSampling();
      await sharedState?.close();
      (app as TemplatedApp & { close(): void }).close();
      if (admin) (admin.app as TemplatedApp & { close(): void }).close();
      // Exchanges cut by the close report on the next turns; let them land in the log.
      await new Promise((r) => setImmediate(r));
      await pools.close();
      await requestLog?.close();
      await control.close();
      // The spans of the requests above are ended by now; what is left is exported.
      await stopTracing();
    })();
    return closing;
  };
  return {
    host,
    port,
    url: `http://${bracket(host)}:${port}`,
    adminUrl: admin?.url ?? null,
    seed,
    get core() {
      return ctx.gen.core;
    },
    metrics,
    requestLog,
    servedEndpoint: (requestId) => served.endpointOf(requestId),
    sharedUnitsLive: () => sharedState?.units?.live ?? 0,
    inFlight: () => ctx.inFlight,
    probes: () => ({ active: prober?.active ?? false, tickMs: prober?.active ? prober.tickMs : null, ...probeCounters }),
    upstreamStats: () => pools.stats(),
    quotaSources: () => poller.sourceStates(),
    pollQuotas: () => poller.poll(),
    warmStart,
    reloadRejected(problems) {
      metrics.observeReload(false);
      ctx.configStatus.rejected(problems, Date.now());
    },
    flushTraces: async () => {
      await tracing?.flush();
    },
    reload(next) {
      let gen: Generation;
      try {
        gen = build(next, ctx.gen);
      } catch (e) {
        metrics.observeReload(false);
        ctx.configStatus.rejected([(e as Error).message], Date.now());
        throw e;
      }
      base = next;
      probeSlots.setLimit(next.settings.health_checks.max_concurrent_probes);
      swap(gen, 'reload');
      metrics.observeReload(true);
      const restart = restartOnly(running, next);
      log.info({ models: gen.core.allModels().map((m) => m.id), endpoints: [...gen.routes.keys()], needsRestart: restart }, 'configuration reloaded');
      return restart;
    },
    async drain(graceMs) {
      ctx.draining = true;
      prober?.stop(true); // probes are not client requests: no grace for them
      checker?.stop();
      poller.stop();
      stopHealthSampling();
      uWS.us_listen_socket_close(socket);
      if (admin) uWS.us_listen_socket_close(admin.socket);
      const until = performance.now() + graceMs;
      while (ctx.inFlight > 0 && performance.now() < until) await new Promise((r) => setTimeout(r, 10));
      const cut = ctx.inFlight;
      // What is still running is ended by the gateway (an in-band error, or a 503), then closed.
      for (const ex of [...ctx.live]) ex.cutForDrain(); // a copy: a cut exchange leaves the list
      if (cut > 0) await new Promise((r) => setImmediate(r));
      log.info({ cut, waitedMs: Math.round(graceMs - Math.max(0, until - performance.now())) }, 'drained');
      await close();
      return { cut };
    },
    close,
    snapshot,
  };
}

