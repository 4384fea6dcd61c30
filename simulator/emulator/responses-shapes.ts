/**
 * The OpenAI Responses API wire shapes the emulator answers `/v1/responses` with, as OpenAI's
 * API reference describes them ("The response object", "Streaming events"): a `response` object
 * with one output item — a `message` with one `output_text` part, or a `function_call` when the
 * request forces a tool — and a stream of named events `response.created`,
 * `response.in_progress`, `response.output_item.added`, `response.content_part.added`, one
 * `response.output_text.delta` (or `response.function_call_arguments.delta`) per token, the
 * `….done` events, then `response.completed` (`response.incomplete` when cut at the output
 * limit); no `[DONE]`. A request whose `include` lists `reasoning.encrypted_content` gets a
 * reasoning item first (`output_index` 0, empty summary, `encrypted_content` the emulator's
 * own opaque string), as OpenAI's reasoning models answer stateless clients. Errors in OpenAI's
 * envelope, in-band as an `error` event. Every event has its `sequence_number`, from 0.
 */
import type { Failure, OutputWriter, StopKind, TokenCounts } from './output-writer.ts';
import { errorBody } from './openai-shapes.ts';

/** What one response is: its ids, model, and whether it is a forced function call. */
export interface ResponseHead {
  /** `resp_…`; the item ids are derived from it. */
  id: string;
  model: string;
  /** Unix seconds. */
  createdAt: number;
  /** The forced function and its call id, or null for a text answer. */
  tool: { callId: string; name: string } | null;
  /** The `encrypted_content` of a reasoning item before the answer, or null for none. */
  reasoning: string | null;
}

function wireUsage(c: TokenCounts): Record<string, unknown> {
  return {
    input_tokens: c.input,
    input_tokens_details: { cached_tokens: c.cached },
    output_tokens: c.output,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: c.input + c.output,
  };
}

/** A writer of one Responses response. */
export function responsesWriter(h: ResponseHead): OutputWriter {
  let seq = 0;
  let text = '';
  const itemId = `${h.tool ? 'fc' : 'msg'}_${h.id.replace(/^resp_/, '')}`;
  const ev = (type: string, fields: Record<string, unknown>): string => `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: seq++, ...fields })}\n\n`;
  const item = (status: string, content: string): Record<string, unknown> =>
    h.tool
      ? { type: 'function_call', id: itemId, call_id: h.tool.callId, name: h.tool.name, arguments: content, status }
      : { type: 'message', id: itemId, status, role: 'assistant', content: status === 'in_progress' ? [] : [part(content)] };
  const part = (t: string) => ({ type: 'output_text', text: t, annotations: [], logprobs: [] });
  const reasoning = h.reasoning === null ? null : { type: 'reasoning', id: `rs_${h.id.replace(/^resp_/, '')}`, summary: [], encrypted_content: h.reasoning };
  /** The answer's output index: after the reasoning item when there is one. */
  const at = reasoning === null ? 0 : 1;
  const outputOf = (answer: unknown): unknown[] => (reasoning === null ? [answer] : [reasoning, answer]);
  const response = (status: string, output: unknown[], c: TokenCounts | null, stop: StopKind | null): Record<string, unknown> => ({
    id: h.id, object: 'response', created_at: h.createdAt, status, background: false, error: null,
    incomplete_details: stop === 'length' ? { reason: 'max_output_tokens' } : null,
    instructions: null, max_output_tokens: null, model: h.model, output, parallel_tool_calls: true,
    previous_response_id: null, reasoning: { effort: null, summary: null }, store: false, temperature: 1,
    text: { format: { type: 'text' } }, tool_choice: 'auto', tools: [], top_p: 1, truncation: 'disabled',
    usage: c === null ? null : wireUsage(c), metadata: {},
  });
  const failure = (status: number, message: string): Failure => ({
    event: ev('error', { code: status === 400 ? 'invalid_prompt' : 'server_error', message, param: null }),
    status,
    body: errorBody(message, status === 400 ? 'invalid_request_error' : 'server_error', null),
  });
  return {
    preamble() {
      const r = response('in_progress', [], null, null);
      let s = ev('response.created', { response: r }) + ev('response.in_progress', { response: r });
      if (reasoning !== null) s += ev('response.output_item.added', { output_index: 0, item: reasoning }) + ev('response.output_item.done', { output_index: 0, item: reasoning });
      s += ev('response.output_item.added', { output_index: at, item: item('in_progress', '') });
      if (!h.tool) s += ev('response.content_part.added', { item_id: itemId, output_index: at, content_index: 0, part: part('') });
      return s;
    },
    piece(_i, t) {
      text += t;
      if (h.tool) return ev('response.function_call_arguments.delta', { item_id: itemId, output_index: at, delta: t });
      return ev('response.output_text.delta', { item_id: itemId, output_index: at, content_index: 0, delta: t, logprobs: [] });
    },
    tail(stop, c) {
      let s = '';
      if (h.tool) s += ev('response.function_call_arguments.done', { item_id: itemId, output_index: at, name: h.tool.name, arguments: text });
      else {
        s += ev('response.output_text.done', { item_id: itemId, output_index: at, content_index: 0, text, logprobs: [] });
        s += ev('response.content_part.done', { item_id: itemId, output_index: at, content_index: 0, part: part(text) });
      }
      const done = item('completed', text);
      s += ev('response.output_item.done', { output_index: at, item: done });
      const status = stop === 'length' ? 'incomplete' : 'completed';
      return s + ev(`response.${status}`, { response: response(status, outputOf(done), c, stop) });
    },
    whole(t, stop, c) {
      return JSON.stringify(response(stop === 'length' ? 'incomplete' : 'completed', outputOf(item('completed', t)), c, stop));
    },
    midstreamError: () => failure(500, 'emulated mid-stream error'),
    contextTooLong: (message) => failure(400, message),
  };
}

/**
 * The function a Responses request forces, or null: `tool_choice` naming a function, or
 * `required` with function tools (the first one).
 */
export function responsesToolToCall(body: Record<string, unknown>): string | null {
  const choice = body.tool_choice as { type?: unknown; name?: unknown } | string | undefined;
  if (typeof choice === 'object' && choice !== null && choice.type === 'function' && typeof choice.name === 'string') return choice.name;
  if (choice !== 'required' || !Array.isArray(body.tools)) return null;
  const first = body.tools.find((t) => (t as { type?: unknown } | null)?.type === 'function') as { name?: unknown } | undefined;
  return typeof first?.name === 'string' ? first.name : null;
}
