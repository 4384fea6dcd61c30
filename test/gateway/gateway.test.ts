// The gateway end to end on 127.0.0.1, with the official `openai` client as the caller and
// engine emulators as upstreams: streams and non-streams, tool calls, fallback before commit,
// no fallback after it, pins, disconnects, auth and body errors, usage, limits.
import { afterEach, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { hello, KEYS, sseData, startStack, type Stack, servedEndpoint } from './harness.ts';

let stack: Stack | null = null;
afterEach(async () => {
  await stack?.close();
  stack = null;
});

/** A stack whose primary is almost surely upstream 0 (weight 1000 : 1), seed fixed. */
async function primaryAndBackup(primaryFaults: Record<string, unknown>, extra: Record<string, unknown> = {}): Promise<Stack> {
  stack = await startStack([{ weight: 1000, faults: primaryFaults }, { weight: 1 }], extra);
  return stack;
}

describe('OpenAI-compatible surface', () => {
  it('non-stream chat: answer, served-by header, request id echoed, no routing metadata', async () => {
    stack = await startStack([{}, {}]);
    const { data, response } = await stack
      .client()
      .chat.completions.create({ model: 'demo', messages: hello, max_tokens: 4 }, { headers: { 'x-request-id': 'req-abc.1' } })
      .withResponse();
    expect(data.choices[0]!.message.content).toBe('The quick brown fox');
    expect(data.model).toBe('demo');
    expect(data.usage?.completion_tokens).toBe(4);
    expect(response.headers.get('x-request-id')).toBe('req-abc.1');
    // A model with its own routes names no direct model; the gateway knows the endpoint.
    expect(response.headers.get('x-switchyard-served-by')).toBeNull();
    expect(stack.ids).toContain(await servedEndpoint(stack.gw, response));
    expect(JSON.stringify(data)).not.toMatch(/_routing|127\.0\.0\.1|local-/);
    // The upstream got the request id and the route's model name, not the client's key.
    const rec = stack.emus.flatMap((e) => e.log.all()).find((r) => r.requestId === 'req-abc.1')!;
    expect(rec.authorization).toBe('');
    expect((rec.body as { model: string }).model).toBe('demo');
  });

  it('stream chat: chunks relayed, usage absent unless asked, [DONE] at the end', async () => {
    stack = await startStack([{}, {}]);
    const chunks: OpenAI.ChatCompletionChunk[] = [];
    for await (const c of await stack.client().chat.completions.create({ model: 'demo', messages: hello, max_tokens: 5, stream: true })) chunks.push(c);
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? '').join('')).toBe('The quick brown fox jumps');
    expect(chunks.every((c) => !('usage' in c))).toBe(true);
    expect(chunks.filter((c) => c.choices[0]?.delta.role === 'assistant')).toHaveLength(1);
    // Upstream was asked for usage regardless.
    const rec = stack.emus.flatMap((e) => e.log.all()).at(-1)!;
    expect((rec.body as { stream_options: { include_usage: boolean } }).stream_options.include_usage).toBe(true);

    const withUsage: OpenAI.ChatCompletionChunk[] = [];
    const s = await stack.client().chat.completions.create({ model: 'demo', messages: hello, max_tokens: 5, stream: true, stream_options: { include_usage: true } });
    for await (const c of s) withUsage.push(c);
    const last = withUsage.at(-1)!;
    expect(last.choices).toEqual([]);
    expect(last.usage).toMatchObject({ completion_tokens: 5, prompt_tokens: expect.any(Number) });

    const raw = await (await stack.post('/v1/chat/completions', { model: 'demo', messages: hello, max_tokens: 2, stream: true })).text();
    expect(sseData(raw).at(-1)).toBe('[DONE]');
  });

  it('tool-call streams are relayed intact (same deltas as straight from the upstream)', async () => {
    stack = await startStack([{}]);
    const body = {
      model: 'demo',
      messages: hello,
      max_tokens: 6,
      stream: true as const,
      tools: [{ type: 'function' as const, function: { name: 'lookup', parameters: { type: 'object', properties: { query: { type: 'string' } } } } }],
      tool_choice: 'required' as const,
    };
    const viaGateway: unknown[] = [];
    for await (const c of await stack.client().chat.completions.create(body)) viaGateway.push(c.choices[0]?.delta ?? null);
    const direct = new OpenAI({ baseURL: stack.emus[0]!.baseUrl, apiKey: 'x', maxRetries: 0 });
    const straight: unknown[] = [];
    for await (const c of await direct.chat.completions.create(body)) straight.push(c.choices[0]?.delta ?? null);
    // Call ids number the emulator's requests; everything else must be identical.
    const norm = (ds: unknown[]) => JSON.parse(JSON.stringify(ds).replace(/call_emu_\d+/g, 'call_X')) as unknown[];
    expect(norm(viaGateway)).toEqual(norm(straight));
    expect(JSON.stringify(viaGateway)).toMatch(/"id":"call_emu_\d+"/);
    const args = viaGateway.map((d) => (d as OpenAI.ChatCompletionChunk.Choice.Delta | null)?.tool_calls?.[0]?.function?.arguments ?? '').join('');
    expect(JSON.parse(args)).toEqual({ query: 'The quick brown fox' });
  });

  it('images and tools pass through to the upstream untouched; image requests need an image route', async () => {
    stack = await startStack([{ modalities: ['text'], weight: 1000 }, { modalities: ['text', 'image'] }]);
    const messages = [{ role: 'user' as const, content: [{ type: 'text' as const, text: 'what is this?' }, { type: 'image_url' as const, image_url: { url: 'data:image/png;base64,AAAA' } }] }];
    const tools = [{ type: 'function' as const, function: { name: 'describe', parameters: { type: 'object' } } }];
    const { response } = await stack.client().chat.completions.create({ model: 'demo', messages, tools, max_tokens: 1 }).withResponse();
    expect(await servedEndpoint(stack.gw, response)).toBe(stack.ids[1]);
    const sent = stack.emus[1]!.log.all()[0]!.body as { messages: unknown; tools: unknown };
    expect(sent.messages).toEqual(messages);
    expect(sent.tools).toEqual(tools);
    expect(stack.emus[0]!.log.all()).toHaveLength(0);
    await stack.close();
    stack = await startStack([{ modalities: ['text'] }]);
    const refused = await stack.post('/v1/chat/completions', { model: 'demo', messages });
    expect(refused.status).toBe(400);
    expect((await refused.json()).error.code).toBe('modality_not_supported');
  });

  it('completions and embeddings endpoints, and /v1/models per key', async () => {
    stack = await startStack([{}]);
    const c = await stack.client().completions.create({ model: 'demo', prompt: 'Once upon', max_tokens: 3 });
    expect(c.choices[0]!.text).toBe('The quick brown');
    let streamed = '';
    for await (const ch of await stack.client().completions.create({ model: 'demo', prompt: 'Once upon', max_tokens: 3, stream: true })) streamed += ch.choices[0]?.text ?? '';
    expect(streamed).toBe('The quick brown');
    const e = await stack.client().embeddings.create({ model: 'demo', input: ['a', 'b'] });
    expect(e.data).toHaveLength(2);
    expect(e.data[0]!.embedding.length).toBeGreaterThan(0);
    const user = (await stack.client().models.list()).data.map((m) => m.id);
    expect(user.sort()).toEqual(['demo', 'demo-alias']);
    const other = (await stack.client(KEYS.other).models.list()).data.map((m) => m.id);
    expect(other).toEqual(['other']);
  });
});

describe('fallback before commit', () => {
  for (const stream of [false, true]) {
    it(`a 500 from the primary fails over (${stream ? 'stream' : 'non-stream'})`, async () => {
      const s = await primaryAndBackup({ error_rate: 1, error_status: 500 });
      const { response } = await s.client().chat.completions.create({ model: 'demo', messages: hello, max_tokens: 3, stream }).withResponse();
      expect(await servedEndpoint(s.gw, response)).toBe(s.ids[1]);
      expect(s.emus[0]!.log.all()).toHaveLength(1);
      expect(s.emus[0]!.log.all()[0]!.outcome).toBe('error');
    });

    it(`a connection reset fails over (${stream ? 'stream' : 'non-stream'})`, async () => {
      const s = await primaryAndBackup({ reset_rate: 1 });
      const { response } = await s.client().chat.completions.create({ model: 'demo', messages: hello, max_tokens: 3, stream }).withResponse();
      expect(await servedEndpoint(s.gw, response)).toBe(s.ids[1]);
      expect(s.emus[0]!.log.all()[0]!.outcome).toBe('reset');
    });
  }

  for (const fault of [{ disconnect_after_tokens: 0 }, { error_after_tokens: 0 }]) {
    it(`preamble then ${Object.keys(fault)[0]} still fails over, invisibly`, async () => {
      const s = await primaryAndBackup(fault);
      const res = await s.post('/v1/chat/completions', { model: 'demo', messages: hello, max_tokens: 3, stream: true });
      expect(res.status).toBe(200);
      expect(await servedEndpoint(s.gw, res)).toBe(s.ids[1]);
      const data = sseData(await res.text());
      const chunks = data.filter((d) => d !== '[DONE]').map((d) => JSON.parse(d) as { id: string; choices: Array<{ delta: { role?: string; content?: string } }> });
      expect(chunks.filter((c) => c.choices[0]?.delta.role === 'assistant')).toHaveLength(1);
      expect(new Set(chunks.map((c) => c.id)).size).toBe(1); // every chunk from the backup
      expect(chunks.map((c) => c.choices[0]?.delta.content ?? '').join('')).toBe('The quick brown');
      expect(data.at(-1)).toBe('[DONE]');
      expect(s.emus[0]!.log.all()[0]!.tokensSent).toBe(0);
    });
  }

  it('exhausted fallbacks: 502 naming the alias, no hosts, ports or keys', async () => {
    stack = await startStack([{ faults: { error_rate: 1 } }, { faults: { reset_rate: 1 }, apiKey: 'sk-secret-upstream' }]);
    const res = await stack.post('/v1/chat/completions', { model: 'demo-alias', messages: hello });
    expect(res.status).toBe(502);
    const body = await res.text();
    expect(JSON.parse(body).error).toMatchObject({ type: 'server_error', code: expect.stringMatching(/^upstream_/) });
    expect(body).toContain("'demo-alias'");
    expect(body).not.toMatch(/127\.0\.0\.1|local-\d+|sk-secret|:\d{4,5}/);
  });

  it('upstream 4xx bodies pass through; 429 carries Retry-After', async () => {
    stack = await startStack([{ faults: { error_rate: 1, error_status: 422 } }]);
    const res = await stack.post('/v1/chat/completions', { model: 'demo', messages: hello });
    expect(res.status).toBe(422);
    expect((await res.json()).error.message).toBe('emulated upstream error 422');
    await stack.close();
    stack = await startStack([{ faults: { rate_limit_rate: 1, retry_after_sec: 7 } }]);
    const limited = await stack.post('/v1/chat/completions', { model: 'demo', messages: hello });
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('7');
    expect((await limited.json()).error.type).toBe('rate_limit_error');
  });
});

describe('after commit', () => {
  it('a Messages stream cut mid-answer ends with an error event that says the upstream disconnected', async () => {
    const s = await primaryAndBackup({ disconnect_after_tokens: 2 });
    const res = await s.post('/v1/messages', { model: 'demo', max_tokens: 6, stream: true, messages: [{ role: 'user', content: 'Hello' }] });
    expect(res.status).toBe(200);
    const text = await res.text();
    const events = text.split('\n\n').filter((b) => b.startsWith('event: '));
    const last = events.at(-1)!;
    expect(last.split('\n')[0]).toBe('event: error');
    expect(JSON.parse(last.split('\n')[1]!.slice('data: '.length))).toEqual({
      type: 'error',
      error: { type: 'api_error', message: "The upstream of model 'demo' disconnected mid-stream (2 content chunks were already sent); a started stream is not retried on another route." },
    });
    expect(text).not.toContain('message_stop');
    expect(s.emus[1]!.log.all()).toHaveLength(0); // the backup was never asked
  });

  it('no fallback: the client sees an in-band error, one role chunk, and no [DONE]', async () => {
    const s = await primaryAndBackup({ disconnect_after_tokens: 2 });
    const res = await s.post('/v1/chat/completions', { model: 'demo', messages: hello, max_tokens: 6, stream: true });
    expect(res.status).toBe(200);
    const data = sseData(await res.text());
    expect(data).not.toContain('[DONE]');
    const last = JSON.parse(data.at(-1)!) as { error: { code: string; type: string; message: string } };
    // The stream broke on its one route; the message says so (not "every route tried failed").
    expect(last.error).toMatchObject({ type: 'server_error', code: 'upstream_stream_interrupted' });
    expect(last.error.message).toBe("The upstream of model 'demo' disconnected mid-stream (2 content chunks were already sent); a started stream is not retried on another route.");
    const roles = data.filter((d) => d.includes('"role":"assistant"'));
    expect(roles).toHaveLength(1);
    expect(s.emus[1]!.log.all()).toHaveLength(0); // the backup was never asked

    // The official client raises on it.
    const seen: string[] = [];
    await expect(
      (async () => {
        for await (const c of await s.client().chat.completions.create({ model: 'demo', messages: hello, max_tokens: 6, stream: true })) seen.push(c.choices[0]?.delta.content ?? '');
      })(),
    ).rejects.toThrow(/disconnected mid-stream/);
    expect(seen.join('')).toBe('The quick');
  });

  it('a pinned request never falls back; a pin from a non-admin key is refused with 403', async () => {
    const s = await primaryAndBackup({ error_rate: 1 });
    const pinned = await s.post('/v1/chat/completions', { model: 'demo', messages: hello }, { authorization: `Bearer ${KEYS.admin}`, 'x-route-pin': s.ids[0]! });
    expect(pinned.status).toBe(502);
    expect(s.emus[1]!.log.all()).toHaveLength(0);
    const wrongPin = await s.post('/v1/chat/completions', { model: 'demo', messages: hello }, { authorization: `Bearer ${KEYS.admin}`, 'x-route-pin': 'nowhere' });
    expect(wrongPin.status).toBe(400);
    expect((await wrongPin.json()).error.code).toBe('route_pin_not_found');
    // A non-admin's pin is refused, naming the header and the fix; nothing goes upstream.
    const asked = s.emus[0]!.log.all().length + s.emus[1]!.log.all().length;
    const refused = await s.post('/v1/chat/completions', { model: 'demo', messages: hello }, { 'x-route-pin': s.ids[0]! });
    expect(refused.status).toBe(403);
    const err = (await refused.json()).error;
    expect(err.code).toBe('admin_required');
    expect(err.type).toBe('permission_error');
    expect(err.param).toBe('X-Route-Pin');
    expect(err.message).toMatch(/X-Route-Pin.*admin key/);
    expect(s.emus[0]!.log.all().length + s.emus[1]!.log.all().length).toBe(asked);
    // Without the header the same caller routes (and falls back) as usual.
    const plain = await s.post('/v1/chat/completions', { model: 'demo', messages: hello });
    expect(plain.status).toBe(200);
    expect(await servedEndpoint(s.gw, plain)).toBe(s.ids[1]);
  });

  it('a client disconnect cancels the upstream request within 100 ms', async () => {
    // Real-time engine: ~30 ms per token, so the stream is mid-flight when the client leaves.
    stack = await startStack([{ faults: { latency_scale: 1 } }]);
    const ac = new AbortController();
    const res = await fetch(`${stack.gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEYS.user}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'demo', messages: hello, max_tokens: 500, stream: true }),
      signal: ac.signal,
    });
    const reader = res.body!.getReader();
    let got = '';
    while (!got.includes('"content":"The"')) got += new TextDecoder().decode((await reader.read()).value);
    const leftAt = performance.now();
    ac.abort();
    const rec = await stack.emus[0]!.log.waitFor((r) => r.outcome !== null, 2_000);
    expect(rec.outcome).toBe('client_gone');
    expect(rec.endedAtMs! - leftAt).toBeLessThan(100);
    expect(rec.tokensSent).toBeLessThan(500);
    await new Promise((r) => setTimeout(r, 50));
    expect(stack.emus[0]!.inEngine()).toBe(0);
    expect(stack.gw.inFlight()).toBe(0);
  });
});

describe('refusals', () => {
  it('401 for a missing or unknown key', async () => {
    stack = await startStack([{}]);
    const none = await stack.post('/v1/chat/completions', { model: 'demo', messages: hello }, { authorization: '' });
    expect(none.status).toBe(401);
    await expect(stack.client('sk-wrong').chat.completions.create({ model: 'demo', messages: hello })).rejects.toBeInstanceOf(OpenAI.AuthenticationError);
  });

  it('404 for an unknown model and for a model the key may not use (same answer)', async () => {
    stack = await startStack([{}]);
    const unknown = await stack.post('/v1/chat/completions', { model: 'nope', messages: hello });
    const forbidden = await stack.post('/v1/chat/completions', { model: 'other', messages: hello });
    expect(unknown.status).toBe(404);
    expect(forbidden.status).toBe(404);
    const [a, b] = [(await unknown.json()).error, (await forbidden.json()).error];
    expect(a.code).toBe('model_not_found');
    expect(b.code).toBe('model_not_found');
    expect(b.message).toBe(a.message.replace("'nope'", "'other'"));
    await expect(stack.client().chat.completions.create({ model: 'nope', messages: hello })).rejects.toBeInstanceOf(OpenAI.NotFoundError);
  });

  it('400 for malformed JSON and missing fields', async () => {
    stack = await startStack([{}]);
    const bad = await stack.post('/v1/chat/completions', '{"model": "demo", "messages": [');
    expect(bad.status).toBe(400);
    expect((await bad.json()).error).toMatchObject({ code: 'invalid_json', type: 'invalid_request_error' });
    const noModel = await stack.post('/v1/chat/completions', { messages: hello });
    expect((await noModel.json()).error).toMatchObject({ code: 'invalid_request', param: 'model' });
    await expect(stack.client().chat.completions.create({ model: 'demo', messages: [] })).rejects.toBeInstanceOf(OpenAI.BadRequestError);
  });

  it('413 past the body limit', async () => {
    stack = await startStack([{}], { server: { body_limit_mb: 0.01 } });
    const big = 'x'.repeat(20_000);
    const res = await stack.post('/v1/chat/completions', { model: 'demo', messages: [{ role: 'user', content: big }] });
    expect(res.status).toBe(413);
    expect((await res.json()).error.code).toBe('body_too_large');
    await expect(stack.client().chat.completions.create({ model: 'demo', messages: [{ role: 'user', content: big }] })).rejects.toMatchObject({ status: 413 });
    // A body just under the limit still goes through.
    const ok = await stack.post('/v1/chat/completions', { model: 'demo', messages: [{ role: 'user', content: 'x'.repeat(9_000) }], max_tokens: 1 });
    expect(ok.status).toBe(200);
  });

  it('503 with Retry-After past the in-flight bound', async () => {
    stack = await startStack([{ faults: { first_token_stall_ms: 400 } }], { server: { max_in_flight: 1, overload_retry_after_sec: 2 } });
    const slow = stack.post('/v1/chat/completions', { model: 'demo', messages: hello, max_tokens: 1 });
    await stack.emus[0]!.log.waitFor(() => true);
    const refused = await stack.post('/v1/chat/completions', { model: 'demo', messages: hello });
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('2');
    expect((await refused.json()).error.code).toBe('overloaded');
    expect((await slow).status).toBe(200);
    expect(stack.gw.inFlight()).toBe(0);
  });

  it('a bug inside one request answers 500 and leaves the gateway serving', async () => {
    stack = await startStack([{}]);
    const core = stack.gw.core as unknown as { start: unknown };
    const original = core.start;
    core.start = () => {
      throw new Error('boom');
    };
    const res = await stack.post('/v1/chat/completions', { model: 'demo', messages: hello });
    expect(res.status).toBe(500);
    expect((await res.json()).error.code).toBe('internal_error');
    core.start = original;
    expect((await stack.post('/v1/chat/completions', { model: 'demo', messages: hello, max_tokens: 1 })).status).toBe(200);
    expect(stack.gw.inFlight()).toBe(0);
  });

  it('unknown paths answer 404 in the OpenAI error shape', async () => {
    stack = await startStack([{}]);
    const res = await fetch(`${stack.gw.url}/v1/nothing`);
    expect(res.status).toBe(404);
    expect((await res.json()).error.type).toBe('invalid_request_error');
  });
});

describe('upstream credentials', () => {
  it("a route's api_key goes upstream; the caller's key never does", async () => {
    stack = await startStack([{ apiKey: 'sk-upstream', local: false }]);
    const r = await stack.client().chat.completions.create({ model: 'demo', messages: hello, max_tokens: 1 });
    expect(r.choices[0]!.message.content).toBe('The');
    expect(stack.emus[0]!.log.all()[0]!.authorization).toBe('Bearer sk-upstream');
  });

  it('an upstream that refuses our key is a 502, not a 401 to the client', async () => {
    stack = await startStack([{ apiKey: 'sk-upstream', routeKey: 'sk-wrong' }]);
    const res = await stack.post('/v1/chat/completions', { model: 'demo', messages: hello });
    expect(res.status).toBe(502);
    expect((await res.json()).error.code).toBe('upstream_auth_rejected');
  });
});
