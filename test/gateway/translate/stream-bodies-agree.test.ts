// Property: a response streamed through a translator and accumulated the way each SDK does
// equals the non-streamed translation of the same response, however the stream was cut.
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { ChatStreamToMessages } from '../../../gateway/translate/chat-stream-to-messages.ts';
import { chatCompletionToMessage, messageToChatCompletion } from '../../../gateway/translate/message-bodies.ts';
import { MessagesStreamToChat } from '../../../gateway/translate/messages-stream-to-chat.ts';
import type { TranslatedEvent } from '../../../gateway/translate/translated.ts';

type Obj = Record<string, unknown>;

/** `s` cut at the given positions (taken modulo its length + 1); pieces may be empty. */
function cut(s: string, at: number[]): string[] {
  const points = [...new Set(at.map((p) => p % (s.length + 1)))].sort((a, b) => a - b);
  const out: string[] = [];
  let from = 0;
  for (const p of points) {
    out.push(s.slice(from, p));
    from = p;
  }
  out.push(s.slice(from));
  return out;
}

const ident = fc.stringMatching(/^[a-z][a-z0-9_]{0,7}$/);
const cuts = fc.array(fc.nat(), { maxLength: 5 });
const jsonObject = fc.dictionary(ident, fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 });

// ---- OpenAI chunks → Anthropic events ----

const completion = fc.record({
  id: ident,
  reasoning: fc.option(fc.string({ maxLength: 20 }), { nil: undefined }),
  reasoningKey: fc.constantFrom('reasoning_content', 'reasoning'),
  content: fc.option(fc.string({ maxLength: 20 }), { nil: undefined }),
  refusal: fc.option(fc.string({ maxLength: 8 }), { nil: undefined, freq: 4 }),
  toolCalls: fc.array(fc.record({
    id: ident,
    name: ident,
    // Mostly object JSON; sometimes text that is not one (the body reads it as {}).
    arguments: fc.oneof({ weight: 4, arbitrary: jsonObject.map((o) => JSON.stringify(o)) }, { weight: 1, arbitrary: fc.string({ maxLength: 8 }) }),
  }), { maxLength: 3 }),
  finish: fc.constantFrom('stop', 'length', 'tool_calls', 'function_call', 'content_filter'),
  usage: fc.option(fc.tuple(fc.nat(1000), fc.nat(1000), fc.nat(1000)).map(([p, c, cached]) => ({ prompt_tokens: p + cached, completion_tokens: c, total_tokens: p + cached + c, prompt_tokens_details: { cached_tokens: cached } })), { nil: undefined }),
});
type Completion = typeof completion extends fc.Arbitrary<infer T> ? T : never;

function wholeCompletion(c: Completion): Obj {
  const message: Obj = { role: 'assistant', content: c.content ?? null };
  if (c.reasoning !== undefined) message[c.reasoningKey] = c.reasoning;
  if (c.refusal !== undefined) message.refusal = c.refusal;
  if (c.toolCalls.length > 0) message.tool_calls = c.toolCalls.map((t) => ({ id: t.id, type: 'function', function: { name: t.name, arguments: t.arguments } }));
  const chat: Obj = { id: c.id, object: 'chat.completion', created: 1, model: 'up', choices: [{ index: 0, message, finish_reason: c.finish }] };
  if (c.usage !== undefined) chat.usage = c.usage;
  return chat;
}

function chunkStream(c: Completion, cutsOf: number[][]): Obj[] {
  const chunk = (delta: Obj, finish: string | null = null): Obj => ({ id: c.id, object: 'chat.completion.chunk', created: 1, model: 'up', choices: [{ index: 0, delta, finish_reason: finish }] });
  const out: Obj[] = [chunk({ role: 'assistant', content: '' })];
  let k = 0;
  const next = () => cutsOf[k++ % cutsOf.length] ?? [];
  if (c.reasoning !== undefined) for (const p of cut(c.reasoning, next())) out.push(chunk({ [c.reasoningKey]: p }));
  if (c.content !== undefined) for (const p of cut(c.content, next())) out.push(chunk({ content: p }));
  if (c.refusal !== undefined) for (const p of cut(c.refusal, next())) out.push(chunk({ refusal: p }));
  c.toolCalls.forEach((t, index) => {
    const [first = '', ...rest] = cut(t.arguments, next());
    out.push(chunk({ tool_calls: [{ index, id: t.id, type: 'function', function: { name: t.name, arguments: first } }] }));
    for (const p of rest) out.push(chunk({ tool_calls: [{ index, function: { arguments: p } }] }));
  });
  out.push(chunk({}, c.finish));
  if (c.usage !== undefined) out.push({ id: c.id, object: 'chat.completion.chunk', created: 1, model: 'up', choices: [], usage: c.usage });
  return out;
}

/** Accumulates Anthropic events into a Message, as the Anthropic SDK's MessageStream does. */
function accumulateAnthropic(events: TranslatedEvent[]): Obj {
  let msg: Obj = {};
  const json = new Map<number, string>();
  for (const e of events) {
    const d = JSON.parse(e.data) as Obj;
    expect(d.type).toBe(e.name);
    const content = msg.content as Obj[];
    switch (e.name) {
      case 'message_start':
        msg = structuredClone(d.message as Obj);
        break;
      case 'content_block_start':
        content[d.index as number] = structuredClone(d.content_block as Obj);
        break;
      case 'content_block_delta': {
        const block = content[d.index as number]!;
        const delta = d.delta as Obj;
        if (delta.type === 'text_delta') block.text = `${block.text as string}${delta.text as string}`;
        else if (delta.type === 'thinking_delta') block.thinking = `${block.thinking as string}${delta.thinking as string}`;
        else if (delta.type === 'input_json_delta') json.set(d.index as number, (json.get(d.index as number) ?? '') + (delta.partial_json as string));
        break;
      }
      case 'content_block_stop': {
        const block = content[d.index as number]!;
        if (block.type === 'tool_use') {
          let input: unknown = {};
          try {
            input = JSON.parse(json.get(d.index as number) || '{}');
          } catch {
            input = {};
          }
          block.input = input !== null && typeof input === 'object' && !Array.isArray(input) ? input : {};
        }
        break;
      }
      case 'message_delta': {
        const delta = d.delta as Obj;
        msg.stop_reason = delta.stop_reason;
        msg.stop_sequence = delta.stop_sequence;
        msg.usage = { ...(msg.usage as Obj), ...(d.usage as Obj) };
        break;
      }
      default:
        throw new Error(`unexpected event ${e.name}`);
    }
  }
  return msg;
}

// ---- Anthropic events → OpenAI chunks ----

const block = fc.oneof(
  fc.record({ type: fc.constant('text'), text: fc.string({ maxLength: 20 }) }),
  fc.record({ type: fc.constant('thinking'), thinking: fc.string({ maxLength: 20 }), signature: fc.base64String({ maxLength: 12 }) }),
  fc.record({ type: fc.constant('tool_use'), id: ident, name: ident, input: jsonObject }),
);
const anthropicMessage = fc.record({
  id: ident.map((s) => `msg_${s}`),
  type: fc.constant('message'),
  role: fc.constant('assistant'),
  model: fc.constant('claude'),
  content: fc.array(block, { maxLength: 5 }),
  stop_reason: fc.constantFrom('end_turn', 'stop_sequence', 'max_tokens', 'tool_use', 'refusal', 'pause_turn'),
  stop_sequence: fc.constant(null),
  usage: fc.record({ input_tokens: fc.nat(1000), output_tokens: fc.nat(1000), cache_read_input_tokens: fc.nat(1000), cache_creation_input_tokens: fc.nat(1000) }),
});
type Message = typeof anthropicMessage extends fc.Arbitrary<infer T> ? T : never;

function eventStream(m: Message, cutsOf: number[][], startOutput: number, pings: boolean): [string, Obj][] {
  const out: [string, Obj][] = [];
  const push = (name: string, data: Obj) => {
    out.push([name, { type: name, ...data }]);
    if (pings) out.push(['ping', { type: 'ping' }]);
  };
  push('message_start', { message: { ...m, content: [], stop_reason: null, usage: { ...m.usage, output_tokens: startOutput } } });
  let k = 0;
  const next = () => cutsOf[k++ % cutsOf.length] ?? [];
  m.content.forEach((b, index) => {
    if (b.type === 'text') {
      push('content_block_start', { index, content_block: { type: 'text', text: '' } });
      for (const p of cut(b.text, next())) push('content_block_delta', { index, delta: { type: 'text_delta', text: p } });
    } else if (b.type === 'thinking') {
      push('content_block_start', { index, content_block: { type: 'thinking', thinking: '', signature: '' } });
      for (const p of cut(b.thinking, next())) push('content_block_delta', { index, delta: { type: 'thinking_delta', thinking: p } });
      push('content_block_delta', { index, delta: { type: 'signature_delta', signature: b.signature } });
    } else {
      push('content_block_start', { index, content_block: { type: 'tool_use', id: b.id, name: b.name, input: {} } });
      for (const p of cut(JSON.stringify(b.input), next())) push('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: p } });
    }
    push('content_block_stop', { index });
  });
  push('message_delta', { delta: { stop_reason: m.stop_reason, stop_sequence: null }, usage: { output_tokens: m.usage.output_tokens } });
  push('message_stop', {});
  return out;
}

/** Accumulates chat chunks into a chat completion, as the OpenAI SDK's ChatCompletionStream does. */
function accumulateChat(events: TranslatedEvent[]): Obj {
  let head: Obj = {};
  let content = '';
  let reasoning = '';
  const calls: Obj[] = [];
  let finish: unknown = null;
  let usage: unknown = undefined;
  for (const e of events) {
    expect(e.name).toBeNull();
    const c = JSON.parse(e.data) as Obj;
    expect(c.object).toBe('chat.completion.chunk');
    head = { id: c.id, created: c.created, model: c.model };
    if (c.usage !== null && c.usage !== undefined) usage = c.usage;
    for (const choice of c.choices as Obj[]) {
      expect(choice.index).toBe(0);
      const d = choice.delta as Obj;
      if (typeof d.content === 'string') content += d.content;
      if (typeof d.reasoning_content === 'string') reasoning += d.reasoning_content;
      for (const tc of (d.tool_calls as Obj[] | undefined) ?? []) {
        const fn = tc.function as Obj;
        const i = tc.index as number;
        if (calls[i] === undefined) calls[i] = { id: tc.id, type: tc.type, function: { name: fn.name, arguments: '' } };
        const target = calls[i]!.function as Obj;
        target.arguments = `${target.arguments as string}${(fn.arguments as string | undefined) ?? ''}`;
      }
      if (choice.finish_reason !== null) finish = choice.finish_reason;
    }
  }
  const message: Obj = { role: 'assistant', content: content === '' ? null : content };
  if (reasoning !== '') message.reasoning_content = reasoning;
  if (calls.length > 0) message.tool_calls = calls;
  return { ...head, object: 'chat.completion', choices: [{ index: 0, message, finish_reason: finish, logprobs: null }], usage };
}

describe('streamed and non-streamed translations agree', () => {
  it('OpenAI chunks → Anthropic events accumulate to chatCompletionToMessage', () => {
    fc.assert(fc.property(completion, fc.array(cuts, { minLength: 1, maxLength: 4 }), (c, cutsOf) => {
      const t = new ChatStreamToMessages('claude-x');
      const events = chunkStream(c, cutsOf).flatMap((ch) => t.chunk(ch));
      events.push(...t.end());
      expect(events.some((e) => e.name === 'message_stop')).toBe(false);
      expect(accumulateAnthropic(events)).toEqual(chatCompletionToMessage(wholeCompletion(c), 'claude-x'));
      // The commit point: some event is a token exactly when the message has output.
      const hasOutput = (c.reasoning ?? '') !== '' || (c.content ?? '') !== '' || (c.refusal ?? '') !== '' || c.toolCalls.length > 0;
      expect(events.some((e) => e.token)).toBe(hasOutput);
    }), { numRuns: 300 });
  });

  it('Anthropic events → OpenAI chunks accumulate to messageToChatCompletion', () => {
    fc.assert(fc.property(anthropicMessage, fc.array(cuts, { minLength: 1, maxLength: 4 }), fc.nat(5), fc.boolean(), (m, cutsOf, startOutput, pings) => {
      const t = new MessagesStreamToChat({ model: 'gpt-x', includeUsage: true, createdSec: 1700000000 });
      const events = eventStream(m, cutsOf, startOutput, pings).flatMap(([name, data]) => t.event(name, data));
      expect(t.done).toBe(true);
      expect(accumulateChat(events)).toEqual(messageToChatCompletion(m, 'gpt-x', 1700000000));
      const hasOutput = m.content.some((b) => b.type === 'tool_use' || (b.type === 'text' ? b.text : b.thinking) !== '');
      expect(events.some((e) => e.token)).toBe(hasOutput);
    }), { numRuns: 300 });
  });
});
