/**
 * `POST /v1/messages`, Anthropic's Messages API (what Claude Code and the Anthropic SDKs speak):
 * Anthropic's checks and wire, the caller's key in `x-api-key` as well as `Authorization:
 * Bearer`, `anthropic-version` and `anthropic-beta` handed to the adapter (a native Anthropic
 * route forwards them; a translating one drops them). On a `router:` model the request takes one
 * route and has no fallback (seed 000: /v1/messages picks its adapter itself), so it asks the core
 * for a single route; a multi-target alias fails over as chat completions do (seed 003).
 */
import type { EndpointFamily } from '../endpoint-family.ts';
import { anthropicWire } from './anthropic-wire.ts';
import { checkMessagesRequest, messagesPromptSize } from './message-checks.ts';

/** The client headers of Anthropic's API the adapters may forward. */
export const ANTHROPIC_CLIENT_HEADERS: readonly string[] = ['anthropic-version', 'anthropic-beta'];

/** The Messages family. */
export const messages: EndpointFamily = {
  endpoint: 'messages',
  path: '/v1/messages',
  streams: true,
  check: checkMessagesRequest,
  prompt: messagesPromptSize,
  wire: anthropicWire,
  apiKeyHeader: 'x-api-key',
  forwardHeaders: ANTHROPIC_CLIENT_HEADERS,
  singleRoute: true,
};
