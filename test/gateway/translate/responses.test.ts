// The pure Responses ⇄ chat translation (`gateway/translate/`): properties that a chat answer
// turned into Responses output and sent back as the next turn's input becomes the same assistant
// message (text and tool calls), and that a chat stream cut anywhere, translated into Responses
// events and accumulated by the official `openai` client's own accumulator, gives the body
// translation's response; plus the request mapping and its refusals.
import fc from 'fast-check';
import { accumulateResponse } from 'openai/lib/responses/ResponseAccumulator';
import { describe, expect, it } from 'vitest';
import { ChatStreamToResponses } from '../../../gateway/translate/chat-stream-to-responses.ts';
import { chatCompletionToResponse, type ResponseFrame } from '../../../gateway/translate/chat-to-responses.ts';
import { inputForEndpoint, NativeResponsesStream, rewriteResponse } from '../../../gateway/translate/native-responses.ts';
import { responsesRequestToChat } from '../../../gateway/translate/responses-to-chat.ts';

type Obj = Record<string, unknown>;

const frame: ResponseFrame = { id: 'resp_dGVzdA_0123456789abcdef01234567', createdAtSec: 1_700_000_000, model: 'alias', request: { input: 'hi' } };

/** `s` cut at the given positions (modulo its length + 1); pieces may be empty. */
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
const answer = fc.record({
  content: fc.option(fc.string({ maxLength: 20 }), { nil: undefined }),
  reasoning: fc.option(fc.string({ minLength: 1, maxLength: 12 }), { nil: undefined, freq: 3 }),
  toolCalls: fc.array(fc.record({ id: ident, name: ident, arguments: fc.dictionary(ident, fc.jsonValue({ maxDepth: 1 }), { maxKeys: 2 }).map((o) => JSON.stringify(o)) }), { maxLength: 3 }),
  finish: fc.constantFrom('stop', 'length', 'tool_calls'),
  usage: fc.tuple(fc.nat(500), fc.nat(500), fc.nat(100)).map(([p, c, cached]) => ({ prompt_tokens: p + cached, completion_tokens: c, total_tokens: p + cached + c, prompt_tokens_details: { cached_tokens: cached } })),
});
type Answer = typeof answer extends fc.Arbitrary<infer T> ? T : never;

function chatBody(a: Answer): Obj {
  const message: Obj = { role: 'assistant', content: a.content ?? null };
  if (a.reasoning !== undefined) message.reasoning_content = a.reasoning;
  if (a.toolCalls.length > 0) message.tool_calls = a.toolCalls.map((t) => ({ id: t.id, type: 'function', function: { name: t.name, arguments: t.arguments } }));
  return { id: 'c1', object: 'chat.completion', model: 'up', choices: [{ index: 0, message, finish_reason: a.finish }], usage: a.usage };
}

function chatChunks(a: Answer, cuts: number[][]): Obj[] {
  const chunk = (delta: Obj, finish: string | null = null): Obj => ({ id: 'c1', object: 'chat.completion.chunk', model: 'up', choices: [{ index: 0, delta, finish_reason: finish }] });
  const out: Obj[] = [chunk({ role: 'assistant', content: '' })];
  let k = 0;
  const next = () => cuts[k++ % Math.max(1, cuts.length)] ?? [];
  if (a.reasoning !== undefined) for (const p of cut(a.reasoning, next())) out.push(chunk({ reasoning_content: p }));
  if (a.content !== undefined) for (const p of cut(a.content, next())) out.push(chunk({ content: p }));
  a.toolCalls.forEach((t, index) => {
    const [first = '', ...rest] = cut(t.arguments, next());
    out.push(chunk({ tool_calls: [{ index, id: t.id, type: 'function', function: { name: t.name, arguments: first } }] }));
    for (const p of rest) out.push(chunk({ tool_calls: [{ index, function: { arguments: p } }] }));
  });
  out.push(chunk({}, a.finish));
  out.push({ id: 'c1', object: 'chat.completion.chunk', model: 'up', choices: [], usage: a.usage });
  return out;
}

describe('chat → Responses → chat', () => {
  it('an answer sent back as the next turn input is the same assistant message: text and tool calls', () => {
    fc.assert(
      fc.property(answer, (a) => {
        const response = chatCompletionToResponse(chatBody(a), frame);
        const t = responsesRequestToChat({ model: 'alias', input: [{ role: 'user', content: 'q' }, ...(response.output as unknown[])] }, 'up');
        expect(t.ok).toBe(true);
        if (!t.ok) return;
        const messages = t.body.messages as Obj[];
        const text = a.content ?? '';
        // An answer of reasoning alone leaves nothing a chat server can be sent back.
        if (text === '' && a.toolCalls.length === 0 && a.reasoning !== undefined) {
          expect(messages).toHaveLength(1);
          return;
        }
        expect(messages).toHaveLength(2);
        const m = messages[1]!;
        expect(m.role).toBe('assistant');
        if (a.toolCalls.length === 0) expect(m.content).toBe(text);
        else {
          expect(m.content ?? '').toBe(text);
          expect(m.tool_calls).toEqual(a.toolCalls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } })));
        }
        // Reasoning cannot be replayed to a chat server: dropped, and named.
        if (a.reasoning !== undefined) expect(t.dropped).toContain('input.[1].reasoning');
      }),
    );
  });

  it("a stream cut anywhere, accumulated by the openai client, is the body translation's response", () => {
    fc.assert(
      fc.property(answer, fc.array(fc.array(fc.nat(), { maxLength: 4 }), { maxLength: 4 }), (a, cuts) => {
        const tr = new ChatStreamToResponses(frame);
        const events = [...chatChunks(a, cuts).flatMap((c) => tr.chunk(c)), ...tr.end()];
        let snapshot: unknown;
        events.forEach((e, i) => {
          const d = JSON.parse(e.data) as Obj;
          expect(d.type).toBe(e.name);
          expect(d.sequence_number).toBe(i);
          snapshot = accumulateResponse(d as never, snapshot as never);
        });
        const body = chatCompletionToResponse(chatBody(a), frame);
        const got = snapshot as Obj;
        expect(got.output).toEqual(body.output);
        expect(got.status).toBe(body.status);
        expect(got.usage).toEqual(body.usage);
        expect(tr.response).toEqual(body);
        // The commit point: the first output-carrying event is a delta or a function call.
        const firstToken = events.find((e) => e.token);
        if (firstToken) expect(firstToken.name).toMatch(/delta$|output_item\.added$/);
      }),
    );
  });
});

describe('Responses request → chat request', () => {
  it('maps instructions, items, tools, tool_choice, limits and text.format; names what it drops', () => {
    const t = responsesRequestToChat(
      {
        model: 'alias',
        instructions: 'Be brief.',
        input: [
          { role: 'user', content: [{ type: 'input_text', text: 'look' }, { type: 'input_image', image_url: 'data:image/png;base64,AAAA', detail: 'low' }] },
          { type: 'function_call', call_id: 'c1', name: 'f', arguments: '{}' },
          { type: 'function_call', call_id: 'c2', name: 'g', arguments: '{"a":1}' },
          { type: 'function_call_output', call_id: 'c1', output: 'one' },
          { type: 'function_call_output', call_id: 'c2', output: [{ type: 'input_text', text: 'two' }] },
        ],
        tools: [{ type: 'function', name: 'f', description: 'd', parameters: { type: 'object' }, strict: true }],
        tool_choice: { type: 'function', name: 'f' },
        max_output_tokens: 50,
        temperature: 0.5,
        text: { format: { type: 'json_schema', name: 'out', schema: { type: 'object' }, strict: true }, verbosity: 'low' },
        reasoning: { effort: 'low', summary: 'auto' },
        store: true,
        metadata: { a: 'b' },
        stream: true,
        previous_response_id: 'resp_x',
      },
      'up-model',
    );
    expect(t).toEqual({
      ok: true,
      body: {
        model: 'up-model',
        messages: [
          { role: 'system', content: 'Be brief.' },
          { role: 'user', content: [{ type: 'text', text: 'look' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA', detail: 'low' } }] },
          { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } }, { id: 'c2', type: 'function', function: { name: 'g', arguments: '{"a":1}' } }] },
          { role: 'tool', tool_call_id: 'c1', content: 'one' },
          { role: 'tool', tool_call_id: 'c2', content: 'two' },
        ],
        tools: [{ type: 'function', function: { name: 'f', description: 'd', parameters: { type: 'object' }, strict: true } }],
        tool_choice: { type: 'function', function: { name: 'f' } },
        max_tokens: 50,
        temperature: 0.5,
        response_format: { type: 'json_schema', json_schema: { name: 'out', schema: { type: 'object' }, strict: true } },
        reasoning_effort: 'low',
        stream: true,
        stream_options: { include_usage: true },
      },
      dropped: ['metadata', 'reasoning.summary', 'store', 'text.verbosity'],
    });
  });

  it('refuses what chat cannot carry, naming the field', () => {
    expect(responsesRequestToChat({ model: 'm', input: 'x', tools: [{ type: 'web_search' }] }, 'u')).toMatchObject({ ok: false, param: 'tools.[0].type' });
    expect(responsesRequestToChat({ model: 'm', input: [{ type: 'file_search_call', id: 'x' }] }, 'u')).toMatchObject({ ok: false, param: 'input.[0].type' });
    expect(responsesRequestToChat({ model: 'm', input: [{ role: 'user', content: [{ type: 'input_file', file_id: 'f' }] }] }, 'u')).toMatchObject({ ok: false, param: 'input.[0].content.[0].type' });
    expect(responsesRequestToChat({ model: 'm', input: [{ role: 'user', content: [{ type: 'input_image', file_id: 'f' }] }] }, 'u')).toMatchObject({ ok: false, param: 'input.[0].content.[0]' });
    expect(responsesRequestToChat({ model: 'm', input: [{ role: 'tool', content: 'x' }] }, 'u')).toMatchObject({ ok: false, param: 'input.[0].role' });
  });
});

describe('native Responses streams', () => {
  it('get the gateway id and model, mark output events, and read the final usage and in-band failures', () => {
    const s = new NativeResponsesStream('resp_gw', 'alias', { previous_response_id: 'resp_prev' }, 'ep-a');
    const created = s.chunk({ type: 'response.created', sequence_number: 0, response: { id: 'resp_up', model: 'up', output: [] } })[0]!;
    expect(JSON.parse(created.data).response).toMatchObject({ id: 'resp_gw', model: 'alias', previous_response_id: 'resp_prev', store: true });
    expect(created.token).toBe(false);
    expect(s.chunk({ type: 'response.output_text.delta', delta: '' })[0]!.token).toBe(false);
    expect(s.chunk({ type: 'response.output_text.delta', delta: 'x' })[0]!.token).toBe(true);
    expect(s.chunk({ type: 'response.output_item.added', item: { type: 'function_call' } })[0]!.token).toBe(true);
    expect(s.finished).toBe(false);
    s.chunk({ type: 'response.completed', response: { id: 'resp_up', usage: { input_tokens: 7, output_tokens: 3, input_tokens_details: { cached_tokens: 2 } } } });
    expect(s.finished).toBe(true);
    expect(s.usage).toEqual({ inputTokens: 7, outputTokens: 3, cachedTokens: 2 });
    expect(s.response?.id).toBe('resp_gw');
    expect(s.failure({ type: 'error', code: 'rate_limit_exceeded', message: 'slow down' })).toMatchObject({ status: 429, message: 'slow down' });
    expect(s.failure({ type: 'response.failed', response: { error: { code: 'server_error', message: 'boom' } } })).toMatchObject({ status: 500, message: 'boom' });
    expect(s.failure({ type: 'response.output_text.delta' })).toBeNull();
  });
});

describe('reasoning encrypted_content', () => {
  it('is tagged with the endpoint that wrote it; only that endpoint gets it back, untagged', () => {
    const r = rewriteResponse({ id: 'up', output: [{ type: 'reasoning', id: 'rs_1', summary: [], encrypted_content: 'SECRET' }, { type: 'message', id: 'm' }] }, 'resp_gw', 'alias', {}, 'ep-a');
    const [reasoning, message] = r.output as Obj[];
    expect(reasoning!.encrypted_content).toMatch(/^swy1\.[A-Za-z0-9_-]+\.SECRET$/);
    expect(message).toEqual({ type: 'message', id: 'm' });
    const input = [{ role: 'user', content: 'q' }, reasoning, message, { type: 'reasoning', encrypted_content: 'client-own' }];
    expect(inputForEndpoint(input, 'ep-a')).toEqual({ input: [input[0], { ...reasoning, encrypted_content: 'SECRET' }, message, input[3]], dropped: [] });
    expect(inputForEndpoint(input, 'ep-b')).toEqual({ input: [input[0], message, input[3]], dropped: ['input.[1]'] });
    const s = new NativeResponsesStream('resp_gw', 'alias', {}, 'ep-a');
    const done = JSON.parse(s.chunk({ type: 'response.output_item.done', output_index: 0, item: { type: 'reasoning', encrypted_content: 'X' } })[0]!.data) as Obj;
    expect((done.item as Obj).encrypted_content).toMatch(/^swy1\..+\.X$/);
  });
});
