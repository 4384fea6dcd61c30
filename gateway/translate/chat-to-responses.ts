/**
 * An OpenAI chat completion → an OpenAI Responses `response` object, for a `/v1/responses`
 * client served by a chat-completions upstream, and the pieces the stream translator
 * (`chat-stream-to-responses.ts`) shares with it. Pure: the id, creation time and echoed request
 * fields are the caller's.
 *
 * Output items, in the order the Responses API gives them (OpenAI's API reference, "The response
 * object"): a `reasoning` item when the message carries reasoning text (`reasoning_content`, or
 * `reasoning`), a `message` item with one `output_text` part (a refusal's text included; an
 * empty one only when there is no other item), then one `function_call` item per tool call.
 * `finish_reason: "length"` makes the
 * response `incomplete` with `incomplete_details.reason: "max_output_tokens"`; anything else is
 * `completed`. Usage: prompt → `input_tokens` (cached → `input_tokens_details.cached_tokens`),
 * completion → `output_tokens`, reasoning tokens when the upstream reports them.
 */
import { count, isRecord, nonEmpty, str } from './json-values.ts';

/** What a translated response echoes besides its output: the gateway's id, the time, the request. */
export interface ResponseFrame {
  /** The response id the client sees (`resp_…`, naming the target, `endpoints/responses/`). */
  readonly id: string;
  /** Unix seconds. */
  readonly createdAtSec: number;
  /** The model name the client asked for. */
  readonly model: string;
  /** The client's Responses request body (its echoed fields: instructions, tools, …). */
  readonly request: Record<string, unknown>;
}

/** Ids of the output items of response `responseId`: `<prefix>_<n>_<suffix of the response id>`. */
export function itemId(prefix: 'msg' | 'fc' | 'rs', responseId: string, n: number): string {
  return `${prefix}_${n}_${responseId.replace(/^resp_/, '')}`;
}

/**
 * The Responses usage object of an OpenAI chat usage object (missing counts are 0):
 * `{input_tokens, input_tokens_details.cached_tokens, output_tokens,
 * output_tokens_details.reasoning_tokens, total_tokens}`.
 */
export function responsesUsageFromChat(u: unknown): Record<string, unknown> {
  const r = isRecord(u) ? u : {};
  const pd = isRecord(r.prompt_tokens_details) ? r.prompt_tokens_details : {};
  const cd = isRecord(r.completion_tokens_details) ? r.completion_tokens_details : {};
  const input = count(r.prompt_tokens);
  const output = count(r.completion_tokens);
  return {
    input_tokens: input,
    input_tokens_details: { cached_tokens: Math.min(count(pd.cached_tokens), input) },
    output_tokens: output,
    output_tokens_details: { reasoning_tokens: count(cd.reasoning_tokens) },
    total_tokens: input + output,
  };
}

/**
 * The response object around `output` with `status` (`in_progress`, `completed`,
 * `incomplete`, `failed`) and `usage` (null while in progress): the request's echoed fields
 * with OpenAI's defaults.
 */
export function responseObject(frame: ResponseFrame, status: string, output: unknown[], usage: Record<string, unknown> | null, incompleteReason: string | null = null): Record<string, unknown> {
  const q = frame.request;
  return {
    id: frame.id,
    object: 'response',
    created_at: frame.createdAtSec,
    status,
    background: false,
    error: null,
    incomplete_details: incompleteReason === null ? null : { reason: incompleteReason },
    instructions: q.instructions ?? null,
    max_output_tokens: q.max_output_tokens ?? null,
    model: frame.model,
    output,
    parallel_tool_calls: q.parallel_tool_calls ?? true,
    previous_response_id: q.previous_response_id ?? null,
    reasoning: isRecord(q.reasoning) ? q.reasoning : { effort: null, summary: null },
    store: q.store !== false,
    temperature: q.temperature ?? 1,
    text: isRecord(q.text) ? q.text : { format: { type: 'text' } },
    tool_choice: q.tool_choice ?? 'auto',
    tools: Array.isArray(q.tools) ? q.tools : [],
    top_p: q.top_p ?? 1,
    truncation: q.truncation ?? 'disabled',
    usage,
    user: q.user ?? null,
    metadata: isRecord(q.metadata) ? q.metadata : {},
  };
}

/** The response status and incomplete reason of a chat finish reason. */
export function statusFromFinish(finishReason: unknown): { status: 'completed' | 'incomplete'; incompleteReason: string | null } {
  if (finishReason === 'length') return { status: 'incomplete', incompleteReason: 'max_output_tokens' };
  if (finishReason === 'content_filter') return { status: 'incomplete', incompleteReason: 'content_filter' };
  return { status: 'completed', incompleteReason: null };
}

/** The finished `output_text` part with `text`. */
export function outputTextPart(text: string): Record<string, unknown> {
  return { type: 'output_text', text, annotations: [], logprobs: [] };
}

/** A finished `message` output item with one `output_text` part. */
export function messageItem(id: string, text: string): Record<string, unknown> {
  return { type: 'message', id, status: 'completed', role: 'assistant', content: [outputTextPart(text)] };
}

/** A finished `function_call` output item. */
export function functionCallItem(id: string, callId: string, name: string, args: string): Record<string, unknown> {
  return { type: 'function_call', id, call_id: callId, name, arguments: args, status: 'completed' };
}

/** A finished `reasoning` output item with its text as one `reasoning_text` part. */
export function reasoningItem(id: string, text: string): Record<string, unknown> {
  return { type: 'reasoning', id, summary: [], content: [{ type: 'reasoning_text', text }] };
}

/**
 * A chat completion (choice 0) as a Responses `response` object framed by `frame`.
 * A completion without choices gives an empty message item.
 */
export function chatCompletionToResponse(chat: Record<string, unknown>, frame: ResponseFrame): Record<string, unknown> {
  const choices = Array.isArray(chat.choices) ? chat.choices : [];
  const choice = choices.find((c) => isRecord(c) && (c.index === 0 || c.index === undefined));
  const msg = isRecord(choice) && isRecord(choice.message) ? choice.message : {};
  const output: unknown[] = [];
  let n = 0;
  const reasoning = nonEmpty(msg.reasoning_content) ? msg.reasoning_content : nonEmpty(msg.reasoning) ? msg.reasoning : null;
  if (reasoning !== null) output.push(reasoningItem(itemId('rs', frame.id, n++), reasoning));
  // A refusal is model output too; it reads as text, as the stream translation streams it.
  const text = str(msg.content) + str(msg.refusal);
  const calls = Array.isArray(msg.tool_calls) ? msg.tool_calls.filter(isRecord) : [];
  // An answer with nothing at all still has its (empty) message, as the stream translation gives.
  if (text.length > 0 || (calls.length === 0 && output.length === 0)) output.push(messageItem(itemId('msg', frame.id, n++), text));
  for (const tc of calls) {
    const fn = isRecord(tc.function) ? tc.function : {};
    const callId = nonEmpty(tc.id) ? tc.id : `call_${n}`;
    output.push(functionCallItem(itemId('fc', frame.id, n++), callId, str(fn.name), str(fn.arguments)));
  }
  const { status, incompleteReason } = statusFromFinish(isRecord(choice) ? choice.finish_reason : null);
  return responseObject(frame, status, output, responsesUsageFromChat(chat.usage), incompleteReason);
}
