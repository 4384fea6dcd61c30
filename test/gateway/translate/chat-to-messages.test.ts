import { describe, expect, it } from 'vitest';
import { chatRequestToMessages } from '../../../gateway/translate/chat-to-messages.ts';
import type { RequestTranslation } from '../../../gateway/translate/translated.ts';

const opts = { defaultMaxTokens: 4096 };
function ok(t: RequestTranslation): { body: Record<string, unknown>; dropped: string[] } {
  if (!t.ok) throw new Error(`refused: ${t.param}: ${t.message}`);
  return t;
}
const tr = (body: Record<string, unknown>) => ok(chatRequestToMessages(body, 'claude', opts));
function refused(body: Record<string, unknown>) {
  const t = chatRequestToMessages(body, 'claude', opts);
  if (t.ok) throw new Error('expected a refusal');
  return t;
}

describe('chatRequestToMessages', () => {
  it('maps the sampling fields, with a default max_tokens', () => {
    const { body, dropped } = tr({ model: 'gpt', temperature: 0.3, top_p: 0.8, top_k: 5, stop: 'END', n: 1, messages: [{ role: 'user', content: 'hi' }] });
    expect(body).toEqual({ model: 'claude', messages: [{ role: 'user', content: 'hi' }], max_tokens: 4096, temperature: 0.3, top_p: 0.8, top_k: 5, stop_sequences: ['END'] });
    expect(dropped).toEqual([]);
    expect(tr({ stop: ['a', 'b'], messages: [] }).body.stop_sequences).toEqual(['a', 'b']);
  });

  it('prefers max_completion_tokens over max_tokens', () => {
    expect(tr({ max_tokens: 10, messages: [] }).body.max_tokens).toBe(10);
    expect(tr({ max_tokens: 10, max_completion_tokens: 20, messages: [] }).body.max_tokens).toBe(20);
  });

  it('collects system and developer messages into the system string', () => {
    const { body } = tr({ messages: [
      { role: 'system', content: 'a' },
      { role: 'developer', content: [{ type: 'text', text: 'b' }, { type: 'text', text: 'c' }] },
      { role: 'user', content: 'hi' },
    ] });
    expect(body.system).toBe('a\n\nbc');
    expect(body.messages).toEqual([{ role: 'user', content: 'hi' }]);
  });

  it('maps content parts, data URLs and http URLs', () => {
    const { body } = tr({ messages: [{ role: 'user', content: [
      { type: 'text', text: 'look' },
      { type: 'image_url', image_url: { url: 'data:image/jpeg;base64,QUJD' } },
      { type: 'image_url', image_url: { url: 'https://x/y.png', detail: 'high' } },
    ] }] });
    expect(body.messages).toEqual([{ role: 'user', content: [
      { type: 'text', text: 'look' },
      { type: 'image', source: { type: 'base64', media_type: 'image/jpeg', data: 'QUJD' } },
      { type: 'image', source: { type: 'url', url: 'https://x/y.png' } },
    ] }]);
  });

  it('maps tool calls and groups consecutive tool messages into one user turn', () => {
    const { body } = tr({ messages: [
      { role: 'user', content: 'weather?' },
      { role: 'assistant', content: 'checking', tool_calls: [
        { id: 'c1', type: 'function', function: { name: 'get', arguments: '{"city":"Oslo"}' } },
        { id: 'c2', type: 'function', function: { name: 'get', arguments: '' } },
      ] },
      { role: 'tool', tool_call_id: 'c1', content: 'rain' },
      { role: 'tool', tool_call_id: 'c2', content: [{ type: 'text', text: 'sun' }] },
      { role: 'user', content: 'thanks' },
    ] });
    expect(body.messages).toEqual([
      { role: 'user', content: 'weather?' },
      { role: 'assistant', content: [
        { type: 'text', text: 'checking' },
        { type: 'tool_use', id: 'c1', name: 'get', input: { city: 'Oslo' } },
        { type: 'tool_use', id: 'c2', name: 'get', input: {} },
      ] },
      { role: 'user', content: [
        { type: 'tool_result', tool_use_id: 'c1', content: 'rain' },
        { type: 'tool_result', tool_use_id: 'c2', content: 'sun' },
        { type: 'text', text: 'thanks' },
      ] },
    ]);
  });

  it('merges consecutive same-role messages', () => {
    expect(tr({ messages: [{ role: 'user', content: 'a' }, { role: 'user', content: 'b' }, { role: 'assistant', content: 'c' }, { role: 'assistant', content: null }] }).body.messages)
      .toEqual([{ role: 'user', content: [{ type: 'text', text: 'a' }, { type: 'text', text: 'b' }] }, { role: 'assistant', content: 'c' }]);
  });

  it('maps tools, tool_choice and parallel_tool_calls', () => {
    const schema = { type: 'object', properties: { a: { type: 'string' } } };
    const { body, dropped } = tr({ tools: [{ type: 'function', function: { name: 'get', description: 'd', parameters: schema, strict: true } }, { type: 'function', function: { name: 'n' } }], tool_choice: 'required', parallel_tool_calls: false, messages: [] });
    expect(body.tools).toEqual([{ name: 'get', description: 'd', input_schema: schema }, { name: 'n', input_schema: { type: 'object', properties: {} } }]);
    expect(body.tool_choice).toEqual({ type: 'any', disable_parallel_tool_use: true });
    expect(dropped).toEqual(['tools.function.strict']);
    expect(tr({ tool_choice: 'auto', messages: [] }).body.tool_choice).toEqual({ type: 'auto' });
    expect(tr({ tool_choice: 'none', messages: [] }).body.tool_choice).toEqual({ type: 'none' });
    expect(tr({ tool_choice: { type: 'function', function: { name: 'get' } }, messages: [] }).body.tool_choice).toEqual({ type: 'tool', name: 'get' });
    const tools = [{ type: 'function', function: { name: 'n' } }];
    expect(tr({ tools, parallel_tool_calls: false, messages: [] }).body.tool_choice).toEqual({ type: 'auto', disable_parallel_tool_use: true });
    // Without tools the flag means nothing (and Anthropic refuses a tool_choice without tools).
    expect(tr({ parallel_tool_calls: false, messages: [] }).body.tool_choice).toBeUndefined();
    expect(tr({ parallel_tool_calls: true, messages: [] }).body.tool_choice).toBeUndefined();
  });

  it('carries user as metadata.user_id and stream; drops stream_options silently', () => {
    const { body, dropped } = tr({ user: 'u1', stream: true, stream_options: { include_usage: true }, messages: [] });
    expect(body).toMatchObject({ metadata: { user_id: 'u1' }, stream: true });
    expect(body.stream_options).toBeUndefined();
    expect(dropped).toEqual([]);
    expect(tr({ user: 7, messages: [] }).dropped).toEqual(['user']);
  });

  it('drops fields Anthropic lacks with a notice', () => {
    const { body, dropped } = tr({
      presence_penalty: 1, frequency_penalty: 1, seed: 3, logprobs: true, top_logprobs: 2, logit_bias: { 1: 2 },
      response_format: { type: 'json_object' }, reasoning_effort: 'high', whatever: 1,
      messages: [{ role: 'assistant', content: 'x', name: 'bot', reasoning_content: 'hm' }],
    });
    expect(dropped).toEqual(['frequency_penalty', 'logit_bias', 'logprobs', 'messages.name', 'presence_penalty', 'reasoning_content', 'reasoning_effort', 'response_format', 'seed', 'top_logprobs', 'whatever']);
    expect(body.messages).toEqual([{ role: 'assistant', content: 'x' }]);
  });

  describe('refusals', () => {
    it('refuses temperature above 1', () => {
      const t = refused({ temperature: 1.5, messages: [] });
      expect(t.param).toBe('temperature');
      expect(t.message).toMatch(/Anthropic accepts 0 to 1/);
      expect(tr({ temperature: 1, messages: [] }).body.temperature).toBe(1);
    });
    it('refuses n above 1', () => {
      const t = refused({ n: 2, messages: [] });
      expect(t.param).toBe('n');
      expect(t.message).toMatch(/one choice/);
    });
    it('refuses tool-call arguments that are not a JSON object', () => {
      for (const args of ['{oops', '[1]', '"s"']) {
        const t = refused({ messages: [{ role: 'user', content: 'a' }, { role: 'assistant', content: null, tool_calls: [{ id: 'x', type: 'function', function: { name: 'f', arguments: '{}' } }, { id: 'y', type: 'function', function: { name: 'f', arguments: args } }] }] });
        expect(t.param).toBe('messages.[1].tool_calls.[1].function.arguments');
        expect(t.message).toMatch(/JSON text of an object/);
      }
    });
    it('refuses audio input parts', () => {
      const t = refused({ messages: [{ role: 'user', content: [{ type: 'input_audio', input_audio: { data: 'x', format: 'wav' } }] }] });
      expect(t.param).toBe('messages.[0].content.[0]');
      expect(t.message).toMatch(/audio input cannot be sent to Anthropic/);
    });
    it('refuses other untranslatable shapes', () => {
      expect(refused({}).param).toBe('messages');
      expect(refused({ messages: [{ role: 'function', content: 'x' }] }).param).toBe('messages.[0].role');
      expect(refused({ messages: [{ role: 'user', content: [{ type: 'file', file: {} }] }] }).param).toBe('messages.[0].content.[0]');
      expect(refused({ messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'ftp://x' } }] }] }).param).toBe('messages.[0].content.[0].image_url.url');
      expect(refused({ messages: [{ role: 'system', content: [{ type: 'image_url' }] }] }).param).toBe('messages.[0].content.[0]');
      expect(refused({ tools: [{ type: 'custom', custom: {} }], messages: [] }).param).toBe('tools.[0]');
      expect(refused({ tool_choice: 'sometimes', messages: [] }).param).toBe('tool_choice');
    });
  });
});
