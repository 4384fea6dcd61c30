/**
 * `POST /v1/messages/count_tokens`: how many input tokens a Messages request would be. A route
 * that can count answers with its own count — a native Anthropic route with the upstream's
 * `count_tokens`, an OpenAI-compatible engine route that declares `count_tokens` in its
 * `endpoints:` with the engine's tokenizer (`POST /tokenize` on vLLM and SGLang); on an alias the
 * core skips targets that cannot (seed 003). When no route of the model can count, the gateway
 * answers with its own estimate (the routing estimate, 4 UTF-8 bytes per token) and says so:
 * `x-switchyard-token-count: estimate` (a counted answer says `upstream` or `tokenizer`).
 */
import type { EndpointFamily } from '../endpoint-family.ts';
import { anthropicWire } from './anthropic-wire.ts';
import { ANTHROPIC_CLIENT_HEADERS } from './messages.ts';
import { checkCountTokensRequest, messagesPromptSize } from './message-checks.ts';

/** Response header saying where a count came from: `upstream`, `tokenizer` or `estimate`. */
export const TOKEN_COUNT_HEADER = 'x-switchyard-token-count';

/** The count_tokens family. */
export const countTokens: EndpointFamily = {
  endpoint: 'count_tokens',
  path: '/v1/messages/count_tokens',
  streams: false,
  check: checkCountTokensRequest,
  prompt: messagesPromptSize,
  wire: anthropicWire,
  apiKeyHeader: 'x-api-key',
  forwardHeaders: ANTHROPIC_CLIENT_HEADERS,
  answerWhenUnserved: (req) => ({ body: JSON.stringify({ input_tokens: req.inputTokens }), headers: [[TOKEN_COUNT_HEADER, 'estimate']] }),
};
