// What the gateway reads from a body before routing, and what it sends upstream.
import { describe, expect, it } from 'vitest';
import { isBodyProblem, readClientRequest, upstreamBody, type ClientRequest } from '../../gateway/request-body.ts';
import { errorJson, statusOf, typeOf } from '../../gateway/errors.ts';

const ok = (endpoint: 'chat' | 'completion' | 'embedding', body: unknown): ClientRequest => {
  const r = readClientRequest(endpoint, JSON.stringify(body));
  if (isBodyProblem(r)) throw new Error(r.message);
  return r;
};

describe('readClientRequest', () => {
  it('refuses bad JSON and missing or mistyped fields with the param named', () => {
    expect(readClientRequest('chat', '{')).toMatchObject({ code: 'invalid_json' });
    expect(readClientRequest('chat', '[1]')).toMatchObject({ code: 'invalid_json' });
    expect(readClientRequest('chat', '{"messages":[{"role":"user","content":"x"}]}')).toMatchObject({ code: 'invalid_request', param: 'model' });
    expect(readClientRequest('chat', '{"model":"m","messages":[]}')).toMatchObject({ param: 'messages' });
    // A model of the wrong type is called that, not "missing".
    const msg = '"messages":[{"role":"user","content":"x"}]';
    expect(readClientRequest('chat', `{"model":"","${msg.slice(1)}}`)).toMatchObject({ param: 'model', message: 'You must provide a model parameter.' });
    expect(readClientRequest('chat', `{"model":null,${msg}}`)).toMatchObject({ param: 'model', message: 'You must provide a model parameter.' });
    expect(readClientRequest('chat', `{"model":5,${msg}}`)).toMatchObject({ code: 'invalid_request', param: 'model', message: "Invalid type for 'model': expected a string (a model id, see GET /v1/models), but got a number instead." });
    expect(readClientRequest('chat', `{"model":["a"],${msg}}`)).toMatchObject({ param: 'model', message: expect.stringContaining('but got an array instead') });
    expect(readClientRequest('chat', `{"model":{},${msg}}`)).toMatchObject({ param: 'model', message: expect.stringContaining('but got an object instead') });
    expect(readClientRequest('chat', '{"model":"m","messages":[{}],"stream":"yes"}')).toMatchObject({ param: 'stream' });
    expect(readClientRequest('completion', '{"model":"m"}')).toMatchObject({ param: 'prompt' });
    expect(readClientRequest('embedding', '{"model":"m"}')).toMatchObject({ param: 'input' });
  });

  it('estimates prompt tokens (4 bytes each, 85 per image) and finds modalities', () => {
    const r = ok('chat', {
      model: 'm',
      stream: true,
      stream_options: { include_usage: true },
      max_tokens: 7,
      messages: [{ role: 'user', content: [{ type: 'text', text: 'abcdefgh' }, { type: 'image_url', image_url: { url: 'data:…' } }] }],
    });
    expect(r).toMatchObject({ stream: true, includeUsage: true, outputTokensHint: 7, inputTokens: 2 + 85, modalities: ['image'] });
    expect(ok('completion', { model: 'm', prompt: [1, 2, 3] }).inputTokens).toBe(3);
    expect(ok('embedding', { model: 'm', input: ['abcd', 'efgh'], stream: true }).stream).toBe(false);
  });

  it('upstream body: route model name, and usage always asked for in streams', () => {
    const r = ok('chat', { model: 'alias', stream: true, messages: [{ role: 'user', content: 'x' }], temperature: 0.2, stream_options: { foo: 1 } });
    expect(JSON.parse(upstreamBody(r, 'meta/llama'))).toEqual({ model: 'meta/llama', stream: true, messages: [{ role: 'user', content: 'x' }], temperature: 0.2, stream_options: { foo: 1, include_usage: true } });
    expect(JSON.parse(upstreamBody(ok('chat', { model: 'a', messages: [{ role: 'user', content: 'x' }] }), 'b'))).not.toHaveProperty('stream_options');
  });
});

describe('error catalogue', () => {
  it("maps every code to a status and an OpenAI type (core codes included)", () => {
    expect([statusOf('invalid_api_key'), typeOf('invalid_api_key')]).toEqual([401, 'authentication_error']);
    expect([statusOf('body_too_large'), typeOf('body_too_large')]).toEqual([413, 'invalid_request_error']);
    expect([statusOf('upstream_rate_limited'), typeOf('upstream_rate_limited')]).toEqual([429, 'rate_limit_error']);
    expect([statusOf('all_circuits_open'), typeOf('all_circuits_open')]).toEqual([503, 'server_error']);
    expect(JSON.parse(errorJson('model_not_found', 'no', 'model'))).toEqual({ error: { message: 'no', type: 'invalid_request_error', param: 'model', code: 'model_not_found' } });
  });
});
