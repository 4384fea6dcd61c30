/**
 * The Anthropic Messages API wire shapes the emulator answers with, as api.anthropic.com sends
 * them (docs "Messages" and "Streaming Messages"): a `message` object; a stream of named SSE
 * events `message_start`, `content_block_start`, `ping`, one `content_block_delta` per token,
 * `content_block_stop`, `message_delta` (stop reason, output tokens), `message_stop`; errors as
 * `{"type":"error","error":{"type","message"}}`, in-band as `event: error`. Usage counts
 * `input_tokens` without the prompt-cache hits, which go to `cache_read_input_tokens`.
 */
import type { ErrorShapes, Failure, OutputWriter, StopKind, TokenCounts } from './output-writer.ts';

/** Anthropic's error type of each status it documents; other 5xx are `api_error`. */
const ERROR_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  402: 'billing_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  500: 'api_error',
  504: 'timeout_error',
  529: 'overloaded_error',
};

/** The error type Anthropic gives `status`. */
export function anthropicErrorType(status: number): string {
  return ERROR_TYPES[status] ?? (status >= 500 ? 'api_error' : 'invalid_request_error');
}

/** An error body in Anthropic's envelope. */
export function anthropicError(type: string, message: string): string {
  return JSON.stringify({ type: 'error', error: { type, message } });
}

/** One named SSE event carrying `data` as JSON. */
export function event(name: string, data: unknown): string {
  return `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`;
}

/** Anthropic's pre-generation error bodies. */
export const ANTHROPIC_ERRORS: ErrorShapes = {
  unauthorized: () => anthropicError('authentication_error', 'invalid x-api-key'),
  badRequest: (message) => anthropicError('invalid_request_error', message),
  fault: (status) => anthropicError(anthropicErrorType(status), `emulated upstream error ${status}`),
  rateLimited: () => anthropicError('rate_limit_error', 'emulated rate limit'),
};

/** What one Messages response is: its ids, model, and which blocks it holds. */
export interface MessageHead {
  /** `msg_…` */
  id: string;
  model: string;
  /** The forced tool and its block id (`toolu_…`), or null for a text answer. */
  tool: { id: string; name: string } | null;
  /** Whether a thinking block comes first. */
  thinking: boolean;
}

/** The fixed thinking the emulator "does" before answering, as its stream deltas. */
const THINKING_PIECES = ['Let me', ' think', ' about', ' this.'];
/** The signature of the thinking block (opaque to clients; they only send it back). */
const THINKING_SIGNATURE = 'ZW11bGF0ZWQtdGhpbmtpbmc=';

const STOP_REASONS: Record<StopKind, string> = { stop: 'end_turn', length: 'max_tokens', tool: 'tool_use' };

function wireUsage(c: TokenCounts): Record<string, number> {
  return { input_tokens: c.input - c.cached, output_tokens: c.output, cache_read_input_tokens: c.cached, cache_creation_input_tokens: 0 };
}

/** A writer of one Messages response; the answer block is at index 1 after a thinking block, else 0. */
export function anthropicWriter(h: MessageHead): OutputWriter {
  const index = h.thinking ? 1 : 0;
  const answerBlock = h.tool ? { type: 'tool_use', id: h.tool.id, name: h.tool.name, input: {} } : { type: 'text', text: '' };
  const failure = (status: number, message: string): Failure => {
    const type = anthropicErrorType(status);
    return { event: event('error', { type: 'error', error: { type, message } }), status, body: anthropicError(type, message) };
  };
  return {
    preamble(c) {
      const message = { id: h.id, type: 'message', role: 'assistant', model: h.model, content: [], stop_reason: null, stop_sequence: null, usage: { ...wireUsage(c), output_tokens: 1 } };
      let s = event('message_start', { type: 'message_start', message });
      if (h.thinking) {
        s += event('content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'thinking', thinking: '', signature: '' } });
        for (const thinking of THINKING_PIECES) s += event('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking } });
        s += event('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'signature_delta', signature: THINKING_SIGNATURE } });
        s += event('content_block_stop', { type: 'content_block_stop', index: 0 });
      }
      s += event('content_block_start', { type: 'content_block_start', index, content_block: answerBlock });
      return s + event('ping', { type: 'ping' });
    },
    piece(_i, text) {
      const delta = h.tool ? { type: 'input_json_delta', partial_json: text } : { type: 'text_delta', text };
      return event('content_block_delta', { type: 'content_block_delta', index, delta });
    },
    tail(stop, c) {
      return (
        event('content_block_stop', { type: 'content_block_stop', index }) +
        event('message_delta', { type: 'message_delta', delta: { stop_reason: STOP_REASONS[stop], stop_sequence: null }, usage: { output_tokens: c.output } }) +
        event('message_stop', { type: 'message_stop' })
      );
    },
    whole(text, stop, c) {
      const content: unknown[] = [];
      if (h.thinking) content.push({ type: 'thinking', thinking: THINKING_PIECES.join(''), signature: THINKING_SIGNATURE });
      content.push(h.tool ? { type: 'tool_use', id: h.tool.id, name: h.tool.name, input: parseOr(text) } : { type: 'text', text });
      return JSON.stringify({ id: h.id, type: 'message', role: 'assistant', model: h.model, content, stop_reason: STOP_REASONS[stop], stop_sequence: null, usage: wireUsage(c) });
    },
    midstreamError: () => failure(529, 'emulated mid-stream error'),
    contextTooLong: (message) => failure(400, message),
  };
}

/** `text` parsed as JSON, or `{}` when it is not (echo mode's reply is not JSON). */
function parseOr(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return {};
  }
}
