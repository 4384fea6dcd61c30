/**
 * A native Responses upstream's answer relayed to a `/v1/responses` client (the route declares
 * the `responses` family, so the upstream speaks it too): events and bodies pass as they are,
 * except that the response's `id` becomes the gateway's (it names the target that served it,
 * `endpoints/responses/response-ids.ts`) and its `model` the name the client asked for. Pure.
 *
 * For the relay (`sse-relay.ts`) the stream reader also says what the chat relay reads from chat
 * chunks: which events carry model output (the commit point — non-empty text, refusal or
 * reasoning deltas, a function call's item or arguments), when the answer is whole
 * (`response.completed` or `response.incomplete`; Responses streams send no `[DONE]`), the usage
 * it reports, and in-band failures (`error` events and `response.failed`) as upstream errors.
 *
 * A reasoning item's `encrypted_content` is readable only by the provider that wrote it, so the
 * gateway tags it with the endpoint that served it (`swy1.<base64url endpoint id>.<content>`,
 * `endpoints/responses/response-ids.ts`);
 * when the conversation comes back, a native upstream gets the content of its own items back
 * untagged, and reasoning items another target wrote are left out (named as dropped).
 */
import type { Usage } from '../../core/index.ts';
import { count, isRecord, nonEmpty, str } from './json-values.ts';
import type { TranslatedEvent } from './translated.ts';
import { tagEncryptedContent, untagEncryptedContent } from '../endpoints/responses/response-ids.ts';

/** Event types whose `delta` is model output. */
const OUTPUT_DELTAS = new Set([
  'response.output_text.delta', 'response.refusal.delta', 'response.reasoning_text.delta',
  'response.reasoning_summary_text.delta', 'response.function_call_arguments.delta',
]);

/** The core's usage of a Responses usage object (`input_tokens`, `output_tokens`, cached input). */
export function usageFromResponses(u: unknown): Usage {
  const r = isRecord(u) ? u : {};
  const d = isRecord(r.input_tokens_details) ? r.input_tokens_details : {};
  return { inputTokens: count(r.input_tokens), outputTokens: count(r.output_tokens), cachedTokens: count(d.cached_tokens) };
}

/** An output item with its `encrypted_content` tagged with `endpointId` (reasoning items only; others as they are). */
export function tagReasoningItem(item: unknown, endpointId: string): unknown {
  if (!isRecord(item) || item.type !== 'reasoning' || typeof item.encrypted_content !== 'string') return item;
  return { ...item, encrypted_content: tagEncryptedContent(item.encrypted_content, endpointId) };
}

/**
 * The input items for a native upstream at `endpointId`: its own tagged reasoning items with
 * their content restored, reasoning items tagged by another endpoint removed (their paths
 * listed in `dropped`, e.g. `input.[3]`), every other item as it is.
 */
export function inputForEndpoint(input: readonly unknown[], endpointId: string): { input: unknown[]; dropped: string[] } {
  const out: unknown[] = [];
  const dropped: string[] = [];
  input.forEach((item, i) => {
    const tag = isRecord(item) && item.type === 'reasoning' && typeof item.encrypted_content === 'string' ? untagEncryptedContent(item.encrypted_content) : null;
    if (tag === null) return out.push(item);
    if (tag.endpointId === endpointId) out.push({ ...(item as Record<string, unknown>), encrypted_content: tag.content });
    else dropped.push(`input.[${i}]`);
  });
  return { input: out, dropped };
}

/**
 * `response` with the gateway's `id`, the client's `model`, the conversation fields the
 * gateway answers for (`previous_response_id` and `store` as the client's `request` had them:
 * the upstream was sent neither), and its reasoning items tagged with `endpointId`. A shallow copy.
 */
export function rewriteResponse(response: Record<string, unknown>, id: string, model: string, request: Record<string, unknown>, endpointId: string): Record<string, unknown> {
  const previous = request.previous_response_id;
  const out: Record<string, unknown> = { ...response, id, model, previous_response_id: typeof previous === 'string' ? previous : null, store: request.store !== false };
  if (Array.isArray(response.output)) out.output = response.output.map((item) => tagReasoningItem(item, endpointId));
  return out;
}

/** An in-band failure of a Responses stream, in the relay's terms. */
export interface ResponsesFailure {
  readonly kind: 'upstream_error';
  readonly status: number;
  readonly code: string | null;
  readonly type: string | null;
  readonly message: string;
  readonly retryAfterMs: number | null;
}

/** The HTTP status an in-band error code stands for: rate limits 429, bad requests 400, else 500. */
function statusOfCode(code: string | null): number {
  if (code === null) return 500;
  if (code.includes('rate_limit')) return 429;
  if (code.startsWith('invalid') || code === 'context_length_exceeded') return 400;
  return 500;
}

/** One native Responses stream's relay state. */
export class NativeResponsesStream {
  /** The answer is whole (`response.completed` / `response.incomplete` seen). */
  finished = false;
  /** Usage of the final event, once seen. */
  usage: Usage | null = null;
  private final: Record<string, unknown> | null = null;

  /**
   * `id`: the gateway's response id; `model`: the name the client asked for; `request`: the
   * client's body; `endpointId`: the endpoint streaming it (reasoning items are tagged with it).
   */
  constructor(private readonly id: string, private readonly model: string, private readonly request: Record<string, unknown>, private readonly endpointId: string) {}

  /** The final response (ids rewritten), once the answer is whole; else null. */
  get response(): Record<string, unknown> | null {
    return this.final;
  }

  /** An in-band failure event (`error`, `response.failed`) as an upstream error; null for other events. */
  failure(event: Record<string, unknown>): ResponsesFailure | null {
    if (event.type === 'error') {
      const code = nonEmpty(event.code) ? event.code : null;
      return { kind: 'upstream_error', status: statusOfCode(code), code, type: null, message: str(event.message) || 'upstream error', retryAfterMs: null };
    }
    if (event.type === 'response.failed') {
      const r = isRecord(event.response) ? event.response : {};
      const e = isRecord(r.error) ? r.error : {};
      const code = nonEmpty(e.code) ? e.code : null;
      return { kind: 'upstream_error', status: statusOfCode(code), code, type: null, message: str(e.message) || 'the upstream response failed', retryAfterMs: null };
    }
    return null;
  }

  /** The client event of one upstream event, `response` rewritten where it carries one. */
  chunk(event: Record<string, unknown>): TranslatedEvent[] {
    const type = str(event.type);
    let data = event;
    if (isRecord(event.response)) {
      const response = rewriteResponse(event.response, this.id, this.model, this.request, this.endpointId);
      data = { ...event, response };
      if (type === 'response.completed' || type === 'response.incomplete') {
        this.finished = true;
        this.final = response;
        this.usage = usageFromResponses(response.usage);
      }
    }
    if (isRecord(event.item) && event.item.type === 'reasoning') data = { ...data, item: tagReasoningItem(event.item, this.endpointId) };
    let token = OUTPUT_DELTAS.has(type) && nonEmpty(event.delta);
    if (!token && type === 'response.output_item.added' && isRecord(event.item) && event.item.type === 'function_call') token = true;
    return [{ name: type.length > 0 ? type : null, data: JSON.stringify(data), token }];
  }

  /** Nothing closes a native stream: its own final event was relayed. */
  end(): TranslatedEvent[] {
    return [];
  }
}
