// The request life against upstreams that misbehave on purpose, on 127.0.0.1 with free ports:
// request-scoped 4xx, busy engines, in-band errors, stalled streams, aliases' deadlines and
// outbound limit, and session affinity keyed by the caller's address (127.0.0.2–127.0.0.9).
import type { Socket } from 'node:net';
import pino from 'pino';
import { Agent, fetch as undiciFetch } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { buildGatewayConfig } from '../../gateway/config/load.ts';
import { startGateway, type RunningGateway } from '../../gateway/gateway.ts';
import { startEmulator } from '../../simulator/emulator/emulator.ts';
import { chatFrame, hello, RAW_SSE_HEAD, rawChunk, rawJson, sseData, startRawUpstream, type RawUpstream, servedEndpoint } from './harness.ts';

const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const o of open.splice(0).reverse()) await o.close();
});

const ANSWER = { id: 'c1', object: 'chat.completion', created: 0, model: 'up', choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' }], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } };

/** A raw upstream that counts its requests; `respond` gets the 0-based request number. */
async function upstream(respond: (sock: Socket, n: number) => void): Promise<RawUpstream & { hits: () => number }> {
  let n = 0;
  const u = await startRawUpstream((sock) => respond(sock, n++));
  open.push(u);
  return { ...u, hits: () => n };
}

/** A gateway (auth none, affinity and prefill-aware choice off unless asked) over `models`. */
async function gateway(models: unknown[], settings: Record<string, unknown> = {}, gw: Record<string, unknown> = {}, logger = pino({ level: 'silent' })): Promise<RunningGateway> {
  const config = buildGatewayConfig({
    models: { models },
    gateway: { routing_settings: { affinity_enabled: false, prefill_aware_enabled: false, ...settings }, health: { failure_threshold: 1000 }, auth: { mode: 'none' }, ...gw },
  });
  const g = await startGateway({ config, host: '127.0.0.1', port: 0, seed: 7, logger });
  open.push(g);
  return g;
}

const post = (g: RunningGateway, body: Record<string, unknown>, init: { dispatcher?: Agent } = {}) =>
  undiciFetch(`${g.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ messages: hello, max_tokens: 3, ...body }), ...init });

describe('request-scoped errors go back to the caller', () => {
  it("a malformed 400 from the first route is the client's answer, with the upstream's message; no other route is asked", async () => {
    const bad = await upstream((sock) => sock.end(rawJson(400, { error: { message: "Invalid value for 'response_format.type': 'bogus'", type: 'invalid_request_error', param: 'response_format.type', code: null } })));
    const good = await upstream((sock) => sock.end(rawJson(200, ANSWER)));
    const g = await gateway([{ id: 'm', router: 'failover', route: [{ base_url: bad.baseUrl }, { base_url: good.baseUrl }] }]);
    // A field the gateway leaves to the upstream (it checks only what OpenAI itself is strict about).
    const r = await post(g, { model: 'm', response_format: { type: 'bogus' } });
    expect(r.status).toBe(400);
    expect(((await r.json()) as { error: { message: string } }).error.message).toBe("Invalid value for 'response_format.type': 'bogus'");
    expect(good.hits()).toBe(0);
  });

  it('an upstream 404 falls back to the next route', async () => {
    const wrong = await upstream((sock) => sock.end(rawJson(404, { error: { message: 'The model `x` does not exist.', type: 'NotFoundError', code: 404 } })));
    const good = await upstream((sock) => sock.end(rawJson(200, ANSWER)));
    const g = await gateway([{ id: 'm', router: 'failover', route: [{ base_url: wrong.baseUrl }, { base_url: good.baseUrl }] }]);
    const r = await post(g, { model: 'm' });
    expect(r.status).toBe(200);
    expect(good.hits()).toBe(1);
  });
});

describe('busy engines', () => {
  it('a 503 with Retry-After from the only engine is busy, not broken: the breaker stays closed and the hint reaches the caller', async () => {
    const engine = await upstream((sock, n) => sock.end(n === 0 ? rawJson(503, { error: { message: 'queue full' } }, 'retry-after: 1\r\n') : rawJson(200, ANSWER)));
    const g = await gateway([{ id: 'm', route: [{ base_url: engine.baseUrl }] }], {}, { health: { failure_threshold: 1, cooldown_sec: 30 } });
    const first = await post(g, { model: 'm' });
    expect(first.status).toBe(503);
    expect(first.headers.get('retry-after')).toBe('1');
    expect(g.core.health.snapshot(performance.now()).every((h) => h.state === 'closed')).toBe(true);
    await new Promise((r) => setTimeout(r, 1_100));
    const second = await post(g, { model: 'm' });
    expect(second.status).toBe(200);
  });
});

describe('streams', () => {
  it('an in-band error after the first token keeps the upstream message and its Retry-After', async () => {
    const engine = await upstream((sock) => {
      sock.write(RAW_SSE_HEAD + rawChunk(chatFrame({ role: 'assistant', content: 'Hel' })));
      sock.end(rawChunk(`data: ${JSON.stringify({ error: { message: 'engine preempted the request', code: 429, retry_after: 7 } })}\n\n`) + '0\r\n\r\n');
    });
    const g = await gateway([{ id: 'm', route: [{ base_url: engine.baseUrl }] }]);
    const r = await post(g, { model: 'm', stream: true });
    expect(r.status).toBe(200);
    const frames = sseData(await r.text());
    const last = JSON.parse(frames[frames.length - 1]!) as { error: { message: string; retry_after: number } };
    expect(last.error).toMatchObject({ message: 'engine preempted the request', retry_after: 7 });
    expect(frames).not.toContain('[DONE]');
  });

  it('an in-band 429 before the first token: the caller gets 429 with Retry-After', async () => {
    const engine = await upstream((sock) => {
      sock.end(RAW_SSE_HEAD + rawChunk(`data: ${JSON.stringify({ error: { message: 'slow down', code: 429, retry_after: 4 } })}\n\n`) + '0\r\n\r\n');
    });
    const g = await gateway([{ id: 'm', route: [{ base_url: engine.baseUrl }] }]);
    const r = await post(g, { model: 'm', stream: true });
    expect(r.status).toBe(429);
    expect(r.headers.get('retry-after')).toBe('4');
  });

  it('a stream that stalls after its first tokens ends in-band at the stream-idle timeout', async () => {
    const engine = await upstream((sock) => sock.write(RAW_SSE_HEAD + rawChunk(chatFrame({ role: 'assistant', content: 'Hel' })) + rawChunk(chatFrame({ content: 'lo' }))));
    const g = await gateway([{ id: 'm', route: [{ base_url: engine.baseUrl }] }], { timeout_stream_idle_sec: 1 });
    const r = await post(g, { model: 'm', stream: true });
    const frames = sseData(await r.text());
    const last = JSON.parse(frames[frames.length - 1]!) as { error: { code: string } };
    expect(last.error.code).toBe('upstream_timeout');
  });
});

/** The gateway's per-request log lines (`info`), parsed. */
function requestLines(): { logger: pino.Logger; lines: () => Array<Record<string, unknown>> } {
  const all: Array<Record<string, unknown>> = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => void all.push(JSON.parse(line) as Record<string, unknown>) });
  return { logger, lines: () => all.filter((l) => l.msg === 'request') };
}

/** An upstream that streams a token every 100 ms and never ends the stream. */
async function endlessStream(): Promise<RawUpstream & { hits: () => number }> {
  return upstream((sock) => {
    sock.on('error', () => {});
    sock.write(RAW_SSE_HEAD + rawChunk(chatFrame({ role: 'assistant', content: 'Hel' })));
    const tick = setInterval(() => sock.writable && sock.write(rawChunk(chatFrame({ content: 'lo' }))), 100);
    sock.on('close', () => clearInterval(tick));
  });
}

describe("an alias's first-chunk wait is the core's first_token deadline", () => {
  it('a target that sends its headers and a role-only delta but no token is cancelled at stream_timeout_ms and the next target answers', async () => {
    const silent = await upstream((sock) => {
      sock.on('error', () => {});
      sock.write(RAW_SSE_HEAD + rawChunk(chatFrame({ role: 'assistant' }))); // output, but no token: then nothing
    });
    const backup = await startEmulator({ mode: 'echo' });
    open.push(backup);
    const log = requestLines();
    const models = [
      { id: 'a', route: [{ base_url: silent.baseUrl }] },
      { id: 'b', route: [{ base_url: backup.baseUrl }] },
      { id: 'm', routing: { strategy: 'failover', stream_timeout_ms: 300, targets: [{ model: 'a' }, { model: 'b' }] } },
    ];
    const g = await gateway(models, {}, {}, log.logger);
    const r = await post(g, { model: 'm', stream: true });
    expect(r.status).toBe(200);
    expect(await servedEndpoint(g, r)).toMatch(/^b:/);
    expect(sseData(await r.text()).at(-1)).toBe('[DONE]');
    for (let i = 0; i < 50 && log.lines().length === 0; i++) await new Promise((res) => setTimeout(res, 10));
    expect(log.lines()[0]).toMatchObject({ status: 'ok', attempts: [{ outcome: 'first_token_timeout' }, { outcome: 'ok' }] });
    expect(silent.hits()).toBe(1);
  });
});

describe("a stream's total is the core's overall deadline", () => {
  // The overall deadline (1 s here) is a core wait_until; the gateway arms no timer of its own
  // for an attempt's total. A stream that keeps sending tokens is never idle, so that deadline
  // is what ends it: in-band, since the response was committed at its first token.
  const cases = [
    { kind: 'router: model', models: (url: string) => [{ id: 'm', route: [{ base_url: url }] }], model: 'm', attemptOutcome: 'cancelled' },
    {
      kind: 'multi-target alias',
      models: (url: string) => [{ id: 'a', route: [{ base_url: url }] }, { id: 'm', routing: { strategy: 'failover', targets: [{ model: 'a' }] } }],
      model: 'm',
      attemptOutcome: 'transport',
    },
  ];
  it.each(cases)('$kind: an endless stream ends with an in-band upstream_timeout at the overall deadline', async ({ models, model, attemptOutcome }) => {
    const engine = await endlessStream();
    const log = requestLines();
    const g = await gateway(models(engine.baseUrl), { timeout_overall_sec: 1, timeout_stream_idle_sec: 60 }, {}, log.logger);
    const r = await post(g, { model, stream: true });
    expect(r.status).toBe(200);
    const frames = sseData(await r.text());
    expect(frames.length).toBeGreaterThan(2); // tokens were relayed before the deadline
    expect(frames).not.toContain('[DONE]');
    const last = JSON.parse(frames[frames.length - 1]!) as { error: { code: string } };
    expect(last.error.code).toBe('upstream_timeout');
    for (let i = 0; i < 50 && log.lines().length === 0; i++) await new Promise((res) => setTimeout(res, 10));
    const line = log.lines()[0]!;
    // The core's overall deadline ended it (not a driver timer's transport timeout), and not before it was due.
    expect(line).toMatchObject({ status: 'upstream_timeout', attempts: [{ outcome: attemptOutcome }] });
    expect(String(line.detail)).toContain('overall deadline');
    expect(line.durationMs as number).toBeGreaterThanOrEqual(1_000);
    expect(engine.hits()).toBe(1);
  });
});

describe('multi-target aliases', () => {
  const alias = (targets: string[], routing: Record<string, unknown> = {}) => ({ id: 'g', routing: { strategy: 'failover', targets: targets.map((model) => ({ model })), ...routing } });

  it('a silent upstream behind an alias hits the headers deadline (504), as it does for a per-model route', async () => {
    const silent = await upstream(() => {});
    const g = await gateway([{ id: 'a', route: [{ base_url: silent.baseUrl }] }, alias(['a'])], { timeout_headers_sec: 1 });
    const r = await post(g, { model: 'g' });
    expect(r.status).toBe(504);
  });

  it("a model's own timeout_ms is the first-chunk wait of a stream: a silent stream fails over", async () => {
    const mute = await upstream((sock) => sock.write(RAW_SSE_HEAD)); // headers, then nothing
    const good = await upstream((sock) => sock.end(RAW_SSE_HEAD + rawChunk(chatFrame({ role: 'assistant', content: 'hi' }, 'stop')) + rawChunk('data: [DONE]\n\n') + '0\r\n\r\n'));
    const g = await gateway([{ id: 'a', route: [{ base_url: mute.baseUrl }] }, { id: 'b', route: [{ base_url: good.baseUrl }] }, alias(['a', 'b'], { timeout_ms: 500 })]);
    const r = await post(g, { model: 'g', stream: true });
    expect(r.status).toBe(200);
    expect(await servedEndpoint(g, r)).toMatch(/^b:/);
    expect(sseData(await r.text())).toContain('[DONE]');
  });

  it('targets sharing a provider key go through its outbound limit: never more than the limit at once', async () => {
    let inFlight = 0;
    let most = 0;
    const slow = await upstream((sock) => {
      inFlight++;
      most = Math.max(most, inFlight);
      setTimeout(() => {
        inFlight--;
        sock.end(rawJson(200, ANSWER));
      }, 150);
    });
    const route = { base_url: slow.baseUrl, local: false, provider: 'p', api_key: 'k' };
    const g = await gateway(
      [{ id: 'a', route: [route] }, { id: 'b', route: [{ ...route, base_url: slow.baseUrl.replace('/v1', '/v1/') }] }, alias(['a', 'b'])],
      { upstream_concurrency_initial_limit: 1, upstream_concurrency_max_limit: 1 },
    );
    const rs = await Promise.all([0, 1, 2].map(() => post(g, { model: 'g' })));
    expect(rs.map((r) => r.status)).toEqual([200, 200, 200]);
    expect(most).toBe(1);
  });
});

describe('session affinity by caller address', () => {
  it('each loopback source address keeps its own pin (deriveAffinityKey: the IP bucket when no key is sent)', async () => {
    const emus = await Promise.all([startEmulator({ mode: 'echo' }), startEmulator({ mode: 'echo' })]);
    open.push(...emus);
    const g = await gateway([{ id: 'm', route: emus.map((e) => ({ base_url: e.baseUrl })) }], { affinity_enabled: true });
    const served = new Map<string, Set<string>>();
    for (let i = 2; i <= 9; i++) {
      const agent = new Agent({ localAddress: `127.0.0.${i}` });
      for (let k = 0; k < 3; k++) {
        const r = await post(g, { model: 'm' }, { dispatcher: agent });
        expect(r.status).toBe(200);
        await r.text();
        const set = served.get(`127.0.0.${i}`) ?? new Set<string>();
        set.add((await servedEndpoint(g, r))!);
        served.set(`127.0.0.${i}`, set);
      }
      await agent.close();
    }
    for (const set of served.values()) expect(set.size).toBe(1); // one address, one endpoint
    const used = new Set([...served.values()].flatMap((s) => [...s]));
    expect(used.size).toBe(2); // eight addresses are not one shared pin
  });
});
