/**
 * The peer gateway for `bench/gateway-overhead.ts`: Portkey's open-source AI gateway
 * (`@portkey-ai/gateway`, a hono app on `@hono/node-server`; a dev dependency used only here and
 * in `test/bench/peer-gateway.test.ts`), run in its own node process in front of an
 * OpenAI-compatible upstream (the engine emulator in `echo` mode).
 *
 * Launch: `node --import bench/peer-gateway-loopback.mjs
 * node_modules/@portkey-ai/gateway/build/start-server.js --port=0 --headless`, optionally under
 * `taskset -c <cpu>` — Portkey's own CLI entry, unmodified. That CLI would listen on every
 * interface (it calls `serve` without a hostname, and its app is not exported); the preload
 * forces 127.0.0.1 and prints the bound URL (see that file). `--headless` leaves out its web UI
 * and log-stream routes; what stays on is Portkey's default node middleware, including its
 * per-request log entry for the UI (it clones and re-parses each non-stream JSON response). Proxy and Redis variables are
 * removed from its environment, so it talks only to the loopback upstream.
 *
 * Routing: Portkey has no upstream config of its own here; every request names the upstream in
 * headers (`peerHeaders`): `x-portkey-provider: openai` and `x-portkey-custom-host:
 * http://127.0.0.1:<port>/v1` (127.0.0.1 is in Portkey's default trusted custom hosts). The
 * caller's `Authorization` is passed on to the upstream as the OpenAI key.
 *
 * `package.json` pins `hono` 4.9.7 and `@hono/node-server` 1.13.5 through `overrides`
 * (other versions break Portkey's streaming). Portkey's own postinstall (`patch-package`) is
 * not needed: the published package ships no patches.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';

const root = join(import.meta.dirname, '..');
/** Portkey's node entry (an ES module that starts the server when imported). */
export const PEER_GATEWAY_ENTRY = join(root, 'node_modules', '@portkey-ai', 'gateway', 'build', 'start-server.js');
const PRELOAD = join(import.meta.dirname, 'peer-gateway-loopback.mjs');
const LISTENING = /PEER_GATEWAY_LISTENING (http:\/\/127\.0\.0\.1:\d+)/;

/** A running Portkey gateway process. */
export interface PeerGateway {
  /** The node process (under `taskset`, which execs it, so the pid is node's). */
  readonly child: ChildProcess;
  /** `http://127.0.0.1:<port>` (no `/v1`). */
  readonly url: string;
  /** Sends SIGTERM and resolves once the process has exited (SIGKILL after `graceMs`, default 3000). */
  stop(graceMs?: number): Promise<void>;
}

/** Whether the Portkey package is installed (its node entry exists); the launcher needs it. */
export function peerGatewayInstalled(): boolean {
  return existsSync(PEER_GATEWAY_ENTRY);
}

/**
 * Headers that make Portkey relay a request to the OpenAI-compatible upstream at
 * `upstreamBaseUrl` (`http://127.0.0.1:<port>/v1`, the emulator's base URL with `/v1`).
 */
export function peerHeaders(upstreamBaseUrl: string): Record<string, string> {
  return { 'x-portkey-provider': 'openai', 'x-portkey-custom-host': upstreamBaseUrl };
}

/**
 * Starts Portkey on 127.0.0.1 and an ephemeral port, pinned to `opts.cpu` with `taskset` when
 * given (null/undefined: not pinned), with `opts.nodeFlags` on node's command line (default
 * none), and resolves once it listens.
 * @throws Error when the package is not installed, or the process exits or does not print its
 *   URL within `opts.startTimeoutMs` (default 15000 ms); the process is killed then.
 */
export function startPeerGateway(opts: { cpu?: number | null; startTimeoutMs?: number; nodeFlags?: readonly string[] } = {}): Promise<PeerGateway> {
  if (!peerGatewayInstalled()) return Promise.reject(new Error(`@portkey-ai/gateway is not installed (no ${PEER_GATEWAY_ENTRY})`));
  const nodeArgs = [...(opts.nodeFlags ?? []), '--import', PRELOAD, PEER_GATEWAY_ENTRY, '--port=0', '--headless'];
  const pinned = opts.cpu !== undefined && opts.cpu !== null;
  const env: NodeJS.ProcessEnv = { ...process.env, PORT: '0' };
  for (const k of ['HTTP_PROXY', 'HTTPS_PROXY', 'http_proxy', 'https_proxy', 'ALL_PROXY', 'all_proxy', 'REDIS_CONNECTION_STRING']) delete env[k];
  const child = spawn(pinned ? 'taskset' : process.execPath, pinned ? ['-c', String(opts.cpu), process.execPath, ...nodeArgs] : nodeArgs, {
    cwd: root,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const stop = async (graceMs = 3000): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const t = setTimeout(() => child.kill('SIGKILL'), graceMs);
    await exited;
    clearTimeout(t);
  };
  return new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    let done = false;
    const fail = (why: string) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      void stop(500);
      reject(new Error(`peer gateway (Portkey) ${why}\nstdout: ${out.slice(-2000)}\nstderr: ${err.slice(-2000)}`));
    };
    const timer = setTimeout(() => fail(`did not listen within ${opts.startTimeoutMs ?? 15000} ms`), opts.startTimeoutMs ?? 15000);
    // Keep draining both pipes for the process's whole life (its start-up spinner writes to stdout).
    child.stderr!.on('data', (d: Buffer) => {
      if (err.length < 65536) err += d.toString();
    });
    child.stdout!.on('data', (d: Buffer) => {
      if (done) return;
      out += d.toString();
      const m = LISTENING.exec(out);
      if (m) {
        done = true;
        clearTimeout(timer);
        resolve({ child, url: m[1]!, stop });
      }
    });
    child.once('exit', (code, signal) => fail(`exited (${code ?? signal}) before listening`));
    child.once('error', (e) => fail(`could not start: ${e.message}`));
  });
}
