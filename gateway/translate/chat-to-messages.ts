/**
 * An OpenAI Chat Completions request body → an Anthropic Messages request body, for serving
 * OpenAI clients from Anthropic's API. Pure: the body in, a `RequestTranslation` out.
 *
 * What maps (OpenAI → Anthropic):
 * - `system`/`developer` messages → the top-level `system` string (several joined with "\n\n");
 * - user/assistant content (string or parts): text, and `image_url` parts → image blocks (a data
 *   URL becomes a base64 source, an http(s) URL a url source); assistant `tool_calls` →
 *   `tool_use` blocks with the parsed arguments; consecutive `tool` messages → one user message
 *   of `tool_result` blocks. Consecutive same-role messages are merged, since Anthropic requires
 *   user and assistant turns to alternate;
 * - `max_completion_tokens` ?? `max_tokens` ?? a default → `max_tokens` (Anthropic requires it);
 *   `temperature`, `top_p`, `top_k`; `stop` → `stop_sequences`; `tools`, `tool_choice`,
 *   `parallel_tool_calls`; `user` → `metadata.user_id`; `stream`.
 * `stream_options` is dropped without notice: Anthropic always reports usage, so nothing is
 * lost. Sampling controls Anthropic lacks (penalties, seed, logprobs, logit_bias,
 * response_format, reasoning_effort) and unknown fields are dropped with a notice. Refused:
 * `temperature` above 1, `n` above 1, audio and file parts, and tool-call arguments that are not
 * a JSON object.
 */
import { isRecord, sortedUnique, str } from './json-values.ts';
import type { RequestTranslation } from './translated.ts';

/** Options of the translation. */
export interface ChatToMessagesOptions {
  /** `max_tokens` to send when the client set neither `max_completion_tokens` nor `max_tokens`. */
  defaultMaxTokens: number;
}

/** Top-level fields read below; any other is dropped with a notice under its own name. */
const KNOWN_FIELDS = new Set([
  'model', 'messages', 'max_tokens', 'max_completion_tokens', 'temperature', 'top_p', 'top_k', 'stop', 'n',
  'tools', 'tool_choice', 'parallel_tool_calls', 'user', 'stream', 'stream_options',
  // vLLM's prefill switches: Anthropic continues a final assistant message by itself.
  'continue_final_message', 'add_generation_prompt',
]);

/** Message keys carried over; others (e.g. `name`) are dropped as `messages.<key>`. */
const MESSAGE_KEYS = new Set(['role', 'content', 'tool_calls', 'tool_call_id']);

/** Thrown inside the translation to refuse; caught at the top and returned as data. */
class Refusal {
  constructor(readonly param: string, readonly message: string) {}
}

type Block = Record<string, unknown>;
interface Turn {
  role: 'user' | 'assistant';
  content: string | Block[];
}

/**
 * Translates an OpenAI chat request `body` into an Anthropic Messages request for `model` (the
 * upstream's model name). Returns the body and the sorted, deduplicated names of fields that had
 * no equivalent, or a refusal naming the first field that cannot be carried and what to do.
 */
export function chatRequestToMessages(body: Record<string, unknown>, model: string, opts: ChatToMessagesOptions): RequestTranslation {
  const dropped: string[] = [];
  try {
    if (!Array.isArray(body.messages)) throw new Refusal('messages', 'messages must be an array of {role, content} objects.');
    const systemParts: string[] = [];
    const turns: Turn[] = [];
    body.messages.forEach((m, i) => translateMessage(m, `messages.[${i}]`, systemParts, turns, dropped));

    const out: Record<string, unknown> = { model };
    if (systemParts.length > 0) out.system = systemParts.join('\n\n');
    out.messages = turns.map((t) => ({ role: t.role, content: t.content }));
    out.max_tokens = body.max_completion_tokens ?? body.max_tokens ?? opts.defaultMaxTokens;
    if (body.temperature !== undefined && body.temperature !== null) {
      if (typeof body.temperature === 'number' && body.temperature > 1) {
        throw new Refusal('temperature', `temperature ${body.temperature} is out of range: Anthropic accepts 0 to 1; send a temperature of at most 1.`);
      }
      out.temperature = body.temperature;
    }
    if (body.top_p !== undefined && body.top_p !== null) out.top_p = body.top_p;
    if (body.top_k !== undefined && body.top_k !== null) out.top_k = body.top_k;
    if (body.stop !== undefined && body.stop !== null) out.stop_sequences = typeof body.stop === 'string' ? [body.stop] : body.stop;
    if (typeof body.n === 'number' && body.n > 1) throw new Refusal('n', 'n above 1 is not supported: Anthropic returns one choice per request; send n separate requests.');
    if (body.tools !== undefined && body.tools !== null) out.tools = translateTools(body.tools, dropped);
    translateToolChoice(body.tool_choice, body.parallel_tool_calls, out, Array.isArray(body.tools) && body.tools.length > 0);
    if (typeof body.user === 'string') out.metadata = { user_id: body.user };
    else if (body.user !== undefined && body.user !== null) dropped.push('user');
    if (body.stream !== undefined && body.stream !== null) out.stream = body.stream;
    for (const key of Object.keys(body)) {
      if (!KNOWN_FIELDS.has(key) && body[key] !== undefined) dropped.push(key);
    }
    return { ok: true, body: out, dropped: sortedUnique(dropped) };
  } catch (e) {
    if (e instanceof Refusal) return { ok: false, param: e.param, message: e.message };
    throw e;
  }
}

/** Appends a turn, merging it into the previous one of the same role. */
function pushTurn(turns: Turn[], role: Turn['role'], content: string | Block[]): void {
  const last = turns[turns.length - 1];
  if (last !== undefined && last.role === role) {
    last.content = [...asBlocks(last.content), ...asBlocks(content)];
    return;
  }
  turns.push({ role, content });
}

function asBlocks(content: string | Block[]): Block[] {
  return typeof content === 'string' ? [{ type: 'text', text: content }] : content;
}

/** One OpenAI message → system text or an Anthropic turn (merged with its neighbour). */
function translateMessage(m: unknown, path: string, systemParts: string[], turns: Turn[], dropped: string[]): void {
  if (!isRecord(m)) throw new Refusal(path, 'each message must be an object with role and content.');
  for (const key of Object.keys(m)) {
    if (key === 'reasoning_content' || key === 'reasoning') dropped.push(key);
    else if (!MESSAGE_KEYS.has(key)) dropped.push(`messages.${key}`);
  }
  switch (m.role) {
    case 'system':
    case 'developer':
      systemParts.push(textOnly(m.content, `${path}.content`, 'system messages'));
      return;
    case 'user':
      pushTurn(turns, 'user', userContent(m.content, `${path}.content`));
      return;
    case 'assistant': {
      const content = assistantContent(m, path);
      if (content !== null) pushTurn(turns, 'assistant', content);
      return;
    }
    case 'tool':
      pushTurn(turns, 'user', [{ type: 'tool_result', tool_use_id: str(m.tool_call_id), content: textOnly(m.content, `${path}.content`, 'tool messages') }]);
      return;
    default:
      throw new Refusal(`${path}.role`, "role must be 'system', 'developer', 'user', 'assistant' or 'tool'.");
  }
}

/** Content that must be text: a string, or text parts joined (with nothing between them). */
function textOnly(content: unknown, path: string, what: string): string {
  if (content === undefined || content === null) return '';
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) throw new Refusal(path, `${what} must have string or text-part content.`);
  return content
    .map((p, j) => {
      if (!isRecord(p) || p.type !== 'text') throw new Refusal(`${path}.[${j}]`, `${what} can hold text parts only when sent to Anthropic.`);
      return str(p.text);
    })
    .join('');
}

/** User content: a string stays a string; parts become text and image blocks. */
function userContent(content: unknown, path: string): string | Block[] {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) throw new Refusal(path, 'user content must be a string or an array of content parts.');
  return content.map((p, j) => {
    const pp = `${path}.[${j}]`;
    if (!isRecord(p)) throw new Refusal(pp, 'each content part must be an object with a type.');
    if (p.type === 'text') return { type: 'text', text: str(p.text) };
    if (p.type === 'image_url') return imageBlock(p, pp);
    if (p.type === 'input_audio') throw new Refusal(pp, 'audio input cannot be sent to Anthropic; transcribe it and send text.');
    throw new Refusal(pp, `content parts of type ${JSON.stringify(p.type)} cannot be sent to Anthropic; send text or image_url parts.`);
  });
}

/** An image_url part → an image block: a data URL → base64 source; http(s) → url source. */
function imageBlock(p: Record<string, unknown>, path: string): Block {
  const url = isRecord(p.image_url) ? str(p.image_url.url) : str(p.image_url);
  const data = /^data:([^;,]+);base64,(.*)$/s.exec(url);
  if (data !== null) return { type: 'image', source: { type: 'base64', media_type: data[1], data: data[2] } };
  if (/^https?:\/\//i.test(url)) return { type: 'image', source: { type: 'url', url } };
  throw new Refusal(`${path}.image_url.url`, 'image URLs must be base64 data URLs or http(s) URLs.');
}

/** Assistant content as blocks (or a string when it is text only); null when it is empty. */
function assistantContent(m: Record<string, unknown>, path: string): string | Block[] | null {
  const text = assistantText(m.content, `${path}.content`);
  const calls = Array.isArray(m.tool_calls) ? m.tool_calls : [];
  if (calls.length === 0) return text;
  const blocks: Block[] = text === null || text === '' ? [] : [{ type: 'text', text }];
  calls.forEach((c, j) => {
    const cp = `${path}.tool_calls.[${j}]`;
    if (!isRecord(c) || !isRecord(c.function)) throw new Refusal(cp, 'each tool call must be {id, type: function, function: {name, arguments}}.');
    let input: unknown;
    try {
      input = JSON.parse(str(c.function.arguments) || '{}');
    } catch {
      input = undefined;
    }
    if (!isRecord(input)) throw new Refusal(`${cp}.function.arguments`, 'tool-call arguments must be JSON text of an object; Anthropic tool_use input is an object.');
    blocks.push({ type: 'tool_use', id: str(c.id), name: str(c.function.name), input });
  });
  return blocks;
}

/** An assistant message's text: a string, or its text (and refusal) parts joined; null if none. */
function assistantText(content: unknown, path: string): string | null {
  if (content === undefined || content === null) return null;
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) throw new Refusal(path, 'assistant content must be a string, null or an array of text parts.');
  return content
    .map((p, j) => {
      if (isRecord(p) && p.type === 'text') return str(p.text);
      if (isRecord(p) && p.type === 'refusal') return str(p.refusal);
      throw new Refusal(`${path}.[${j}]`, 'assistant content parts must be text when sent to Anthropic.');
    })
    .join('');
}

/** Function tools → custom tools (name, description, input_schema); other tool types refused. */
function translateTools(tools: unknown, dropped: string[]): Block[] {
  if (!Array.isArray(tools)) throw new Refusal('tools', 'tools must be an array of function tools.');
  return tools.map((t, i) => {
    if (!isRecord(t) || t.type !== 'function' || !isRecord(t.function)) {
      throw new Refusal(`tools.[${i}]`, "only {type: 'function', function: {name, parameters}} tools can be sent to Anthropic.");
    }
    const fn = t.function;
    for (const key of Object.keys(fn)) if (key !== 'name' && key !== 'description' && key !== 'parameters') dropped.push(`tools.function.${key}`);
    const out: Block = { name: str(fn.name) };
    if (fn.description !== undefined) out.description = fn.description;
    out.input_schema = fn.parameters ?? { type: 'object', properties: {} };
    return out;
  });
}

/** tool_choice auto/required/none/named → auto/any/none/tool; `parallel_tool_calls: false` → disable flag. */
function translateToolChoice(choice: unknown, parallel: unknown, out: Record<string, unknown>, hasTools: boolean): void {
  let tc: Record<string, unknown> | null = null;
  if (choice === 'auto') tc = { type: 'auto' };
  else if (choice === 'required') tc = { type: 'any' };
  else if (choice === 'none') tc = { type: 'none' };
  else if (isRecord(choice) && choice.type === 'function' && isRecord(choice.function)) tc = { type: 'tool', name: str(choice.function.name) };
  else if (choice !== undefined && choice !== null) {
    throw new Refusal('tool_choice', "tool_choice must be 'auto', 'required', 'none' or {type: 'function', function: {name}}.");
  }
  // Without tools the flag means nothing, and Anthropic refuses a tool_choice without tools.
  if (parallel === false && (tc !== null || hasTools)) {
    tc ??= { type: 'auto' };
    tc.disable_parallel_tool_use = true;
  }
  if (tc !== null) out.tool_choice = tc;
}
