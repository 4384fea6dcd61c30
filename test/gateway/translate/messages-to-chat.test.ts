import { describe, expect, it } from 'vitest';
import { messagesRequestToChat } from '../../../gateway/translate/messages-to-chat.ts';
import type { RequestTranslation } from '../../../gateway/translate/translated.ts';

function ok(t: RequestTranslation): { body: Record<string, unknown>; dropped: string[] } {
  if (!t.ok) throw new Error(`refused: ${t.param}: ${t.message}`);
  return t;
}

const user = (content: unknown) => ({ role: 'user', content });

describe('messagesRequestToChat', () => {
  it('maps the sampling fields and sets the upstream model', () => {
    const { body, dropped } = ok(messagesRequestToChat({
      model: 'claude-x', max_tokens: 100, temperature: 0.5, top_p: 0.9, top_k: 40, stop_sequences: ['END'],
      messages: [user('hi')],
    }, 'qwen'));
    expect(body).toEqual({ model: 'qwen', messages: [{ role: 'user', content: 'hi' }], max_tokens: 100, temperature: 0.5, top_p: 0.9, top_k: 40, stop: ['END'] });
    expect(dropped).toEqual([]);
  });

  it('puts system text first, from a string or joined text blocks', () => {
    expect(ok(messagesRequestToChat({ system: 'be brief', messages: [user('hi')] }, 'm')).body.messages)
      .toEqual([{ role: 'system', content: 'be brief' }, { role: 'user', content: 'hi' }]);
    expect(ok(messagesRequestToChat({ system: [{ type: 'text', text: 'a' }, { type: 'text', text: 'b' }], messages: [] }, 'm')).body.messages)
      .toEqual([{ role: 'system', content: 'a\n\nb' }]);
  });

  it('asks for usage when streaming', () => {
    expect(ok(messagesRequestToChat({ stream: true, messages: [] }, 'm')).body).toMatchObject({ stream: true, stream_options: { include_usage: true } });
    expect(ok(messagesRequestToChat({ stream: false, messages: [] }, 'm')).body.stream_options).toBeUndefined();
  });

  it('turns text and image blocks into content parts', () => {
    const { body } = ok(messagesRequestToChat({ messages: [user([
      { type: 'text', text: 'look' },
      { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAAA' } },
      { type: 'image', source: { type: 'url', url: 'https://x/y.png' } },
    ])] }, 'm'));
    expect(body.messages).toEqual([{ role: 'user', content: [
      { type: 'text', text: 'look' },
      { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } },
      { type: 'image_url', image_url: { url: 'https://x/y.png' } },
    ] }]);
  });

  it('turns tool_use into tool_calls and tool_result into tool messages, in order', () => {
    const { body, dropped } = ok(messagesRequestToChat({ messages: [
      user('weather?'),
      { role: 'assistant', content: [{ type: 'text', text: 'checking' }, { type: 'tool_use', id: 't1', name: 'get', input: { city: 'Oslo' } }] },
      { role: 'assistant', content: [{ type: 'tool_use', id: 't2', name: 'get', input: {} }] },
      user([
        { type: 'tool_result', tool_use_id: 't1', content: 'rain' },
        { type: 'text', text: 'between' },
        { type: 'tool_result', tool_use_id: 't2', content: [{ type: 'text', text: 'a' }, { type: 'text', text: 'b' }], is_error: true },
        { type: 'text', text: 'after' },
      ]),
    ] }, 'm'));
    expect(body.messages).toEqual([
      { role: 'user', content: 'weather?' },
      { role: 'assistant', content: 'checking', tool_calls: [{ id: 't1', type: 'function', function: { name: 'get', arguments: '{"city":"Oslo"}' } }] },
      { role: 'assistant', content: null, tool_calls: [{ id: 't2', type: 'function', function: { name: 'get', arguments: '{}' } }] },
      { role: 'tool', tool_call_id: 't1', content: 'rain' },
      { role: 'user', content: [{ type: 'text', text: 'between' }] },
      { role: 'tool', tool_call_id: 't2', content: 'a\nb' },
      { role: 'user', content: [{ type: 'text', text: 'after' }] },
    ]);
    expect(dropped).toEqual(['is_error']);
  });

  it('drops thinking blocks and the thinking parameter with a notice', () => {
    const { body, dropped } = ok(messagesRequestToChat({ thinking: { type: 'enabled', budget_tokens: 1000 }, messages: [
      { role: 'assistant', content: [{ type: 'thinking', thinking: 'hm', signature: 's' }, { type: 'redacted_thinking', data: 'x' }, { type: 'text', text: 'hi' }] },
    ] }, 'm'));
    expect(body.messages).toEqual([{ role: 'assistant', content: 'hi' }]);
    expect(body.thinking).toBeUndefined();
    expect(dropped).toEqual(['thinking']);
  });

  it('maps tools and tool_choice', () => {
    const tools = [{ name: 'get', description: 'd', input_schema: { type: 'object', properties: { a: { type: 'string' } } } }, { type: 'custom', name: 'n', input_schema: { type: 'object' } }];
    const { body } = ok(messagesRequestToChat({ tools, tool_choice: { type: 'any', disable_parallel_tool_use: true }, messages: [] }, 'm'));
    expect(body.tools).toEqual([
      { type: 'function', function: { name: 'get', description: 'd', parameters: tools[0]!.input_schema } },
      { type: 'function', function: { name: 'n', parameters: { type: 'object' } } },
    ]);
    expect(body.tool_choice).toBe('required');
    expect(body.parallel_tool_calls).toBe(false);
    const choice = (tc: unknown) => ok(messagesRequestToChat({ tool_choice: tc, messages: [] }, 'm')).body;
    expect(choice({ type: 'auto' })).toMatchObject({ tool_choice: 'auto' });
    expect(choice({ type: 'auto' }).parallel_tool_calls).toBeUndefined();
    expect(choice({ type: 'none' })).toMatchObject({ tool_choice: 'none' });
    expect(choice({ type: 'tool', name: 'get' })).toMatchObject({ tool_choice: { type: 'function', function: { name: 'get' } } });
  });

  it('carries metadata.user_id as user and drops other metadata keys by name', () => {
    const { body, dropped } = ok(messagesRequestToChat({ metadata: { user_id: 'u1', foo: 1 }, messages: [] }, 'm'));
    expect(body.user).toBe('u1');
    expect(dropped).toEqual(['metadata.foo']);
    expect(ok(messagesRequestToChat({ metadata: { user_id: 5 }, messages: [] }, 'm')).dropped).toEqual(['metadata.user_id']);
    expect(ok(messagesRequestToChat({ metadata: { user_id: null }, messages: [] }, 'm')).dropped).toEqual([]);
    expect(ok(messagesRequestToChat({ metadata: 'x', messages: [] }, 'm')).dropped).toEqual(['metadata']);
  });

  it('drops cache_control wherever it appears, and unknown fields by name', () => {
    const { dropped } = ok(messagesRequestToChat({ service_tier: 'auto', container: 'c', messages: [user([{ type: 'text', text: 'x', cache_control: { type: 'ephemeral' } }])] }, 'm'));
    expect(dropped).toEqual(['cache_control', 'container', 'service_tier']);
    const inResult = ok(messagesRequestToChat({ messages: [user([{ type: 'tool_result', tool_use_id: 't', content: [{ type: 'text', text: 'r', cache_control: { type: 'ephemeral' } }] }])] }, 'm'));
    expect(inResult.dropped).toEqual(['cache_control']);
  });

  it('translates a request shaped like Claude Code', () => {
    const t = ok(messagesRequestToChat({
      model: 'claude-sonnet-4-5',
      max_tokens: 32000,
      stream: true,
      temperature: 1,
      system: [
        { type: 'text', text: "You are Claude Code, Anthropic's official CLI for Claude.", cache_control: { type: 'ephemeral' } },
        { type: 'text', text: 'Here is useful information about the environment…', cache_control: { type: 'ephemeral' } },
      ],
      metadata: { user_id: 'user_abc_account__session_123' },
      thinking: { type: 'enabled', budget_tokens: 31999 },
      tools: [
        { name: 'Bash', description: 'Run a command', input_schema: { type: 'object', properties: { command: { type: 'string' } }, required: ['command'] } },
        { name: 'Read', description: 'Read a file', input_schema: { type: 'object', properties: { file_path: { type: 'string' } } }, cache_control: { type: 'ephemeral' } },
      ],
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'list files' }] },
        { role: 'assistant', content: [
          { type: 'thinking', thinking: 'I should run ls', signature: 'EqQBCkYIBxgC' },
          { type: 'tool_use', id: 'toolu_01', name: 'Bash', input: { command: 'ls' } },
        ] },
        { role: 'user', content: [
          { type: 'tool_result', tool_use_id: 'toolu_01', content: 'a.txt\nb.txt' },
          { type: 'text', text: 'now read a.txt', cache_control: { type: 'ephemeral' } },
        ] },
      ],
    }, 'qwen3-coder'));
    expect(t.dropped).toEqual(['cache_control', 'thinking']);
    expect(t.body).toMatchObject({ model: 'qwen3-coder', user: 'user_abc_account__session_123', max_tokens: 32000, stream: true, stream_options: { include_usage: true }, temperature: 1 });
    expect(t.body.messages).toEqual([
      { role: 'system', content: "You are Claude Code, Anthropic's official CLI for Claude.\n\nHere is useful information about the environment…" },
      { role: 'user', content: [{ type: 'text', text: 'list files' }] },
      { role: 'assistant', content: null, tool_calls: [{ id: 'toolu_01', type: 'function', function: { name: 'Bash', arguments: '{"command":"ls"}' } }] },
      { role: 'tool', tool_call_id: 'toolu_01', content: 'a.txt\nb.txt' },
      { role: 'user', content: [{ type: 'text', text: 'now read a.txt' }] },
    ]);
    expect((t.body.tools as unknown[]).length).toBe(2);
  });

  describe('refusals', () => {
    const refused = (body: Record<string, unknown>) => {
      const t = messagesRequestToChat(body, 'm');
      if (t.ok) throw new Error('expected a refusal');
      return t;
    };
    it('refuses document blocks, naming the block', () => {
      const t = refused({ messages: [user('a'), { role: 'assistant', content: 'b' }, user([{ type: 'document', source: { type: 'text', data: 'x', media_type: 'text/plain' } }])] });
      expect(t.param).toBe('messages.[2].content.[0]');
      expect(t.message).toMatch(/document blocks cannot be sent.*text block/);
    });
    it('refuses server tools, naming the tool', () => {
      const t = refused({ tools: [{ name: 'a', input_schema: {} }, { type: 'web_search_20250305', name: 'web_search', max_uses: 3 }], messages: [] });
      expect(t.param).toBe('tools.[1]');
      expect(t.message).toMatch(/server tools .*custom tool/);
    });
    it('refuses other untranslatable shapes', () => {
      expect(refused({}).param).toBe('messages');
      expect(refused({ messages: [{ role: 'system', content: 'x' }] }).param).toBe('messages.[0].role');
      expect(refused({ messages: [{ role: 'user', content: 3 }] }).param).toBe('messages.[0].content');
      expect(refused({ messages: [user([{ type: 'search_result' }])] }).param).toBe('messages.[0].content.[0]');
      expect(refused({ messages: [user([{ type: 'image', source: { type: 'file', file_id: 'f' } }])] }).param).toBe('messages.[0].content.[0].source');
      expect(refused({ messages: [user([{ type: 'tool_result', tool_use_id: 't', content: [{ type: 'image', source: {} }] }])] }).param).toBe('messages.[0].content.[0].content.[0]');
      expect(refused({ messages: [{ role: 'assistant', content: [{ type: 'server_tool_use' }] }] }).param).toBe('messages.[0].content.[0]');
      expect(refused({ system: [{ type: 'image' }], messages: [] }).param).toBe('system.[0]');
      expect(refused({ tool_choice: { type: 'sometimes' }, messages: [] }).param).toBe('tool_choice.type');
    });
  });
});
