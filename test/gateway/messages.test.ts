// Anthropic's Messages API on a real gateway on loopback, called with the official
// @anthropic-ai/sdk: over a native Anthropic upstream (the emulator's /v1/messages) and over an
// OpenAI-compatible one (translated to chat completions), streaming and not, tools, count_tokens
// (upstream, the engine's tokenizer, and the gateway's estimate), an alias failing over from a
// broken target before the first token, a router model that does not fall back, a request in
// Claude Code's shape with the dropped fields named, and the gateway's own errors in Anthropic's
// envelope. The OpenAI client on the Anthropic route checks the translation the other way.
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashKey } from '../../gateway/callers.ts';
import { buildGatewayConfig } from '../../gateway/config/load.ts';
import { startGateway, type RunningGateway } from '../../gateway/gateway.ts';
import { startEmulator, type RunningEmulator } from '../../simulator/emulator/emulator.ts';

const KEY = 'sk-messages-test';
const UPSTREAM_KEY = 'sk-upstream-anthropic';

let gw: RunningGateway;
let native: RunningEmulator;
let local: RunningEmulator;
let broken: RunningEmulator;
let cutLocal: RunningEmulator;
let cutNative: RunningEmulator;
let anthropic: Anthropic;

beforeAll(async () => {
  [native, local, broken] = await Promise.all([
    startEmulator({ apiKey: UPSTREAM_KEY, faults: { latency_scale: 0.02 }, modelName: 'claude-upstream' }),
    startEmulator({ faults: { latency_scale: 0.02 } }),
    startEmulator({ faults: { error_rate: 1, error_status: 500 } }),
  ]);
  [cutLocal, cutNative] = await Promise.all([startEmulator({ faults: { latency_scale: 0.02, error_after_tokens: 2 } }), startEmulator({ faults: { latency_scale: 0.02, error_after_tokens: 2 } })]);
  const config = buildGatewayConfig({
    models: {
      models: [
        { id: 'claude', route: [{ kind: 'anthropic', base_url: native.baseUrl, api_key: UPSTREAM_KEY, provider_model_id: 'claude-upstream' }] },
        { id: 'local', route: [{ base_url: local.baseUrl, input_modalities: ['text', 'image'] }] },
        { id: 'local-count', route: [{ base_url: local.baseUrl, endpoints: ['chat', 'messages', 'count_tokens'] }] },
        { id: 'two-routes', route: [{ base_url: broken.baseUrl }, { base_url: local.baseUrl, weight: 0.000001 }] },
        { id: 'broken', route: [{ base_url: broken.baseUrl }] },
        { id: 'cut-local', route: [{ base_url: cutLocal.baseUrl }] },
        { id: 'cut-native', route: [{ kind: 'anthropic', base_url: cutNative.baseUrl }] },
        { id: 'count-group', routing: { targets: [{ model: 'local' }, { model: 'local-count' }] } },
        { id: 'no-count-group', routing: { targets: [{ model: 'local' }, { model: 'broken' }] } },
        { id: 'agents', routing: { targets: [{ model: 'broken' }, { model: 'local' }] } },
      ],
    },
    gateway: {
      routing_settings: { affinity_enabled: false, prefill_aware_enabled: false },
      health: { failure_threshold: 1000 },
      auth: { mode: 'keys', keys: [{ id: 'agent', sha256: hashKey(KEY) }] },
    },
  });
  gw = await startGateway({ config, host: '127.0.0.1', port: 0, seed: 3, logger: pino({ level: 'silent' }) });
  anthropic = new Anthropic({ apiKey: KEY, baseURL: gw.url, maxRetries: 0, timeout: 10_000 });
});

afterAll(async () => {
  await gw?.close();
  await Promise.all([native, local, broken, cutLocal, cutNative].map((e) => e?.close()));
});

const hello = [{ role: 'user' as const, content: 'Hello there' }];

describe('/v1/messages over a native Anthropic upstream', () => {
  it('messages.create: the upstream answer with the model named as asked, usage, and the forwarded headers', async () => {
    const msg = await anthropic.messages.create({ model: 'claude', max_tokens: 8, messages: hello }, { headers: { 'anthropic-beta': 'tools-2024-04-04' } });
    expect(msg.type).toBe('message');
    expect(msg.model).toBe('claude');
    expect(msg.content[0]!.type).toBe('text');
    expect(msg.usage.output_tokens).toBe(8);
    const rec = native.log.all().at(-1)!;
    expect((rec.body as { model: string }).model).toBe('claude-upstream');
    expect(rec.headers).toMatchObject({ 'x-api-key': UPSTREAM_KEY, 'anthropic-beta': 'tools-2024-04-04' });
    expect(rec.headers?.['anthropic-version']).toBeTruthy();
  });

  it('messages.stream: text and final usage; a forced tool call streams input_json_delta', async () => {
    const stream = anthropic.messages.stream({ model: 'claude', max_tokens: 6, messages: hello });
    let text = '';
    stream.on('text', (t) => (text += t));
    const final = await stream.finalMessage();
    expect(text.length).toBeGreaterThan(0);
    expect(final.usage.output_tokens).toBe(6);
    expect(final.model).toBe('claude');
    const tools = [{ name: 'search', description: 'search the web', input_schema: { type: 'object' as const, properties: { query: { type: 'string' } } } }];
    const toolMsg = await anthropic.messages.stream({ model: 'claude', max_tokens: 6, messages: hello, tools, tool_choice: { type: 'any' } }).finalMessage();
    const use = toolMsg.content.find((b) => b.type === 'tool_use');
    expect(use).toMatchObject({ type: 'tool_use', name: 'search' });
    expect(typeof (use as { input: { query: unknown } }).input.query).toBe('string');
    expect(toolMsg.stop_reason).toBe('tool_use');
  });

  it('count_tokens is the upstream count', async () => {
    const res = await fetch(`${gw.url}/v1/messages/count_tokens`, { method: 'POST', headers: { 'x-api-key': KEY, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'claude', messages: hello }) });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-switchyard-token-count')).toBe('upstream');
    const sdk = await anthropic.messages.countTokens({ model: 'claude', messages: hello });
    expect(sdk.input_tokens).toBeGreaterThan(0);
  });

  it('the OpenAI client on the Anthropic route: chat translated to Messages and back, stream and whole', async () => {
    const openai = new OpenAI({ apiKey: KEY, baseURL: `${gw.url}/v1`, maxRetries: 0 });
    const whole = await openai.chat.completions.create({ model: 'claude', max_tokens: 5, messages: [{ role: 'system', content: 'be brief' }, ...hello], frequency_penalty: 0.5 });
    expect(whole.choices[0]!.message.content!.length).toBeGreaterThan(0);
    expect(whole.usage!.completion_tokens).toBe(5);
    expect(whole.model).toBe('claude');
    const sent = native.log.all().at(-1)!.body as Record<string, unknown>;
    expect(sent).toMatchObject({ system: 'be brief', max_tokens: 5 });
    expect(sent.frequency_penalty).toBeUndefined();
    const raw = await openai.chat.completions.create({ model: 'claude', max_tokens: 5, messages: hello, frequency_penalty: 0.5 }).withResponse();
    expect(raw.response.headers.get('x-switchyard-dropped-params')).toBe('frequency_penalty');
    const chunks = await openai.chat.completions.create({ model: 'claude', max_tokens: 4, messages: hello, stream: true, stream_options: { include_usage: true } });
    let text = '';
    let usage: OpenAI.CompletionUsage | null | undefined = null;
    for await (const c of chunks) {
      text += c.choices[0]?.delta.content ?? '';
      if (c.usage) usage = c.usage;
    }
    expect(text.length).toBeGreaterThan(0);
    expect(usage!.completion_tokens).toBe(4);
    const hot = await openai.chat.completions.create({ model: 'claude', max_tokens: 5, messages: hello, temperature: 1.5 }).catch((e: unknown) => e);
    expect(hot).toBeInstanceOf(OpenAI.BadRequestError);
    expect((hot as InstanceType<typeof OpenAI.BadRequestError>).param).toBe('temperature');
  });
});

describe('/v1/messages over an OpenAI-compatible upstream (translated)', () => {
  it('messages.create and messages.stream give the same text', async () => {
    const msg = await anthropic.messages.create({ model: 'local', max_tokens: 5, system: 'be brief', messages: hello });
    expect(msg.model).toBe('local');
    expect(msg.stop_reason).toBe('max_tokens');
    expect(msg.usage.output_tokens).toBe(5);
    const sent = local.log.all().at(-1)!.body as { messages: Array<{ role: string; content: string }> };
    expect(sent.messages[0]).toEqual({ role: 'system', content: 'be brief' });
    const final = await anthropic.messages.stream({ model: 'local', max_tokens: 5, system: 'be brief', messages: hello }).finalMessage();
    expect(final.content).toEqual(msg.content);
    expect(final.usage.output_tokens).toBe(5);
    expect(final.stop_reason).toBe('max_tokens');
  });

  it('tools and tool results: a forced tool call comes back as tool_use, streamed and whole', async () => {
    const tools = [{ name: 'lookup', input_schema: { type: 'object' as const, properties: { query: { type: 'string' } } } }];
    const msg = await anthropic.messages.create({ model: 'local', max_tokens: 4, messages: hello, tools, tool_choice: { type: 'tool', name: 'lookup' } });
    const use = msg.content.find((b) => b.type === 'tool_use') as Anthropic.ToolUseBlock;
    expect(use.name).toBe('lookup');
    expect(msg.stop_reason).toBe('tool_use');
    const streamed = await anthropic.messages.stream({ model: 'local', max_tokens: 4, messages: hello, tools, tool_choice: { type: 'tool', name: 'lookup' } }).finalMessage();
    expect((streamed.content.find((b) => b.type === 'tool_use') as Anthropic.ToolUseBlock).input).toEqual(use.input);
    // The tool result goes back as a `tool` message.
    await anthropic.messages.create({
      model: 'local',
      max_tokens: 2,
      tools,
      messages: [...hello, { role: 'assistant', content: [use] }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: 'found it' }] }],
    });
    const sent = local.log.all().at(-1)!.body as { messages: Array<Record<string, unknown>> };
    expect(sent.messages.at(-1)).toEqual({ role: 'tool', tool_call_id: use.id, content: 'found it' });
    expect((sent.messages.at(-2)!.tool_calls as Array<{ function: { name: string } }>)[0]!.function.name).toBe('lookup');
  });

  it("a request in Claude Code's shape is served, with the dropped fields named", async () => {
    const res = await fetch(`${gw.url}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': KEY, 'content-type': 'application/json', 'anthropic-version': '2023-06-01', 'anthropic-beta': 'claude-code-20250219,interleaved-thinking-2025-05-14' },
      body: JSON.stringify({
        model: 'local',
        max_tokens: 3,
        stream: true,
        system: [{ type: 'text', text: 'You are Claude Code.', cache_control: { type: 'ephemeral' } }],
        messages: [{ role: 'user', content: [{ type: 'text', text: 'fix the bug', cache_control: { type: 'ephemeral' } }] }],
        tools: [{ name: 'Bash', description: 'run a command', input_schema: { type: 'object', properties: { command: { type: 'string' } } } }],
        metadata: { user_id: 'user_abc_session_1' },
        thinking: { type: 'enabled', budget_tokens: 1024 },
      }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-switchyard-dropped-params')).toBe('cache_control, thinking');
    const text = await res.text();
    expect(text).toContain('event: message_start');
    expect(text.trimEnd().endsWith('event: message_stop\ndata: {"type":"message_stop"}')).toBe(true);
    const sent = local.log.all().at(-1)!.body as Record<string, unknown>;
    expect(sent.user).toBe('user_abc_session_1');
    expect(sent.cache_control).toBeUndefined();
    expect(JSON.stringify(sent)).not.toContain('cache_control');
  });

  it('a block the upstream cannot take is a 400 naming it', async () => {
    const err = await anthropic.messages
      .create({ model: 'local', max_tokens: 2, messages: [{ role: 'user', content: [{ type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'x' } }] }] })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Anthropic.BadRequestError);
    expect((err as InstanceType<typeof Anthropic.APIError>).message).toContain('messages.[0].content.[0]: document blocks');
  });

  it("count_tokens: the engine's tokenizer where the route offers it, else the gateway's estimate", async () => {
    const counted = await fetch(`${gw.url}/v1/messages/count_tokens`, { method: 'POST', headers: { 'x-api-key': KEY, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'local-count', messages: hello }) });
    expect(counted.headers.get('x-switchyard-token-count')).toBe('tokenizer');
    expect(((await counted.json()) as { input_tokens: number }).input_tokens).toBeGreaterThan(0);
    expect(local.log.all().at(-1)!.path).toBe('/tokenize');
    const estimated = await fetch(`${gw.url}/v1/messages/count_tokens`, { method: 'POST', headers: { 'x-api-key': KEY, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'local', messages: hello }) });
    expect(estimated.status).toBe(200);
    expect(estimated.headers.get('x-switchyard-token-count')).toBe('estimate');
    expect(((await estimated.json()) as { input_tokens: number }).input_tokens).toBeGreaterThan(0);
  });
});

describe('routing and errors', () => {
  it('an alias fails over from a broken target before the first token, streamed and whole', async () => {
    const final = await anthropic.messages.stream({ model: 'agents', max_tokens: 3, messages: hello }).finalMessage();
    expect(final.usage.output_tokens).toBe(3);
    const whole = await anthropic.messages.create({ model: 'agents', max_tokens: 3, messages: hello });
    expect(whole.content[0]!.type).toBe('text');
    expect(broken.log.all().length).toBeGreaterThanOrEqual(2);
  });

  it('count_tokens on an alias skips the targets that cannot count, and estimates when none can', async () => {
    const ask = (model: string) => fetch(`${gw.url}/v1/messages/count_tokens`, { method: 'POST', headers: { 'x-api-key': KEY, 'content-type': 'application/json' }, body: JSON.stringify({ model, messages: hello }) });
    const counted = await ask('count-group');
    expect(counted.status).toBe(200);
    expect(counted.headers.get('x-switchyard-token-count')).toBe('tokenizer');
    const estimated = await ask('no-count-group');
    expect(estimated.status).toBe(200);
    expect(estimated.headers.get('x-switchyard-token-count')).toBe('estimate');
  });

  it('a router model does not fall back for /v1/messages (chat completions does)', async () => {
    const err = await anthropic.messages.create({ model: 'two-routes', max_tokens: 3, messages: hello }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Anthropic.APIError);
    expect((err as InstanceType<typeof Anthropic.APIError>).status).toBeGreaterThanOrEqual(500);
    const openai = new OpenAI({ apiKey: KEY, baseURL: `${gw.url}/v1`, maxRetries: 0 });
    const ok = await openai.chat.completions.create({ model: 'two-routes', max_tokens: 3, messages: hello });
    expect(ok.choices[0]!.message.content!.length).toBeGreaterThan(0);
  });

  it('a stream that fails after its first token ends with an in-band event: error, never message_stop', async () => {
    for (const model of ['cut-local', 'cut-native']) {
      const res = await fetch(`${gw.url}/v1/messages`, { method: 'POST', headers: { 'x-api-key': KEY, 'content-type': 'application/json' }, body: JSON.stringify({ model, max_tokens: 8, stream: true, messages: hello }) });
      expect(res.status).toBe(200);
      const text = await res.text();
      expect(text).toContain('event: content_block_delta');
      expect(text).toMatch(/event: error\ndata: \{"type":"error","error":\{"type":"[a-z_]+","message":"[^"]+"\}\}\n\n$/);
      expect(text).not.toContain('message_stop');
    }
    const err = await anthropic.messages.stream({ model: 'cut-local', max_tokens: 8, messages: hello }).finalMessage().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
  });

  it('checks Anthropic makes are made before routing, naming the field', async () => {
    const ask = async (body: Record<string, unknown>) => {
      const res = await fetch(`${gw.url}/v1/messages`, { method: 'POST', headers: { 'x-api-key': KEY, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'local', max_tokens: 4, ...body }) });
      return { status: res.status, message: ((await res.json()) as { error: { message: string } }).error.message };
    };
    expect(await ask({ messages: [{ role: 'user', content: [] }] })).toEqual({ status: 400, message: 'messages.0.content: at least one content block is required' });
    expect((await ask({ messages: [...hello, { role: 'assistant', content: [{ type: 'tool_use', name: 'f', input: {} }] }] })).message).toMatch(/^messages\.1\.content\.0\.id: Field required/);
    expect((await ask({ messages: [{ role: 'user', content: [{ type: 'tool_result', content: 'x' }] }] })).message).toMatch(/^messages\.0\.content\.0\.tool_use_id: Field required/);
    expect((await ask({ messages: hello, tool_choice: { type: 'any' } })).message).toMatch(/^tool_choice: tool_choice 'any' needs tools/);
    expect((await ask({ messages: hello, tools: [{ name: 'a', input_schema: { type: 'object' } }], tool_choice: { type: 'tool', name: 'nope' } })).message).toBe('tool_choice.name: no tool named "nope" is defined in tools');
    expect((await ask({ messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png' } }] }] })).message).toMatch(/source\.data/);
    // A final assistant message is a prefill: vLLM and SGLang are asked to continue it.
    await anthropic.messages.create({ model: 'local', max_tokens: 2, messages: [...hello, { role: 'assistant', content: '{"a":' }] });
    expect(local.log.all().at(-1)!.body).toMatchObject({ continue_final_message: true, add_generation_prompt: false });
  });

  it("the gateway's own errors are in Anthropic's envelope; x-api-key and Bearer both authenticate", async () => {
    const bad = new Anthropic({ apiKey: 'sk-wrong', baseURL: gw.url, maxRetries: 0 });
    const e401 = await bad.messages.create({ model: 'claude', max_tokens: 2, messages: hello }).catch((e: unknown) => e);
    expect(e401).toBeInstanceOf(Anthropic.AuthenticationError);
    expect(JSON.stringify((e401 as InstanceType<typeof Anthropic.APIError>).error)).toContain('x-api-key: <key>');
    const models = await fetch(`${gw.url}/v1/models`, { headers: { 'x-api-key': KEY } });
    expect(models.status).toBe(200);
    const res = await fetch(`${gw.url}/v1/messages`, { method: 'POST', headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'claude', messages: hello }) });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ type: 'error', error: { type: 'invalid_request_error', message: 'max_tokens: Field required' } });
    const unknown = await anthropic.messages.create({ model: 'nope', max_tokens: 2, messages: hello }).catch((e: unknown) => e);
    expect(unknown).toBeInstanceOf(Anthropic.NotFoundError);
    expect((unknown as InstanceType<typeof Anthropic.APIError>).error).toMatchObject({ type: 'error', error: { type: 'not_found_error' } });
  });
});
