/**
 * `/v1/responses` on an `anthropic` route: OpenAI's Responses API served by an Anthropic
 * Messages upstream, by composing the translations the gateway already has rather than a third
 * one. The request goes Responses → chat completions (`responses-to-chat.ts`) → Messages
 * (`chat-to-messages.ts`); the answer comes back Messages → chat (`messages-stream-to-chat.ts`,
 * `message-bodies.ts`) → Responses (`chat-stream-to-responses.ts`, `chat-to-responses.ts`),
 * event by event for a stream. The fields either step drops are named together in
 * `x-switchyard-dropped-params`, with the chat names mapped back to the Responses ones the
 * client sent; a field either step refuses ends the attempt as a 400 naming it.
 */
import type { ClientRequest } from '../../request-body.ts';
import { chatRequestToMessages } from '../../translate/chat-to-messages.ts';
import { ChatStreamToResponses } from '../../translate/chat-stream-to-responses.ts';
import { chatCompletionToResponse, type ResponseFrame } from '../../translate/chat-to-responses.ts';
import { messageToChatCompletion } from '../../translate/message-bodies.ts';
import { MessagesStreamToChat } from '../../translate/messages-stream-to-chat.ts';
import { responsesRequestToChat } from '../../translate/responses-to-chat.ts';
import type { TranslatedEvent } from '../../translate/translated.ts';
import type { AnthropicTranslation } from './anthropic-translation.ts';

/** Chat fields the Messages step may drop, by the Responses field the client sent. */
const RESPONSES_NAME: Readonly<Record<string, string>> = {
  max_tokens: 'max_output_tokens',
  reasoning_effort: 'reasoning.effort',
  response_format: 'text.format',
  logprobs: 'top_logprobs',
  tools: 'tools',
};

/** A Responses request translated for an Anthropic upstream, with its reading, or a refusal. */
export type AnthropicResponsesPlan =
  | { readonly ok: true; readonly body: Record<string, unknown>; readonly dropped: readonly string[]; readonly translation: AnthropicTranslation }
  | { readonly ok: false; readonly param: string; readonly message: string };

/**
 * The plan of `/v1/responses` request `req` on an Anthropic upstream serving `upstreamModel`.
 * `frame` names the response (its id names the serving endpoint); `onResponse`, when given, is
 * told the final response object (for the gateway's conversation store). `defaultMaxTokens` is
 * sent when the client set no `max_output_tokens` (Anthropic requires a limit).
 */
export function responsesOnAnthropic(req: ClientRequest, upstreamModel: string, frame: ResponseFrame, defaultMaxTokens: number, onResponse?: (response: Record<string, unknown>) => void): AnthropicResponsesPlan {
  const chat = responsesRequestToChat(req.body, upstreamModel);
  if (!chat.ok) return chat;
  const messages = chatRequestToMessages(chat.body, upstreamModel, { defaultMaxTokens });
  if (!messages.ok) return { ok: false, param: RESPONSES_NAME[messages.param] ?? messages.param, message: messages.message };
  const dropped = [...new Set([...chat.dropped, ...messages.dropped.map((d) => RESPONSES_NAME[d] ?? d)])].sort();
  const createdSec = frame.createdAtSec;
  let toChat: MessagesStreamToChat | null = null;
  let toResponses: ChatStreamToResponses | null = null;
  const translation: AnthropicTranslation = {
    event(name, data, _raw, publicModel) {
      toChat ??= new MessagesStreamToChat({ model: publicModel, includeUsage: true, createdSec });
      toResponses ??= new ChatStreamToResponses(frame);
      const out: TranslatedEvent[] = [];
      for (const c of toChat.event(name, data)) {
        if (c.data === '[DONE]') continue;
        out.push(...toResponses.chunk(JSON.parse(c.data) as Record<string, unknown>));
      }
      if (name === 'message_stop') {
        out.push(...toResponses.end());
        const final = toResponses.response;
        if (final !== null) onResponse?.(final);
      }
      return out;
    },
    body(obj, publicModel) {
      const response = chatCompletionToResponse(messageToChatCompletion(obj, publicModel, createdSec), frame);
      onResponse?.(response);
      return JSON.stringify(response);
    },
  };
  return { ok: true, body: messages.body, dropped, translation };
}
