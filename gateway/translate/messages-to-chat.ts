/**
 * An Anthropic Messages request body → an OpenAI Chat Completions request body, for serving
 * Anthropic clients (Claude Code and the Anthropic SDKs) from OpenAI-compatible servers such
 * as vLLM and SGLang. Pure: the body in, a `RequestTranslation` out.
 *
 * What maps (Anthropic → OpenAI):
 * - `system` (string or text blocks) → a first `system` message (blocks joined with "\n\n");
 * - user/assistant messages: text and image blocks → content parts (images become `image_url`
 *   with a data URL or the source URL); assistant `tool_use` → `tool_calls` (arguments are the
 *   input as JSON text); user `tool_result` → separate `tool` messages, in block order;
 * - `tools` → function tools, `tool_choice` auto/any/tool/none → auto/required/named/none,
 *   `disable_parallel_tool_use` → `parallel_tool_calls: false`;
 * - `max_tokens`, `temperature`, `top_p`, `top_k` (vLLM and SGLang accept it), `stop_sequences`
 *   → `stop`, `stream` (with `stream_options.include_usage` so usage is always reported),
 *   `metadata.user_id` → `user`; a final assistant message (a prefill the answer continues) adds
 *   vLLM's and SGLang's `continue_final_message: true, add_generation_prompt: false`.
 * Dropped with a notice: `cache_control` and `citations` anywhere, the `thinking` parameter and thinking blocks
 * in the history (OpenAI servers cannot verify or replay their signatures), `is_error` on tool
 * results, other `metadata` keys, and any unknown top-level field. Refused: `document` blocks,
 * server tools (web search and the like), and blocks OpenAI's format cannot hold.
 */
import { isRecord, nonEmpty, sortedUnique, str } from './json-values.ts';
import type { RequestTranslation } from './translated.ts';

/** Top-level fields read below; any other is dropped with a notice under its own name. */
const KNOWN_FIELDS = new Set([
  'model', 'messages', 'system', 'max_tokens', 'temperature', 'top_p', 'top_k', 'stop_sequences',
  'stream', 'metadata', 'tools', 'tool_choice', 'thinking',
]);

/** Keys of a custom tool definition that carry over; `cache_control` is noticed separately. */
const TOOL_KEYS = new Set(['name', 'description', 'input_schema', 'type', 'cache_control']);

/** Thrown inside the translation to refuse; caught at the top and returned as data. */
class Refusal {
  constructor(readonly param: string, readonly message: string) {}
}

/**
 * Translates an Anthropic Messages request `body` into an OpenAI chat request for `model` (the
 * upstream's model name, which replaces the client's). Returns the body and the sorted,
 * deduplicated names of fields that had no equivalent, or a refusal naming the first field that
 * cannot be carried (e.g. `messages.[2].content.[0]` for a document block) and what to do.
 */
export function messagesRequestToChat(body: Record<string, unknown>, model: string): RequestTranslation {
  const dropped: string[] = [];
  try {
    const out: Record<string, unknown> = { model };
    const messages: Record<string, unknown>[] = [];
    if (body.system !== undefined) {
      const system = systemText(body.system, dropped);
      if (system !== null) messages.push({ role: 'system', content: system });
    }
    if (!Array.isArray(body.messages)) throw new Refusal('messages', 'messages must be an array of {role, content} objects.');
    body.messages.forEach((m, i) => messages.push(...translateMessage(m, `messages.[${i}]`, dropped)));
    out.messages = messages;
    // A final assistant message is a prefill the answer continues (Anthropic's rule); vLLM and
    // SGLang continue it when asked to, instead of starting a new turn after it.
    const last = body.messages[body.messages.length - 1];
    if (isRecord(last) && last.role === 'assistant') {
      out.continue_final_message = true;
      out.add_generation_prompt = false;
    }

    if (body.max_tokens !== undefined) out.max_tokens = body.max_tokens;
    if (body.temperature !== undefined) out.temperature = body.temperature;
    if (body.top_p !== undefined) out.top_p = body.top_p;
    if (body.top_k !== undefined) out.top_k = body.top_k;
    if (body.stop_sequences !== undefined) out.stop = body.stop_sequences;
    if (body.stream !== undefined) {
      out.stream = body.stream;
      if (body.stream === true) out.stream_options = { include_usage: true };
    }
    if (body.metadata !== undefined) translateMetadata(body.metadata, out, dropped);
    if (body.tools !== undefined) out.tools = translateTools(body.tools, dropped);
    if (body.tool_choice !== undefined) translateToolChoice(body.tool_choice, out);
    for (const key of Object.keys(body)) {
      if (!KNOWN_FIELDS.has(key)) dropped.push(key);
    }
    if (body.thinking !== undefined) dropped.push('thinking');
    return { ok: true, body: out, dropped: sortedUnique(dropped) };
  } catch (e) {
    if (e instanceof Refusal) return { ok: false, param: e.param, message: e.message };
    throw e;
  }
}

/** `system` as one string (text blocks joined with "\n\n"); null when empty of blocks. */
function systemText(system: unknown, dropped: string[]): string | null {
  if (typeof system === 'string') return system;
  if (!Array.isArray(system)) throw new Refusal('system', 'system must be a string or an array of text blocks.');
  const texts = system.map((b, j) => {
    if (!isRecord(b) || b.type !== 'text') throw new Refusal(`system.[${j}]`, 'system blocks must be text blocks; OpenAI system messages hold text only.');
    noteBlockExtras(b, dropped);
    return str(b.text);
  });
  return texts.length === 0 ? null : texts.join('\n\n');
}

/** Notes `cache_control` on a block (prompt caching is the server's own business there). */
function noteBlockExtras(b: Record<string, unknown>, dropped: string[]): void {
  if (b.cache_control !== undefined) dropped.push('cache_control');
  if (b.citations !== undefined && b.citations !== null) dropped.push('citations');
}

/** One Anthropic message → one or more OpenAI messages (tool results become `tool` messages). */
function translateMessage(m: unknown, path: string, dropped: string[]): Record<string, unknown>[] {
  if (!isRecord(m)) throw new Refusal(path, 'each message must be an object with role and content.');
  if (m.role !== 'user' && m.role !== 'assistant') throw new Refusal(`${path}.role`, "role must be 'user' or 'assistant'; put system text in the top-level system field.");
  const content = m.content;
  if (typeof content === 'string') return [{ role: m.role, content }];
  if (!Array.isArray(content)) throw new Refusal(`${path}.content`, 'content must be a string or an array of content blocks.');
  return m.role === 'user' ? userMessages(content, `${path}.content`, dropped) : [assistantMessage(content, `${path}.content`, dropped)];
}

/**
 * A user message's blocks → user messages of content parts and `tool` messages, in block
 * order: parts before a tool result are flushed as their own user message first.
 */
function userMessages(blocks: unknown[], path: string, dropped: string[]): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  let parts: Record<string, unknown>[] = [];
  const flush = (): void => {
    if (parts.length > 0) out.push({ role: 'user', content: parts });
    parts = [];
  };
  blocks.forEach((b, j) => {
    const p = `${path}.[${j}]`;
    if (!isRecord(b)) throw new Refusal(p, 'each content block must be an object with a type.');
    noteBlockExtras(b, dropped);
    switch (b.type) {
      case 'text':
        parts.push({ type: 'text', text: str(b.text) });
        return;
      case 'image':
        parts.push(imagePart(b, p));
        return;
      case 'tool_result':
        flush();
        out.push({ role: 'tool', tool_call_id: str(b.tool_use_id), content: toolResultText(b, p, dropped) });
        return;
      case 'thinking':
      case 'redacted_thinking':
        dropped.push('thinking');
        return;
      case 'document':
        throw new Refusal(p, 'document blocks cannot be sent to an OpenAI-compatible model; extract the text and send it as a text block.');
      default:
        throw new Refusal(p, `content blocks of type ${JSON.stringify(b.type)} cannot be sent to an OpenAI-compatible model; send text, image, tool_use or tool_result blocks.`);
    }
  });
  flush();
  return out;
}

/** An image block → an `image_url` part (base64 source → data URL; url source → the URL). */
function imagePart(b: Record<string, unknown>, path: string): Record<string, unknown> {
  const s = b.source;
  if (isRecord(s) && s.type === 'base64') {
    if (!nonEmpty(s.data)) throw new Refusal(`${path}.source.data`, 'a base64 image source needs its data (the base64 text of the image).');
    if (!nonEmpty(s.media_type)) throw new Refusal(`${path}.source.media_type`, 'a base64 image source needs its media_type (e.g. image/png).');
    return { type: 'image_url', image_url: { url: `data:${s.media_type};base64,${s.data}` } };
  }
  if (isRecord(s) && s.type === 'url') {
    if (!nonEmpty(s.url)) throw new Refusal(`${path}.source.url`, 'a url image source needs its url.');
    return { type: 'image_url', image_url: { url: s.url } };
  }
  throw new Refusal(`${path}.source`, 'image sources must be base64 or url; file sources cannot be sent to an OpenAI-compatible model.');
}

/** A tool result's content as text: a string, or its text blocks joined with "\n". */
function toolResultText(b: Record<string, unknown>, path: string, dropped: string[]): string {
  if (b.is_error === true) dropped.push('is_error');
  const c = b.content;
  if (c === undefined || c === null) return '';
  if (typeof c === 'string') return c;
  if (!Array.isArray(c)) throw new Refusal(`${path}.content`, 'tool_result content must be a string or an array of text blocks.');
  return c
    .map((inner, k) => {
      if (!isRecord(inner) || inner.type !== 'text') {
        throw new Refusal(`${path}.content.[${k}]`, 'OpenAI tool messages hold text only; send images in a user text/image block instead.');
      }
      noteBlockExtras(inner, dropped);
      return str(inner.text);
    })
    .join('\n');
}

/** An assistant message's blocks → one assistant message: text joined, tool_use → tool_calls. */
function assistantMessage(blocks: unknown[], path: string, dropped: string[]): Record<string, unknown> {
  let text = '';
  const toolCalls: Record<string, unknown>[] = [];
  blocks.forEach((b, j) => {
    const p = `${path}.[${j}]`;
    if (!isRecord(b)) throw new Refusal(p, 'each content block must be an object with a type.');
    noteBlockExtras(b, dropped);
    switch (b.type) {
      case 'text':
        text += str(b.text);
        return;
      case 'tool_use':
        toolCalls.push({ id: str(b.id), type: 'function', function: { name: str(b.name), arguments: JSON.stringify(b.input ?? {}) } });
        return;
      case 'thinking':
      case 'redacted_thinking':
        dropped.push('thinking');
        return;
      default:
        throw new Refusal(p, `assistant blocks of type ${JSON.stringify(b.type)} cannot be sent to an OpenAI-compatible model; send text or tool_use blocks.`);
    }
  });
  const msg: Record<string, unknown> = { role: 'assistant', content: toolCalls.length > 0 && text === '' ? null : text };
  if (toolCalls.length > 0) msg.tool_calls = toolCalls;
  return msg;
}

/** `metadata.user_id` → `user`; other keys are dropped as `metadata.<key>`. */
function translateMetadata(metadata: unknown, out: Record<string, unknown>, dropped: string[]): void {
  if (!isRecord(metadata)) {
    dropped.push('metadata');
    return;
  }
  for (const [key, value] of Object.entries(metadata)) {
    if (key !== 'user_id') dropped.push(`metadata.${key}`);
    else if (typeof value === 'string') out.user = value;
    // A null user_id says "no user", which an absent `user` says too.
    else if (value !== null) dropped.push('metadata.user_id');
  }
}

/** Custom tools → function tools; server tools (no input_schema, a non-custom type) are refused. */
function translateTools(tools: unknown, dropped: string[]): Record<string, unknown>[] {
  if (!Array.isArray(tools)) throw new Refusal('tools', 'tools must be an array of tool definitions.');
  return tools.map((t, i) => {
    if (!isRecord(t)) throw new Refusal(`tools.[${i}]`, 'each tool must be an object with name and input_schema.');
    if (t.type !== undefined && t.type !== 'custom' && t.input_schema === undefined) {
      throw new Refusal(`tools.[${i}]`, `server tools (type ${JSON.stringify(t.type)}) run on Anthropic's servers and cannot be offered to an OpenAI-compatible model; define a custom tool with an input_schema instead.`);
    }
    noteBlockExtras(t, dropped);
    for (const key of Object.keys(t)) if (!TOOL_KEYS.has(key)) dropped.push(`tools.${key}`);
    const fn: Record<string, unknown> = { name: str(t.name) };
    if (t.description !== undefined) fn.description = t.description;
    fn.parameters = t.input_schema ?? { type: 'object', properties: {} };
    return { type: 'function', function: fn };
  });
}

/** tool_choice auto/any/tool/none → auto/required/named function/none; parallel use flag. */
function translateToolChoice(choice: unknown, out: Record<string, unknown>): void {
  if (!isRecord(choice)) throw new Refusal('tool_choice', "tool_choice must be an object such as {type: 'auto'}.");
  switch (choice.type) {
    case 'auto':
      out.tool_choice = 'auto';
      break;
    case 'any':
      out.tool_choice = 'required';
      break;
    case 'none':
      out.tool_choice = 'none';
      break;
    case 'tool':
      out.tool_choice = { type: 'function', function: { name: str(choice.name) } };
      break;
    default:
      throw new Refusal('tool_choice.type', "tool_choice.type must be 'auto', 'any', 'tool' or 'none'.");
  }
  if (choice.disable_parallel_tool_use === true) out.parallel_tool_calls = false;
}
