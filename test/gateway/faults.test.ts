// The fault suite: one test per kind of upstream fault public gateways are known to get wrong,
// against engine emulators and hand-written upstreams on 127.0.0.1. After every test: no
// in-flight count, dispatch claim, outbound slot or hold place is left over or negative.
import { createServer, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { RunningGateway } from '../../gateway/gateway.ts';
import { chatFrame, hello, KEYS, RAW_SSE_HEAD, rawChunk, rawJson, sseData, startRawStack, startRawUpstream, startStack, type RawStack, type RawUpstream, type Stack, servedEndpoint } from './harness.ts';
import { startEmulator, type RunningEmulator } from '../../simulator/emulator/emulator.ts';

let stack: Stack | RawStack | null = null;
const extra: Array<{ close(): Promise<void> }> = [];

afterEach(async () => {
  if (stack) {
    await settle(stack.gw);
    checkCounters(stack.gw);
    await stack.close();
  }
  stack = null;
  for (const e of extra.splice(0)) await e.close();
});

/** Waits (bounded) for every request to be over. */
async function settle(gw: RunningGateway, ms = 5_000): Promise<void> {
  const until = Date.now() + ms;
  while (gw.inFlight() > 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
}

/** In-flight counters are zero when idle and never negative. */
function checkCounters(gw: RunningGateway): void {
  expect(gw.inFlight()).toBe(0);
  for (const h of gw.core.health.snapshot(performance.now())) expect(h.claimsInFlight, h.endpointId).toBe(0);
  for (const s of gw.core.limiter.snapshot()) expect(s.held).toBe(0);
  for (const s of gw.core.hold.snapshot()) expect(s.held).toBe(0);
  gw.core.limiter.invariants();
  gw.core.hold.invariants();
}

const ask = (s: Stack | RawStack, extraBody: Record<string, unknown> = {}) => s.post('/v1/chat/completions', { model: 'demo', messages: hello, max_tokens: 3, ...extraBody });

async function emulator(opts: Parameters<typeof startEmulator>[0] = {}): Promise<RunningEmulator> {
  const e = await startEmulator({ ...opts, faults: { latency_scale: 0.05, ...opts.faults } });
  extra.push(e);
  return e;
}

async function raw(respond: (sock: Socket, body: string) => void): Promise<RawUpstream> {
  const u = await startRawUpstream(respond);
  extra.push(u);
  return u;
}

/** A port with nothing listening (bound, then released). */
async function closedPort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as { port: number }).port;
  await new Promise((r) => srv.close(r));
  return port;
}

describe('429s', () => {
  it('429 with Retry-After is retried on another upstream', async () => {
    stack = await startStack([{ weight: 1000, faults: { rate_limit_rate: 1, retry_after_sec: 30 } }, { weight: 1 }]);
    const r = await ask(stack);
    expect(r.status).toBe(200);
    expect((await servedEndpoint(stack.gw, r))).toBe(stack.ids[1]);
  });

  it('429 with Retry-After is honoured for that upstream (no request to it until it expires)', async () => {
    stack = await startStack([{ weight: 1000, faults: { rate_limit_rate: 1, retry_after_sec: 30 } }, { weight: 1 }]);
    for (let i = 0; i < 5; i++) expect((await ask(stack)).status).toBe(200);
    expect((stack as Stack).emus[0]!.log.all()).toHaveLength(1);
  });

  it('429 without Retry-After is retried on another upstream', async () => {
    const limited = await raw((sock) => sock.end(rawJson(429, { error: { message: 'slow down', type: 'rate_limit_error', code: 'rate_limit_exceeded' } })));
    const backup = await emulator();
    stack = await startRawStack([
      { base_url: limited.baseUrl, weight: 1000 },
      { base_url: backup.baseUrl, weight: 1 },
    ]);
    const r = await ask(stack);
    expect(r.status).toBe(200);
    expect((await servedEndpoint(stack.gw, r))).toBe(stack.ids[1]);
  });

  it('every upstream rate-limited: relayed as 429/503 with Retry-After, never 500', async () => {
    stack = await startStack([{ faults: { rate_limit_rate: 1, retry_after_sec: 7 } }, { faults: { rate_limit_rate: 1, retry_after_sec: 7 } }]);
    for (const stream of [false, true]) {
      const r = await ask(stack, { stream });
      expect([429, 503]).toContain(r.status);
      expect(Number(r.headers.get('retry-after'))).toBeGreaterThan(0);
    }
  });

  it('all upstreams cooling (Retry-After not yet expired): answered at once with 429 + the shortest Retry-After, no upstream call', async () => {
    stack = await startStack([{ faults: { rate_limit_rate: 1, retry_after_sec: 7 } }, { faults: { rate_limit_rate: 1, retry_after_sec: 9 } }]);
    expect((await ask(stack)).status).toBe(429);
    const calls = (stack as Stack).emus.map((e) => e.log.all().length);
    const r = await ask(stack);
    expect(r.status).toBe(429);
    const wait = Number(r.headers.get('retry-after'));
    expect(wait).toBeGreaterThan(0);
    expect(wait).toBeLessThanOrEqual(7);
    expect((stack as Stack).emus.map((e) => e.log.all().length)).toEqual(calls);
  });
});

describe('request-scoped 400s are not retried', () => {
  for (const [name, code] of [
    ['context-length', 'context_length_exceeded'],
    ['content-policy', 'content_filter'],
  ] as const) {
    it(`${name} 400 is passed through, not retried${name === 'context-length' ? ' on a route with no larger window' : ''}`, async () => {
      const refusing = await raw((sock) => sock.end(rawJson(400, { error: { message: `refused: ${code}`, type: 'invalid_request_error', param: 'messages', code } })));
      const backup = await emulator();
      stack = await startRawStack([
        { base_url: refusing.baseUrl, weight: 1000, context_length: 4096 },
        { base_url: backup.baseUrl, weight: 1, context_length: 4096 },
      ]);
      const r = await ask(stack);
      expect(r.status).toBe(400);
      expect(((await r.json()) as { error: { code: string } }).error.code).toBe(code);
      expect(backup.log.all()).toHaveLength(0);
    });
  }
});

describe('transport faults before the answer', () => {
  it("the gateway's own key rejected upstream: served by the other route, the rejecting one's breaker opens", async () => {
    stack = await startStack([{ weight: 1000, apiKey: 'right-key', routeKey: 'wrong-key' }, { weight: 1 }], { health: { failure_threshold: 1000, cooldown_sec: 60 } });
    const r = await ask(stack);
    expect(r.status).toBe(200);
    expect((await servedEndpoint(stack.gw, r))).toBe(stack.ids[1]);
    const h = stack.gw.core.health.snapshotOf(stack.ids[0]!, performance.now());
    expect(h.state).toBe('open');
  });

  it('connection refused: served by the other route', async () => {
    const backup = await emulator();
    stack = await startRawStack([
      { base_url: `http://127.0.0.1:${await closedPort()}/v1`, weight: 1000 },
      { base_url: backup.baseUrl, weight: 1 },
    ]);
    for (const stream of [false, true]) {
      const r = await ask(stack, { stream });
      expect(r.status).toBe(200);
      expect((await servedEndpoint(stack.gw, r))).toBe(stack.ids[1]);
      await r.text();
    }
  });

  it('every route shut by its breaker: 503 all_circuits_open with Retry-After until the cooldown ends; /health/deep says unavailable', async () => {
    stack = await startRawStack([{ base_url: `http://127.0.0.1:${await closedPort()}/v1` }], { health: { failure_threshold: 1, cooldown_sec: 30 } });
    const first = await ask(stack);
    expect(first.status).toBe(502); // refused: the breaker opens
    await first.text();
    const r = await ask(stack);
    expect(r.status).toBe(503);
    expect(((await r.json()) as { error: { code: string } }).error.code).toBe('all_circuits_open');
    const wait = Number(r.headers.get('retry-after'));
    expect(wait).toBeGreaterThanOrEqual(29);
    expect(wait).toBeLessThanOrEqual(30);
    const deep = await fetch(`${stack.gw.url}/health/deep`, { headers: { authorization: `Bearer ${KEYS.admin}` } });
    expect(await deep.json()).toMatchObject({ status: 'unavailable', models_unavailable: ['demo'] });
  });

  it('reset before headers: served by the other route', async () => {
    stack = await startStack([{ weight: 1000, faults: { reset_rate: 1 } }, { weight: 1 }]);
    const r = await ask(stack, { stream: true });
    expect(r.status).toBe(200);
    expect((await servedEndpoint(stack.gw, r))).toBe(stack.ids[1]);
    expect(sseData(await r.text()).at(-1)).toBe('[DONE]');
  });

  it('silent upstream: the headers deadline fires and the request fails over after the first timeout (the silent route is not retried)', async () => {
    let calls = 0;
    const silent = await raw(() => void calls++);
    const backup = await emulator();
    stack = await startRawStack(
      [
        { base_url: silent.baseUrl, weight: 1000 },
        { base_url: backup.baseUrl, weight: 1 },
      ],
      { upstream: { headers_timeout_ms: 300 } },
    );
    const r = await ask(stack);
    expect(r.status).toBe(200);
    expect((await servedEndpoint(stack.gw, r))).toBe(stack.ids[1]);
    expect(calls).toBe(1);
  });

  it('silent stream after its headers: the core first-token deadline fires and fails over (not the 60 s body timeout)', async () => {
    let calls = 0;
    const silent = await raw((sock) => {
      calls++;
      sock.write(RAW_SSE_HEAD); // 200 and SSE headers, then nothing: the connection stays open
    });
    const backup = await emulator();
    stack = await startRawStack(
      [
        { base_url: silent.baseUrl, weight: 1000 },
        { base_url: backup.baseUrl, weight: 1 },
      ],
      { upstream: { body_timeout_ms: 60_000 }, routing_settings: { affinity_enabled: false, prefill_aware_enabled: false, timeout_first_token_sec: 0.3 } },
    );
    const t0 = performance.now();
    const r = await ask(stack, { stream: true });
    expect(r.status).toBe(200);
    expect((await servedEndpoint(stack.gw, r))).toBe(stack.ids[1]);
    expect(sseData(await r.text()).at(-1)).toBe('[DONE]');
    expect(calls).toBe(1);
    expect(performance.now() - t0).toBeLessThan(30_000); // a bound, not a speed claim
  });

  it('slow first token: answered in full, no premature timeout', async () => {
    stack = await startStack([{ faults: { first_token_stall_ms: 400 } }]);
    const r = await ask(stack, { stream: true, max_tokens: 4 });
    const frames = sseData(await r.text());
    expect(frames.at(-1)).toBe('[DONE]');
    const text = frames
      .slice(0, -1)
      .map((f) => (JSON.parse(f) as { choices: Array<{ delta: { content?: string } }> }).choices[0]?.delta.content ?? '')
      .join('');
    expect(text).toBe('The quick brown fox');
  });
});

describe('faults inside a committed stream: an in-band error, never a truncated success', () => {
  const inBandError = (frames: string[]) => {
    expect(frames).not.toContain('[DONE]');
    expect(JSON.parse(frames.at(-1)!)).toMatchObject({ error: { code: expect.any(String) } });
  };

  it('stream cut mid-answer', async () => {
    stack = await startStack([{ faults: { disconnect_after_tokens: 2 } }]);
    const r = await ask(stack, { stream: true, max_tokens: 6 });
    expect(r.status).toBe(200);
    const frames = sseData(await r.text());
    inBandError(frames);
    expect(JSON.parse(frames.at(-1)!).error).toMatchObject({ code: 'upstream_stream_interrupted', message: expect.stringContaining('disconnected mid-stream (2 content chunks were already sent)') });
  });

  it('stream stall past the body deadline', async () => {
    stack = await startStack([{ faults: { stall_after_tokens: 2, stall_ms: 10_000 } }], { upstream: { body_timeout_ms: 300 } });
    const r = await ask(stack, { stream: true, max_tokens: 6 });
    expect(r.status).toBe(200);
    const frames = sseData(await r.text());
    inBandError(frames);
    expect(JSON.parse(frames.at(-1)!).error).toMatchObject({ code: 'upstream_timeout', message: expect.stringContaining('stopped sending mid-stream (2 content chunks were already sent)') });
  });

  it('an invalid JSON event', async () => {
    const bad = await raw((sock) => sock.end(RAW_SSE_HEAD + rawChunk(chatFrame({ role: 'assistant', content: 'Hi' })) + rawChunk('data: {"choices": [oops\n\n') + '0\r\n\r\n'));
    stack = await startRawStack([{ base_url: bad.baseUrl }]);
    const r = await ask(stack, { stream: true });
    expect(r.status).toBe(200);
    inBandError(sseData(await r.text()));
  });
});

describe('streams that never say [DONE]', () => {
  const finishAndUsage = chatFrame({}, 'stop') + `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 0, model: 'up', choices: [], usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 } })}\n\n`;

  it('finish reason and usage, connection held open: finalised at once with [DONE]', async () => {
    const lenient = await raw((sock) => sock.write(RAW_SSE_HEAD + rawChunk(chatFrame({ role: 'assistant', content: 'Hi' })) + rawChunk(finishAndUsage))); // never ends
    stack = await startRawStack([{ base_url: lenient.baseUrl }], { upstream: { body_timeout_ms: 60_000 } });
    const t0 = performance.now();
    const r = await ask(stack, { stream: true });
    const frames = sseData(await r.text());
    expect(frames.at(-1)).toBe('[DONE]');
    // Not waiting for the 60 s body timeout (a bound, not a speed claim).
    expect(performance.now() - t0).toBeLessThan(30_000);
  });

  it('finish reason, then the connection closes: a whole answer with [DONE]', async () => {
    const lenient = await raw((sock) => sock.end(RAW_SSE_HEAD + rawChunk(chatFrame({ role: 'assistant', content: 'Hi' }) + chatFrame({}, 'stop')) + '0\r\n\r\n'));
    stack = await startRawStack([{ base_url: lenient.baseUrl }]);
    const frames = sseData(await (await ask(stack, { stream: true })).text());
    expect(frames.at(-1)).toBe('[DONE]');
  });
});

describe('health', () => {
  it('flapping primary: the breaker opens, the fallback serves, a probe after the cooldown brings it back within one request', async () => {
    stack = await startStack([{ weight: 1000, faults: { error_rate: 1 } }, { weight: 1 }], { health: { failure_threshold: 2, cooldown_sec: 1 } });
    const [primary, backup] = [(stack as Stack).emus[0]!, (stack as Stack).emus[1]!];
    for (let i = 0; i < 6; i++) {
      const r = await ask(stack);
      expect(r.status).toBe(200);
      expect((await servedEndpoint(stack.gw, r))).toBe(stack.ids[1]);
    }
    expect(stack.gw.core.health.snapshotOf(stack.ids[0]!, performance.now()).state).toBe('open');
    const triedWhileFailing = primary.log.all().length;
    expect(triedWhileFailing).toBeLessThanOrEqual(3); // threshold 2, then open: no more attempts
    primary.setFaults({ error_rate: 0 });
    await new Promise((r) => setTimeout(r, 1_100)); // the cooldown
    const first = await ask(stack); // the half-open probe
    expect(first.status).toBe(200);
    const second = await ask(stack);
    expect([(await servedEndpoint(stack.gw, first)), (await servedEndpoint(stack.gw, second))]).toContain(stack.ids[0]);
    expect((await servedEndpoint(stack.gw, second))).toBe(stack.ids[0]);
    expect(backup.log.all().length).toBeGreaterThanOrEqual(6);
  });

  it('one hung upstream does not slow requests to a healthy one', async () => {
    // demo → upstream 1 (hung, weight 1000); `other` → upstream 0 (healthy).
    stack = await startStack([{ weight: 1 }, { weight: 1000, faults: { first_token_stall_ms: 20_000 } }]);
    const s = stack;
    const hung = Array.from({ length: 20 }, () =>
      s.post('/v1/chat/completions', { model: 'demo', messages: hello, max_tokens: 2 }, { authorization: `Bearer ${KEYS.admin}`, 'x-route-pin': s.ids[1]! }).catch(() => null),
    );
    while (s.gw.inFlight() < 20) await new Promise((r) => setTimeout(r, 10));
    for (let i = 0; i < 10; i++) {
      const r = await s.post('/v1/chat/completions', { model: 'other', messages: hello, max_tokens: 2 }, { authorization: `Bearer ${KEYS.other}` });
      expect(r.status).toBe(200);
    }
    // All ten were answered while the twenty hung requests were still waiting.
    expect(s.gw.inFlight()).toBe(20);
    await s.close(); // cuts the hung ones
    stack = null;
    await Promise.all(hung);
  });

  it('a client abort releases the in-flight slot, the dispatch claim and the engine place', async () => {
    stack = await startStack([{ faults: { latency_scale: 1 } }]);
    const ac = new AbortController();
    const res = await fetch(`${stack.gw.url}/v1/chat/completions`, {
      method: 'POST',
      signal: ac.signal,
      headers: { authorization: `Bearer ${KEYS.user}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'demo', messages: hello, max_tokens: 400, stream: true }),
    });
    const reader = res.body!.getReader();
    await reader.read(); // the first bytes: committed
    expect(stack.gw.inFlight()).toBeGreaterThanOrEqual(1);
    ac.abort();
    await reader.cancel().catch(() => undefined);
    await settle(stack.gw);
    const until = Date.now() + 5_000;
    while ((stack as Stack).emus[0]!.inEngine() > 0 && Date.now() < until) await new Promise((x) => setTimeout(x, 10));
    expect((stack as Stack).emus[0]!.inEngine()).toBe(0);
    // checkCounters (afterEach) asserts claims, slots and holds are back to zero.
  });
});
