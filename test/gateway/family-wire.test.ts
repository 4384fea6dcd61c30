// An endpoint family owns its client wire: the shape of every error body and the framing of its
// streams. This file registers, from the test alone, a family with Anthropic's wire
// (`toy_messages` on POST /v1/toy/messages: `{"type":"error","error":{type,message}}` bodies,
// `event: <name>` SSE frames, an in-band `event: error`, `message_stop` as the terminator) and an
// adapter for an Anthropic-style upstream (`toy_anthropic`: it parses the upstream's named SSE
// events into the core's events and frames them with the family's wire). A real gateway on
// loopback, in front of a loopback upstream, then answers a validation error, an upstream 429, a
// successful stream, an upstream failure after commit and a drain cut, all in the toy family's
// shape, while the OpenAI families of the same gateway keep OpenAI's; the family's `x-api-key`
// authenticates, its forwarded `anthropic-version` reaches the upstream, and the adapter names a
// field it dropped in a response header. No source file outside this
// test knows of the family or the adapter; vitest isolates modules per file, so the
// registrations stay here.
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createParser } from 'eventsource-parser';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { classifyUpstreamError, type Outcome, type Usage } from '../../core/index.ts';
import { hashKey } from '../../gateway/callers.ts';
import { buildGatewayConfig } from '../../gateway/config/load.ts';
import type { ClientWire } from '../../gateway/endpoints/client-wire.ts';
import type { EndpointFamily } from '../../gateway/endpoints/endpoint-family.ts';
import { registerEndpointFamily } from '../../gateway/endpoints/families.ts';
import { startGateway, type RunningGateway } from '../../gateway/gateway.ts';
import type { RelayEvent } from '../../gateway/sse-relay.ts';
import type { AttemptEnd, UpstreamAdapter } from '../../gateway/upstream/adapter.ts';
import { registerAdapter } from '../../gateway/upstream/adapters.ts';

const KEY = 'sk-toy-wire';
/** A key allowed `toy-ok` only. */
const NARROW_KEY = 'sk-toy-narrow';

// ---- the toy family: Anthropic's error envelope and SSE grammar ----

/** Anthropic's error type for an HTTP status. */
function anthropicType(status: number): string {
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 404) return 'not_found_error';
  if (status === 413) return 'request_too_large';
  if (status === 429) return 'rate_limit_error';
  if (status === 503 || status === 529) return 'overloaded_error';
  if (status >= 500) return 'api_error';
  return 'invalid_request_error';
}

const anthropicError = (type: string, message: string): string => JSON.stringify({ type: 'error', error: { type, message } });

const toyWire: ClientWire = {
  errorBody: (_code, message, _param, status) => anthropicError(anthropicType(status), message),
  passThroughBody(raw) {
    try {
      const b = JSON.parse(raw ?? '') as { error?: { type?: unknown; message?: unknown } };
      return typeof b.error?.message === 'string' ? anthropicError(typeof b.error.type === 'string' ? b.error.type : 'invalid_request_error', b.error.message) : null;
    } catch {
      return null;
    }
  },
  streamEvent: (name, data) => `event: ${name ?? 'message'}\ndata: ${data}\n\n`,
  streamError: (_code, message, status) => `event: error\ndata: ${anthropicError(anthropicType(status), message)}\n\n`,
  streamEnd: 'event: message_stop\ndata: {"type":"message_stop"}\n\n',
};

const toyMessages: EndpointFamily = {
  endpoint: 'toy_messages',
  path: '/v1/toy/messages',
  streams: true,
  check(body) {
    if (!Array.isArray(body.messages) || body.messages.length === 0) return { code: 'invalid_request', message: 'messages: Field required', param: 'messages' };
    if (body.max_tokens === undefined) return { code: 'invalid_request', message: 'max_tokens: Field required', param: 'max_tokens' };
    return null;
  },
  prompt: (body) => ({ inputTokens: Math.ceil(JSON.stringify(body.messages).length / 4), modalities: [] }),
  wire: toyWire,
  apiKeyHeader: 'x-api-key',
  forwardHeaders: ['anthropic-version', 'anthropic-beta'],
};

// ---- the toy adapter: an Anthropic-style upstream, its events into the core's ----

/** Status an in-band Anthropic error type stands for. */
const STATUS_OF_TYPE: Record<string, number> = { overloaded_error: 529, rate_limit_error: 429, api_error: 500, invalid_request_error: 400 };

function httpFailure(status: number, body: string, retryAfterMs: number | null): AttemptEnd {
  let type: string | null = null;
  let message: string | null = null;
  try {
    const e = (JSON.parse(body) as { error?: { type?: unknown; message?: unknown } }).error;
    type = typeof e?.type === 'string' ? e.type : null;
    message = typeof e?.message === 'string' ? e.message : null;
  } catch {
    message = body;
  }
  const outcome: Outcome = { kind: 'http_status', status, errorClass: classifyUpstreamError({ status, code: type, type, message, retryAfterMs }), retryAfterMs };
  return { kind: 'failed', outcome, errorBody: body };
}

const toyAnthropic: UpstreamAdapter = {
  kind: 'toy_anthropic',
  endpoints: ['toy_messages'],
  startAttempt(target, req, ctx, hooks, end) {
    const abort = new AbortController();
    let ended = false;
    const finish = (e: AttemptEnd): void => {
      if (ended) return;
      ended = true;
      end(e);
    };
    // This upstream has no `metadata`: dropped, and named to the client at commit.
    const { metadata, ...rest } = req.body;
    const dropped = metadata === undefined ? undefined : ([['x-switchyard-dropped-params', 'metadata']] as const);
    const run = async (): Promise<void> => {
      const res = await target.pool.request({
        method: 'POST',
        path: `${target.basePath}/messages`,
        headers: { ...ctx.clientHeaders, 'content-type': 'application/json', 'x-api-key': target.apiKey ?? '', 'x-request-id': ctx.requestId },
        body: JSON.stringify({ ...rest, model: target.upstreamModel }),
        signal: abort.signal,
      });
      if (res.statusCode >= 400) {
        const ra = Number(res.headers['retry-after']);
        return finish(httpFailure(res.statusCode, (await res.body.text()).slice(0, ctx.maxErrorBodyBytes), Number.isFinite(ra) ? ra * 1000 : null));
      }
      hooks.headers();
      if (!req.stream) {
        const msg = (await res.body.json()) as Record<string, unknown> & { usage?: { input_tokens?: number; output_tokens?: number } };
        msg.model = req.model;
        return finish({ kind: 'body', text: JSON.stringify(msg), usage: { inputTokens: msg.usage?.input_tokens ?? 0, outputTokens: msg.usage?.output_tokens ?? 0, cachedTokens: 0 } });
      }
      const usage: Usage = { inputTokens: 0, outputTokens: 0, cachedTokens: 0 };
      let out: RelayEvent[] = [];
      let failure: AttemptEnd | null = null;
      let done = false;
      const parser = createParser({
        onEvent(e) {
          if (done || failure) return;
          const data = JSON.parse(e.data) as Record<string, any>;
          if (e.event === 'error') {
            const type = String(data.error?.type ?? 'api_error');
            failure = httpFailure(STATUS_OF_TYPE[type] ?? 500, e.data, null);
            return;
          }
          if (e.event === 'message_stop') {
            done = true;
            out.push({ kind: 'done', usage });
            return;
          }
          if (e.event === 'message_start') {
            usage.inputTokens = data.message?.usage?.input_tokens ?? 0;
            data.message.model = req.model; // the name the client asked for
          }
          if (e.event === 'message_delta') usage.outputTokens = data.usage?.output_tokens ?? 0;
          const token = e.event === 'content_block_delta' && typeof data.delta?.text === 'string' && data.delta.text.length > 0;
          out.push({ kind: 'frame', text: req.wire.streamEvent(e.event ?? null, JSON.stringify(data)), token });
        },
      });
      const decoder = new TextDecoder();
      for await (const chunk of res.body) {
        parser.feed(decoder.decode(chunk as Buffer, { stream: true }));
        const batch = out;
        out = [];
        if (batch.length > 0) await hooks.events(batch);
        if (failure) {
          abort.abort();
          return finish(failure);
        }
        if (done) break;
      }
      finish(done ? { kind: 'streamed' } : { kind: 'failed', outcome: { kind: 'transport', cause: 'reset' }, errorBody: null });
    };
    run().catch(() => finish({ kind: 'failed', outcome: { kind: 'transport', cause: 'reset' }, errorBody: null }));
    return {
      commitHeaders: dropped,
      abort() {
        finish({ kind: 'aborted' });
        abort.abort();
      },
    };
  },
};

registerEndpointFamily(toyMessages);
registerAdapter(toyAnthropic);

// ---- a loopback upstream speaking the Anthropic-style protocol; its model name picks the behaviour ----

const sse = (event: string, data: unknown): string => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
const messageStart = sse('message_start', { type: 'message_start', message: { id: 'msg_1', type: 'message', role: 'assistant', model: 'upstream-name', content: [], usage: { input_tokens: 11, output_tokens: 0 } } });
const blockStart = sse('content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } });
const delta = (text: string): string => sse('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text } });

function upstreamAnswer(res: ServerResponse, body: { model: string; stream?: boolean }): void {
  switch (body.model) {
    case 'up-rate':
      res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '7' });
      res.end(anthropicError('rate_limit_error', 'upstream says slow down'));
      return;
    case 'up-bad':
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end(anthropicError('invalid_request_error', 'messages.0.content: upstream dislikes this'));
      return;
    case 'up-break':
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(messageStart + blockStart + delta('Hel'));
      setTimeout(() => res.end(sse('error', { type: 'error', error: { type: 'overloaded_error', message: 'upstream fell over' } })), 20);
      return;
    case 'up-stall':
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(messageStart + blockStart + delta('Hel'));
      return; // never ends on its own (the gateway aborts it)
    default:
      if (!body.stream) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ id: 'msg_1', type: 'message', role: 'assistant', model: 'upstream-name', content: [{ type: 'text', text: 'Hello world' }], stop_reason: 'end_turn', usage: { input_tokens: 11, output_tokens: 2 } }));
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(
        messageStart +
          blockStart +
          delta('Hello') +
          delta(' world') +
          sse('content_block_stop', { type: 'content_block_stop', index: 0 }) +
          sse('message_delta', { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 2 } }) +
          sse('message_stop', { type: 'message_stop' }),
      );
  }
}

let upstream: Server;
/** What the upstream last received. */
let seen: { headers: Record<string, unknown>; body: Record<string, unknown> } | null = null;
let gw: RunningGateway;
const gateways: RunningGateway[] = [];

async function gateway(): Promise<RunningGateway> {
  const base = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/v1/toy`;
  const route = (upstreamModel: string) => [{ kind: 'toy_anthropic', base_url: base, provider_model_id: upstreamModel, api_key: 'up-key' }];
  const config = buildGatewayConfig({
    models: {
      models: [
        { id: 'toy-ok', route: route('up-ok') },
        { id: 'toy-rate', route: route('up-rate') },
        { id: 'toy-bad', route: route('up-bad') },
        { id: 'toy-break', route: route('up-break') },
        { id: 'toy-stall', route: route('up-stall') },
      ],
    },
    gateway: {
      auth: {
        mode: 'keys',
        keys: [
          { id: 'toy', sha256: hashKey(KEY) },
          { id: 'narrow', sha256: hashKey(NARROW_KEY), allowed_models: ['toy-ok'] },
        ],
      },
    },
  });
  const g = await startGateway({ config, host: '127.0.0.1', port: 0, seed: 1, logger: pino({ level: 'silent' }) });
  gateways.push(g);
  return g;
}

beforeAll(async () => {
  upstream = createServer((req, res) => {
    let text = '';
    req.on('data', (c: Buffer) => (text += c.toString('utf8')));
    req.on('end', () => {
      seen = { headers: req.headers, body: JSON.parse(text) as Record<string, unknown> };
      upstreamAnswer(res, seen.body as { model: string; stream?: boolean });
    });
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  gw = await gateway();
});
afterAll(async () => {
  for (const g of gateways) await g.close();
  upstream.closeAllConnections();
  await new Promise((r) => upstream.close(r));
});

const hi = [{ role: 'user', content: 'hi' }];
const post = (g: RunningGateway, path: string, body: unknown, key: string | null = KEY, headers: Record<string, string> = {}) =>
  fetch(`${g.url}${path}`, {
    method: 'POST',
    headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });

/** A client-side read of an SSE body: each event's name and parsed data, in order. */
function events(text: string): Array<{ event: string | undefined; data: Record<string, any> }> {
  const got: Array<{ event: string | undefined; data: Record<string, any> }> = [];
  const p = createParser({ onEvent: (e) => got.push({ event: e.event, data: JSON.parse(e.data) as Record<string, any> }) });
  p.feed(text);
  return got;
}

describe("a family's own client wire, over an adapter registered from the test", () => {
  it('refusals before routing are in the family shape: the family check, the shared parse, auth', async () => {
    const r = await post(gw, '/v1/toy/messages', { model: 'toy-ok', messages: hi });
    expect(r.status).toBe(400);
    expect(await r.json()).toEqual({ type: 'error', error: { type: 'invalid_request_error', message: 'max_tokens: Field required' } });
    const json = await post(gw, '/v1/toy/messages', '{"model":');
    expect(json.status).toBe(400);
    expect(((await json.json()) as { type: string; error: { type: string } }).error.type).toBe('invalid_request_error');
    const auth = await post(gw, '/v1/toy/messages', { model: 'toy-ok', messages: hi, max_tokens: 8 }, 'sk-wrong');
    expect(auth.status).toBe(401);
    expect(await auth.json()).toMatchObject({ type: 'error', error: { type: 'authentication_error' } });
    const unknown = await post(gw, '/v1/toy/messages', { model: 'nope', messages: hi, max_tokens: 8 });
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toEqual({ type: 'error', error: { type: 'not_found_error', message: "The model 'nope' does not exist or you do not have access to it." } });
    // A key not allowed the model gets the same answer, word for word.
    const denied = await post(gw, '/v1/toy/messages', { model: 'nope', messages: hi, max_tokens: 8 }, NARROW_KEY);
    expect(denied.status).toBe(404);
    expect(await denied.json()).toEqual({ type: 'error', error: { type: 'not_found_error', message: "The model 'nope' does not exist or you do not have access to it." } });
  });

  it("the OpenAI families of the same gateway keep OpenAI's shape", async () => {
    const r = await post(gw, '/v1/chat/completions', { model: 'toy-ok', messages: hi }, 'sk-wrong');
    expect(r.status).toBe(401);
    expect(await r.json()).toMatchObject({ error: { type: 'authentication_error', code: 'invalid_api_key', param: null } });
  });

  it("an upstream 429 is the family's rate_limit_error, with Retry-After", async () => {
    const r = await post(gw, '/v1/toy/messages', { model: 'toy-rate', messages: hi, max_tokens: 8 });
    expect(r.status).toBe(429);
    expect(r.headers.get('retry-after')).toBe('7');
    expect(await r.json()).toEqual({ type: 'error', error: { type: 'rate_limit_error', message: "Every route of model 'toy-rate' is rate limited; retry later." } });
  });

  it("an upstream 400 for the caller's mistake passes through, re-written by the family", async () => {
    const r = await post(gw, '/v1/toy/messages', { model: 'toy-bad', messages: hi, max_tokens: 8 });
    expect(r.status).toBe(400);
    expect(await r.json()).toEqual({ type: 'error', error: { type: 'invalid_request_error', message: 'messages.0.content: upstream dislikes this' } });
  });

  it("a successful stream is the upstream's events, framed by the family, ending with its terminator", async () => {
    const r = await post(gw, '/v1/toy/messages', { model: 'toy-ok', messages: hi, max_tokens: 8, stream: true });
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe('text/event-stream');
    const text = await r.text();
    const got = events(text);
    expect(got.map((e) => e.event)).toEqual(['message_start', 'content_block_start', 'content_block_delta', 'content_block_delta', 'content_block_stop', 'message_delta', 'message_stop']);
    expect(got[0]!.data.message.model).toBe('toy-ok');
    expect(got.filter((e) => e.event === 'content_block_delta').map((e) => e.data.delta.text).join('')).toBe('Hello world');
    expect(text.endsWith('event: message_stop\ndata: {"type":"message_stop"}\n\n')).toBe(true);
    expect(text).not.toContain('[DONE]');
    const whole = await post(gw, '/v1/toy/messages', { model: 'toy-ok', messages: hi, max_tokens: 8 });
    expect(await whole.json()).toMatchObject({ type: 'message', model: 'toy-ok', content: [{ type: 'text', text: 'Hello world' }] });
  });

  it("an upstream failure after commit ends the stream with the family's in-band error, no terminator", async () => {
    const r = await post(gw, '/v1/toy/messages', { model: 'toy-break', messages: hi, max_tokens: 8, stream: true });
    expect(r.status).toBe(200);
    const text = await r.text(); // rejects if the chunked body is not ended properly
    const got = events(text);
    expect(got.map((e) => e.event)).toEqual(['message_start', 'content_block_start', 'content_block_delta', 'error']);
    expect(got.at(-1)!.data).toEqual({ type: 'error', error: { type: 'overloaded_error', message: 'upstream fell over' } });
    expect(text).not.toContain('message_stop');
    expect(text).not.toContain('"error":{"message"'); // nothing of OpenAI's shape
  });

  it("the family's key header authenticates; its forwarded headers reach the adapter; the adapter names what it dropped", async () => {
    const r = await post(gw, '/v1/toy/messages', { model: 'toy-ok', messages: hi, max_tokens: 8, metadata: { user_id: 'u1' } }, null, {
      'x-api-key': KEY,
      'anthropic-version': '2023-06-01',
      'x-other': 'kept back',
    });
    expect(r.status).toBe(200);
    expect(r.headers.get('x-switchyard-dropped-params')).toBe('metadata');
    expect(seen!.headers).toMatchObject({ 'anthropic-version': '2023-06-01', 'x-api-key': 'up-key' });
    expect(seen!.headers).not.toHaveProperty('x-other');
    expect(seen!.headers).not.toHaveProperty('anthropic-beta');
    expect(seen!.body).not.toHaveProperty('metadata');
    const wrong = await post(gw, '/v1/toy/messages', { model: 'toy-ok', messages: hi, max_tokens: 8 }, null, { 'x-api-key': 'sk-wrong' });
    expect(wrong.status).toBe(401);
    // The OpenAI families take `Authorization: Bearer` only.
    expect((await post(gw, '/v1/chat/completions', { model: 'toy-ok', messages: hi }, null, { 'x-api-key': KEY })).status).toBe(401);
  });

  it("a stream cut at the drain's grace ends with the family's in-band error", async () => {
    const g = await gateway();
    const r = await post(g, '/v1/toy/messages', { model: 'toy-stall', messages: hi, max_tokens: 8, stream: true });
    expect(r.status).toBe(200);
    const body = r.text();
    expect(await g.drain(50)).toEqual({ cut: 1 });
    const got = events(await body);
    expect(got.map((e) => e.event)).toEqual(['message_start', 'content_block_start', 'content_block_delta', 'error']);
    expect(got.at(-1)!.data).toMatchObject({ type: 'error', error: { type: 'overloaded_error', message: expect.stringMatching(/shutting down/) } });
  });
});
