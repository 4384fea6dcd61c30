/**
 * Assembles one gateway (one worker): the routing core built from the validated configuration,
 * undici pools for every upstream origin, the caller keys, one seeded routing stream per model,
 * and the uWS server. `startGateway` resolves once it listens; `listen(0)` picks a free port
 * (tests read it back). The clock is `performance.now()` (monotonic); the root seed comes from
 * the options, else `server.seed`, else `crypto`, and is reported so a run can be explained.
 */
import { randomInt } from 'node:crypto';
import uWS from '@trufflesuite/uws-js-unofficial';
import type { TemplatedApp } from '@trufflesuite/uws-js-unofficial';
import pino, { type Logger } from 'pino';
import { deriveRng, endpointId, RoutingCore, type Rng } from '../core/index.ts';
import { Callers } from './callers.ts';
import { bodyLimitBytes } from './config/gateway-settings.ts';
import { healthOptions, type GatewayConfig } from './config/load.ts';
import type { RouteTarget } from './server/exchange.ts';
import { createApp, type ServerContext } from './server/uws.ts';
import { UpstreamPools } from './upstream/pools.ts';

/** Options of `startGateway`. */
export interface GatewayOptions {
  /** A validated configuration (`loadGatewayConfig` / `buildGatewayConfig`). */
  config: GatewayConfig;
  /** Overrides `server.host`. */
  host?: string;
  /** Overrides `server.port`; 0 picks a free port. */
  port?: number;
  /** Overrides `server.seed`. */
  seed?: number;
  /** Logger; default pino at `server.log_level` on stdout. */
  logger?: Logger;
  /** Worker index, for the routing streams' names (default 0). */
  worker?: number;
}

/** A listening gateway. */
export interface RunningGateway {
  readonly host: string;
  readonly port: number;
  /** `http://host:port` (the OpenAI base URL is this + `/v1`). */
  readonly url: string;
  readonly seed: number;
  readonly core: RoutingCore;
  /** Requests admitted and not yet over. */
  inFlight(): number;
  /** Stops listening, drops open connections and upstream pools. */
  close(): Promise<void>;
}

/**
 * Builds and starts a gateway.
 * @throws Error when the core rejects the configuration (names the model and field), or the
 *   port cannot be bound.
 */
export async function startGateway(opts: GatewayOptions): Promise<RunningGateway> {
  const { config } = opts;
  const s = config.settings;
  const host = opts.host ?? s.server.host;
  const seed = opts.seed ?? s.server.seed ?? randomInt(0, 2 ** 31 - 1);
  const log = opts.logger ?? pino({ level: s.server.log_level, base: { worker: opts.worker ?? 0 } });
  const core = new RoutingCore(config.models, { health: healthOptions(s), settings: config.routingSettings });
  const pools = new UpstreamPools(s.upstream);

  const routes = new Map<string, RouteTarget>();
  for (const m of config.models.models) {
    for (const r of m.route) {
      const id = endpointId(m.id, r.kind, r.base_url);
      const url = new URL(r.base_url);
      routes.set(id, {
        endpointId: id,
        pool: pools.forOrigin(url.origin),
        basePath: url.pathname.replace(/\/+$/, ''),
        apiKey: r.api_key ?? null,
        upstreamModel: r.provider_model_id ?? m.id,
      });
    }
  }

  const streamOf = new Map<string, Rng>();
  const worker = opts.worker ?? 0;
  const fallbackRng = deriveRng(seed, `gateway/worker-${worker}/unknown-model`);
  for (const m of core.allModels()) streamOf.set(m.id, deriveRng(seed, `gateway/worker-${worker}/model/${m.id}`));

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

  const ctx: ServerContext = {
    core,
    routes,
    rngFor: (name) => {
      const m = core.model(name);
      return (m && streamOf.get(m.id)) ?? fallbackRng;
    },
    now: () => performance.now(),
    log,
    maxErrorBodyBytes: s.upstream.max_error_body_kb * 1024,
    callers: new Callers(s.auth, core),
    bodyLimitBytes: bodyLimitBytes(s),
    maxInFlight: s.server.max_in_flight,
    overloadRetryAfterSec: s.server.overload_retry_after_sec,
    routingHeaders: [...routingHeaders],
    routingCookies,
    startedAtSec: Math.floor(Date.now() / 1000),
    inFlight: 0,
  };
  const app = createApp(ctx);
  const port = await listen(app, host, opts.port ?? s.server.port);
  log.info({ host, port, seed, models: core.allModels().map((m) => m.id), endpoints: [...routes.keys()], auth: s.auth.mode }, 'gateway listening');
  let closed = false;
  return {
    host,
    port,
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`,
    seed,
    core,
    inFlight: () => ctx.inFlight,
    async close() {
      if (closed) return;
      closed = true;
      (app as TemplatedApp & { close(): void }).close();
      await pools.close();
    },
  };
}

function listen(app: TemplatedApp, host: string, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    app.listen(host, port, (ls) => {
      if (!ls) reject(new Error(`gateway: cannot listen on ${host}:${port} (in use, or not an address of this machine)`));
      else resolve(uWS.us_socket_local_port(ls));
    });
  });
}
