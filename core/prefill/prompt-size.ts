/**
 * Prompt-size estimate for an OpenAI chat-completions body, without a tokenizer (seed 000,
 * "prefill 感知的选路" and the offload size rule): every UTF-8 text byte sent upstream counts a
 * quarter token — message text, tool calls and tool results, tool definitions, the response
 * format — and each image part a flat 85 tokens, each audio part 200. Rough by design: it only
 * has to rank prompts by prefill cost, and it must be cheap enough to run on every request.
 * The simulator does not use it (its traces carry token counts).
 */

/** Bytes of UTF-8 text per estimated token. Source: seed 000 (the common ~4 chars/token rule). */
export const BYTES_PER_TOKEN = 4;
/** Flat token charge per image input. Source: seed 000 (OpenAI's low-detail image cost). */
export const TOKENS_PER_IMAGE = 85;
/** Flat token charge per audio input. Source: seed 000. */
export const TOKENS_PER_AUDIO = 200;

/** What `estimatePromptTokens` found. */
export interface PromptSizeEstimate {
  /** `ceil(textBytes / 4) + 85·images + 200·audios`; an integer ≥ 0. */
  readonly tokens: number;
  /** UTF-8 bytes of text and JSON counted. */
  readonly textBytes: number;
  /** Image parts (`image_url`, `image`). */
  readonly images: number;
  /** Audio parts (`input_audio`, `audio`). */
  readonly audios: number;
}

/**
 * UTF-8 length of a JS string without encoding it: 1 byte below U+0080, 2 below U+0800, 4 per
 * surrogate pair, 3 otherwise (a lone surrogate becomes U+FFFD, also 3 bytes). Pure.
 */
export function utf8ByteLength(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        n += 4;
        i++;
      } else n += 3;
    } else n += 3;
  }
  return n;
}

/** UTF-8 bytes of a value as it travels upstream: a string's text, anything else as JSON. */
function jsonBytes(v: unknown): number {
  if (v === undefined || v === null) return 0;
  if (typeof v === 'string') return utf8ByteLength(v);
  return utf8ByteLength(JSON.stringify(v) ?? '');
}

interface Tally {
  bytes: number;
  images: number;
  audios: number;
}

function countContent(content: unknown, t: Tally): void {
  if (typeof content === 'string') {
    t.bytes += utf8ByteLength(content);
    return;
  }
  if (!Array.isArray(content)) {
    t.bytes += jsonBytes(content);
    return;
  }
  for (const part of content) {
    const p = part as { type?: unknown; text?: unknown; refusal?: unknown } | null;
    const type = typeof p === 'object' && p !== null ? p.type : undefined;
    if (type === 'text' && typeof p!.text === 'string') t.bytes += utf8ByteLength(p!.text);
    else if (type === 'image_url' || type === 'image') t.images++;
    else if (type === 'input_audio' || type === 'audio') t.audios++;
    else t.bytes += jsonBytes(part); // unknown parts (files, refusals): whatever goes upstream
  }
}

/**
 * Estimates the prompt tokens of a parsed `/v1/chat/completions` body (the JSON object, not
 * text). Counts, per message: `content` (string or parts), `tool_calls` and the legacy
 * `function_call` (as JSON), `name`; and at the top level `tools`, legacy `functions` and
 * `response_format` (as JSON). Image parts are 85 tokens, audio parts 200, everything else text.
 * Role names and JSON punctuation of the message list are not counted (the engine's chat
 * template adds its own). Pure; allocates only for JSON-encoded fields.
 * @throws TypeError when `body` is not an object or `body.messages` is not an array (the fix:
 *   send `{"messages": [...]}`).
 */
export function estimatePromptTokens(body: unknown): PromptSizeEstimate {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new TypeError('chat request body must be a JSON object with a "messages" array');
  }
  const b = body as { messages?: unknown; tools?: unknown; functions?: unknown; response_format?: unknown };
  if (!Array.isArray(b.messages)) {
    throw new TypeError(`chat request body: "messages" must be an array of messages, got ${b.messages === undefined ? 'nothing' : typeof b.messages}`);
  }
  const t: Tally = { bytes: 0, images: 0, audios: 0 };
  for (const m of b.messages) {
    if (typeof m !== 'object' || m === null) {
      t.bytes += jsonBytes(m);
      continue;
    }
    const msg = m as { content?: unknown; tool_calls?: unknown; function_call?: unknown; name?: unknown };
    countContent(msg.content, t);
    t.bytes += jsonBytes(msg.tool_calls) + jsonBytes(msg.function_call) + jsonBytes(msg.name);
  }
  t.bytes += jsonBytes(b.tools) + jsonBytes(b.functions) + jsonBytes(b.response_format);
  return {
    tokens: Math.ceil(t.bytes / BYTES_PER_TOKEN) + TOKENS_PER_IMAGE * t.images + TOKENS_PER_AUDIO * t.audios,
    textBytes: t.bytes,
    images: t.images,
    audios: t.audios,
  };
}
