/**
 * OpenAI's client wire, the default of every endpoint family (`client-wire.ts`): error bodies
 * `{"error":{"message","type","param","code"}}` typed by status (`errors.ts`), so the official
 * clients raise their usual exceptions; stream events as `data: {…}` lines (with an `event:` line
 * when the upstream named one); an in-band error as a `data: {"error":{…}}` event carrying
 * `retry_after` (seconds) when known; a successful stream ends with `data: [DONE]`.
 */
import { errorFrame, errorJson } from '../errors.ts';
import type { ClientWire } from './client-wire.ts';

const SSE_DONE = 'data: [DONE]\n\n';

/** The OpenAI wire. */
export const openAiWire: ClientWire = {
  errorBody: (code, message, param, status) => errorJson(code, message, param, status),
  passThroughBody,
  streamEvent: sseEvent,
  streamError: errorFrame,
  streamEnd: SSE_DONE,
};

/**
 * One SSE event: an `event:` line when `name` is non-empty, one `data:` line per line of `data`
 * (CR, LF and CRLF all split), and the blank line that ends the event.
 */
export function sseEvent(name: string | null, data: string): string {
  const head = name ? `event: ${name}\n` : '';
  return `${head}${dataLines(data)}\n`;
}

function dataLines(text: string): string {
  if (!text.includes('\n')) return `data: ${text}\n`;
  return text
    .split(/\r\n|\r|\n/)
    .map((l) => `data: ${l}\n`)
    .join('');
}

/**
 * An upstream 4xx body in OpenAI's error shape (extra fields dropped), or null when it is not one
 * (no `error` object with a string `message`).
 */
export function passThroughBody(raw: string | null): string | null {
  if (!raw) return null;
  try {
    const e = (JSON.parse(raw) as { error?: Record<string, unknown> }).error;
    if (!e || typeof e !== 'object' || typeof e.message !== 'string') return null;
    return JSON.stringify({
      error: {
        message: e.message,
        type: typeof e.type === 'string' ? e.type : 'invalid_request_error',
        param: typeof e.param === 'string' ? e.param : null,
        code: typeof e.code === 'string' || typeof e.code === 'number' ? e.code : null,
      },
    });
  } catch {
    return null;
  }
}
