/**
 * `switchyard gateway` — runs the OpenAI-compatible gateway on a configuration directory
 * (`switchyard demo`, in bin/, starts the example's emulators around it); `switchyard validate`
 * — checks a configuration and exits non-zero with one line per problem (file, line, field, fix).
 */
import { availableParallelism } from 'node:os';
import { parseArgs } from 'node:util';
import { MessageChannel, Worker, type MessagePort } from 'node:worker_threads';
import pino from 'pino';
import { UsageError, type CliCommand } from '../bin/command.ts';
import { ConfigError, formatProblem, loadGatewayConfigAsync, statefulModels, workerSafeModules, workerScopeError, WORKERS_SHARE_THROUGH_REDIS, type GatewayConfig } from './config/load.ts';
import { ServerSchema } from './config/gateway-settings.ts';
import { formatSettingSource } from './config/seed-env.ts';
import { assertPortFree, restartOnly, startGateway, type RunningGateway } from './gateway.ts';
import { singleCoreGcAdvice } from './single-core-gc.ts';

const GATEWAY_USAGE = `usage: switchyard gateway --config <dir|models.yaml> [--host ADDR] [--port N] [--admin-port N|off] [--workers N] [--seed N] [--log-level LEVEL]

Starts the gateway on the configuration (models.yaml, with routing.yaml and gateway.yaml beside
it). The upstreams must already be running ('switchyard demo' starts the example's emulators).
Signals: SIGHUP re-reads and validates the configuration and swaps it in (an invalid one is
logged and the old one kept); SIGTERM / Ctrl-C stop accepting, let in-flight requests finish
(up to server.drain_grace_ms), flush the request log and exit 0.
  --port       public port (default server.port, 8080); with --workers > 1 it must not be 0
  --admin-port admin listener port for /health/deep, /routing, /metrics, /status, /admin (default
               server.admin_port, 8081, on server.admin_host); 'off' for none
  --workers    worker threads sharing the port (default 1; state is per worker unless state.backend is redis)
  --seed       root seed of routing draws (default server.seed, else random; printed)`;

const VALIDATE_USAGE = `usage: switchyard validate <dir|models.yaml>

Checks models.yaml, routing.yaml, gateway.yaml, the \${VAR}s they use and the environment's
settings (ROUTING_*, CIRCUIT_*, ROUTER_HEALTH_EWMA_ALPHA, AFFINITY_SWEEP_THRESHOLD,
ENABLE_ROUTEWISE) and imports the strategy modules gateway.yaml names (strategies:). Exit 0 when
valid, printing where each seed setting came from (file, environment or default); 1 with one line
per problem (file:line: field: message — fix: …), also when a strategy module fails and only the
models routed by it would be left out.`;

function intOption(name: string, v: string | undefined): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isInteger(n)) throw new UsageError(`--${name} must be an integer, got '${v}'`);
  return n;
}

/** `server:` settings given on the command line; they win over gateway.yaml at start and on every reload. */
type CliServerOverrides = Partial<Pick<GatewayConfig['settings']['server'], 'host' | 'port' | 'admin_port' | 'workers' | 'seed' | 'log_level'>>;

/** `config` with the command-line `server:` overrides applied (a copy; `config` is unchanged). */
function withServerOverrides(config: GatewayConfig, cli: CliServerOverrides): GatewayConfig {
  return { ...config, settings: { ...config.settings, server: { ...config.settings.server, ...cli } } };
}

/** Loads the config (strategy modules included), or prints its problems and returns null. */
async function loadOrReport(path: string): Promise<GatewayConfig | null> {
  try {
    return await loadGatewayConfigAsync(path);
  } catch (e) {
    if (e instanceof ConfigError) {
      process.stderr.write(`switchyard: ${e.message}\n`);
      return null;
    }
    throw e;
  }
}

/** `switchyard validate <dir>`: checks a config directory; exit 1 with file, line, field and fix per problem. */
export const validateCommand: CliCommand = {
  name: 'validate',
  summary: 'check a gateway configuration directory; exits non-zero naming file, field and fix',
  usage: VALIDATE_USAGE,
  async run(args) {
    if (args.length !== 1) throw new UsageError('validate takes exactly one directory or models.yaml');
    const config = await loadOrReport(args[0]!);
    if (!config) return 1;
    // Models left out for a failed strategy module: the gateway would start without them.
    if (config.unavailableModels.length > 0) {
      const n = config.unavailableModels.length;
      process.stderr.write(
        `switchyard: ${n} model(s) would not load (the gateway starts without them, serving the other ${config.models.models.length}):\n${config.unavailableModels.map(formatProblem).join('\n')}\n`,
      );
      for (const w of config.warnings) process.stderr.write(`warning: ${w}\n`);
      return 1;
    }
    const models = config.models.models;
    const routes = models.reduce((n, m) => n + m.route.length, 0);
    const s = config.settings;
    process.stdout.write(
      `ok: ${models.length} model(s), ${routes} route(s); auth ${s.auth.mode}${s.auth.mode === 'keys' ? ` (${s.auth.keys.length} key(s))` : ''}; listener ${s.server.host}:${s.server.port}, ${s.server.workers} worker(s)\n`,
    );
    // The seed's settings: the value in force and whether a file, a variable or the default set it.
    for (const src of config.settingSources) process.stdout.write(`setting: ${formatSettingSource(src)}\n`);
    for (const w of config.warnings) process.stdout.write(`warning: ${w}\n`);
    return 0;
  },
};

/** `switchyard gateway --config <models.yaml>`: runs the gateway until SIGINT / SIGTERM, then drains. */
export const gatewayCommand: CliCommand = {
  name: 'gateway',
  summary: 'run the OpenAI-compatible gateway (uWebSockets.js + undici) on a configuration',
  usage: GATEWAY_USAGE,
  async run(args) {
    const { values, positionals } = parseArgs({
      args,
      allowPositionals: true,
      options: {
        config: { type: 'string' },
        host: { type: 'string' },
        port: { type: 'string' },
        'admin-port': { type: 'string' },
        workers: { type: 'string' },
        seed: { type: 'string' },
        'log-level': { type: 'string' },
      },
    });
    const path = values.config ?? positionals[0];
    if (!path || positionals.length > (values.config ? 0 : 1)) throw new UsageError('gateway takes one configuration (--config <dir|models.yaml>)');
    const loaded = await loadOrReport(path);
    if (!loaded) return 1;
    // The same overrides on every (re)load, so a reload compares like with like.
    const cli: CliServerOverrides = {
      ...(values.host !== undefined && { host: values.host }),
      ...(values.port !== undefined && { port: intOption('port', values.port)! }),
      ...(values['admin-port'] !== undefined && { admin_port: values['admin-port'] === 'off' ? null : intOption('admin-port', values['admin-port'])! }),
      ...(values.workers !== undefined && { workers: intOption('workers', values.workers)! }),
      ...(values.seed !== undefined && { seed: intOption('seed', values.seed)! }),
    };
    if (values['log-level'] !== undefined) {
      const level = ServerSchema.shape.log_level.safeParse(values['log-level']);
      if (!level.success) throw new UsageError(`--log-level must be one of ${ServerSchema.shape.log_level.unwrap().options.join(', ')}`);
      cli.log_level = level.data;
    }
    const config = withServerOverrides(loaded, cli);
    const server = config.settings.server;
    if (server.workers < 1) throw new UsageError('--workers must be at least 1');
    const log = pino({ level: server.log_level });
    for (const w of config.warnings) log.warn(w);
    for (const p of config.unavailableModels) log.error({ file: p.file, line: p.line, field: p.field }, p.message);
    if (server.workers > 1) {
      const shared = config.settings.state.backend === 'redis';
      const stateful = shared ? [] : statefulModels(config.models, workerSafeModules(config.strategies));
      if (stateful.length > 0) {
        process.stderr.write(
          `switchyard: refusing ${server.workers} workers: routing state would be split per worker for ${stateful.join(', ')}; share it through Redis (state: {backend: redis, url: redis://HOST:6379} in gateway.yaml), or use --workers 1\n`,
        );
        return 1;
      }
      if (server.port === 0) throw new UsageError('--port 0 cannot be shared by several workers; give a port');
      log.warn(shared ? `${server.workers} workers: ${WORKERS_SHARE_THROUGH_REDIS}` : `${server.workers} workers: breakers, affinity, prefill load and in-flight limits are per worker`);
    }
    const seed = server.seed ?? Math.floor(Math.random() * 2 ** 31);


    const grace = server.drain_grace_ms;
    let drain: () => Promise<void>;
    let reload: (c: GatewayConfig) => void;
    /** Records a reload refused before it reached the gateway(s), for /status/config. */
    let rejected: (problems: string[]) => void = () => {};
    let url: string;
    let adminUrl: string | null = null;
    if (server.workers === 1) {
      const gw: RunningGateway = await startGateway({ config, seed, logger: log, adminPort: server.admin_port });
      url = gw.url;
      adminUrl = gw.adminUrl;
      drain = async () => {
        await gw.drain(grace);
      };
      rejected = (problems) => gw.reloadRejected(problems);
      reload = (c) => {
        const restart = gw.reload(c);
        if (restart.length > 0) log.warn({ settings: restart }, 'reload: these settings changed but take effect only after a restart');
      };
    } else {
      // The threads share the port (SO_REUSEPORT); make sure no other process holds it first.
      await assertPortFree(server.host, server.port).catch((e: unknown) => {
        throw new Error(`${(e as Error).message} — fix: stop what listens there, or choose another port with --port N or server.port in gateway.yaml (gateway/example reads SWITCHYARD_PORT)`);
      });
      const started = await startWorkers(config, server.workers, seed);
      const workers = started.workers;
      adminUrl = started.adminUrl;
      url = `http://${server.host}:${server.port}`;
      drain = () => stopWorkers(workers, grace);
      // Restart-only settings stay as started: compare every reload with the running process.
      const running = config;
      rejected = (problems) => {
        for (const w of workers) w.postMessage({ reloadRejected: problems });
      };
      reload = (c) => {
        // Workers swallow a rejected reload (worker.ts); refuse here what they would refuse.
        const scope = workerScopeError(c.models, c.settings.server.workers, workerSafeModules(c.strategies), c.settings.state.backend);
        if (scope) {
          rejected([scope]);
          throw new Error(scope);
        }
        for (const w of workers) w.postMessage({ reload: c });
        const restart = restartOnly(running, c);
        log.info({ needsRestart: restart }, 'configuration sent to the workers');
        if (restart.length > 0) log.warn({ settings: restart }, 'reload: these settings changed but take effect only after a restart');
      };
    }
    process.stdout.write(
      `switchyard gateway on ${url}/v1 (seed ${seed}, ${server.workers} worker(s), auth ${config.settings.auth.mode}${adminUrl ? `, admin ${adminUrl}` : ''}) — Ctrl-C to stop\n`,
    );
    const gcAdvice = singleCoreGcAdvice(availableParallelism(), process.execArgv);
    if (gcAdvice) log.warn(gcAdvice);
    const onHup = async (): Promise<void> => {
      let next: GatewayConfig;
      try {
        // Command-line overrides stay in force across reloads, applied exactly as at start (the
        // random seed drawn at start is not written back: it is not a setting).
        next = withServerOverrides(await loadGatewayConfigAsync(path), cli);
        for (const p of next.unavailableModels) log.error({ file: p.file, line: p.line, field: p.field }, `reload: ${p.message}`);
      } catch (e) {
        log.error({ reason: e instanceof ConfigError ? e.problems : (e as Error).message }, 'reload rejected: configuration invalid; keeping the old configuration');
        rejected(e instanceof ConfigError ? e.problems.map((p) => formatProblem(p).trim()) : [(e as Error).message]);
        return;
      }
      try {
        reload(next);
      } catch (e) {
        log.error({ reason: (e as Error).message }, 'reload rejected (routing core or worker scope); keeping the old configuration');
      }
    };
    process.on('SIGHUP', onHup);
    await new Promise<void>((resolve) => {
      const done = () => resolve();
      process.once('SIGINT', done);
      process.once('SIGTERM', done);
    });
    process.off('SIGHUP', onHup);
    log.info({ graceMs: grace }, 'draining');
    await drain();
    log.flush?.();
    return 0;
  },
};

/**
 * Starts `n` worker threads, each a whole gateway on the same port (SO_REUSEPORT), with a
 * MessageChannel between every two workers (so whichever worker serves `/metrics` or
 * `/health/deep` merges all workers' numbers). Returns the threads and worker 0's admin URL (null without one).
 */
async function startWorkers(config: GatewayConfig, n: number, seed: number): Promise<{ workers: Worker[]; adminUrl: string | null }> {
  const entry = new URL('./server/worker-entry.mjs', import.meta.url);
  // One channel per pair of workers; each end goes to one of the two.
  const peers: Array<Array<{ worker: number; port: MessagePort }>> = Array.from({ length: n }, () => []);
  for (let a = 0; a < n; a++) {
    for (let b = a + 1; b < n; b++) {
      const c = new MessageChannel();
      peers[a]!.push({ worker: b, port: c.port1 });
      peers[b]!.push({ worker: a, port: c.port2 });
    }
  }
  const workers: Worker[] = [];
  let adminUrl: string | null = null;
  // One worker that cannot start stops the others, so the process exits with the error.
  const started = Promise.all(
    Array.from({ length: n }, (_, i) => {
      const w = new Worker(entry, { workerData: { config, seed, worker: i, peers: peers[i] }, transferList: peers[i]!.map((p) => p.port) });
      workers.push(w);
      return new Promise<void>((resolve, reject) => {
        w.once('message', (m: { ready?: boolean; adminUrl?: string | null; error?: string }) => {
          if (!m.ready) return reject(new Error(m.error ?? 'worker failed'));
          if (i === 0) adminUrl = m.adminUrl ?? null;
          resolve();
        });
        w.once('error', reject);
      });
    }),
  );
  try {
    await started;
  } catch (e) {
    await Promise.all(workers.map((w) => w.terminate()));
    throw e;
  }
  return { workers, adminUrl };
}

/** Drains every worker (each waits up to `graceMs` for its requests) and waits for their exit. */
async function stopWorkers(workers: Worker[], graceMs: number): Promise<void> {
  await Promise.all(
    workers.map(
      (w) =>
        new Promise<void>((resolve) => {
          w.once('exit', () => resolve());
          w.postMessage({ drain: graceMs });
        }),
    ),
  );
}
