/**
 * An OpenAI Responses request body → an OpenAI Chat Completions request body, for serving
 * `/v1/responses` clients from servers that have only chat completions (vLLM, SGLang, most
 * OpenAI-compatible APIs). Pure: the body in, a `RequestTranslation` out. The body's `input` is
 * the whole conversation (the gateway has already put the stored turns of a
 * `previous_response_id` in front of it, `endpoints/responses/conversation.ts`).
 *
 * What maps (Responses → Chat), after OpenAI's API reference ("Responses", "Migrate to the
 * Responses API"):
 * - `instructions` → a first `system` message;
 * - `input` as a string → one user message; as items: messages (`type: "message"` or no type,
 *   roles user/assistant/system/developer) with string content or `input_text` / `output_text` /
 *   `refusal` / `input_image` parts → chat messages with text or `image_url` parts;
 *   `function_call` items → `tool_calls` of an assistant message (consecutive calls, and calls
 *   right after an assistant message, join it); `function_call_output` → a `tool` message;
 *   `reasoning` items are dropped with a notice (a chat server cannot replay them);
 * - `tools` of type `function` → chat function tools; `tool_choice` auto/none/required or a
 *   named function; `parallel_tool_calls`;
 * - `max_output_tokens` → `max_tokens`; `temperature`, `top_p`, `user`, `top_logprobs`
 *   (`logprobs: true` with it); `text.format` json_schema / json_object → `response_format`;
 *   `reasoning.effort` → `reasoning_effort`; `stream` (with `stream_options.include_usage`).
 * Dropped with a notice: `store`, `metadata`, `include`, `truncation`, `service_tier`,
 * `prompt_cache_key`, `safety_identifier`, `reasoning.summary`, `text.verbosity` and unknown
 * top-level fields. Refused (the field named): built-in tools (web search, file search, …),
 * input items other than the ones above, and content parts chat cannot hold (files).
 */
import { isRecord, nonEmpty, sortedUnique, str } from './json-values.ts';
import type { RequestTranslation } from './translated.ts';

/** Top-level fields read below (or handled by the gateway itself); any other is dropped with a notice. */
const KNOWN_FIELDS = new Set([
  'model', 'input', 'instructions', 'tools', 'tool_choice', 'parallel_tool_calls', 'max_output_tokens',
  'temperature', 'top_p', 'user', 'top_logprobs', 'text', 'reasoning', 'stream', 'stream_options',
  'previous_response_id',
]);

/** Fields dropped quietly: the gateway honours them itself. */
const GATEWAY_FIELDS = new Set(['previous_response_id', 'stream_options']);

/** Thrown inside the translation to refuse; caught at the top and returned as data. */
class Refusal {
  constructor(readonly param: string, readonly message: string) {}
}

type ChatMessage = Record<string, unknown>;

/**
 * Translates a Responses request `body` (its `input` the whole conversation) into a chat
 * request for `model` (the route's upstream model name).
 * @returns the chat body and the dropped field names, or the refused field and why.
 */
export function responsesRequestToChat(body: Record<string, unknown>, model: string): RequestTranslation {
  const dropped: string[] = [];
  try {
    const messages: ChatMessage[] = [];
    if (nonEmpty(body.instructions)) messages.push({ role: 'system', content: body.instructions });
    inputToMessages(body.input, messages, dropped);
    const out: Record<string, unknown> = { model, messages };
    if (Array.isArray(body.tools) && body.tools.length > 0) out.tools = body.tools.map((t, i) => toolToChat(t, i));
    if (body.tool_choice !== undefined && body.tool_choice !== null) out.tool_choice = toolChoiceToChat(body.tool_choice);
    if (typeof body.parallel_tool_calls === 'boolean') out.parallel_tool_calls = body.parallel_tool_calls;
    if (typeof body.max_output_tokens === 'number') out.max_tokens = body.max_output_tokens;
    for (const k of ['temperature', 'top_p', 'user'] as const) if (body[k] !== undefined && body[k] !== null) out[k] = body[k];
    if (typeof body.top_logprobs === 'number') {
      out.logprobs = true;
      out.top_logprobs = body.top_logprobs;
    }
    textToChat(body.text, out, dropped);
    if (isRecord(body.reasoning)) {
      if (nonEmpty(body.reasoning.effort)) out.reasoning_effort = body.reasoning.effort;
      for (const k of Object.keys(body.reasoning)) if (k !== 'effort' && body.reasoning[k] !== null) dropped.push(`reasoning.${k}`);
    }
    if (body.stream === true) {
      out.stream = true;
      out.stream_options = { include_usage: true };
    }
    for (const k of Object.keys(body)) {
      if (GATEWAY_FIELDS.has(k) || body[k] === undefined || body[k] === null) continue;
      if (!KNOWN_FIELDS.has(k)) dropped.push(k);
    }
    return { ok: true, body: out, dropped: sortedUnique(dropped) };
  } catch (e) {
    if (e instanceof Refusal) return { ok: false, param: e.param, message: e.message };
    throw e;
  }
}

/** Appends the chat messages of `input` (a string or a list of items) to `messages`. */
function inputToMessages(input: unknown, messages: ChatMessage[], dropped: string[]): void {
  if (typeof input === 'string') {
    messages.push({ role: 'user', content: input });
    return;
  }
  if (!Array.isArray(input)) throw new Refusal('input', `'input' must be a string or a list of input items.`);
  for (let i = 0; i < input.length; i++) {
    const item = input[i] as unknown;
    const at = `input.[${i}]`;
    if (!isRecord(item)) throw new Refusal(at, `${at} must be an input item object.`);
    const type = item.type ?? 'message';
    switch (type) {
      case 'message':
        messages.push(messageToChat(item, at));
        break;
      case 'function_call': {
        const call = { id: str(item.call_id), type: 'function', function: { name: str(item.name), arguments: typeof item.arguments === 'string' ? item.arguments : '{}' } };
        const last = messages[messages.length - 1];
        if (last !== undefined && last.role === 'assistant') {
          const calls = Array.isArray(last.tool_calls) ? (last.tool_calls as unknown[]) : [];
          last.tool_calls = [...calls, call];
          if (last.content === '') last.content = null;
        } else messages.push({ role: 'assistant', content: null, tool_calls: [call] });
        break;
      }
      case 'function_call_output':
        messages.push({ role: 'tool', tool_call_id: str(item.call_id), content: outputText(item.output) });
        break;
      case 'reasoning':
        dropped.push(`${at}.reasoning`);
        break;
      default:
        throw new Refusal(`${at}.type`, `Input items of type '${String(type)}' cannot be sent to this route (it speaks chat completions); use message, function_call and function_call_output items.`);
    }
  }
}

/** One message item as a chat message. */
function messageToChat(item: Record<string, unknown>, at: string): ChatMessage {
  const role = item.role;
  if (role !== 'user' && role !== 'assistant' && role !== 'system' && role !== 'developer') {
    throw new Refusal(`${at}.role`, `${at}.role must be one of user, assistant, system, developer.`);
  }
  const content = item.content;
  if (typeof content === 'string') return { role, content };
  if (!Array.isArray(content)) throw new Refusal(`${at}.content`, `${at}.content must be a string or a list of content parts.`);
  const parts: Array<Record<string, unknown>> = [];
  for (let j = 0; j < content.length; j++) {
    const p = content[j] as unknown;
    const pAt = `${at}.content.[${j}]`;
    if (!isRecord(p)) throw new Refusal(pAt, `${pAt} must be a content part object.`);
    if (p.type === 'input_text' || p.type === 'output_text' || p.type === 'text') parts.push({ type: 'text', text: str(p.text) });
    else if (p.type === 'refusal') parts.push({ type: 'text', text: str(p.refusal) });
    else if (p.type === 'input_image') {
      if (!nonEmpty(p.image_url)) throw new Refusal(pAt, `${pAt}: an input_image needs an image_url (a URL or a data URL) on this route; file_id images are not supported.`);
      const image: Record<string, unknown> = { url: p.image_url };
      if (nonEmpty(p.detail)) image.detail = p.detail;
      parts.push({ type: 'image_url', image_url: image });
    } else throw new Refusal(`${pAt}.type`, `Content parts of type '${String(p.type)}' cannot be sent to this route; use input_text or input_image.`);
  }
  // Text-only content of assistant and system messages as one string: every chat server takes it.
  if (role !== 'user' && parts.every((p) => p.type === 'text')) return { role, content: parts.map((p) => p.text).join('') };
  return { role, content: parts };
}

/** A function_call_output's `output`: a string, or text parts joined. */
function outputText(output: unknown): string {
  if (typeof output === 'string') return output;
  if (Array.isArray(output)) return output.map((p) => (isRecord(p) ? str(p.text) : '')).join('');
  return JSON.stringify(output ?? '');
}

function toolToChat(t: unknown, i: number): Record<string, unknown> {
  if (!isRecord(t) || t.type !== 'function') {
    const type = isRecord(t) ? String(t.type) : typeof t;
    throw new Refusal(`tools.[${i}].type`, `Built-in tools such as '${type}' are not available on this route (it speaks chat completions); send function tools only.`);
  }
  const fn: Record<string, unknown> = { name: str(t.name) };
  if (t.description !== undefined && t.description !== null) fn.description = t.description;
  if (t.parameters !== undefined && t.parameters !== null) fn.parameters = t.parameters;
  if (typeof t.strict === 'boolean') fn.strict = t.strict;
  return { type: 'function', function: fn };
}

function toolChoiceToChat(c: unknown): unknown {
  if (c === 'auto' || c === 'none' || c === 'required') return c;
  if (isRecord(c) && c.type === 'function' && nonEmpty(c.name)) return { type: 'function', function: { name: c.name } };
  throw new Refusal('tool_choice', `'tool_choice' must be auto, none, required or {"type":"function","name":…} on this route.`);
}

/** `text.format` → `response_format`; other `text` keys are dropped with a notice. */
function textToChat(text: unknown, out: Record<string, unknown>, dropped: string[]): void {
  if (!isRecord(text)) return;
  for (const k of Object.keys(text)) if (k !== 'format' && text[k] !== null) dropped.push(`text.${k}`);
  const f = text.format;
  if (!isRecord(f) || f.type === 'text') return;
  if (f.type === 'json_object') out.response_format = { type: 'json_object' };
  else if (f.type === 'json_schema') {
    const schema: Record<string, unknown> = { name: str(f.name) || 'response', schema: f.schema ?? {} };
    if (typeof f.strict === 'boolean') schema.strict = f.strict;
    if (f.description !== undefined) schema.description = f.description;
    out.response_format = { type: 'json_schema', json_schema: schema };
  } else throw new Refusal('text.format.type', `'text.format.type' must be text, json_object or json_schema.`);
}
