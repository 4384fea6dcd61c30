import { describe, expect, it } from 'vitest';
import { ChatStreamToMessages } from '../../../gateway/translate/chat-stream-to-messages.ts';
import { MessagesStreamToChat } from '../../../gateway/translate/messages-stream-to-chat.ts';
import type { TranslatedEvent } from '../../../gateway/translate/translated.ts';

const chunk = (delta: Record<string, unknown>, finish: string | null = null) => ({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'q', choices: [{ index: 0, delta, finish_reason: finish }] });
const parsed = (events: TranslatedEvent[]) => events.map((e) => ({ name: e.name, data: JSON.parse(e.data) as Record<string, unknown>, token: e.token }));

describe('ChatStreamToMessages', () => {
  it('emits Anthropic events in order, with token flags, and no message_stop', () => {
    const t = new ChatStreamToMessages('claude-x');
    const out = [
      ...t.chunk(chunk({ role: 'assistant', content: '' })),
      ...t.chunk(chunk({ reasoning_content: 'hm' })),
      ...t.chunk(chunk({ content: 'Hi' })),
      ...t.chunk(chunk({ tool_calls: [{ index: 0, id: 'call_a', type: 'function', function: { name: 'get', arguments: '' } }] })),
      ...t.chunk(chunk({ tool_calls: [{ index: 0, function: { arguments: '{"a":' } }] })),
      ...t.chunk(chunk({ tool_calls: [{ index: 0, function: { arguments: '1}' } }] })),
      ...t.chunk(chunk({ tool_calls: [{ index: 1, id: 'call_b', type: 'function', function: { name: 'put', arguments: '{}' } }] })),
      ...t.chunk(chunk({}, 'tool_calls')),
      ...t.chunk({ id: 'c1', object: 'chat.completion.chunk', choices: [], usage: { prompt_tokens: 12, completion_tokens: 4, prompt_tokens_details: { cached_tokens: 2 } } }),
      ...t.end(),
    ];
    const ev = parsed(out);
    expect(ev.map((e) => [e.name, e.token])).toEqual([
      ['message_start', false],
      ['content_block_start', false], ['content_block_delta', true], ['content_block_stop', false],
      ['content_block_start', false], ['content_block_delta', true], ['content_block_stop', false],
      // Tool calls are gathered and sent whole at the end, one input_json_delta each.
      ['content_block_start', true], ['content_block_delta', true], ['content_block_stop', false],
      ['content_block_start', true], ['content_block_delta', true], ['content_block_stop', false],
      ['message_delta', false],
    ]);
    expect(ev[0]!.data).toEqual({ type: 'message_start', message: { id: 'msg_c1', type: 'message', role: 'assistant', model: 'claude-x', content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 0, output_tokens: 0 } } });
    expect(ev[1]!.data).toEqual({ type: 'content_block_start', index: 0, content_block: { type: 'thinking', thinking: '', signature: '' } });
    expect(ev[2]!.data).toEqual({ type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'hm' } });
    expect(ev[5]!.data).toEqual({ type: 'content_block_delta', index: 1, delta: { type: 'text_delta', text: 'Hi' } });
    expect(ev[7]!.data).toEqual({ type: 'content_block_start', index: 2, content_block: { type: 'tool_use', id: 'call_a', name: 'get', input: {} } });
    expect(ev[8]!.data).toEqual({ type: 'content_block_delta', index: 2, delta: { type: 'input_json_delta', partial_json: '{"a":1}' } });
    expect(ev[12]!.data).toEqual({ type: 'content_block_stop', index: 3 });
    expect(ev[13]!.data).toEqual({ type: 'message_delta', delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { input_tokens: 10, output_tokens: 4, cache_read_input_tokens: 2, cache_creation_input_tokens: 0 } });
    expect(t.usage).toEqual({ inputTokens: 12, outputTokens: 4, cachedTokens: 2 });
    expect(t.end()).toEqual([]);
  });
  it('parallel tool calls streamed interleaved, or under one index with distinct ids, come out as whole blocks', () => {
    const blocks = (chunks: Array<Record<string, unknown>>) => {
      const t = new ChatStreamToMessages('m');
      const ev = parsed([...chunks.flatMap((c) => t.chunk(chunk(c))), ...t.end()]);
      return ev.filter((e) => e.name === 'content_block_start').map((e, i) => ({
        ...(e.data.content_block as { type: string; id: string; name: string; input: unknown }),
        args: ev.filter((d) => d.name === 'content_block_delta' && d.data.index === i).map((d) => (d.data.delta as { partial_json: string }).partial_json).join(''),
      }));
    };
    const interleaved = blocks([
      { tool_calls: [{ index: 0, id: 'c1', function: { name: 'a', arguments: '' } }] },
      { tool_calls: [{ index: 1, id: 'c2', function: { name: 'b', arguments: '{"y"' } }] },
      { tool_calls: [{ index: 0, function: { arguments: '{"x":' } }] },
      { tool_calls: [{ index: 1, function: { arguments: ':2}' } }] },
      { tool_calls: [{ index: 0, function: { arguments: '1}' } }] },
    ]);
    expect(interleaved).toEqual([
      { type: 'tool_use', id: 'c1', name: 'a', input: {}, args: '{"x":1}' },
      { type: 'tool_use', id: 'c2', name: 'b', input: {}, args: '{"y":2}' },
    ]);
    const oneIndex = blocks([
      { tool_calls: [{ index: 0, id: 'c1', function: { name: 'a', arguments: '{"x":1}' } }] },
      { tool_calls: [{ index: 0, id: 'c2', function: { name: 'b', arguments: '{"y":2}' } }] },
    ]);
    expect(oneIndex.map((b) => [b.id, b.name, b.args])).toEqual([
      ['c1', 'a', '{"x":1}'],
      ['c2', 'b', '{"y":2}'],
    ]);
  });

  it("names the matched stop sequence when the upstream reports it (vLLM's stop_reason)", () => {
    const t = new ChatStreamToMessages('m');
    t.chunk(chunk({ content: 'the quick brown' }));
    t.chunk({ id: 'c1', choices: [{ index: 0, delta: {}, finish_reason: 'stop', stop_reason: 'fox' }] });
    const last = parsed(t.end()).at(-1)!;
    expect(last.data.delta).toEqual({ stop_reason: 'stop_sequence', stop_sequence: 'fox' });
  });

  it('translates only choice 0 and reads `reasoning` too', () => {
    const t = new ChatStreamToMessages('m');
    const out = parsed([
      ...t.chunk({ id: 'x', choices: [{ index: 1, delta: { content: 'other' } }, { index: 0, delta: { reasoning: 'r' } }] }),
      ...t.end(),
    ]);
    expect(out.filter((e) => e.name === 'content_block_delta').map((e) => e.data.delta)).toEqual([{ type: 'thinking_delta', thinking: 'r' }]);
    expect(out.at(-1)!.data).toMatchObject({ delta: { stop_reason: 'end_turn' } });
    expect(t.usage).toBeNull();
  });
  it('streams a refusal as text', () => {
    const t = new ChatStreamToMessages('m');
    const out = parsed([...t.chunk(chunk({ refusal: 'no' })), ...t.end()]);
    expect(out.map((e) => e.name)).toEqual(['message_start', 'content_block_start', 'content_block_delta', 'content_block_stop', 'message_delta']);
    expect(out[2]!.data.delta).toEqual({ type: 'text_delta', text: 'no' });
    expect(out[2]!.token).toBe(true);
  });
});

describe('MessagesStreamToChat', () => {
  const feed = (includeUsage: boolean) => {
    const t = new MessagesStreamToChat({ model: 'gpt-x', includeUsage, createdSec: 1700000000 });
    const events: [string, Record<string, unknown>][] = [
      ['message_start', { type: 'message_start', message: { id: 'msg_1', usage: { input_tokens: 20, output_tokens: 1, cache_read_input_tokens: 5, cache_creation_input_tokens: 0 } } }],
      ['ping', { type: 'ping' }],
      ['content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'thinking', thinking: '', signature: '' } }],
      ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'hm' } }],
      ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'signature_delta', signature: 'sig' } }],
      ['content_block_stop', { type: 'content_block_stop', index: 0 }],
      ['content_block_start', { type: 'content_block_start', index: 1, content_block: { type: 'text', text: '' } }],
      ['content_block_delta', { type: 'content_block_delta', index: 1, delta: { type: 'text_delta', text: 'Hi' } }],
      ['content_block_stop', { type: 'content_block_stop', index: 1 }],
      ['content_block_start', { type: 'content_block_start', index: 2, content_block: { type: 'tool_use', id: 't1', name: 'get', input: {} } }],
      ['content_block_delta', { type: 'content_block_delta', index: 2, delta: { type: 'input_json_delta', partial_json: '{"a":1}' } }],
      ['content_block_stop', { type: 'content_block_stop', index: 2 }],
      ['message_delta', { type: 'message_delta', delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { output_tokens: 9 } }],
    ];
    const out = events.flatMap(([n, d]) => t.event(n, d));
    expect(t.done).toBe(false);
    expect(t.event('message_stop', { type: 'message_stop' })).toEqual([]);
    expect(t.done).toBe(true);
    return { t, out };
  };
  it('emits chunks with deltas, token flags, finish and usage chunks', () => {
    const { t, out } = feed(true);
    expect(out.every((e) => e.name === null)).toBe(true);
    const ch = parsed(out).map((e) => e.data);
    expect(out.map((e) => e.token)).toEqual([false, true, true, true, true, false, false]);
    expect(ch[0]).toEqual({ id: 'chatcmpl-msg_1', object: 'chat.completion.chunk', created: 1700000000, model: 'gpt-x', choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null, logprobs: null }], usage: null });
    const deltas = ch.map((c) => (c.choices as { delta: unknown }[])[0]?.delta);
    expect(deltas.slice(1, 5)).toEqual([
      { reasoning_content: 'hm' },
      { content: 'Hi' },
      { tool_calls: [{ index: 0, id: 't1', type: 'function', function: { name: 'get', arguments: '' } }] },
      { tool_calls: [{ index: 0, function: { arguments: '{"a":1}' } }] },
    ]);
    expect(ch[5]!.choices).toEqual([{ index: 0, delta: {}, finish_reason: 'tool_calls', logprobs: null }]);
    expect(ch[6]).toMatchObject({ choices: [], usage: { prompt_tokens: 25, completion_tokens: 9, total_tokens: 34, prompt_tokens_details: { cached_tokens: 5 } } });
    expect(t.usage).toEqual({ inputTokens: 25, outputTokens: 9, cachedTokens: 5 });
  });
  it('sends no usage chunk or usage keys when the client did not ask', () => {
    const { out } = feed(false);
    expect(out).toHaveLength(6);
    expect(parsed(out).some((e) => 'usage' in e.data)).toBe(false);
  });
  it('counts tool blocks from 0 whatever their content index', () => {
    const t = new MessagesStreamToChat({ model: 'm', includeUsage: false, createdSec: 0 });
    t.event('message_start', { message: { id: 'a' } });
    const out = parsed([
      ...t.event('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }),
      ...t.event('content_block_start', { index: 1, content_block: { type: 'tool_use', id: 'x', name: 'f' } }),
      ...t.event('content_block_start', { index: 2, content_block: { type: 'tool_use', id: 'y', name: 'g' } }),
      ...t.event('content_block_delta', { index: 2, delta: { type: 'input_json_delta', partial_json: '{}' } }),
      ...t.event('content_block_delta', { index: 1, delta: { type: 'input_json_delta', partial_json: '' } }),
    ]);
    expect(out.map((e) => (e.data.choices as { delta: { tool_calls: { index: number }[] } }[])[0]!.delta.tool_calls[0]!.index)).toEqual([0, 1, 1]);
  });
});
