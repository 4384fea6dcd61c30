/**
 * The error catalogue: every error that reaches a client has a stable code and one HTTP status,
 * mapped here and nowhere else (Fastify's error catalogue, undici's `UND_ERR_*`).
 */
import type { Outcome } from './outcome.ts';

/** Stable error codes the core can end a request with. */
export type ErrorCode =
  | 'model_not_found'
  | 'all_circuits_open'
  | 'route_pin_not_found'
  | 'upstream_rate_limited'
  | 'upstream_context_length'
  | 'upstream_auth_rejected'
  | 'upstream_content_policy'
  | 'upstream_client_error'
  | 'upstream_server_error'
  | 'upstream_overloaded'
  | 'upstream_route_not_found'
  | 'context_length_exceeded'
  | 'endpoint_not_served'
  | 'target_cannot_serve'
  | 'modality_not_supported'
  | 'upstream_unavailable'
  | 'upstream_timeout'
  | 'queue_wait_timeout'
  | 'cancelled'
  | 'client_gone'
  | 'all_candidates_unavailable'
  | 'forbidden_by_cidr'
  | 'target_rate_limited'
  | 'routing_tags_unmatched'
  | 'key_pool_exhausted';

/** HTTP status for each code. `client_gone` is never sent (there is no client); 499 as nginx logs it. */
export const ERROR_STATUS: Readonly<Record<ErrorCode, number>> = {
  model_not_found: 404,
  all_circuits_open: 503,
  route_pin_not_found: 400,
  upstream_rate_limited: 429,
  upstream_context_length: 400,
  upstream_auth_rejected: 502,
  upstream_content_policy: 400,
  upstream_client_error: 400,
  upstream_server_error: 502,
  // Every route tried was busy (503 with Retry-After, 529): retry later, with the hint.
  upstream_overloaded: 503,
  // Every route tried answered 404: the routes' model names or paths are wrong (our config).
  upstream_route_not_found: 502,
  // The prompt estimate plus max_tokens fits no route's context_length (checked before sending).
  context_length_exceeded: 400,
  // No route (or target) of the model serves the endpoint family the request was made on.
  endpoint_not_served: 400,
  // A multi-target alias reached a target that cannot serve the endpoint family (seed 003): a
  // configuration error of the group, never retried; 400 here, 501 for a missing capability
  // (the life passes the status, `RouteRequest.targetMustServe`).
  target_cannot_serve: 400,
  // No route (or target) of the model accepts the request's input modalities (images, audio):
  // a property of the request and the model, not a transient state, so not a 503.
  modality_not_supported: 400,
  upstream_unavailable: 502,
  upstream_timeout: 504,
  queue_wait_timeout: 503,
  // Every route's key pool had no key the caller may use in the rotation (all silenced, or all
  // reserved for higher tiers): capacity, not the request, so retry later.
  key_pool_exhausted: 503,
  cancelled: 499,
  client_gone: 499,
  // Multi-target models (seed 003): cooldown left no target; every target's allowed_cidrs
  // excludes the caller; every target is over its own rate limit; the request's routing tags
  // match no target and no target is tagged `default`.
  all_candidates_unavailable: 503,
  forbidden_by_cidr: 403,
  target_rate_limited: 429,
  routing_tags_unmatched: 400,
};

/**
 * The client-facing error for a failed attempt's outcome. Upstream 4xx statuses pass through
 * (the client sent something wrong); upstream 5xx and our credential being refused become 502,
 * because the gateway, not the client, is at fault. 429 passes its Retry-After on.
 * @throws Error for `ok` (a success is not an error — a bug in the caller).
 */
export function errorForOutcome(outcome: Outcome): { status: number; code: ErrorCode; retryAfterSec: number | null } {
  switch (outcome.kind) {
    case 'ok':
      throw new Error('errorForOutcome called with an ok outcome');
    case 'http_status': {
      const retryAfterSec = outcome.retryAfterMs === null ? null : Math.max(0, Math.ceil(outcome.retryAfterMs / 1000));
      switch (outcome.errorClass) {
        case 'rate_limited':
          return { status: 429, code: 'upstream_rate_limited', retryAfterSec };
        case 'context_length':
          return { status: outcome.status, code: 'upstream_context_length', retryAfterSec: null };
        case 'content_policy':
          return { status: outcome.status, code: 'upstream_content_policy', retryAfterSec: null };
        case 'client_error':
          return { status: outcome.status, code: 'upstream_client_error', retryAfterSec: null };
        case 'auth_rejected':
          return { status: 502, code: 'upstream_auth_rejected', retryAfterSec: null };
        case 'server_error':
          return { status: 502, code: 'upstream_server_error', retryAfterSec };
        case 'overloaded':
          return { status: 503, code: 'upstream_overloaded', retryAfterSec };
        case 'request_timeout':
          return { status: 504, code: 'upstream_timeout', retryAfterSec: null };
        case 'route_not_found':
          return { status: 502, code: 'upstream_route_not_found', retryAfterSec: null };
      }
      break;
    }
    case 'transport':
      return { status: outcome.cause === 'timeout' ? 504 : 502, code: outcome.cause === 'timeout' ? 'upstream_timeout' : 'upstream_unavailable', retryAfterSec: null };
    case 'first_token_timeout':
      return { status: 504, code: 'upstream_timeout', retryAfterSec: null };
    case 'queue_wait_timeout':
      return { status: 503, code: 'queue_wait_timeout', retryAfterSec: null };
    case 'cancelled':
      return { status: 499, code: 'cancelled', retryAfterSec: null };
    case 'client_gone':
      return { status: 499, code: 'client_gone', retryAfterSec: null };
    case 'key_pool_exhausted':
      return { status: 503, code: 'key_pool_exhausted', retryAfterSec: null };
    case 'shared_unit_refused': {
      // The limit is spent across the replicas: the same answer the local limit would give.
      const retryAfterSec = outcome.retryAfterMs === null ? null : Math.max(0, Math.ceil(outcome.retryAfterMs / 1000));
      return outcome.unit === 'rate_limit' ? { status: 429, code: 'target_rate_limited', retryAfterSec } : { status: 429, code: 'upstream_rate_limited', retryAfterSec };
    }
  }
  throw new Error(`unhandled outcome ${JSON.stringify(outcome)}`);
}
