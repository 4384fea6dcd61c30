/**
 * What of an upstream's error body reaches the client: for the caller's own mistakes
 * (`PASS_THROUGH_CODES`) the body passes through in OpenAI's error shape, and after commit the
 * in-band error event carries the upstream's `error.message`.
 */

/** Core error codes whose upstream 4xx body is passed on to the client. */
export const PASS_THROUGH_CODES: ReadonlySet<string> = new Set(['upstream_client_error', 'upstream_context_length', 'upstream_content_policy']);

/** An upstream 4xx body in OpenAI's error shape (extra fields dropped), or null when it is not one. */
export function passThroughBody(raw: string | null): string | null {
  if (!raw) return null;
  try {
    const e = (JSON.parse(raw) as { error?: Record<string, unknown> }).error;
    if (!e || typeof e !== 'object' || typeof e.message !== 'string') return null;
    return JSON.stringify({
      error: {
        message: e.message,
        type: typeof e.type === 'string' ? e.type : 'invalid_request_error',
        param: typeof e.param === 'string' ? e.param : null,
        code: typeof e.code === 'string' || typeof e.code === 'number' ? e.code : null,
      },
    });
  } catch {
    return null;
  }
}

/** The `error.message` of an upstream error body, or null. */
export function upstreamMessage(raw: string | null): string | null {
  if (!raw) return null;
  try {
    const e = (JSON.parse(raw) as { error?: { message?: unknown } }).error;
    return typeof e?.message === 'string' ? e.message : null;
  } catch {
    return null;
  }
}
