import { describe, expect, it } from 'vitest';
import { chatCompletionToMessage, messageToChatCompletion } from '../../../gateway/translate/message-bodies.ts';

describe('chatCompletionToMessage', () => {
  it('maps reasoning, text, tool calls, stop reason and usage', () => {
    const msg = chatCompletionToMessage({
      id: 'abc', object: 'chat.completion', model: 'qwen',
      choices: [{ index: 0, finish_reason: 'tool_calls', message: { role: 'assistant', content: 'ok', reasoning_content: 'think', tool_calls: [
        { id: 'c1', type: 'function', function: { name: 'get', arguments: '{"a":1}' } },
        { id: 'c2', type: 'function', function: { name: 'bad', arguments: '{nope' } },
      ] } }],
      usage: { prompt_tokens: 30, completion_tokens: 7, total_tokens: 37, prompt_tokens_details: { cached_tokens: 10 } },
    }, 'claude-x');
    expect(msg).toEqual({
      id: 'msg_abc', type: 'message', role: 'assistant', model: 'claude-x',
      content: [
        { type: 'thinking', thinking: 'think', signature: '' },
        { type: 'text', text: 'ok' },
        { type: 'tool_use', id: 'c1', name: 'get', input: { a: 1 } },
        { type: 'tool_use', id: 'c2', name: 'bad', input: {} },
      ],
      stop_reason: 'tool_use', stop_sequence: null,
      usage: { input_tokens: 20, output_tokens: 7, cache_read_input_tokens: 10, cache_creation_input_tokens: 0 },
    });
  });
  it('reads `reasoning` as well and maps every finish reason', () => {
    const m = (finish: unknown, message: Record<string, unknown> = { content: 'x' }) => chatCompletionToMessage({ id: 'i', choices: [{ index: 0, finish_reason: finish, message }] }, 'm');
    expect(m('stop', { reasoning: 'r' }).content).toEqual([{ type: 'thinking', thinking: 'r', signature: '' }]);
    expect(m('stop').stop_reason).toBe('end_turn');
    expect(m('length').stop_reason).toBe('max_tokens');
    expect(m('tool_calls').stop_reason).toBe('tool_use');
    expect(m('function_call').stop_reason).toBe('tool_use');
    expect(m('content_filter').stop_reason).toBe('refusal');
    expect(m(null).stop_reason).toBe('end_turn');
    expect(m('content_filter', { content: null, refusal: 'no' }).content).toEqual([{ type: 'text', text: 'no' }]);
  });
});

describe('messageToChatCompletion', () => {
  it('maps thinking, text, tool_use, stop reason and usage', () => {
    const chat = messageToChatCompletion({
      id: 'msg_1', type: 'message', role: 'assistant', model: 'claude',
      content: [
        { type: 'thinking', thinking: 'hm', signature: 'sig' },
        { type: 'text', text: 'a' }, { type: 'text', text: 'b' },
        { type: 'tool_use', id: 't1', name: 'get', input: { x: [1] } },
      ],
      stop_reason: 'tool_use', stop_sequence: null,
      usage: { input_tokens: 5, output_tokens: 3, cache_read_input_tokens: 10, cache_creation_input_tokens: 2 },
    }, 'gpt-x', 1700000000);
    expect(chat).toEqual({
      id: 'chatcmpl-msg_1', object: 'chat.completion', created: 1700000000, model: 'gpt-x',
      choices: [{ index: 0, finish_reason: 'tool_calls', logprobs: null, message: {
        role: 'assistant', content: 'ab', reasoning_content: 'hm',
        tool_calls: [{ id: 't1', type: 'function', function: { name: 'get', arguments: '{"x":[1]}' } }],
      } }],
      usage: { prompt_tokens: 17, completion_tokens: 3, total_tokens: 20, prompt_tokens_details: { cached_tokens: 10 } },
    });
  });
  it('maps every stop reason; no text is null content', () => {
    const c = (stop: string) => messageToChatCompletion({ id: 'm', content: [], stop_reason: stop }, 'x', 0).choices as { finish_reason: string; message: Record<string, unknown> }[];
    expect(c('end_turn')[0]!.finish_reason).toBe('stop');
    expect(c('stop_sequence')[0]!.finish_reason).toBe('stop');
    expect(c('max_tokens')[0]!.finish_reason).toBe('length');
    expect(c('tool_use')[0]!.finish_reason).toBe('tool_calls');
    expect(c('refusal')[0]!.finish_reason).toBe('content_filter');
    expect(c('pause_turn')[0]!.finish_reason).toBe('stop');
    expect(c('end_turn')[0]!.message).toEqual({ role: 'assistant', content: null });
  });
});
