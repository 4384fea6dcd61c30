// Real gateway processes for the replica tests and the shared-state bench: `switchyard gateway
// --config <dir>` (bin/switchyard.mjs) spawned as a child, its URL read from the start line.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hashKey } from '../../gateway/callers.ts';

const root = join(import.meta.dirname, '../..');

/** The bearer key every process built by `gatewayDir` accepts (an admin key). */
export const PROCESS_KEY = 'sk-replica-test';

/** One running gateway process. */
export interface GatewayProcess {
  /** `http://127.0.0.1:<port>` (no `/v1`). */
  readonly url: string;
  readonly child: ChildProcess;
  /** Everything it wrote to stdout and stderr so far. */
  out(): string;
  /** SIGTERM, then SIGKILL after 5 s; resolves at exit. */
  stop(): Promise<void>;
}

/**
 * A temporary config directory: `models.yaml` with `models` (YAML text) and `gateway.yaml` with
 * port 0, `seed`, the `PROCESS_KEY` admin key and `extra` (YAML text, top-level keys).
 */
export function gatewayDir(models: string, extra: string, seed = 1): string {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-replica-'));
  writeFileSync(join(dir, 'models.yaml'), models);
  writeFileSync(join(dir, 'gateway.yaml'), `server:\n  port: 0\n  admin_port: 0\n  seed: ${seed}\n  log_level: warn\nauth:\n  keys:\n    - id: t\n      sha256: ${hashKey(PROCESS_KEY)}\n      admin: true\n${extra}`);
  return dir;
}

/** Spawns `switchyard gateway --config dir` and resolves once it listens. @throws Error with its output when it does not within 30 s or exits. */
export async function startGatewayProcess(dir: string): Promise<GatewayProcess> {
  const child = spawn(process.execPath, [join(root, 'bin/switchyard.mjs'), 'gateway', '--config', dir], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const until = Date.now() + 30_000;
  for (;;) {
    const m = /switchyard gateway on (http:\/\/[\d.:]+)\/v1/.exec(out);
    if (m) {
      return {
        url: m[1]!,
        child,
        out: () => out,
        stop: async () => {
          if (child.exitCode !== null || child.signalCode !== null) return;
          child.kill('SIGTERM');
          const t = setTimeout(() => child.kill('SIGKILL'), 5_000);
          await exited;
          clearTimeout(t);
        },
      };
    }
    if (child.exitCode !== null || Date.now() > until) {
      child.kill('SIGKILL');
      throw new Error(`gateway process did not start: ${out}`);
    }
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** A chat completion request to `gw` (model `model`); resolves with the status once the body is read. */
export async function askProcess(gw: GatewayProcess, model = 'm'): Promise<number> {
  const r = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${PROCESS_KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 }),
  });
  await r.text();
  return r.status;
}

/** A fake OpenAI-compatible upstream that counts requests and the most in flight at once. */
export interface CountingUpstream {
  /** `http://127.0.0.1:<port>/v1`. */
  readonly baseUrl: string;
  readonly hits: number;
  readonly inFlight: number;
  readonly maxInFlight: number;
  /** TCP connections accepted so far (each gateway worker keeps its own pooled ones). */
  readonly connections: number;
  close(): Promise<void>;
}

const ANSWER = JSON.stringify({ id: 'c1', object: 'chat.completion', created: 0, model: 'up', choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' }], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } });

/**
 * Starts the upstream: every request is answered `status` (200 with a chat completion, else an
 * error body) after `holdMs` (0: at once).
 */
export async function startCountingUpstream(holdMs: number, status: () => number = () => 200): Promise<CountingUpstream> {
  let hits = 0;
  let inFlight = 0;
  let maxInFlight = 0;
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      hits++;
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      const answer = () => {
        inFlight--;
        const st = status();
        const body = st === 200 ? ANSWER : JSON.stringify({ error: { message: 'down' } });
        res.writeHead(st, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
        res.end(body);
      };
      if (holdMs > 0) setTimeout(answer, holdMs);
      else answer();
    });
  });
  let connections = 0;
  server.on('connection', () => connections++);
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    get hits() {
      return hits;
    },
    get inFlight() {
      return inFlight;
    },
    get maxInFlight() {
      return maxInFlight;
    },
    get connections() {
      return connections;
    },
    close: async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}
