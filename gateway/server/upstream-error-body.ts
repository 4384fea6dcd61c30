/**
 * What of an upstream's error body reaches the client: for the caller's own mistakes
 * (`PASS_THROUGH_CODES`) the body passes through, re-written in the request's client wire
 * (`ClientWire.passThroughBody`), and after commit the in-band error event carries the upstream's
 * `error.message` (where OpenAI's and Anthropic's error shapes both put it).
 */

/** Core error codes whose upstream 4xx body is passed on to the client. */
export const PASS_THROUGH_CODES: ReadonlySet<string> = new Set(['upstream_client_error', 'upstream_context_length', 'upstream_content_policy']);

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
