/** Outcome fixtures shared by the health tests. */
import type { HttpErrorClass, Outcome } from '../../../core/index.ts';

function http(status: number, errorClass: HttpErrorClass): Outcome {
  return { kind: 'http_status', status, errorClass, retryAfterMs: null };
}

export const OK: Outcome = { kind: 'ok' };
export const S503: Outcome = http(503, 'server_error');
export const S500: Outcome = http(500, 'server_error');
export const R429: Outcome = http(429, 'rate_limited');
export const AUTH401: Outcome = http(401, 'auth_rejected');
export const CTX400: Outcome = http(400, 'context_length');
export const POLICY400: Outcome = http(400, 'content_policy');
export const CLIENT404: Outcome = http(404, 'client_error');
export const RESET: Outcome = { kind: 'transport', cause: 'reset' };
export const TIMEOUT: Outcome = { kind: 'transport', cause: 'timeout' };
export const FIRST_TOKEN_TIMEOUT: Outcome = { kind: 'first_token_timeout' };
export const QUEUE_WAIT: Outcome = { kind: 'queue_wait_timeout' };
export const CANCELLED: Outcome = { kind: 'cancelled' };
export const CLIENT_GONE: Outcome = { kind: 'client_gone' };

export const ALL_OUTCOMES: readonly Outcome[] = [
  OK, S503, S500, R429, AUTH401, CTX400, POLICY400, CLIENT404, RESET, TIMEOUT,
  FIRST_TOKEN_TIMEOUT, QUEUE_WAIT, CANCELLED, CLIENT_GONE,
];
