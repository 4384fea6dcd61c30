/**
 * The OpenAI wire shapes the emulator answers with: chat and text completion chunks, full
 * responses, usage, errors and embeddings. Modelled on what vLLM's OpenAI server sends
 * (`vllm/entrypoints/openai/serving_chat.py`): a role-only first chunk, one chunk per token,
 * a chunk with `finish_reason`, a usage-only chunk (`choices: []`) when the client asked with
 * `stream_options.include_usage`, then `data: [DONE]`. Unset fields are left out, as vLLM does.
 */
import type { ErrorShapes, OutputWriter, StopKind } from './output-writer.ts';

/** Which endpoint a request came to. */
export type EmulatedEndpoint = 'chat' | 'completion';

/** The content the emulator "generates": a fixed word cycle, so runs are reproducible. */
const WORDS = ['The', ' quick', ' brown', ' fox', ' jumps', ' over', ' the', ' lazy', ' dog', '.'];

/** Text of output token `i` (0-based): the cycle, with a space before each repeat of it. */
export function tokenText(i: number): string {
  const w = WORDS[i % WORDS.length]!;
  return i >= WORDS.length && i % WORDS.length === 0 ? ` ${w}` : w;
}

/** Token usage in OpenAI's field names. */
export interface WireUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details?: { cached_tokens: number };
}

/** Usage object for `input` prompt tokens (`cached` of them from the prefix cache) and `output` tokens. */
export function usage(input: number, output: number, cached: number): WireUsage {
  return { prompt_tokens: input, completion_tokens: output, total_tokens: input + output, prompt_tokens_details: { cached_tokens: cached } };
}

/** One SSE frame carrying `obj` as JSON. */
export function sse(obj: unknown): string {
  return `data: ${JSON.stringify(obj)}\n\n`;
}

/** The stream terminator. */
export const SSE_DONE = 'data: [DONE]\n\n';

/** Fields shared by every chunk of one response. */
export interface ChunkHead {
  id: string;
  model: string;
  created: number;
  endpoint: EmulatedEndpoint;
}

/** The role-only preamble chunk (chat) — text completions have none. */
export function roleChunk(h: ChunkHead): string | null {
  if (h.endpoint !== 'chat') return null;
  return sse({ id: h.id, object: 'chat.completion.chunk', created: h.created, model: h.model, choices: [{ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }] });
}

/** A chunk with one piece of content. */
export function contentChunk(h: ChunkHead, text: string): string {
  if (h.endpoint === 'chat') {
    return sse({ id: h.id, object: 'chat.completion.chunk', created: h.created, model: h.model, choices: [{ index: 0, delta: { content: text }, logprobs: null, finish_reason: null }] });
  }
  return sse({ id: h.id, object: 'text_completion', created: h.created, model: h.model, choices: [{ index: 0, text, logprobs: null, finish_reason: null }] });
}

/** A chunk carrying a piece of a tool call; the first piece names the function. */
export function toolCallChunk(h: ChunkHead, callId: string, name: string, argsPiece: string, first: boolean): string {
  const call = first ? { index: 0, id: callId, type: 'function', function: { name, arguments: argsPiece } } : { index: 0, function: { arguments: argsPiece } };
  return sse({ id: h.id, object: 'chat.completion.chunk', created: h.created, model: h.model, choices: [{ index: 0, delta: { tool_calls: [call] }, logprobs: null, finish_reason: null }] });
}

/** The chunk that closes the choice. */
export function finishChunk(h: ChunkHead, finishReason: string): string {
  if (h.endpoint === 'chat') {
    return sse({ id: h.id, object: 'chat.completion.chunk', created: h.created, model: h.model, choices: [{ index: 0, delta: {}, logprobs: null, finish_reason: finishReason }] });
  }
  return sse({ id: h.id, object: 'text_completion', created: h.created, model: h.model, choices: [{ index: 0, text: '', logprobs: null, finish_reason: finishReason }] });
}

/** The usage-only chunk (`choices: []`). */
export function usageChunk(h: ChunkHead, u: WireUsage): string {
  return sse({ id: h.id, object: h.endpoint === 'chat' ? 'chat.completion.chunk' : 'text_completion', created: h.created, model: h.model, choices: [], usage: u });
}

/** A tool call as it appears in a full (non-stream) message. */
export interface WireToolCall {
  id: string;
  name: string;
  arguments: string;
}

/** A whole non-stream response. */
export function fullResponse(h: ChunkHead, text: string, toolCall: WireToolCall | null, finishReason: string, u: WireUsage): string {
  if (h.endpoint === 'chat') {
    const message = toolCall
      ? { role: 'assistant', content: null, tool_calls: [{ id: toolCall.id, type: 'function', function: { name: toolCall.name, arguments: toolCall.arguments } }] }
      : { role: 'assistant', content: text };
    return JSON.stringify({ id: h.id, object: 'chat.completion', created: h.created, model: h.model, choices: [{ index: 0, message, logprobs: null, finish_reason: finishReason }], usage: u });
  }
  return JSON.stringify({ id: h.id, object: 'text_completion', created: h.created, model: h.model, choices: [{ index: 0, text, logprobs: null, finish_reason: finishReason }], usage: u });
}

/** An error body in OpenAI's shape. */
export function errorBody(message: string, type: string, code: string | number | null, param: string | null = null): string {
  return JSON.stringify({ error: { message, type, param, code } });
}

/**
 * A deterministic embedding of `text`: `dims` floats from an FNV-1a walk, unit length. Not
 * semantic — it only has the right shape and is the same for the same text.
 */
export function embedding(text: string, dims: number): number[] {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  const v: number[] = [];
  let norm = 0;
  for (let d = 0; d < dims; d++) {
    h = Math.imul(h ^ (h >>> 15), 0x2c1b3c6d) >>> 0;
    const x = h / 0xffffffff - 0.5;
    v.push(x);
    norm += x * x;
  }
  const s = norm > 0 ? 1 / Math.sqrt(norm) : 0;
  return v.map((x) => x * s);
}

/** OpenAI's pre-generation error bodies. */
export const OPENAI_ERRORS: ErrorShapes = {
  unauthorized: () => errorBody('Incorrect API key provided.', 'authentication_error', 'invalid_api_key'),
  badRequest: (message) => errorBody(message, 'invalid_request_error', 400),
  fault: (status) => errorBody(`emulated upstream error ${status}`, status >= 500 ? 'server_error' : 'invalid_request_error', status),
  rateLimited: () => errorBody('emulated rate limit', 'rate_limit_error', 'rate_limit_exceeded'),
};

const FINISH_REASONS: Record<StopKind, string> = { stop: 'stop', length: 'length', tool: 'tool_calls' };

/**
 * A writer of one chat or text completion response.
 * @param tool the forced function and its call id, or null for a text answer.
 * @param includeUsage whether the stream ends with a usage-only chunk.
 */
export function openAiWriter(h: ChunkHead, tool: { id: string; name: string } | null, includeUsage: boolean): OutputWriter {
  return {
    preamble: () => roleChunk(h) ?? '',
    piece: (i, text) => (tool ? toolCallChunk(h, tool.id, tool.name, text, i === 0) : contentChunk(h, text)),
    tail(stop, c) {
      let tail = finishChunk(h, FINISH_REASONS[stop]);
      if (includeUsage) tail += usageChunk(h, usage(c.input, c.output, c.cached));
      return tail + SSE_DONE;
    },
    whole(text, stop, c) {
      const call = tool ? { id: tool.id, name: tool.name, arguments: text } : null;
      return fullResponse(h, call ? '' : text, call, FINISH_REASONS[stop], usage(c.input, c.output, c.cached));
    },
    midstreamError: () => ({
      event: sse({ error: { message: 'emulated mid-stream error', type: 'server_error', param: null, code: 500 } }),
      status: 500,
      body: errorBody('emulated mid-stream error', 'server_error', 500),
    }),
    contextTooLong: (message) => ({
      event: sse({ error: { message, type: 'invalid_request_error', param: 'messages', code: 400 } }),
      status: 400,
      body: errorBody(message, 'invalid_request_error', 'context_length_exceeded', 'messages'),
    }),
  };
}
