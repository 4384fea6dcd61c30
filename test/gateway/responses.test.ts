// OpenAI's Responses API on a real gateway on loopback, called with the official `openai`
// client unchanged: over a native Responses upstream (a route listing `responses`, the
// emulator's /v1/responses), over a chat-completions one and over an Anthropic Messages one
// (both translated), streaming and not,
// tools, previous_response_id and responses.retrieve from the gateway's store, an alias failing
// over from a broken target before the first byte, a follow-up turn that goes back to the target
// of its previous response (seed 003), and the 400s for fields that cannot be honoured.
import OpenAI from 'openai';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashKey } from '../../gateway/callers.ts';
import { buildGatewayConfig } from '../../gateway/config/load.ts';
import { startGateway, type RunningGateway } from '../../gateway/gateway.ts';
import { startEmulator, type RunningEmulator } from '../../simulator/emulator/emulator.ts';

const KEY = 'sk-responses-test';
const ADMIN = 'sk-responses-admin';
const LIMITED = 'sk-responses-limited';

let gw: RunningGateway;
let nativeEmu: RunningEmulator;
let nativeB: RunningEmulator;
let chatEmu: RunningEmulator;
let broken: RunningEmulator;
let cutting: RunningEmulator;
let claudeEmu: RunningEmulator;
let flaky: RunningEmulator;
let steady: RunningEmulator;
let client: OpenAI;

beforeAll(async () => {
  [nativeEmu, nativeB, chatEmu, broken] = await Promise.all([
    startEmulator({ faults: { latency_scale: 0.02 }, defaultOutputTokens: 6 }),
    startEmulator({ faults: { latency_scale: 0.02 }, defaultOutputTokens: 6 }),
    startEmulator({ faults: { latency_scale: 0.02 }, defaultOutputTokens: 6 }),
    startEmulator({ faults: { error_rate: 1, error_status: 500 } }),
  ]);
  cutting = await startEmulator({ faults: { latency_scale: 0.02, error_after_tokens: 2 }, defaultOutputTokens: 6 });
  // Anthropic requests always carry max_tokens; the emulator's own cap makes the answer end naturally at 6.
  [flaky, steady] = await Promise.all([startEmulator({ faults: { latency_scale: 0.02 }, defaultOutputTokens: 6 }), startEmulator({ faults: { latency_scale: 0.02 }, defaultOutputTokens: 6 })]);
  claudeEmu = await startEmulator({ apiKey: 'sk-upstream-claude', faults: { latency_scale: 0.02 }, maxOutputTokens: 6, modelName: 'claude-upstream' });
  const config = buildGatewayConfig({
    models: {
      models: [
        { id: 'native', route: [{ base_url: nativeEmu.baseUrl, endpoints: ['chat', 'responses'] }] },
        { id: 'native-b', route: [{ base_url: nativeB.baseUrl, endpoints: ['chat', 'responses'] }] },
        { id: 'chat-only', route: [{ base_url: chatEmu.baseUrl }] },
        { id: 'broken', route: [{ base_url: broken.baseUrl, endpoints: ['chat', 'responses'] }] },
        { id: 'cutting', route: [{ base_url: cutting.baseUrl }] },
        { id: 'claude', route: [{ kind: 'anthropic', base_url: claudeEmu.baseUrl, api_key: 'sk-upstream-claude', provider_model_id: 'claude-upstream' }] },
        // `home` and `sibling` share a provider key; `other` is on another key of the same provider.
        { id: 'home', route: [{ base_url: flaky.baseUrl, provider: 'acme', api_key: 'sk-acme-1' }] },
        { id: 'other', route: [{ base_url: steady.baseUrl, provider: 'acme', api_key: 'sk-acme-2' }] },
        { id: 'sibling', route: [{ base_url: steady.baseUrl, provider: 'acme', api_key: 'sk-acme-1' }] },
        { id: 'keyed', routing: { strategy: 'failover', targets: [{ model: 'home' }, { model: 'other' }, { model: 'sibling' }] } },
        { id: 'to-claude', routing: { strategy: 'failover', targets: [{ model: 'broken' }, { model: 'claude' }] } },
        { id: 'agents', routing: { strategy: 'failover', targets: [{ model: 'broken' }, { model: 'chat-only' }] } },
        { id: 'thinkers', routing: { strategy: 'round_robin', targets: [{ model: 'native' }, { model: 'native-b' }] } },
        { id: 'duo', routing: { strategy: 'round_robin', targets: [{ model: 'native' }, { model: 'chat-only' }] } },
      ],
    },
    gateway: {
      routing_settings: { affinity_enabled: false, prefill_aware_enabled: false },
      health: { failure_threshold: 1000 },
      auth: { mode: 'keys', keys: [{ id: 'agent', sha256: hashKey(KEY) }, { id: 'ops', sha256: hashKey(ADMIN), admin: true }, { id: 'limited', sha256: hashKey(LIMITED), allowed_models: ['chat-only'] }] },
    },
  });
  gw = await startGateway({ config, host: '127.0.0.1', port: 0, seed: 5, logger: pino({ level: 'silent' }) });
  client = new OpenAI({ apiKey: KEY, baseURL: `${gw.url}/v1`, maxRetries: 0, timeout: 10_000 });
});

afterAll(async () => {
  await gw?.close();
  await Promise.all([nativeEmu, nativeB, chatEmu, broken, cutting, claudeEmu, flaky, steady].map((e) => e?.close()));
});

const lastRecord = (emu: RunningEmulator) => emu.log.all().at(-1)!;

/** Streams one response with the client, returning its event types and final response. */
async function streamed(params: OpenAI.Responses.ResponseCreateParamsStreaming) {
  const stream = await client.responses.create(params);
  const types: string[] = [];
  let text = '';
  let final: OpenAI.Responses.Response | null = null;
  for await (const ev of stream) {
    types.push(ev.type);
    if (ev.type === 'response.output_text.delta') text += ev.delta;
    if (ev.type === 'response.completed' || ev.type === 'response.incomplete') final = ev.response;
  }
  return { types, text, final: final! };
}

describe.each([
  ['native', '/v1/responses'],
  ['chat-only', '/v1/chat/completions'],
  ['claude', '/v1/messages'],
])('/v1/responses on the %s route', (model, upstreamPath) => {
  const emu = () => (model === 'native' ? nativeEmu : model === 'claude' ? claudeEmu : chatEmu);

  it('responses.create: output_text, the model as asked, usage, a gateway id; the upstream path', async () => {
    const r = await client.responses.create({ model, input: 'Hello there', instructions: 'Be brief.' });
    expect(r.object).toBe('response');
    expect(r.status).toBe('completed');
    expect(r.model).toBe(model);
    expect(r.id).toMatch(/^resp_[A-Za-z0-9_-]+_[0-9a-f]{24}$/);
    expect(r.output_text.length).toBeGreaterThan(0);
    expect(r.usage?.output_tokens).toBe(6);
    expect(r.usage!.input_tokens).toBeGreaterThan(0);
    const rec = lastRecord(emu());
    expect(rec.path).toBe(upstreamPath);
    const body = rec.body as Record<string, unknown>;
    if (model === 'native') expect(body).toMatchObject({ store: false, instructions: 'Be brief.' });
    else if (model === 'claude') {
      expect(body).toMatchObject({ model: 'claude-upstream', system: 'Be brief.', max_tokens: 4096 });
      expect(JSON.stringify(body.messages)).toContain('Hello there');
    } else expect(body.messages).toEqual([{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hello there' }]);
  });

  it('streaming: the Responses event grammar, deltas adding up to the final text', async () => {
    const { types, text, final } = await streamed({ model, input: 'Hello there', stream: true });
    expect(types[0]).toBe('response.created');
    expect(types[1]).toBe('response.in_progress');
    expect(types.at(-1)).toBe('response.completed');
    for (const t of ['response.output_item.added', 'response.content_part.added', 'response.output_text.delta', 'response.output_text.done', 'response.content_part.done', 'response.output_item.done']) {
      expect(types).toContain(t);
    }
    expect(types.indexOf('response.output_item.added')).toBeLessThan(types.indexOf('response.output_text.delta'));
    expect(final.model).toBe(model);
    expect(final.usage?.output_tokens).toBe(6);
    const message = final.output.find((o) => o.type === 'message') as OpenAI.Responses.ResponseOutputMessage;
    expect((message.content[0] as OpenAI.Responses.ResponseOutputText).text).toBe(text);
    expect(lastRecord(emu()).stream).toBe(true);
  });

  it('previous_response_id: the stored turn goes upstream in front of the new input; retrieve returns it', async () => {
    const first = await client.responses.create({ model, input: 'My name is Ada.' });
    const second = await client.responses.create({ model, input: 'What is my name?', previous_response_id: first.id });
    expect(second.previous_response_id).toBe(first.id);
    const body = lastRecord(emu()).body as Record<string, unknown>;
    const sent = JSON.stringify(model === 'native' ? body.input : body.messages);
    expect(sent).toContain('My name is Ada.');
    expect(sent).toContain(first.output_text);
    expect(sent).toContain('What is my name?');
    expect(body.previous_response_id).toBeUndefined();
    const got = await client.responses.retrieve(second.id);
    expect(got.id).toBe(second.id);
    expect(got.output_text).toBe(second.output_text);
  });

  it('a streamed response is stored too, and chains', async () => {
    const { final } = await streamed({ model, input: 'Remember 42.', stream: true });
    expect((await client.responses.retrieve(final.id)).status).toBe('completed');
    const { final: next } = await streamed({ model, input: 'Which number?', previous_response_id: final.id, stream: true });
    expect(next.previous_response_id).toBe(final.id);
    expect(JSON.stringify(lastRecord(emu()).body)).toContain('Remember 42.');
  });

  it('a forced function call comes back as a function_call item; its output continues the conversation', async () => {
    const tools: OpenAI.Responses.Tool[] = [{ type: 'function', name: 'get_weather', parameters: { type: 'object', properties: {} }, strict: false }];
    const r = await client.responses.create({ model, input: 'Weather?', tools, tool_choice: { type: 'function', name: 'get_weather' } });
    const call = r.output.find((o) => o.type === 'function_call') as OpenAI.Responses.ResponseFunctionToolCall;
    expect(call).toMatchObject({ type: 'function_call', name: 'get_weather' });
    expect(call.call_id.length).toBeGreaterThan(0);
    const next = await client.responses.create({ model, previous_response_id: r.id, input: [{ type: 'function_call_output', call_id: call.call_id, output: 'sunny' }], tools });
    expect(next.status).toBe('completed');
    const body = lastRecord(emu()).body as Record<string, unknown>;
    if (model === 'chat-only') {
      const messages = body.messages as Array<Record<string, unknown>>;
      expect(messages.at(-2)).toMatchObject({ role: 'assistant', tool_calls: [{ id: call.call_id, function: { name: 'get_weather' } }] });
      expect(messages.at(-1)).toEqual({ role: 'tool', tool_call_id: call.call_id, content: 'sunny' });
    } else if (model === 'claude') {
      const messages = body.messages as Array<Record<string, unknown>>;
      expect(JSON.stringify(messages.at(-2))).toContain('"tool_use"');
      expect(JSON.stringify(messages.at(-1))).toContain('"tool_result"');
    } else expect(JSON.stringify(body.input)).toContain('"function_call_output"');
  });
});

describe('failures and notices', () => {
  it('a stream that fails after its first token ends with a Responses error event, not response.completed', async () => {
    const { types } = await streamed({ model: 'cutting', input: 'Hello there', stream: true });
    expect(types[0]).toBe('response.created');
    expect(types).toContain('response.output_text.delta');
    expect(types.at(-1)).toBe('error');
    expect(types).not.toContain('response.completed');
  });

  it('fields a chat route has no equivalent for are named in x-switchyard-dropped-params', async () => {
    const { response } = await client.responses.create({ model: 'chat-only', input: 'x', metadata: { team: 'a' }, truncation: 'auto' }).withResponse();
    expect(response.headers.get('x-switchyard-dropped-params')).toBe('metadata, truncation');
  });
});

describe('routing of /v1/responses', () => {
  it('an alias fails over from a broken target before the first byte, streaming and not', async () => {
    const before = broken.log.all().length;
    const { data, response } = await client.responses.create({ model: 'agents', input: 'Hello there' }).withResponse();
    expect(data.status).toBe('completed');
    expect(data.model).toBe('agents');
    const servedBy = response.headers.get('x-switchyard-served-by');
    expect(servedBy).toBeTruthy();
    const s = await streamed({ model: 'agents', input: 'Hello there', stream: true });
    expect(s.types[0]).toBe('response.created');
    expect(s.final.status).toBe('completed');
    expect(broken.log.all().length).toBe(before + 2);
    expect(broken.log.all().at(-1)!.path).toBe('/v1/responses');
  });

  it('an alias fails over onto an Anthropic target before the first byte, streaming and not; the follow-up stays there', async () => {
    const before = claudeEmu.log.all().length;
    const { data, response } = await client.responses.create({ model: 'to-claude', input: 'Hello there' }).withResponse();
    expect(data).toMatchObject({ status: 'completed', model: 'to-claude' });
    expect(response.headers.get('x-switchyard-served-by')).toBe('claude');
    const s = await streamed({ model: 'to-claude', input: 'Hello there', previous_response_id: data.id, stream: true });
    expect(s.final.status).toBe('completed');
    expect(s.final.previous_response_id).toBe(data.id);
    expect(claudeEmu.log.all().slice(before).map((r) => r.path)).toEqual(['/v1/messages', '/v1/messages']);
    expect(JSON.stringify(claudeEmu.log.all().at(-1)!.body)).toContain(data.output_text);
  });

  it('a follow-up turn whose target fails goes to another target on the same provider key, not the next in the strategy order', async () => {
    const first = await client.responses.create({ model: 'keyed', input: 'Start.' }).withResponse();
    expect(first.response.headers.get('x-switchyard-served-by')).toBe('home');
    flaky.setFaults({ error_rate: 1, error_status: 500 });
    try {
      const next = await client.responses.create({ model: 'keyed', input: 'Go on.', previous_response_id: first.data.id }).withResponse();
      expect(next.response.headers.get('x-switchyard-served-by')).toBe('sibling');
      expect(JSON.stringify(steady.log.all().at(-1)!.body)).toContain(first.data.output_text);
      // A fresh turn follows the failover order past the failing target.
      const fresh = await client.responses.create({ model: 'keyed', input: 'Fresh.' }).withResponse();
      expect(fresh.response.headers.get('x-switchyard-served-by')).toBe('other');
    } finally {
      flaky.setFaults({ error_rate: 0 });
    }
  });

  it('a follow-up turn goes back to the target that served its previous response, outside the round robin', async () => {
    const first = await client.responses.create({ model: 'duo', input: 'Start.' }).withResponse();
    const home = first.response.headers.get('x-switchyard-served-by');
    let prev = first.data.id;
    for (let i = 0; i < 4; i++) {
      const next = await client.responses.create({ model: 'duo', input: `Turn ${i}.`, previous_response_id: prev }).withResponse();
      expect(next.response.headers.get('x-switchyard-served-by')).toBe(home);
      prev = next.data.id;
    }
    // Without a previous response the strategy's order rules: both targets get turns.
    const seen = new Set<string | null>();
    for (let i = 0; i < 4; i++) seen.add((await client.responses.create({ model: 'duo', input: 'Fresh.' }).withResponse()).response.headers.get('x-switchyard-served-by'));
    expect(seen.size).toBe(2);
  });
});

describe('reasoning encrypted_content names its target', () => {
  const include: OpenAI.Responses.ResponseIncludable[] = ['reasoning.encrypted_content'];
  const emuOf = (servedBy: string | null) => (servedBy === 'native' ? nativeEmu : nativeB);

  it('a stateless follow-up carrying reasoning items goes back to the target that wrote them, outside the round robin', async () => {
    const first = await client.responses.create({ model: 'thinkers', input: 'Think.', store: false, include }).withResponse();
    const home = first.response.headers.get('x-switchyard-served-by');
    const reasoning = first.data.output.find((o) => o.type === 'reasoning') as OpenAI.Responses.ResponseReasoningItem;
    expect(reasoning.encrypted_content).toMatch(/^swy1\.[A-Za-z0-9_-]+\.enc_emu_\d+$/);
    const upstreamContent = reasoning.encrypted_content!.split('.').slice(2).join('.');
    let input: OpenAI.Responses.ResponseInput = [{ role: 'user', content: 'Think.' }, ...(first.data.output as OpenAI.Responses.ResponseInputItem[])];
    for (let i = 0; i < 3; i++) {
      input = [...input, { role: 'user', content: `Turn ${i}.` }];
      const next = await client.responses.create({ model: 'thinkers', input, store: false, include }).withResponse();
      expect(next.response.headers.get('x-switchyard-served-by')).toBe(home);
      // The target gets its own content back, untagged.
      const sent = JSON.stringify((lastRecord(emuOf(home)).body as Record<string, unknown>).input);
      expect(sent).toContain(`"encrypted_content":"${upstreamContent}"`);
      expect(sent).not.toContain('swy1.');
    }
    // Streamed, too.
    const s = await streamed({ model: 'thinkers', input: [...input, { role: 'user', content: 'Last.' }], store: false, include, stream: true });
    expect(s.final.status).toBe('completed');
    expect(JSON.stringify(lastRecord(emuOf(home)).body)).toContain('Last.');
    const other = emuOf(home === 'native' ? 'native-b' : 'native');
    expect(JSON.stringify(other.log.all().at(-1)?.body ?? {})).not.toContain('Last.');
    // Without them the round robin rules: both targets get turns.
    const seen = new Set<string | null>();
    for (let i = 0; i < 4; i++) seen.add((await client.responses.create({ model: 'thinkers', input: 'Fresh.', store: false }).withResponse()).response.headers.get('x-switchyard-served-by'));
    expect(seen.size).toBe(2);
  });
});

describe('the endpoint family in /metrics', () => {
  it('counts /v1/responses requests under api="responses"', async () => {
    await client.responses.create({ model: 'chat-only', input: 'x' });
    const text = await (await fetch(`${gw.url}/metrics`, { headers: { authorization: `Bearer ${ADMIN}` } })).text();
    const n = Number(/^switchyard_api_requests_total\{api="responses",status="200"\} (\d+)$/m.exec(text)?.[1] ?? 0);
    expect(n).toBeGreaterThan(0);
  });
});

describe('fields the gateway cannot honour: a 400 naming the field', () => {
  const refused = async (params: Record<string, unknown>) => {
    try {
      await client.responses.create(params as unknown as OpenAI.Responses.ResponseCreateParamsNonStreaming);
    } catch (e) {
      expect(e).toBeInstanceOf(OpenAI.BadRequestError);
      return (e as InstanceType<typeof OpenAI.BadRequestError>).param;
    }
    throw new Error('expected a 400');
  };

  it('background, conversation, prompt, an unknown previous_response_id, a built-in tool on a chat route', async () => {
    expect(await refused({ model: 'native', input: 'x', background: true })).toBe('background');
    expect(await refused({ model: 'native', input: 'x', conversation: 'conv_1' })).toBe('conversation');
    expect(await refused({ model: 'native', input: 'x', prompt: { id: 'pmpt_1' } })).toBe('prompt');
    expect(await refused({ model: 'native', input: 'x', previous_response_id: 'resp_nope' })).toBe('previous_response_id');
    expect(await refused({ model: 'chat-only', input: 'x', tools: [{ type: 'web_search' }] })).toBe('tools.[0].type');
    expect(await refused({ model: 'native' })).toBe('input');
  });

  it('a response made with store: false cannot be chained or retrieved', async () => {
    const r = await client.responses.create({ model: 'chat-only', input: 'x', store: false });
    expect((r as unknown as { store: boolean }).store).toBe(false);
    expect(await refused({ model: 'chat-only', input: 'y', previous_response_id: r.id })).toBe('previous_response_id');
    await expect(client.responses.retrieve(r.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
  });

  it("a key cannot chain onto, nor retrieve, a stored response of a model it may not use (treated as not found)", async () => {
    const first = await client.responses.create({ model: 'native', input: 'A secret: 42.' });
    const limited = new OpenAI({ apiKey: LIMITED, baseURL: `${gw.url}/v1`, maxRetries: 0, timeout: 10_000 });
    const err = await limited.responses.create({ model: 'chat-only', input: 'What was the secret?', previous_response_id: first.id }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    const e = err as InstanceType<typeof OpenAI.BadRequestError>;
    expect(e.param).toBe('previous_response_id');
    expect(e.message).toContain('not found');
    expect(JSON.stringify(lastRecord(chatEmu).body)).not.toContain('A secret: 42.');
    await expect(limited.responses.retrieve(first.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    // Its own model's responses chain as usual.
    const own = await limited.responses.create({ model: 'chat-only', input: 'My name is Bo.' });
    const next = await limited.responses.create({ model: 'chat-only', input: 'Name?', previous_response_id: own.id });
    expect(next.previous_response_id).toBe(own.id);
  });
});
