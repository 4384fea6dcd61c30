/**
 * `switchyard dashboard [results…] [--port N] [--host H] [--gateway URL]`: builds the web app if
 * needed and serves it with the read-only JSON API over the given DuckDB results files (or every
 * `*.duckdb` of the given folders; default `results/`). With `--gateway` (the URL of a running
 * gateway's admin listener) it also serves the operator's console, forwarding `/gateway/…` to
 * that listener (server/gateway-proxy.ts). Prints the URL and runs until interrupted.
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { UsageError, type CliCommand } from '../bin/command.ts';
import { ensureAppBuilt } from './server/app-build.ts';
import { startDashboardServer, type DashboardServer } from './server/dashboard-server.ts';
import { parseGatewayUrl } from './server/gateway-proxy.ts';
import { ResultsCatalog } from './server/results-catalog.ts';

/** Default TCP port of the dashboard. */
export const DEFAULT_PORT = 8090;

/** Parsed command line of `switchyard dashboard`. */
export interface DashboardArgs {
  /**
   * Results files or folders, as given (default `['results']`; none when `--gateway` is given,
   * no path is, and there is no `results/` folder: the console needs no results).
   */
  paths: string[];
  port: number;
  host: string;
  /** Base URL of the gateway's admin listener for the console (absent: no console). */
  gateway?: string;
}

/**
 * Parses the command's arguments.
 * @throws UsageError (exit 2) for an unknown option, a port that is not an integer 0–65535 or a
 *   `--gateway` that is not an http(s) URL.
 * @param cwd where the default `results/` folder is looked for.
 */
export function parseDashboardArgs(args: string[], cwd = process.cwd()): DashboardArgs {
  let parsed;
  try {
    parsed = parseArgs({
      args,
      allowPositionals: true,
      options: { port: { type: 'string', short: 'p' }, host: { type: 'string' }, gateway: { type: 'string' } },
    });
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  const { values, positionals } = parsed;
  let port = DEFAULT_PORT;
  if (values.port !== undefined) {
    port = Number(values.port);
    if (!/^\d+$/.test(values.port) || port > 65535) throw new UsageError(`--port must be an integer 0–65535, got '${values.port}'`);
  }
  let gateway: string | undefined;
  if (values.gateway !== undefined) {
    try {
      gateway = parseGatewayUrl(values.gateway);
    } catch (err) {
      throw new UsageError((err as Error).message);
    }
  }
  // The operator console of a fresh install has no results yet; only a named path must exist.
  const defaults = gateway !== undefined && !existsSync(resolve(cwd, 'results')) ? [] : ['results'];
  return { paths: positionals.length > 0 ? positionals : defaults, port, host: values.host ?? '127.0.0.1', ...(gateway !== undefined && { gateway }) };
}

/** Options of {@link startDashboard}. */
export interface StartDashboardOptions extends DashboardArgs {
  /** Progress lines (build); default none. */
  print?: (line: string) => void;
}

/**
 * Builds the app if its build is missing or stale, opens the catalog and starts the server.
 * @throws Error when a results path does not exist, the build fails or the port is taken.
 */
export async function startDashboard(opts: StartDashboardOptions): Promise<DashboardServer & { catalog: ResultsCatalog }> {
  const catalog = ResultsCatalog.create(opts.paths);
  const appDir = await ensureAppBuilt(opts.print ? { print: opts.print } : {});
  try {
    const server = await startDashboardServer({ catalog, appDir, host: opts.host, port: opts.port, ...(opts.gateway !== undefined && { gatewayUrl: opts.gateway }) });
    return { ...server, catalog };
  } catch (err) {
    catalog.close();
    if ((err as NodeJS.ErrnoException).code === 'EADDRINUSE') {
      throw new Error(`port ${opts.port} is in use; pick another with --port`);
    }
    throw err;
  }
}

/** The `dashboard` command. */
export const dashboardCommand: CliCommand = {
  name: 'dashboard',
  summary: 'serve the results dashboard (Vite + d3) over DuckDB results files, and with --gateway URL the operator console of a running gateway',
  usage:
    'usage: switchyard dashboard [results.duckdb | folder]… [--port N] [--host ADDR] [--gateway URL]\n' +
    `  default: every *.duckdb in results/, on http://127.0.0.1:${DEFAULT_PORT}/\n` +
    "  --gateway URL  also serve the operator's console for the gateway whose admin listener is URL (e.g. http://127.0.0.1:8081)",
  async run(args) {
    const parsed = parseDashboardArgs(args);
    const print = (line: string) => process.stdout.write(`${line}\n`);
    const server = await startDashboard({ ...parsed, print });
    const files = server.catalog.entries();
    print(`serving ${files.length} results file(s): ${files.map((f) => f.name).join(', ') || '(none yet)'}`);
    if (parsed.gateway !== undefined) print(`console: ${server.url}#/gateway  (gateway admin listener ${parsed.gateway})`);
    print(`dashboard: ${server.url}  (Ctrl-C to stop)`);
    await new Promise<void>((resolve) => {
      const stop = () => {
        process.off('SIGINT', stop);
        process.off('SIGTERM', stop);
        void server.close().then(resolve);
      };
      process.on('SIGINT', stop);
      process.on('SIGTERM', stop);
    });
    return 0;
  },
};
