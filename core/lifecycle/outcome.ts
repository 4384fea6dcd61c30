/**
 * What happened to one attempt, as data (undici's `UND_ERR_*` codes, Envoy's response flags).
 * Drivers translate sockets or simulated engines into these values; the core decides what they
 * mean for health, fallback and the client.
 */

/** Class of an upstream HTTP error status, decided once by the driver with `classifyStatus`. */
export type HttpErrorClass =
  | 'rate_limited' // 429
  | 'context_length' // prompt too long for this endpoint (request-scoped)
  | 'auth_rejected' // 401/403: the gateway's own credential was refused
  | 'content_policy' // refused on content grounds (request-scoped)
  | 'client_error' // any other 4xx
  | 'server_error'; // 5xx

/** Result of one attempt. `ok` means the upstream completed the response. */
export type Outcome =
  | { kind: 'ok' }
  | {
      kind: 'http_status';
      status: number;
      errorClass: HttpErrorClass;
      /** Upstream's Retry-After in ms (429/503), or null when absent. */
      retryAfterMs: number | null;
    }
  | { kind: 'transport'; cause: 'reset' | 'refused' | 'timeout' }
  | { kind: 'first_token_timeout' }
  | { kind: 'queue_wait_timeout' }
  | { kind: 'cancelled' }
  | { kind: 'client_gone' };

/**
 * Maps an upstream status (and, for 400s, the error body's code if the driver has it) to a class.
 * 400 with a code mentioning context length ⇒ `context_length`; with `content_policy`/`content_filter`
 * ⇒ `content_policy`. Source: OpenAI error codes (`context_length_exceeded`, `content_filter`).
 * @throws RangeError when `status` is not an HTTP error status (400–599).
 */
export function classifyStatus(status: number, errorCode: string | null = null): HttpErrorClass {
  if (!Number.isInteger(status) || status < 400 || status > 599) {
    throw new RangeError(`status must be an HTTP error status 400-599, got ${status}`);
  }
  if (status >= 500) return 'server_error';
  if (status === 429) return 'rate_limited';
  if (status === 401 || status === 403) return 'auth_rejected';
  const code = (errorCode ?? '').toLowerCase();
  if (status === 413 || code.includes('context_length')) return 'context_length';
  if (code.includes('content_policy') || code.includes('content_filter')) return 'content_policy';
  return 'client_error';
}

/**
 * Whether an outcome counts against the endpoint's health (breaker and EWMA availability).
 * Counted: 5xx, 429 (the endpoint cannot take our traffic now), 401/403 (our key is refused —
 * see also `markDegraded`), transport errors and first-token timeouts.
 * Not counted: request-scoped 4xx (context length, content policy, other 4xx — another request
 * would succeed), queue-wait timeouts (the wait was ours, not the endpoint's), cancellations and
 * client disconnects. Source: seed 000 "endpoint health"; Envoy outlier detection counts 5xx and
 * gateway errors only, LiteLLM cools down on 429.
 */
export function isHealthFailure(outcome: Outcome): boolean {
  switch (outcome.kind) {
    case 'ok':
    case 'queue_wait_timeout':
    case 'cancelled':
    case 'client_gone':
      return false;
    case 'transport':
    case 'first_token_timeout':
      return true;
    case 'http_status':
      return (
        outcome.errorClass === 'server_error' ||
        outcome.errorClass === 'rate_limited' ||
        outcome.errorClass === 'auth_rejected'
      );
  }
}
