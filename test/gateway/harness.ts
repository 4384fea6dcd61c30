// Starts engine emulators and a gateway in-process on ephemeral 127.0.0.1 ports, with caller
// keys for the tests, and an `openai` client factory. Logs are silent.
import { spawn } from 'node:child_process';
import { createServer, type Socket } from 'node:net';
import { join } from 'node:path';
import OpenAI from 'openai';
import pino from 'pino';
import { endpointId } from '../../core/index.ts';
import { hashKey } from '../../gateway/callers.ts';
import { buildGatewayConfig } from '../../gateway/config/load.ts';
import { startGateway, type GatewayOptions, type RunningGateway } from '../../gateway/gateway.ts';
import { startEmulator, type EmulatorOptions, type RunningEmulator } from '../../simulator/emulator/emulator.ts';

export const KEYS = { user: 'sk-test-user', admin: 'sk-test-admin', other: 'sk-test-other' } as const;

/** One upstream of the test model: emulator options plus route fields. */
export interface UpstreamSpec extends EmulatorOptions {
  weight?: number;
  local?: boolean;
  /** Route api_key (sent upstream); defaults to the emulator's apiKey. */
  routeKey?: string;
  providerModelId?: string;
  modalities?: Array<'text' | 'image' | 'audio'>;
  /** Route `endpoints:` (absent = the kind's default). */
  endpoints?: Array<'chat' | 'completion' | 'embedding'>;
}

export interface Stack {
  gw: RunningGateway;
  emus: RunningEmulator[];
  /** Endpoint id of upstream i. */
  ids: string[];
  client(key?: string): OpenAI;
  /** Raw POST to the gateway (for status codes and bytes the SDK hides). */
  post(path: string, body: unknown, headers?: Record<string, string>): Promise<Response>;
  close(): Promise<void>;
}

/**
 * A gateway with one model `demo` (alias `demo-alias`) over `upstreams`, plus a model `other`
 * over the first upstream. Keys: user (demo only), admin (all, may pin), other (other only).
 * Affinity and prefill-aware selection are off so that weights decide the primary.
 */
export async function startStack(upstreams: UpstreamSpec[], gateway: Record<string, unknown> = {}, gwOpts: Partial<Omit<GatewayOptions, 'config'>> = {}): Promise<Stack> {
  const emus = await Promise.all(upstreams.map((u) => startEmulator({ ...u, faults: { latency_scale: 0.05, ...u.faults } })));
  const config = stackConfig(upstreams, emus, gateway);
  const gw = await startGateway({ config, host: '127.0.0.1', port: 0, seed: 7, logger: pino({ level: 'silent' }), ...gwOpts });
  return {
    gw,
    emus,
    ids: emus.map((e) => endpointId('demo', 'openai_compat', e.baseUrl)),
    client: (key = KEYS.user) => new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: key, maxRetries: 0, timeout: 10_000 }),
    post: (path, body, headers = {}) =>
      fetch(`${gw.url}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${KEYS.user}`, 'content-type': 'application/json', ...headers },
        body: typeof body === 'string' ? body : JSON.stringify(body),
      }),
    async close() {
      await gw.close();
      await Promise.all(emus.map((e) => e.close()));
    },
  };
}

/** The configuration `startStack` uses, for `upstreams` served by `emus` (reload tests build variants). */
export function stackConfig(upstreams: UpstreamSpec[], emus: RunningEmulator[], gateway: Record<string, unknown> = {}) {
  const route = (u: UpstreamSpec, e: RunningEmulator) => ({
    base_url: e.baseUrl,
    weight: u.weight ?? 1,
    ...(u.local !== undefined && { local: u.local }),
    ...((u.routeKey ?? u.apiKey) && { api_key: u.routeKey ?? u.apiKey }),
    ...(u.providerModelId && { provider_model_id: u.providerModelId }),
    ...(u.modalities && { input_modalities: u.modalities }),
    ...(u.endpoints && { endpoints: u.endpoints }),
  });
  return buildGatewayConfig({
    models: {
      models: [
        { id: 'demo', aliases: ['demo-alias'], route: upstreams.map((u, i) => route(u, emus[i]!)) },
        { id: 'other', route: [route(upstreams[0]!, emus[0]!)] },
      ],
    },
    gateway: {
      routing_settings: { affinity_enabled: false, prefill_aware_enabled: false },
      health: { failure_threshold: 1000 },
      ...gateway,
      auth: {
        mode: 'keys',
        keys: [
          { id: 'user', sha256: hashKey(KEYS.user), allowed_models: ['demo'] },
          { id: 'admin', sha256: hashKey(KEYS.admin), admin: true },
          { id: 'other', sha256: hashKey(KEYS.other), allowed_models: ['other'] },
        ],
      },
    },
  });
}

/** The data payloads of an SSE body, in order (`[DONE]` included). */
export function sseData(text: string): string[] {
  return text
    .split('\n\n')
    .filter((b) => b.trim().length > 0)
    .map((b) =>
      b
        .split('\n')
        .filter((l) => l.startsWith('data: '))
        .map((l) => l.slice(6))
        .join('\n'),
    );
}

export const hello = [{ role: 'user' as const, content: 'Hello there' }];

/** A hand-written HTTP/1.1 upstream: full control over what goes on the wire, and when. */
export interface RawUpstream {
  /** `http://127.0.0.1:port/v1`, a route's base_url. */
  readonly baseUrl: string;
  close(): Promise<void>;
}

/**
 * Listens on 127.0.0.1 and calls `respond` with each connection's socket once a whole request
 * (headers and a Content-Length body) has arrived. The response is the handler's to write,
 * status line included; sockets are closed by `close()`. A reset socket is destroyed quietly,
 * so a test sees it as a failed assertion rather than a crashed worker.
 */
export async function startRawUpstream(respond: (sock: Socket, body: string) => void): Promise<RawUpstream> {
  const sockets = new Set<Socket>();
  const server = createServer((sock) => {
    sockets.add(sock);
    sock.on('close', () => sockets.delete(sock));
    sock.on('error', () => sock.destroy());
    sock.setNoDelay(true);
    let head = '';
    sock.on('data', (d) => {
      head += d.toString('latin1');
      const end = head.indexOf('\r\n\r\n');
      if (end < 0) return;
      const len = Number(/content-length: (\d+)/i.exec(head)?.[1] ?? 0);
      if (head.length - end - 4 < len) return;
      const body = Buffer.from(head.slice(end + 4), 'latin1').toString('utf8');
      head = '';
      respond(sock, body);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}

/** A gateway over hand-made routes (raw upstreams, closed ports), model `demo`, the test keys. */
export interface RawStack {
  gw: RunningGateway;
  ids: string[];
  post(path: string, body: unknown, headers?: Record<string, string>): Promise<Response>;
  close(): Promise<void>;
}

/** Starts a gateway whose model `demo` routes to `routes` (route fields as in models.yaml). */
export async function startRawStack(routes: Array<Record<string, unknown> & { base_url: string }>, gateway: Record<string, unknown> = {}): Promise<RawStack> {
  const config = buildGatewayConfig({
    models: { models: [{ id: 'demo', route: routes }] },
    gateway: {
      routing_settings: { affinity_enabled: false, prefill_aware_enabled: false },
      health: { failure_threshold: 1000 },
      ...gateway,
      auth: { mode: 'keys', keys: [{ id: 'user', sha256: hashKey(KEYS.user) }, { id: 'admin', sha256: hashKey(KEYS.admin), admin: true }] },
    },
  });
  const gw = await startGateway({ config, host: '127.0.0.1', port: 0, seed: 7, logger: pino({ level: 'silent' }) });
  return {
    gw,
    ids: routes.map((r) => endpointId('demo', 'openai_compat', r.base_url)),
    post: (path, body, headers = {}) =>
      fetch(`${gw.url}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${KEYS.user}`, 'content-type': 'application/json', ...headers },
        body: typeof body === 'string' ? body : JSON.stringify(body),
      }),
    close: () => gw.close(),
  };
}

/** A whole JSON HTTP response as raw bytes. */
export function rawJson(status: number, body: unknown, extraHeaders = ''): string {
  const text = JSON.stringify(body);
  return `HTTP/1.1 ${status} X\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(text)}\r\n${extraHeaders}\r\n${text}`;
}

/** Head of a chunked SSE response; write frames with `rawChunk`. */
export const RAW_SSE_HEAD = 'HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n';

/** One HTTP/1.1 chunk holding `text`. */
export function rawChunk(text: string): string {
  return `${Buffer.byteLength(text).toString(16)}\r\n${text}\r\n`;
}

/** An SSE `data:` frame of a chat chunk with `delta` (and `finish_reason`). */
export function chatFrame(delta: Record<string, unknown>, finishReason: string | null = null): string {
  return `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 0, model: 'up', choices: [{ index: 0, delta, finish_reason: finishReason }] })}\n\n`;
}

/** Runs `switchyard <args>` (bin/switchyard.mjs) to its exit; `out` is stdout and stderr together. */
export function runCli(args: string[]): Promise<{ code: number | null; out: string }> {
  const root = join(import.meta.dirname, '../..');
  return new Promise((resolve) => {
    const p = spawn(process.execPath, [join(root, 'bin/switchyard.mjs'), ...args], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    p.stdout.on('data', (d: Buffer) => (out += d.toString()));
    p.stderr.on('data', (d: Buffer) => (out += d.toString()));
    p.once('exit', (code) => resolve({ code, out }));
  });
}

/**
 * The endpoint id that served `response` (by its `x-request-id`), as `gw` recorded it; null when
 * none did. Waits for the request to end. The client-facing `x-switchyard-served-by` names only a
 * multi-target alias's direct model, so tests that check which endpoint answered ask here.
 * @throws Error when the response carries no `x-request-id`.
 */
export function servedEndpoint(gw: Pick<RunningGateway, 'servedEndpoint'>, response: { headers: { get(name: string): string | null } }): Promise<string | null> {
  const id = response.headers.get('x-request-id');
  if (id === null) throw new Error('servedEndpoint: the response has no x-request-id header');
  return gw.servedEndpoint(id);
}
