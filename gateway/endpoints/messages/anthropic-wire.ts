/**
 * Anthropic's client wire (`../client-wire.ts`), the wire of `/v1/messages` and
 * `/v1/messages/count_tokens`: error bodies in Anthropic's envelope
 * `{"type":"error","error":{"type","message"},"request_id"?}` with its error types by status
 * (`overloaded_error` for every kind of shedding: the gateway's in-flight limit, draining, every
 * route busy or shut), stream events as `event: <name>` + `data:` lines, an in-band
 * `event: error` that ends a committed stream, and `message_stop` as the terminator of one that
 * succeeded. The official Anthropic SDKs raise their usual exception classes from these (by HTTP
 * status) and read `error.message`. Source: Anthropic's API reference, "Errors" and "Streaming
 * Messages".
 */
import type { ClientWire } from '../client-wire.ts';

/** Anthropic's error types. */
export type AnthropicErrorType =
  | 'invalid_request_error'
  | 'authentication_error'
  | 'permission_error'
  | 'not_found_error'
  | 'request_too_large'
  | 'rate_limit_error'
  | 'api_error'
  | 'overloaded_error';

/** Gateway codes that mean the request was shed (busy, not broken): Anthropic's `overloaded_error`. */
const SHEDDING = new Set(['overloaded', 'draining', 'upstream_overloaded', 'all_circuits_open', 'no_target_admitted']);

/** Anthropic's error type for a gateway code and HTTP status. */
export function anthropicErrorType(code: string, status: number): AnthropicErrorType {
  if (SHEDDING.has(code) || status === 529) return 'overloaded_error';
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 404) return 'not_found_error';
  if (status === 413) return 'request_too_large';
  if (status === 429) return 'rate_limit_error';
  if (status >= 500) return status === 503 ? 'overloaded_error' : 'api_error';
  return 'invalid_request_error';
}

/** One error envelope. */
export function anthropicErrorJson(type: string, message: string): string {
  return JSON.stringify({ type: 'error', error: { type, message } });
}

/**
 * One SSE event in Anthropic's framing: `event: <name>` (the data's own `type` when no name is
 * given, else `message`) and one `data:` line per line of `data`.
 */
export function anthropicEvent(name: string | null, data: string): string {
  const lines = data.includes('\n') ? data.split(/\r\n|\r|\n/).map((l) => `data: ${l}\n`).join('') : `data: ${data}\n`;
  return `event: ${name ?? 'message'}\n${lines}\n`;
}

const ANTHROPIC_TYPES: ReadonlySet<string> = new Set<AnthropicErrorType>(['invalid_request_error', 'authentication_error', 'permission_error', 'not_found_error', 'request_too_large', 'rate_limit_error', 'api_error', 'overloaded_error']);

const MESSAGE_STOP = 'event: message_stop\ndata: {"type":"message_stop"}\n\n';

/** The Anthropic wire. */
export const anthropicWire: ClientWire = {
  errorBody: (code, message, _param, status) => anthropicErrorJson(anthropicErrorType(code, status), message),
  passThroughBody(raw) {
    // Anthropic's envelope and OpenAI's both keep `error.type` and `error.message`.
    if (!raw) return null;
    try {
      const e = (JSON.parse(raw) as { error?: { type?: unknown; message?: unknown } }).error;
      if (!e || typeof e !== 'object' || typeof e.message !== 'string') return null;
      const type = typeof e.type === 'string' && ANTHROPIC_TYPES.has(e.type) ? e.type : 'invalid_request_error';
      return anthropicErrorJson(type, e.message);
    } catch {
      return null;
    }
  },
  streamEvent: anthropicEvent,
  streamError: (code, message, status) => anthropicEvent('error', anthropicErrorJson(anthropicErrorType(code, status), message)),
  streamEnd: MESSAGE_STOP,
};
