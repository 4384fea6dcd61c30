// The endpoint families on loopback: `GET /v1/models/{id}` through the official `openai` client
// (ids, aliases, the 404 of a model the key may not use), and OpenAI-style validation — a
// message without `role`, a string `temperature`, out-of-range knobs — answered 400 with
// `param` and never sent upstream.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { ADAPTERS, adapterFor, defaultEndpoints, routeKinds } from '../../gateway/upstream/adapters.ts';
import { endpointFamilies, endpointFamily } from '../../gateway/endpoints/families.ts';
import { buildGatewayConfig } from '../../gateway/config/load.ts';
import { hello, KEYS, startStack, type Stack } from './harness.ts';

let stack: Stack;
beforeAll(async () => {
  stack = await startStack([{ mode: 'echo' }]);
});
afterAll(async () => {
  await stack.close();
});

/** Requests the emulator received so far. */
const received = () => stack.emus[0]!.log.all().length;

describe('GET /v1/models/{id}', () => {
  it('models.retrieve returns the model object, by id and by alias', async () => {
    const m = await stack.client().models.retrieve('demo');
    expect(m).toMatchObject({ id: 'demo', object: 'model', owned_by: 'switchyard' });
    expect(typeof m.created).toBe('number');
    expect((await stack.client().models.retrieve('demo-alias')).id).toBe('demo-alias');
  });

  it('a model the key may not use, or none at all, is the same 404 (model_not_found)', async () => {
    for (const name of ['other', 'no-such-model', 'a/b']) {
      const e = await stack
        .client()
        .models.retrieve(name)
        .catch((x: unknown) => x);
      expect(e).toBeInstanceOf(OpenAI.NotFoundError);
      expect((e as InstanceType<typeof OpenAI.NotFoundError>).code).toBe('model_not_found');
      expect((e as InstanceType<typeof OpenAI.NotFoundError>).message).toContain(`'${name}'`);
    }
    expect((await stack.client(KEYS.other).models.retrieve('other')).id).toBe('other');
  });

  it('without a key: 401', async () => {
    const e = await stack
      .client('sk-wrong')
      .models.retrieve('demo')
      .catch((x: unknown) => x);
    expect(e).toBeInstanceOf(OpenAI.AuthenticationError);
  });
});

describe('OpenAI-style validation', () => {
  const cases: Array<[string, string, Record<string, unknown>, string]> = [
    ['a message without role', '/v1/chat/completions', { messages: [{ role: 'user', content: 'a' }, { content: 'b' }] }, 'messages.[1].role'],
    ['an unknown role', '/v1/chat/completions', { messages: [{ role: 'robot', content: 'a' }] }, 'messages.[0].role'],
    ['a message that is not an object', '/v1/chat/completions', { messages: ['hi'] }, 'messages.[0]'],
    ['a content that is a number', '/v1/chat/completions', { messages: [{ role: 'system', content: 'a' }, { role: 'user', content: 5 }] }, 'messages.[1].content'],
    ['a content that is an object', '/v1/chat/completions', { messages: [{ role: 'user', content: { text: 'a' } }] }, 'messages.[0].content'],
    ['a content part that is a string', '/v1/chat/completions', { messages: [{ role: 'user', content: [{ type: 'text', text: 'a' }, 'b'] }] }, 'messages.[0].content.[1]'],
    ['temperature "abc"', '/v1/chat/completions', { messages: hello, temperature: 'abc' }, 'temperature'],
    ['temperature above 2', '/v1/chat/completions', { messages: hello, temperature: 2.5 }, 'temperature'],
    ['top_p above 1', '/v1/chat/completions', { messages: hello, top_p: 1.5 }, 'top_p'],
    ['n 0', '/v1/chat/completions', { messages: hello, n: 0 }, 'n'],
    ['stop a number', '/v1/chat/completions', { messages: hello, stop: 3 }, 'stop'],
    ['logprobs a string', '/v1/chat/completions', { messages: hello, logprobs: 'yes' }, 'logprobs'],
    ['completions temperature "abc"', '/v1/completions', { prompt: 'x', temperature: 'abc' }, 'temperature'],
    ['completions without prompt', '/v1/completions', {}, 'prompt'],
    ['embeddings dimensions 0', '/v1/embeddings', { input: 'x', dimensions: 0 }, 'dimensions'],
  ];
  for (const [what, path, body, param] of cases) {
    it(`${what}: 400 with param '${param}', not sent upstream`, async () => {
      const before = received();
      const res = await stack.post(path, { model: 'demo', ...body });
      expect(res.status).toBe(400);
      const err = ((await res.json()) as { error: { type: string; param: string; code: string; message: string } }).error;
      expect(err).toMatchObject({ type: 'invalid_request_error', param, code: 'invalid_request' });
      expect(err.message).toContain(param.replace(/\.\[\d+\]$/, ''));
      expect(received()).toBe(before);
    });
  }

  it('a content of the wrong type says which types are accepted; text parts and a tool-call null pass', async () => {
    const res = await stack.post('/v1/chat/completions', { model: 'demo', messages: [{ role: 'user', content: 5 }] });
    expect(((await res.json()) as { error: { message: string } }).error.message).toBe(
      `Invalid type for 'messages.[0].content': expected a string or an array of content parts (objects such as {"type": "text", "text": "…"}), but got an integer instead.`,
    );
    const parts = await stack.post('/v1/chat/completions', {
      model: 'demo',
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'hi' }] },
        { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } }] },
        { role: 'tool', tool_call_id: 'c1', content: 'done' },
      ],
      max_tokens: 2,
    });
    expect(parts.status).toBe(200);
  });

  it('the official client sees a BadRequestError naming the field', async () => {
    const e = await stack
      .client()
      .chat.completions.create({ model: 'demo', messages: hello, temperature: 'abc' as unknown as number })
      .catch((x: unknown) => x);
    expect(e).toBeInstanceOf(OpenAI.BadRequestError);
    expect((e as InstanceType<typeof OpenAI.BadRequestError>).param).toBe('temperature');
  });

  it('valid knobs pass through', async () => {
    const r = await stack.client().chat.completions.create({ model: 'demo', messages: [{ role: 'developer', content: 'be brief' }, ...hello], temperature: 0, top_p: 1, n: 1, stop: ['x'], seed: 3, max_tokens: 2 });
    expect(r.choices[0]!.message.content).toBeTypeOf('string');
  });
});

describe('registries', () => {
  it('every adapter is registered under its kind, serves endpoint families that exist', () => {
    expect(routeKinds()).toEqual(['openai_compat', 'anthropic']);
    expect(endpointFamilies().map((f) => f.endpoint)).toEqual(['chat', 'completion', 'embedding', 'messages', 'count_tokens', 'rerank', 'image_generation', 'image_edit', 'transcription', 'translation', 'speech', 'video', 'responses']);
    for (const [kind, a] of ADAPTERS) {
      expect(a.kind).toBe(kind);
      for (const e of a.endpoints) expect(endpointFamily(e)?.endpoint).toBe(e);
    }
    expect(() => adapterFor('gemini')).toThrow(/route kind 'gemini' has no gateway adapter; use one of: openai_compat, anthropic/);
  });

  it("the core's default endpoints per kind are the adapters' endpoints", () => {
    for (const [kind, a] of ADAPTERS) expect(defaultEndpoints(kind)).toEqual(a.defaultEndpoints ?? a.endpoints);
    // An engine's tokenizer is not every OpenAI-style server's: count_tokens only where a route lists it.
    // /v1/responses by default is translated onto chat; a route listing it has it natively.
    expect(defaultEndpoints('openai_compat')).toEqual(['chat', 'completion', 'embedding', 'messages', 'rerank', 'image_generation', 'image_edit', 'transcription', 'translation', 'speech', 'video', 'responses']);
    expect(defaultEndpoints('no_such_kind')).toBeUndefined();
  });
});

describe('route endpoints:', () => {
  it('embeddings go only to the route that serves them; chat may use either', async () => {
    const s = await startStack([{ mode: 'echo', endpoints: ['chat'] }, { mode: 'echo' }]);
    try {
      for (let i = 0; i < 6; i++) {
        const e = await s.client().embeddings.create({ model: 'demo', input: 'x' });
        expect(e.data).toHaveLength(1);
      }
      for (let i = 0; i < 6; i++) await s.client().chat.completions.create({ model: 'demo', messages: hello, max_tokens: 2 });
      const paths = s.emus.map((e) => e.log.all().map((r) => r.path));
      expect(paths[0]!.every((p) => p.endsWith('/chat/completions'))).toBe(true);
      expect(paths[1]!.filter((p) => p.endsWith('/embeddings'))).toHaveLength(6);
      // Chosen before dispatch: no embedding attempt was refused at the chat-only route and retried.
      const metrics = await (await fetch(`${s.gw.url}/metrics`, { headers: { authorization: `Bearer ${KEYS.admin}` } })).text();
      expect(metrics).toContain('switchyard_requests_total');
      expect(metrics).not.toMatch(/switchyard_fallbacks_total\{model="demo"\} [1-9]/);
      // `other` has only the chat-only route: embeddings there are a 400 naming model and endpoint.
      const refused = await s.client(KEYS.other).embeddings.create({ model: 'other', input: 'x' }).catch((x: unknown) => x);
      expect(refused).toBeInstanceOf(OpenAI.BadRequestError);
      expect((refused as InstanceType<typeof OpenAI.BadRequestError>).code).toBe('endpoint_not_served');
      expect((refused as Error).message).toMatch(/model 'other'.*'embedding'/);
    } finally {
      await s.close();
    }
  });

  it('a route listing an endpoint its kind cannot serve is refused; an unknown name too', () => {
    const base = (endpoints: unknown) => ({ models: { models: [{ id: 'm', route: [{ base_url: 'http://127.0.0.1:9/v1', endpoints }] }] }, gateway: {} });
    expect(() => buildGatewayConfig(base(['images']))).toThrow(/endpoints/);
  });
});
