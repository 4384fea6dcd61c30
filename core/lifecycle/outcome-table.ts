/**
 * How an upstream error is treated, as data in one table (Envoy's `retry_on`, gRPC's retryable
 * status codes): first `classifyUpstreamError` names the class of an error response (status,
 * the error body's `code` / `type` / `message`, Retry-After), then `OUTCOME_RULES` says what the
 * class means for the endpoint's health and for the request — return it to the caller, fail
 * over, or fail over only to a route with a larger context window. Both model kinds read the
 * same rows; a reader can check them against a provider's docs here.
 *
 * Sources: OpenAI error codes (`context_length_exceeded`, `content_filter`); vLLM, SGLang and
 * Anthropic error wordings for a prompt that does not fit (quoted in `CONTEXT_LENGTH_WORDING`);
 * Anthropic's 529 `overloaded_error`; RFC 9110 §15.6.4 (503 with Retry-After = temporary
 * overload); Envoy outlier detection (a bare 5xx is a failure); seed 003 ("most upstream 4xx go
 * straight back to the caller").
 */

/** Class of an upstream HTTP error, decided once by the driver with `classifyUpstreamError`. */
export type HttpErrorClass =
  | 'rate_limited' // 429
  | 'overloaded' // 503 with Retry-After, 529, or an overload error type: busy, not broken
  | 'server_error' // any other 5xx
  | 'request_timeout' // 408: the upstream gave up waiting; a timeout
  | 'route_not_found' // 404: the route's model or path is wrong (configuration)
  | 'context_length' // the prompt does not fit this endpoint's window
  | 'auth_rejected' // 401/403: the gateway's own credential was refused
  | 'content_policy' // refused on content grounds (request-scoped)
  | 'client_error'; // any other 4xx: the caller's own mistake (request-scoped)

/**
 * What the request does after an attempt failed with a class:
 * `return` — the caller gets this error now (never sent to another route);
 * `fail_over` — another route or target may serve it (a multi-target alias may first retry the
 * same target when `retrySame`);
 * `larger_window` — only a route whose context window is larger than the one that refused may
 * serve it; when none is left, the caller gets the error.
 */
export type FailureAction = 'return' | 'fail_over' | 'larger_window';

/** One row of the table. */
export interface OutcomeRule {
  /** Counts against the endpoint's breaker and EWMA availability. */
  readonly healthFailure: boolean;
  readonly action: FailureAction;
  /** A multi-target alias may retry the same target (within `retries`) before failing over. */
  readonly retrySame: boolean;
}

/** The table. A row per class; `test/core/lifecycle/outcome-table.test.ts` has a test per row. */
export const OUTCOME_RULES: Readonly<Record<HttpErrorClass, OutcomeRule>> = Object.freeze({
  rate_limited: { healthFailure: true, action: 'fail_over', retrySame: true },
  overloaded: { healthFailure: false, action: 'fail_over', retrySame: true },
  server_error: { healthFailure: true, action: 'fail_over', retrySame: true },
  request_timeout: { healthFailure: true, action: 'fail_over', retrySame: true },
  route_not_found: { healthFailure: true, action: 'fail_over', retrySame: false },
  context_length: { healthFailure: false, action: 'larger_window', retrySame: false },
  auth_rejected: { healthFailure: true, action: 'fail_over', retrySame: false },
  content_policy: { healthFailure: false, action: 'return', retrySame: false },
  client_error: { healthFailure: false, action: 'return', retrySame: false },
});

/**
 * Wordings of a prompt that does not fit, lower-cased substrings:
 * OpenAI / vLLM "This model's maximum context length is 4096 tokens", vLLM "is longer than the
 * maximum model length", "too long and exceeds limit", SGLang "is longer than the model's
 * context length", Anthropic "prompt is too long" and "exceed context limit", and generic
 * "context window" / "context_length".
 */
export const CONTEXT_LENGTH_WORDING: readonly string[] = Object.freeze([
  'maximum context length',
  'context_length',
  'context length',
  'maximum model length',
  'too long and exceeds limit',
  'prompt is too long',
  'exceed context limit',
  'exceeds context limit',
  'context window',
]);

const OVERLOAD_WORDING: readonly string[] = ['overloaded', 'server_overloaded', 'overload'];
const CONTENT_POLICY_WORDING: readonly string[] = ['content_policy', 'content_filter'];

/** What a driver knows about an upstream error response. Text fields may be absent. */
export interface UpstreamErrorReport {
  /** HTTP status 400–599 (an in-band stream error's `status`, else the response's). */
  readonly status: number;
  /** The error body's `error.code`, if any. */
  readonly code?: string | null;
  /** The error body's `error.type`, if any. */
  readonly type?: string | null;
  /** The error body's `error.message`, if any. */
  readonly message?: string | null;
  /** The upstream's Retry-After in ms (`parseRetryAfterMs`), or null when absent. */
  readonly retryAfterMs?: number | null;
}

function mentions(text: string, words: readonly string[]): boolean {
  for (const w of words) if (text.includes(w)) return true;
  return false;
}

/**
 * The class of an upstream error response (rows in the module comment).
 * @throws RangeError when `status` is not an HTTP error status (400–599).
 */
export function classifyUpstreamError(r: UpstreamErrorReport): HttpErrorClass {
  const status = r.status;
  if (!Number.isInteger(status) || status < 400 || status > 599) {
    throw new RangeError(`status must be an HTTP error status 400-599, got ${status}`);
  }
  const ids = `${r.code ?? ''} ${r.type ?? ''}`.toLowerCase();
  if (status >= 500) {
    if (status === 529 || (status === 503 && r.retryAfterMs != null) || mentions(ids, OVERLOAD_WORDING)) return 'overloaded';
    return 'server_error';
  }
  if (status === 429) return 'rate_limited';
  if (status === 401 || status === 403) return 'auth_rejected';
  if (status === 404) return 'route_not_found';
  if (status === 408) return 'request_timeout';
  const text = `${ids} ${(r.message ?? '').toLowerCase()}`;
  if (mentions(text, CONTENT_POLICY_WORDING)) return 'content_policy';
  if (mentions(text, CONTEXT_LENGTH_WORDING)) return 'context_length';
  return 'client_error';
}

/**
 * Short form of `classifyUpstreamError` for a status and the error body's code.
 * @throws RangeError when `status` is not an HTTP error status (400–599).
 */
export function classifyStatus(status: number, errorCode: string | null = null): HttpErrorClass {
  return classifyUpstreamError({ status, code: errorCode });
}
