/**
 * Reading a native Anthropic Messages stream (Anthropic's API reference, "Streaming Messages"):
 * `message_start` (the message, with input and cache usage), `content_block_start` /
 * `content_block_delta` / `content_block_stop`, `message_delta` (stop reason, output usage),
 * `message_stop`, `ping`, and an in-band `error` event. Pure: one parsed event in, what it means
 * for the gateway out — relay it (flagged when it carries model output, the commit point), drop
 * it (`ping`), the end of the answer, or a failure with the HTTP status its error type stands for.
 */
import type { Usage } from '../../../core/index.ts';
import { isRecord, nonEmpty } from '../../translate/json-values.ts';
import { usageFromAnthropic } from '../../translate/usage.ts';

/** HTTP status an Anthropic error type stands for (529 for `overloaded_error`). */
export function statusOfAnthropicError(type: string | null): number {
  switch (type) {
    case 'overloaded_error':
      return 529;
    case 'rate_limit_error':
      return 429;
    case 'invalid_request_error':
      return 400;
    case 'authentication_error':
      return 401;
    case 'permission_error':
      return 403;
    case 'not_found_error':
      return 404;
    case 'request_too_large':
      return 413;
    default:
      return 500;
  }
}

/**
 * Whether an Anthropic stream event carries model output: a non-empty text, thinking or
 * tool-input delta, or the start of a tool_use block (its name is output).
 */
export function isAnthropicOutput(name: string, data: Record<string, unknown>): boolean {
  if (name === 'content_block_delta' && isRecord(data.delta)) {
    const d = data.delta;
    return nonEmpty(d.text) || nonEmpty(d.thinking) || nonEmpty(d.partial_json);
  }
  if (name === 'content_block_start' && isRecord(data.content_block)) return data.content_block.type === 'tool_use';
  return false;
}

/** Usage of one stream, from `message_start` and then `message_delta` (whose counts overwrite when present). */
export class AnthropicStreamUsage {
  private raw: Record<string, unknown> = {};

  /** Notes the usage an event carries. */
  note(name: string, data: Record<string, unknown>): void {
    const u = name === 'message_start' && isRecord(data.message) ? data.message.usage : name === 'message_delta' ? data.usage : undefined;
    if (!isRecord(u)) return;
    for (const [k, v] of Object.entries(u)) if (typeof v === 'number') this.raw[k] = v;
  }

  /** The usage so far. */
  get usage(): Usage {
    return usageFromAnthropic(this.raw);
  }
}
