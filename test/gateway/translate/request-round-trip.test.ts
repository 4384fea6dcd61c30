// Property: over the fields both formats share, translating a request to the other format and
// back gives the original again (up to a normal form that forgets differences of form only:
// a string vs one text block, text blocks vs their concatenation where the target joins them).
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { chatRequestToMessages } from '../../../gateway/translate/chat-to-messages.ts';
import { messagesRequestToChat } from '../../../gateway/translate/messages-to-chat.ts';
import type { RequestTranslation } from '../../../gateway/translate/translated.ts';

type Obj = Record<string, unknown>;
const DEFAULT_MAX = 4096;

function ok(t: RequestTranslation): { body: Obj; dropped: string[] } {
  if (!t.ok) throw new Error(`refused: ${t.param}: ${t.message}`);
  return t;
}

const ident = fc.stringMatching(/^[a-z][a-z0-9_]{0,7}$/);
const text = fc.string({ maxLength: 12 });
const toolInput: fc.Arbitrary<Obj> = fc.dictionary(ident, fc.oneof(fc.string({ maxLength: 6 }), fc.integer(), fc.boolean(), fc.constant(null)), { maxKeys: 3 });
const schema = fc.record({ type: fc.constant('object'), properties: fc.dictionary(ident, fc.record({ type: fc.constantFrom('string', 'number') }), { maxKeys: 2 }) });

// ---- Anthropic → chat → Anthropic ----

const aText = fc.record({ type: fc.constant('text'), text });
const aImage = fc.oneof(
  fc.record({ type: fc.constant('image'), source: fc.record({ type: fc.constant('base64'), media_type: fc.constantFrom('image/png', 'image/jpeg'), data: fc.base64String({ minLength: 4, maxLength: 12 }) }) }),
  fc.record({ type: fc.constant('image'), source: fc.record({ type: fc.constant('url'), url: ident.map((s) => `https://img.example/${s}.png`) }) }),
);
const aToolResult = fc.record({ type: fc.constant('tool_result'), tool_use_id: ident, content: fc.oneof(text, fc.array(aText, { minLength: 1, maxLength: 2 })) });
const aToolUse = fc.record({ type: fc.constant('tool_use'), id: ident, name: ident, input: toolInput });
const aUser = fc.record({ role: fc.constant('user'), content: fc.oneof(text, fc.array(fc.oneof(aText, aImage, aToolResult), { minLength: 1, maxLength: 4 })) });
const aAssistant = fc.record({ role: fc.constant('assistant'), content: fc.oneof(text, fc.array(fc.oneof(aText, aToolUse), { minLength: 1, maxLength: 3 })) });
/** Alternating turns, user first and last. */
const aMessages = fc.tuple(fc.array(fc.tuple(aUser, aAssistant), { maxLength: 3 }), aUser).map(([pairs, last]) => [...pairs.flat(), last]);
const aToolChoice = fc.tuple(
  fc.oneof(fc.record({ type: fc.constantFrom('auto', 'any', 'none') }), fc.record({ type: fc.constant('tool'), name: ident })),
  fc.boolean(),
).map(([tc, noParallel]) => (noParallel ? { ...tc, disable_parallel_tool_use: true } : tc));
const aTool = fc.record({ name: ident, description: text, input_schema: schema }, { requiredKeys: ['name', 'input_schema'] });
const anthropicRequest = fc.record({
  model: fc.constant('m'),
  system: fc.oneof(text, fc.array(aText, { minLength: 1, maxLength: 2 })),
  messages: aMessages,
  tools: fc.array(aTool, { maxLength: 2 }),
  tool_choice: aToolChoice,
  max_tokens: fc.integer({ min: 1, max: 100000 }),
  temperature: fc.double({ min: 0, max: 1, noNaN: true }),
  top_p: fc.double({ min: 0, max: 1, noNaN: true }),
  top_k: fc.integer({ min: 1, max: 500 }),
  stop_sequences: fc.array(text, { maxLength: 3 }),
  stream: fc.boolean(),
  metadata: fc.record({ user_id: ident }),
}, { requiredKeys: ['model', 'messages', 'max_tokens'] });

const joinText = (blocks: unknown[], sep: string) => (blocks as Obj[]).map((b) => b.text as string).join(sep);

/** Anthropic request normal form: system as a string, user content as a block list, assistant as {text, tools}. */
function normalAnthropic(req: Obj): Obj {
  const out: Obj = { ...req };
  if (Array.isArray(req.system)) out.system = joinText(req.system, '\n\n');
  out.messages = (req.messages as Obj[]).map((m) => {
    const blocks: Obj[] = typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : (m.content as Obj[]);
    if (m.role === 'assistant') {
      return { role: 'assistant', text: joinText(blocks.filter((b) => b.type === 'text'), ''), tools: blocks.filter((b) => b.type === 'tool_use') };
    }
    return { role: 'user', content: blocks.map((b) => (b.type === 'tool_result' && Array.isArray(b.content) ? { ...b, content: joinText(b.content, '\n') } : b)) };
  });
  return out;
}

// ---- chat → Anthropic → chat ----

const cUser = fc.record({ role: fc.constant('user'), content: fc.oneof(text, fc.array(fc.oneof(
  fc.record({ type: fc.constant('text'), text }),
  fc.record({ type: fc.constant('image_url'), image_url: fc.record({ url: fc.oneof(
    fc.tuple(fc.constantFrom('image/png', 'image/webp'), fc.base64String({ minLength: 4, maxLength: 12 })).map(([t, d]) => `data:${t};base64,${d}`),
    ident.map((s) => `https://img.example/${s}.jpg`),
  ) }) }),
), { minLength: 1, maxLength: 3 })) });
const cToolCall = fc.record({ id: ident, type: fc.constant('function'), function: fc.record({ name: ident, arguments: toolInput.map((i) => JSON.stringify(i)) }) });
const cAssistant = fc.oneof(
  fc.record({ role: fc.constant('assistant'), content: text }),
  fc.record({ role: fc.constant('assistant'), content: fc.oneof(fc.constant(null), text), tool_calls: fc.array(cToolCall, { minLength: 1, maxLength: 2 }) }),
);
const cTool = fc.record({ role: fc.constant('tool'), tool_call_id: ident, content: text });
/** Rounds of a user turn (plain, or tool results then optionally a user message) and an assistant turn. */
const cTurn = fc.oneof(cUser.map((u) => [u]), fc.tuple(fc.array(cTool, { minLength: 1, maxLength: 2 }), fc.option(cUser, { nil: undefined })).map(([t, u]) => (u ? [...t, u] : t)));
const cMessages = fc.tuple(
  fc.option(fc.record({ role: fc.constantFrom('system', 'developer'), content: text }), { nil: undefined }),
  fc.array(fc.tuple(cTurn, cAssistant), { maxLength: 3 }),
  cTurn,
).map(([sys, rounds, last]) => [...(sys ? [sys] : []), ...rounds.flatMap(([u, a]) => [...u, a]), ...last]);
const chatRequest = fc.record({
  model: fc.constant('m'),
  messages: cMessages,
  tools: fc.array(fc.record({ type: fc.constant('function'), function: fc.record({ name: ident, description: text, parameters: schema }, { requiredKeys: ['name', 'parameters'] }) }), { maxLength: 2 }),
  tool_choice: fc.oneof(fc.constantFrom('auto', 'required', 'none'), fc.record({ type: fc.constant('function'), function: fc.record({ name: ident }) })),
  parallel_tool_calls: fc.boolean(),
  max_tokens: fc.integer({ min: 1, max: 100000 }),
  temperature: fc.double({ min: 0, max: 1, noNaN: true }),
  top_p: fc.double({ min: 0, max: 1, noNaN: true }),
  top_k: fc.integer({ min: 1, max: 500 }),
  stop: fc.oneof(text, fc.array(text, { maxLength: 3 })),
  stream: fc.boolean(),
  user: ident,
}, { requiredKeys: ['model', 'messages'] });

/** Chat request normal form: system role, user parts lists, assistant {text, calls with parsed args}; same-role user/assistant neighbours merged. */
function normalChat(req: Obj): Obj {
  const out: Obj = { ...req, max_tokens: req.max_tokens ?? DEFAULT_MAX };
  if (typeof req.stop === 'string') out.stop = [req.stop];
  if (req.parallel_tool_calls === true) delete out.parallel_tool_calls;
  // Without tools, parallel_tool_calls means nothing and is not carried.
  const hasTools = Array.isArray(req.tools) && req.tools.length > 0;
  if (req.parallel_tool_calls === false && !hasTools && req.tool_choice === undefined) delete out.parallel_tool_calls;
  else if (req.parallel_tool_calls === false && req.tool_choice === undefined) out.tool_choice = 'auto';
  delete out.stream_options;
  const msgs: Obj[] = [];
  for (const m of req.messages as Obj[]) {
    const last = msgs[msgs.length - 1];
    if (m.role === 'system' || m.role === 'developer') msgs.push({ role: 'system', content: m.content });
    else if (m.role === 'user') {
      const parts = typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : (m.content as Obj[]);
      if (last?.role === 'user') (last.content as Obj[]).push(...parts);
      else msgs.push({ role: 'user', content: [...parts] });
    } else if (m.role === 'assistant') {
      const calls = ((m.tool_calls as Obj[] | undefined) ?? []).map((c) => {
        const fn = c.function as Obj;
        return { id: c.id, name: fn.name, input: JSON.parse(fn.arguments as string) as unknown };
      });
      if (last?.role === 'assistant') {
        last.text = `${last.text as string}${(m.content as string | null) ?? ''}`;
        (last.calls as unknown[]).push(...calls);
      } else msgs.push({ role: 'assistant', text: (m.content as string | null) ?? '', calls });
    } else msgs.push(m);
  }
  out.messages = msgs;
  return out;
}

describe('request translation round trips', () => {
  it('Anthropic → chat → Anthropic keeps every shared field', () => {
    fc.assert(fc.property(anthropicRequest, (req) => {
      const chat = ok(messagesRequestToChat(req, 'upstream'));
      expect(chat.dropped).toEqual([]);
      if (req.stream === true) expect(chat.body.stream_options).toEqual({ include_usage: true });
      const back = ok(chatRequestToMessages(chat.body, 'm', { defaultMaxTokens: DEFAULT_MAX }));
      expect(back.dropped).toEqual([]);
      expect(normalAnthropic(back.body)).toEqual(normalAnthropic(req));
    }), { numRuns: 300 });
  });

  it('chat → Anthropic → chat keeps every shared field', () => {
    fc.assert(fc.property(chatRequest, (req) => {
      const anthropic = ok(chatRequestToMessages(req, 'claude', { defaultMaxTokens: DEFAULT_MAX }));
      expect(anthropic.dropped).toEqual([]);
      const back = ok(messagesRequestToChat(anthropic.body, 'm'));
      expect(back.dropped).toEqual([]);
      expect(normalChat(back.body)).toEqual(normalChat(req));
    }), { numRuns: 300 });
  });
});
