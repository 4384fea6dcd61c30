/**
 * Response ids of `/v1/responses` as the gateway hands them out: `resp_<target>_<nonce>`, where
 * `<target>` is the base64url of the endpoint id that served the response and `<nonce>` 24 hex
 * digits. A follow-up turn naming it in `previous_response_id` goes back to that target first
 * (seed 003: a conversation stays where its context is), even when the stored conversation has
 * expired or lives in another gateway's memory.
 */
import { randomBytes } from 'node:crypto';

const ID = /^resp_([A-Za-z0-9_-]+)_([0-9a-f]{24})$/;

/** A fresh response id naming `endpointId`. */
export function newResponseId(endpointId: string): string {
  return `resp_${Buffer.from(endpointId, 'utf8').toString('base64url')}_${randomBytes(12).toString('hex')}`;
}

/** The endpoint id a gateway response id names, or null when `id` is not one. */
export function endpointOfResponseId(id: string): string | null {
  const m = ID.exec(id);
  if (m === null) return null;
  const endpointId = Buffer.from(m[1]!, 'base64url').toString('utf8');
  return endpointId.length > 0 ? endpointId : null;
}
