// The emulator speaks Anthropic's Messages API well enough for the official SDK: whole and
// streamed messages with usage, forced tool use, thinking, token counting, its key header, its
// error envelope and status types (529 included), in-band stream errors; and vLLM's /tokenize.
import Anthropic from '@anthropic-ai/sdk';
import { afterEach, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator } from '../../simulator/emulator/emulator.ts';

let em: RunningEmulator | null = null;
afterEach(async () => {
  await em?.close();
  em = null;
});

const KEY = 'sk-ant-emu';
const user = (content: string) => [{ role: 'user' as const, content }];

function client(e: RunningEmulator, apiKey = KEY): Anthropic {
  return new Anthropic({ apiKey, baseURL: `http://${e.host}:${e.port}`, maxRetries: 0 });
}

/** The named events of an Anthropic stream, in order, with their parsed data. */
async function events(res: Response): Promise<Array<{ event: string; data: any }>> {
  const text = await res.text();
  return text
    .split('\n\n')
    .filter((f) => f.length > 0)
    .map((f) => {
      const [ev, data] = f.split('\n');
      return { event: ev!.replace(/^event: /, ''), data: JSON.parse(data!.replace(/^data: /, '')) };
    });
}

function postMessages(e: RunningEmulator, body: unknown, headers: Record<string, string> = { 'x-api-key': KEY }): Promise<Response> {
  return fetch(`http://${e.host}:${e.port}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
}

describe('POST /v1/messages', () => {
  it('answers a whole message with usage that leaves prefix-cache hits out of input_tokens', async () => {
    em = await startEmulator({ apiKey: KEY, faults: { latency_scale: 0.02 } });
    const c = client(em);
    const long = 'lorem ipsum dolor sit amet '.repeat(200);
    const first = await c.messages.create({ model: 'claude-emu', max_tokens: 3, system: 'be brief', messages: user(long) });
    expect(first).toMatchObject({ type: 'message', role: 'assistant', model: 'claude-emu', content: [{ type: 'text', text: 'The quick brown' }], stop_reason: 'max_tokens', stop_sequence: null });
    expect(first.id).toMatch(/^msg_emu_\d+$/);
    const prompt = Math.ceil(JSON.stringify({ system: 'be brief', messages: user(long) }).length / 4);
    expect(first.usage).toMatchObject({ input_tokens: prompt, output_tokens: 3, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 });
    const again = await c.messages.create({ model: 'claude-emu', max_tokens: 3, system: 'be brief', messages: [...user(long), { role: 'assistant', content: 'ok' }, { role: 'user', content: 'more' }] });
    expect(again.usage.cache_read_input_tokens).toBeGreaterThan(1_000);
    const againPrompt = Math.ceil(JSON.stringify({ system: 'be brief', messages: [...user(long), { role: 'assistant', content: 'ok' }, { role: 'user', content: 'more' }] }).length / 4);
    expect(again.usage.input_tokens + again.usage.cache_read_input_tokens!).toBe(againPrompt);
    // This SDK sends its key as a bearer token; curl-style callers send x-api-key.
    const rec = em.log.all().at(-1)!;
    expect(rec.path).toBe('/v1/messages');
    expect(rec.authorization).toBe(`Bearer ${KEY}`);
    expect(rec.headers?.['anthropic-version']).toMatch(/^\d{4}-\d\d-\d\d$/);
    await postMessages(em, { model: 'm', max_tokens: 1, messages: user('x') }, { 'x-api-key': KEY, 'anthropic-version': '2023-06-01', 'anthropic-beta': 'b1' });
    expect(em.log.all().at(-1)).toMatchObject({ status: 200, headers: { 'x-api-key': KEY, 'anthropic-version': '2023-06-01', 'anthropic-beta': 'b1' } });
    const rows = await (await fetch(`http://${em.host}:${em.port}/emulator/records`)).json();
    expect(JSON.stringify(rows)).not.toContain(KEY);
  });

  it('streams the Messages event grammar, one text delta per token', async () => {
    em = await startEmulator({ faults: { latency_scale: 0.02 } });
    const evs = await events(await postMessages(em, { model: 'm', max_tokens: 4, stream: true, messages: user('hi') }, {}));
    expect(evs.map((e) => e.event)).toEqual([
      'message_start',
      'content_block_start',
      'ping',
      'content_block_delta',
      'content_block_delta',
      'content_block_delta',
      'content_block_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    expect(evs[0]!.data.message).toMatchObject({ type: 'message', role: 'assistant', content: [], stop_reason: null, usage: { output_tokens: 1 } });
    expect(evs[1]!.data).toEqual({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } });
    expect(evs[3]!.data).toEqual({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'The' } });
    expect(evs[8]!.data).toEqual({ type: 'message_delta', delta: { stop_reason: 'max_tokens', stop_sequence: null }, usage: { output_tokens: 4 } });
  });

  it('the SDK streams a text message and its final usage', async () => {
    em = await startEmulator({ apiKey: KEY, faults: { latency_scale: 0.02 } });
    const stream = client(em).messages.stream({ model: 'm', max_tokens: 5, messages: user('hello') });
    let streamed = '';
    stream.on('text', (t) => (streamed += t));
    const msg = await stream.finalMessage();
    expect(streamed).toBe('The quick brown fox jumps');
    expect(msg.content).toEqual([{ type: 'text', text: 'The quick brown fox jumps' }]);
    expect(msg.stop_reason).toBe('max_tokens');
    expect(msg.usage).toMatchObject({ input_tokens: Math.ceil(JSON.stringify({ messages: user('hello') }).length / 4), output_tokens: 5, cache_read_input_tokens: 0 });
    // In echo mode the reply is one token whatever max_tokens says.
    await em.close();
    em = await startEmulator({ mode: 'echo', echoText: 'pong' });
    const echoed = await client(em).messages.create({ model: 'm', max_tokens: 100, messages: user('ping') });
    expect(echoed).toMatchObject({ content: [{ type: 'text', text: 'pong' }], stop_reason: 'end_turn', usage: { output_tokens: 1 } });
  });

  it('a forced tool choice streams a tool_use block the SDK parses', async () => {
    em = await startEmulator({ faults: { latency_scale: 0.02 } });
    const c = client(em);
    const tools = [{ name: 'search', description: 'web search', input_schema: { type: 'object' as const, properties: { query: { type: 'string' } } } }];
    const msg = await c.messages.stream({ model: 'm', max_tokens: 4, tools, tool_choice: { type: 'any' }, messages: user('find') }).finalMessage();
    expect(msg.stop_reason).toBe('tool_use');
    expect(msg.content).toHaveLength(1);
    expect(msg.content[0]).toMatchObject({ type: 'tool_use', name: 'search', input: { query: 'The quick' } });
    expect((msg.content[0] as { id: string }).id).toMatch(/^toolu_emu_\d+$/);
    const named = await c.messages.create({ model: 'm', max_tokens: 3, tools, tool_choice: { type: 'tool', name: 'search' }, messages: user('find') });
    expect(named.content[0]).toMatchObject({ type: 'tool_use', name: 'search', input: { query: 'The' } });
    const auto = await c.messages.create({ model: 'm', max_tokens: 2, tools, messages: user('find') });
    expect(auto.content).toEqual([{ type: 'text', text: 'The quick' }]);
  });

  it('thinking comes first as its own block with a signature; the answer is block 1', async () => {
    em = await startEmulator({ faults: { latency_scale: 0.02 } });
    const c = client(em);
    const params = { model: 'm', max_tokens: 2, thinking: { type: 'enabled' as const, budget_tokens: 1024 }, messages: user('think') };
    const msg = await c.messages.stream(params).finalMessage();
    expect(msg.content).toHaveLength(2);
    expect(msg.content[0]).toMatchObject({ type: 'thinking' });
    expect((msg.content[0] as { thinking: string }).thinking.length).toBeGreaterThan(0);
    expect((msg.content[0] as { signature: string }).signature.length).toBeGreaterThan(0);
    expect(msg.content[1]).toEqual({ type: 'text', text: 'The quick' });
    const whole = await c.messages.create(params);
    expect(whole.content.map((b) => b.type)).toEqual(['thinking', 'text']);
  });

  it('checks the key and the body in Anthropic’s error envelope', async () => {
    em = await startEmulator({ apiKey: KEY, mode: 'echo' });
    await expect(client(em, 'sk-wrong').messages.create({ model: 'm', max_tokens: 1, messages: user('x') })).rejects.toBeInstanceOf(Anthropic.AuthenticationError);
    const bad = await postMessages(em, { model: 'm', max_tokens: 1, messages: user('x') }, { 'x-api-key': 'nope' });
    expect(bad.status).toBe(401);
    expect(await bad.json()).toEqual({ type: 'error', error: { type: 'authentication_error', message: 'invalid x-api-key' } });
    expect((await postMessages(em, { model: 'm', max_tokens: 1, messages: user('x') }, { authorization: `Bearer ${KEY}` })).status).toBe(200);
    for (const body of [{ model: 'm', messages: user('x') }, { model: 'm', max_tokens: 0, messages: user('x') }, { model: 'm', max_tokens: 1.5, messages: user('x') }, { model: 'm', max_tokens: 1, messages: [] }, { model: 'm', max_tokens: 1 }]) {
      const res = await postMessages(em, body);
      expect(res.status).toBe(400);
      expect((await res.json()).error.type).toBe('invalid_request_error');
    }
    await expect(client(em).messages.create({ model: 'm', max_tokens: 0, messages: user('x') })).rejects.toBeInstanceOf(Anthropic.BadRequestError);
  });
});

describe('engine refusals in Anthropic’s shapes', () => {
  it('a prompt that cannot fit in the KV cache is a 400 invalid_request_error', async () => {
    em = await startEmulator({ engine: { kv_blocks: 4 }, faults: { latency_scale: 0.02 } });
    const res = await postMessages(em, { model: 'm', max_tokens: 8, messages: user('x'.repeat(1_000)) }, {});
    expect(res.status).toBe(400);
    expect((await res.json()).error).toMatchObject({ type: 'invalid_request_error', message: expect.stringMatching(/context length/) });
  });
});

describe('faults in Anthropic’s shapes', () => {
  it('error status with its type (529 overloaded), 429 with retry-after, reset', async () => {
    em = await startEmulator({ mode: 'echo', faults: { error_rate: 1, error_status: 529 } });
    const c = client(em);
    const err = await c.messages.create({ model: 'm', max_tokens: 1, messages: user('x') }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Anthropic.APIError);
    expect((err as InstanceType<typeof Anthropic.APIError>).status).toBe(529);
    expect((err as InstanceType<typeof Anthropic.APIError>).error).toMatchObject({ type: 'error', error: { type: 'overloaded_error' } });
    for (const [status, type] of [[400, 'invalid_request_error'], [403, 'permission_error'], [404, 'not_found_error'], [500, 'api_error'], [503, 'api_error']] as const) {
      em.setFaults({ error_status: status });
      const res = await postMessages(em, { model: 'm', max_tokens: 1, messages: user('x') });
      expect(res.status).toBe(status);
      expect((await res.json()).error.type).toBe(type);
    }
    em.setFaults({ error_rate: 0, rate_limit_rate: 1, retry_after_sec: 7 });
    const limited = await c.messages.create({ model: 'm', max_tokens: 1, messages: user('x') }).catch((e: unknown) => e);
    expect(limited).toBeInstanceOf(Anthropic.RateLimitError);
    expect((limited as InstanceType<typeof Anthropic.RateLimitError>).headers.get('retry-after')).toBe('7');
    em.setFaults({ rate_limit_rate: 0, reset_rate: 1 });
    await expect(c.messages.create({ model: 'm', max_tokens: 1, messages: user('x') })).rejects.toBeInstanceOf(Anthropic.APIConnectionError);
    expect(em.log.all().at(-1)!.outcome).toBe('reset');
  });

  it('a mid-stream error is an `error` event the SDK raises; stall and disconnect as for chat', async () => {
    em = await startEmulator({ faults: { latency_scale: 0.02, error_after_tokens: 2 } });
    const evs = await events(await postMessages(em, { model: 'm', max_tokens: 6, stream: true, messages: user('x') }, {}));
    expect(evs.at(-1)).toEqual({ event: 'error', data: { type: 'error', error: { type: 'overloaded_error', message: 'emulated mid-stream error' } } });
    expect(evs.filter((e) => e.event === 'content_block_delta')).toHaveLength(2);
    const err = await client(em).messages.stream({ model: 'm', max_tokens: 6, messages: user('x') }).finalMessage().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Anthropic.APIError);
    expect((err as InstanceType<typeof Anthropic.APIError>).error).toMatchObject({ error: { type: 'overloaded_error' } });
    const whole = await postMessages(em, { model: 'm', max_tokens: 6, messages: user('x') }, {});
    expect(whole.status).toBe(529);

    em.setFaults({ error_after_tokens: null, disconnect_after_tokens: 1 });
    await expect(client(em).messages.stream({ model: 'm', max_tokens: 6, messages: user('x') }).finalMessage()).rejects.toThrow();
    expect(em.log.all().at(-1)).toMatchObject({ outcome: 'disconnected', tokensSent: 1 });

    em.setFaults({ disconnect_after_tokens: null, stall_after_tokens: 1, stall_ms: 150 });
    const t0 = performance.now();
    const msg = await client(em).messages.stream({ model: 'm', max_tokens: 3, messages: user('x') }).finalMessage();
    expect(performance.now() - t0).toBeGreaterThanOrEqual(140);
    expect(msg.content).toEqual([{ type: 'text', text: 'The quick brown' }]);
  });
});

describe('POST /v1/messages/count_tokens', () => {
  it('counts the prompt of {system, messages, tools} at 4 bytes a token, behind the same key', async () => {
    em = await startEmulator({ apiKey: KEY, mode: 'echo' });
    const tools = [{ name: 'search', input_schema: { type: 'object' as const } }];
    const params = { model: 'm', system: 'sys', messages: user('count me, please'), tools };
    const r = await client(em).messages.countTokens(params);
    expect(r).toEqual({ input_tokens: Math.ceil(JSON.stringify({ system: 'sys', messages: params.messages, tools }).length / 4) });
    await expect(client(em, 'bad').messages.countTokens(params)).rejects.toBeInstanceOf(Anthropic.AuthenticationError);
    em.setFaults({ error_rate: 1, error_status: 529 });
    await expect(client(em).messages.countTokens(params)).rejects.toMatchObject({ status: 529 });
    expect(em.log.all().map((x) => x.outcome)).toEqual(['ok', 'unauthorized', 'error']);
  });
});

describe('POST /tokenize', () => {
  it('counts a prompt or chat messages, reports the window, needs one of them', async () => {
    em = await startEmulator({ apiKey: KEY, mode: 'echo' });
    const tok = (body: unknown) => fetch(`http://${em!.host}:${em!.port}/tokenize`, { method: 'POST', body: JSON.stringify(body) });
    const p = await (await tok({ model: 'm', prompt: 'hello world!' })).json();
    expect(p.count).toBe(3);
    expect(p.tokens).toHaveLength(3);
    expect(p.tokens.every((t: unknown) => Number.isInteger(t))).toBe(true);
    expect(p.max_model_len).toBe(32_768);
    const messages = [{ role: 'user', content: 'hi there' }];
    expect((await (await tok({ model: 'm', messages })).json()).count).toBe(Math.ceil(JSON.stringify(messages).length / 4));
    await em.close();
    em = await startEmulator({ engine: { engine: 'vllm', gpu: 'h100_sxm', model: 'llama-3.1-70b', tp: 4, max_model_len: 8_192 } });
    expect((await (await tok({ model: 'm', prompt: 'x' })).json()).max_model_len).toBe(8_192);
    const bad = await tok({ model: 'm' });
    expect(bad.status).toBe(400);
    expect((await bad.json()).error.type).toBe('invalid_request_error');
  });
});
