// The engine emulator: echo mode answers at once; engine mode streams one chunk per token at
// the step model's pace (scaled), caches prefixes, refuses what cannot fit; every fault knob
// does what it says; the log records requests and clients that went away.
import { afterEach, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator } from '../../simulator/emulator/emulator.ts';
import { loadStepTimeProfile } from '../../simulator/engine/step-time.ts';
import { planFaults, FaultKnobsSchema } from '../../simulator/emulator/faults.ts';
import { deriveRng } from '../../core/index.ts';

let em: RunningEmulator | null = null;
afterEach(async () => {
  await em?.close();
  em = null;
});

const chat = (over: Record<string, unknown> = {}) => ({ model: 'm', messages: [{ role: 'user', content: 'hello' }], ...over });

async function post(e: RunningEmulator, body: unknown, path = '/chat/completions', headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${e.baseUrl}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
}

/** Reads an SSE response, timestamping each data payload. */
async function timedEvents(res: Response): Promise<Array<{ atMs: number; data: string }>> {
  const out: Array<{ atMs: number; data: string }> = [];
  const reader = res.body!.getReader();
  const dec = new TextDecoder();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += dec.decode(value, { stream: true });
    let i: number;
    while ((i = buf.indexOf('\n\n')) >= 0) {
      out.push({ atMs: performance.now(), data: buf.slice(0, i).replace(/^data: /, '') });
      buf = buf.slice(i + 2);
    }
  }
  return out;
}

describe('echo mode', () => {
  it('answers a fixed tiny reply at once, streamed or not', async () => {
    em = await startEmulator({ mode: 'echo' });
    const t0 = performance.now();
    const r = await (await post(em, chat())).json();
    expect(r.choices[0].message.content).toBe('ok');
    expect(r.usage.completion_tokens).toBe(1);
    const events = await timedEvents(await post(em, chat({ stream: true, stream_options: { include_usage: true } })));
    expect(events.map((e) => e.data).at(-1)).toBe('[DONE]');
    expect(events).toHaveLength(5); // role, content, finish, usage, [DONE]
    expect(performance.now() - t0).toBeLessThan(1_000);
  });
});

describe('request checks', () => {
  it('refuses a max_tokens below 1 or not an integer with a 400 naming the field, as OpenAI does', async () => {
    em = await startEmulator({ mode: 'echo' });
    const below = await post(em, chat({ max_tokens: -5 }));
    expect(below.status).toBe(400);
    expect((await below.json()).error).toEqual({
      message: "Invalid 'max_tokens': integer below minimum value. Expected a value >= 1, but got -5 instead.",
      type: 'invalid_request_error',
      param: 'max_tokens',
      code: 'integer_below_min_value',
    });
    const zero = await post(em, chat({ max_completion_tokens: 0, stream: true }));
    expect(zero.status).toBe(400);
    expect((await zero.json()).error).toMatchObject({ param: 'max_completion_tokens', code: 'integer_below_min_value' });
    for (const [v, got] of [[2.5, 'a decimal number'], ['10', 'a string']] as const) {
      const res = await post(em, chat({ max_tokens: v }));
      expect(res.status).toBe(400);
      expect((await res.json()).error).toMatchObject({ param: 'max_tokens', code: 'invalid_type', message: `Invalid type for 'max_tokens': expected an integer, but got ${got} instead.` });
    }
    // null and absent are fine, and so is 1.
    for (const over of [{ max_tokens: null }, {}, { max_tokens: 1 }]) expect((await post(em, chat(over))).status).toBe(200);
    expect(em.log.all().filter((r) => r.outcome === 'bad_request')).toHaveLength(4);
  });
});

describe('engine mode', () => {
  it('streams one chunk per token at the modelled step time', async () => {
    const scale = 0.5;
    em = await startEmulator({ faults: { latency_scale: scale } });
    const { model } = loadStepTimeProfile('llama2-70b-h100-tp4');
    const t0 = performance.now();
    const events = await timedEvents(await post(em, chat({ stream: true, max_tokens: 20 })));
    const tokens = events.filter((e) => e.data.includes('"content":"') && !e.data.includes('"content":""'));
    expect(tokens).toHaveLength(20);
    // One decode sequence with a ~20-token context: the profile's step time, scaled.
    const stepMs = model.stepMs({ prefillTokens: 0, prefillSeqs: 0, prefillAttnPairs: 0, decodeSeqs: 1, decodeContextTokens: 20 }) * scale;
    const gaps = tokens.slice(1).map((t, i) => t.atMs - tokens[i]!.atMs).sort((a, b) => a - b);
    const median = gaps[Math.floor(gaps.length / 2)]!;
    expect(median).toBeGreaterThan(stepMs * 0.7);
    expect(median).toBeLessThan(stepMs * 3 + 5);
    expect(tokens[0]!.atMs - t0).toBeGreaterThan(stepMs * 0.7); // prefill takes at least a step
    expect(events.at(-1)!.data).toBe('[DONE]');
  });

  it('batches concurrent requests and serves a repeated prefix from the cache', async () => {
    em = await startEmulator({ faults: { latency_scale: 0.02 } });
    const long = 'lorem ipsum dolor sit amet '.repeat(200);
    const first = await (await post(em, chat({ messages: [{ role: 'user', content: long }], max_tokens: 2 }))).json();
    expect(first.usage.prompt_tokens_details.cached_tokens).toBe(0);
    const again = await (await post(em, chat({ messages: [{ role: 'user', content: long }, { role: 'user', content: 'and more' }], max_tokens: 2 }))).json();
    expect(again.usage.prompt_tokens_details.cached_tokens).toBeGreaterThan(1_000);
    const many = await Promise.all(Array.from({ length: 8 }, () => post(em!, chat({ max_tokens: 5 })).then((r) => r.json())));
    expect(many.every((r) => r.choices[0].message.content === 'The quick brown fox jumps')).toBe(true);
  });

  it('refuses a prompt that cannot fit in the KV cache with a context-length 400', async () => {
    em = await startEmulator({ engine: { kv_blocks: 4 }, faults: { latency_scale: 0.02 } });
    const res = await post(em, chat({ messages: [{ role: 'user', content: 'x'.repeat(1_000) }] }));
    expect(res.status).toBe(400);
    expect((await res.json()).error.code).toBe('context_length_exceeded');
  });

  it('answers a forced tool call with a streamed function call', async () => {
    em = await startEmulator({ faults: { latency_scale: 0.02 } });
    const tools = [{ type: 'function', function: { name: 'search', parameters: {} } }];
    const r = await (await post(em, chat({ tools, tool_choice: { type: 'function', function: { name: 'search' } }, max_tokens: 4 }))).json();
    expect(r.choices[0].finish_reason).toBe('tool_calls');
    expect(JSON.parse(r.choices[0].message.tool_calls[0].function.arguments)).toEqual({ query: 'The quick' });
    const auto = await (await post(em, chat({ tools, max_tokens: 2 }))).json();
    expect(auto.choices[0].message.content).toBe('The quick');
  });
});

describe('fault knobs', () => {
  it('error status, 429 with Retry-After, reset', async () => {
    em = await startEmulator({ mode: 'echo', faults: { error_rate: 1, error_status: 503 } });
    expect((await post(em, chat())).status).toBe(503);
    em.setFaults({ error_rate: 0, rate_limit_rate: 1, retry_after_sec: 3 });
    const limited = await post(em, chat());
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('3');
    em.setFaults({ rate_limit_rate: 0, reset_rate: 1 });
    await expect(post(em, chat())).rejects.toThrow();
    expect(em.log.all().map((r) => r.outcome)).toEqual(['error', 'rate_limited', 'reset']);
  });

  it('stall before the first token', async () => {
    em = await startEmulator({ mode: 'echo', faults: { first_token_stall_ms: 150 } });
    const t0 = performance.now();
    await (await post(em, chat())).json();
    expect(performance.now() - t0).toBeGreaterThanOrEqual(140);
  });

  it('stall, disconnect and in-band error mid-stream', async () => {
    em = await startEmulator({ faults: { latency_scale: 0.02, stall_after_tokens: 2, stall_ms: 150 } });
    const stalled = await timedEvents(await post(em, chat({ stream: true, max_tokens: 4 })));
    const contents = stalled.filter((e) => /"content":"[^"]/.test(e.data));
    expect(contents[2]!.atMs - contents[1]!.atMs).toBeGreaterThanOrEqual(140);

    em.setFaults({ stall_after_tokens: null, disconnect_after_tokens: 2 });
    const cut = await post(em, chat({ stream: true, max_tokens: 6 }));
    await expect(cut.text()).rejects.toThrow();
    expect(em.log.all().at(-1)).toMatchObject({ outcome: 'disconnected', tokensSent: 2 });

    em.setFaults({ disconnect_after_tokens: null, error_after_tokens: 1 });
    const events = await timedEvents(await post(em, chat({ stream: true, max_tokens: 6 })));
    expect(JSON.parse(events.at(-1)!.data).error.message).toMatch(/mid-stream/);
    expect(events.map((e) => e.data)).not.toContain('[DONE]');
  });

  it('knobs change over HTTP and bad knobs are refused', async () => {
    em = await startEmulator({ mode: 'echo' });
    const put = (body: unknown) => fetch(`http://${em!.host}:${em!.port}/emulator/faults`, { method: 'PUT', body: JSON.stringify(body) });
    expect((await (await put({ error_rate: 0.5 })).json()).error_rate).toBe(0.5);
    const bad = await put({ error_rate: 2 });
    expect(bad.status).toBe(400);
    expect((await bad.json()).error.message).toMatch(/error_rate/);
    expect(() => em!.setFaults({ nope: 1 } as never)).toThrow(/nope|Unrecognized/i);
  });

  it('draws reproducibly from its seed, four draws per request', () => {
    const knobs = FaultKnobsSchema.parse({ error_rate: 0.3, reset_rate: 0.1 });
    const run = () => {
      const rng = deriveRng(9, 'emulator/faults');
      return Array.from({ length: 200 }, () => planFaults(knobs, rng).kind);
    };
    expect(run()).toEqual(run());
    const kinds = run();
    expect(kinds.filter((k) => k === 'reset').length / 200).toBeCloseTo(0.1, 1);
  });
});

describe('request log', () => {
  it('records bodies, keys and when the client went away', async () => {
    em = await startEmulator({ apiKey: 'sk-up', faults: { latency_scale: 1 } });
    expect((await post(em, chat())).status).toBe(401);
    const ac = new AbortController();
    const res = await fetch(`${em.baseUrl}/chat/completions`, {
      method: 'POST',
      headers: { authorization: 'Bearer sk-up', 'x-request-id': 'r-1' },
      body: JSON.stringify(chat({ stream: true, max_tokens: 500 })),
      signal: ac.signal,
    });
    await res.body!.getReader().read();
    const leftAt = performance.now();
    ac.abort();
    const rec = await em.log.waitFor((r) => r.requestId === 'r-1' && r.outcome !== null);
    expect(rec.outcome).toBe('client_gone');
    expect(rec.endedAtMs! - leftAt).toBeLessThan(100);
    expect(rec.authorization).toBe('Bearer sk-up');
    expect(em.log.all()[0]!.outcome).toBe('unauthorized');
    await new Promise((r) => setTimeout(r, 20));
    expect(em.inEngine()).toBe(0);
  });
});
