/**
 * What the `anthropic` adapter sends and how it reads the answer, per endpoint family of the
 * client's request: `messages` and `count_tokens` pass through (model name rewritten both
 * ways), `chat` is translated (`../../translate/`), `responses` through chat
 * (`anthropic-responses.ts`). A request the translation refuses ends the
 * attempt as the upstream's 400 would, so the client gets a 400 naming the field.
 */
import { TOKEN_COUNT_HEADER } from '../../endpoints/messages/count-tokens.ts';
import type { ClientRequest } from '../../request-body.ts';
import { chatRequestToMessages } from '../../translate/chat-to-messages.ts';
import { messageToChatCompletion } from '../../translate/message-bodies.ts';
import { MessagesStreamToChat } from '../../translate/messages-stream-to-chat.ts';
import type { TranslatedEvent } from '../../translate/translated.ts';
import type { AttemptEnd } from '../adapter.ts';
import { publicModelOf, stripThinkingBlocks } from '../../auto/auto-request.ts';
import { isAnthropicOutput } from './anthropic-events.ts';
import { newResponseId } from '../../endpoints/responses/response-ids.ts';
import { responsesOnAnthropic } from './anthropic-responses.ts';

/** Output limit sent to Anthropic for a chat request that names none (Anthropic requires one). */
export const DEFAULT_MAX_TOKENS = 4096;

/** The request fields Anthropic's `/v1/messages/count_tokens` takes besides `model`. */
const COUNT_FIELDS = ['messages', 'system', 'tools', 'tool_choice', 'thinking', 'mcp_servers'] as const;

/** How one attempt's answer is read. */
export interface AnthropicTranslation {
  /** Client events of one upstream event (`raw`: its data as received). */
  event(name: string, data: Record<string, unknown>, raw: string, publicModel: string): TranslatedEvent[];
  /** The client body of a whole answer. */
  body(obj: Record<string, unknown>, publicModel: string): string;
}

/** What an attempt sends, with its reading. */
export interface AnthropicPlan {
  readonly body: Record<string, unknown>;
  readonly dropped: readonly string[];
  readonly headers: ReadonlyArray<readonly [string, string]>;
  readonly translation: AnthropicTranslation;
}

/** Native relay: events as they came, the model name in `message_start` rewritten; `message_stop` is the wire's. */
const NATIVE: AnthropicTranslation = {
  event(name, data, raw, publicModel) {
    if (name === 'message_stop') return [];
    if (name === 'message_start' && data.message !== null && typeof data.message === 'object') {
      (data.message as Record<string, unknown>).model = publicModel;
      return [{ name, data: JSON.stringify(data), token: false }];
    }
    return [{ name, data: raw, token: isAnthropicOutput(name, data) }];
  },
  body(obj, publicModel) {
    if (typeof obj.model === 'string') obj.model = publicModel;
    return JSON.stringify(obj);
  },
};

const COUNT: AnthropicTranslation = { event: () => [], body: (obj) => JSON.stringify({ input_tokens: obj.input_tokens }) };

/** A refused translation as the failed attempt an upstream 400 would be. */
function refused(param: string, message: string): AttemptEnd {
  // An OpenAI client reads `param`; the message names the field as well.
  const errorBody = JSON.stringify({ error: { type: 'invalid_request_error', message: `${param}: ${message}`, param } });
  return { kind: 'failed', outcome: { kind: 'http_status', status: 400, errorClass: 'client_error', retryAfterMs: null }, errorBody };
}

/** What a `/v1/responses` plan needs beyond the request: the serving endpoint and who keeps the final response. */
export interface ResponsesPlanContext {
  /** The endpoint the attempt goes to (the response id names it). */
  readonly endpointId: string;
  /** Told the final response object (`AttemptContext.onResponse`), or absent. */
  readonly onResponse?: ((response: Record<string, unknown>) => void) | undefined;
}

/** The plan of `req` on an Anthropic upstream serving `upstreamModel`, or the refusal. */
export function translationFor(req: ClientRequest, upstreamModel: string, responses?: ResponsesPlanContext): AnthropicPlan | AttemptEnd {
  if (req.endpoint === 'responses') {
    const frame = { id: newResponseId(req.auto === undefined ? (responses?.endpointId ?? 'anthropic') : null), createdAtSec: Math.floor(Date.now() / 1000), model: publicModelOf(req), request: req.body };
    const t = responsesOnAnthropic(req, upstreamModel, frame, DEFAULT_MAX_TOKENS, responses?.onResponse);
    if (!t.ok) return refused(t.param, t.message);
    return { body: t.body, dropped: t.dropped, headers: [], translation: t.translation };
  }
  if (req.endpoint === 'chat') {
    const t = chatRequestToMessages(req.body, upstreamModel, { defaultMaxTokens: DEFAULT_MAX_TOKENS });
    if (!t.ok) return refused(t.param, t.message);
    const createdSec = Math.floor(Date.now() / 1000);
    let stream: MessagesStreamToChat | null = null;
    return {
      body: t.body,
      dropped: t.dropped,
      headers: [],
      translation: {
        event(name, data, _raw, publicModel) {
          stream ??= new MessagesStreamToChat({ model: publicModel, includeUsage: req.includeUsage, createdSec });
          return stream.event(name, data);
        },
        body: (obj, publicModel) => JSON.stringify(messageToChatCompletion(obj, publicModel, createdSec)),
      },
    };
  }
  if (req.endpoint === 'count_tokens') {
    // Anthropic's count endpoint takes the prompt's fields only (no max_tokens, stream, sampling).
    const body: Record<string, unknown> = { model: upstreamModel };
    for (const k of COUNT_FIELDS) if (req.body[k] !== undefined) body[k] = req.body[k];
    return { body, dropped: [], headers: [[TOKEN_COUNT_HEADER, 'upstream']], translation: COUNT };
  }
  const body: Record<string, unknown> = { ...req.body, model: upstreamModel };
  // An auto conversation that changed models: Anthropic rejects thinking another model wrote.
  if (req.auto && req.auto.stripThinking !== 'none') body.messages = stripThinkingBlocks(body.messages, req.auto.stripThinking);
  return { body, dropped: [], headers: [], translation: NATIVE };
}
