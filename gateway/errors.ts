/**
 * The gateway's error catalogue: every error a client can get has a stable `code`, one HTTP
 * status and one OpenAI error `type`, listed here and nowhere else (Fastify's error catalogue,
 * undici's `UND_ERR_*`). The core's codes (`ErrorCode`, statuses in core's `ERROR_STATUS`) are
 * part of it; the gateway adds its own for what happens before routing (auth, body, limits).
 *
 * The bodies written here follow OpenAI's shape `{"error":{"message","type","param","code"}}` so
 * the official clients raise their usual exceptions: OpenAI's client wire (`endpoints/openai-wire.ts`)
 * and the routes outside any endpoint family (`/v1/models`, admin, unknown URLs) use them; an
 * endpoint family with another wire renders the same code, status and message its own way
 * (`endpoints/client-wire.ts`). Messages name the model the client asked for, never an upstream
 * host, key or endpoint (those go to the log).
 */
import { ERROR_STATUS, type ErrorCode } from '../core/index.ts';

/** Codes the gateway itself answers with, before or around routing. */
export type GatewayOwnCode =
  | 'invalid_api_key'
  | 'admin_required'
  | 'invalid_json'
  | 'invalid_request'
  | 'body_too_large'
  | 'request_timeout'
  | 'overloaded'
  | 'draining'
  | 'not_found'
  | 'endpoint_not_supported'
  | 'video_not_found'
  | 'store_unavailable'
  | 'upstream_stream_interrupted'
  | 'internal_error';

/** Every code a client may see. */
export type GatewayErrorCode = ErrorCode | GatewayOwnCode;

/** OpenAI's error types (what its SDKs map to exception classes). */
export type OpenAiErrorType = 'invalid_request_error' | 'authentication_error' | 'permission_error' | 'rate_limit_error' | 'server_error';

/** HTTP status of the gateway's own codes. */
const OWN_STATUS: Readonly<Record<GatewayOwnCode, number>> = {
  invalid_api_key: 401,
  admin_required: 403,
  invalid_json: 400,
  invalid_request: 400,
  body_too_large: 413,
  // The body did not arrive whole within `server.body_read_timeout_ms` (`server/body-read-watch.ts`).
  request_timeout: 408,
  overloaded: 503,
  draining: 503,
  not_found: 404,
  // An endpoint outside what the gateway serves (`server/unsupported-endpoints.ts`).
  endpoint_not_supported: 501,
  // A video id the gateway did not hand out, or of a model the key may not use.
  video_not_found: 404,
  store_unavailable: 503,
  // A committed stream whose upstream went away (only ever sent in-band; a stall keeps upstream_timeout).
  upstream_stream_interrupted: 502,
  internal_error: 500,
};

function isOwn(code: string): code is GatewayOwnCode {
  return Object.hasOwn(OWN_STATUS, code);
}

/** The default HTTP status of `code` (the core's `ERROR_STATUS` for its codes; 500 if unknown). */
export function statusOf(code: string): number {
  if (isOwn(code)) return OWN_STATUS[code];
  return (ERROR_STATUS as Readonly<Record<string, number>>)[code] ?? 500;
}

/**
 * The OpenAI error `type` of a code, from its status: 401 authentication, 403 permission,
 * 429 rate limit, other 4xx invalid request, 5xx server. Derived rather than listed, so codes
 * the core adds later get the right type without a change here.
 */
export function typeOf(code: string, status: number = statusOf(code)): OpenAiErrorType {
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 429) return 'rate_limit_error';
  if (status >= 400 && status < 500) return 'invalid_request_error';
  return 'server_error';
}

/**
 * The request field a code is always about, for `param` when the caller names none: an unknown
 * model is `model` whether the gateway (a key not allowed the model) or the core (no such model)
 * answers, so the two answers cannot be told apart.
 */
const PARAM_OF_CODE: Readonly<Record<string, string>> = { model_not_found: 'model' };

/** The OpenAI error body (JSON text); `param` defaults to the field the code is about, else null. */
export function errorJson(code: string, message: string, param: string | null = null, status: number = statusOf(code)): string {
  return JSON.stringify({ error: { message, type: typeOf(code, status), param: param ?? PARAM_OF_CODE[code] ?? null, code } });
}

/**
 * The SSE frame of an in-band error (after a stream was committed). `retryAfterSec`, when
 * given, goes in the error object as `retry_after` (a header can no longer be sent).
 */
export function errorFrame(code: string, message: string, status: number = statusOf(code), retryAfterSec: number | null = null): string {
  if (retryAfterSec === null) return `data: ${errorJson(code, message, null, status)}\n\n`;
  return `data: ${JSON.stringify({ error: { message, type: typeOf(code, status), param: null, code, retry_after: retryAfterSec } })}\n\n`;
}

/**
 * What a client is told when the core ends a request with `code` for model `alias`: what
 * happened, in terms of the alias, without upstream hosts, keys or endpoint ids. The core's own
 * message (with endpoint ids) is logged, not sent — except for admin-only pin errors, whose
 * message the caller needs (`route_pin_not_found` lists the model's endpoint ids).
 */
export function clientMessage(code: string, alias: string, coreMessage: string): string {
  switch (code) {
    case 'model_not_found':
      return `The model '${alias}' does not exist or you do not have access to it.`;
    case 'route_pin_not_found':
      return coreMessage;
    case 'all_circuits_open':
      return `No route of model '${alias}' is available right now; retry later.`;
    case 'upstream_rate_limited':
      return `Every route of model '${alias}' is rate limited; retry later.`;
    case 'upstream_context_length':
      return `The request is too long for model '${alias}'.`;
    case 'upstream_content_policy':
      return `The request was refused by model '${alias}' on content grounds.`;
    case 'upstream_client_error':
      return `Model '${alias}' rejected the request.`;
    case 'upstream_auth_rejected':
      return `The upstreams of model '${alias}' refused the gateway's credentials.`;
    case 'upstream_timeout':
      return `Model '${alias}' timed out on every route tried.`;
    case 'upstream_overloaded':
      return `Every route of model '${alias}' is busy; retry later.`;
    case 'upstream_route_not_found':
      return `Model '${alias}' is misconfigured: its upstreams do not know it.`;
    case 'context_length_exceeded':
    case 'endpoint_not_served':
    case 'modality_not_supported':
    case 'target_cannot_serve':
      // Names the model and the endpoint family (and, for a target that cannot serve it, the
      // alias and the target's model id, as seed 003 asks): no endpoint ids, hosts or keys.
      return coreMessage;
    case 'upstream_server_error':
    case 'upstream_unavailable':
      return `Model '${alias}' is unavailable: every route tried failed.`;
    case 'queue_wait_timeout':
      return `Model '${alias}' is busy; retry later.`;
    case 'all_candidates_unavailable':
      return `Every target of model '${alias}' is cooling down; retry later.`;
    case 'forbidden_by_cidr':
      return `Model '${alias}' is not available from your network address.`;
    case 'target_rate_limited':
      return `Every target of model '${alias}' is over its rate limit; retry later.`;
    case 'routing_tags_unmatched':
      return `No target of model '${alias}' matches the request's routing tags.`;
    default:
      return `Request to model '${alias}' failed (${code}).`;
  }
}

/**
 * The in-band message of a committed stream whose upstream disconnected (`timedOut` false) or
 * went silent past its deadline (`timedOut` true) after `contentChunks` content chunks (content
 * or tool-call deltas, each usually one token) had been relayed. Once a stream has started the
 * gateway tries no other route, so the text says the stream broke, not that every route failed.
 * Names the model the client asked for, never the upstream endpoint (that goes to the log).
 */
export function midStreamMessage(alias: string, contentChunks: number, timedOut: boolean): string {
  const what = timedOut ? 'stopped sending' : 'disconnected';
  const sent = `${contentChunks} content chunk${contentChunks === 1 ? ' was' : 's were'} already sent`;
  return `The upstream of model '${alias}' ${what} mid-stream (${sent}); a started stream is not retried on another route.`;
}
