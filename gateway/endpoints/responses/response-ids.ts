/**
 * The ids of `/v1/responses` that name the target that served them (seed 003: a conversation
 * stays where its context is).
 * - Response ids: `resp_<target>_<nonce>`, where `<target>` is the base64url of the endpoint id
 *   and `<nonce>` 24 hex digits. A follow-up turn naming one in `previous_response_id` goes back
 *   to that target first, even when the stored conversation has expired or lives in another
 *   gateway's memory. A response of an auto model gets `resp_<48 hex digits>` instead, naming
 *   no target: its client must not learn the serving model (its follow-up turn goes back to the
 *   target that the stored response records).
 * - A reasoning item's `encrypted_content`, readable only by the provider that wrote it:
 *   `swy1.<base64url endpoint id>.<the upstream's content>`. A turn that sends such items back in
 *   its `input` (a client chaining turns itself, `store: false`) goes back to the target of the
 *   last one first, and only that target is sent their content.
 */
import { randomBytes } from 'node:crypto';

const ID = /^resp_([A-Za-z0-9_-]+)_([0-9a-f]{24})$/;

/** A fresh response id naming `endpointId`; with null, one naming no target (`resp_<48 hex digits>`). */
export function newResponseId(endpointId: string | null): string {
  if (endpointId === null) return `resp_${randomBytes(24).toString('hex')}`;
  return `resp_${Buffer.from(endpointId, 'utf8').toString('base64url')}_${randomBytes(12).toString('hex')}`;
}

/** The endpoint id a gateway response id names, or null when `id` is not one. */
export function endpointOfResponseId(id: string): string | null {
  const m = ID.exec(id);
  if (m === null) return null;
  const endpointId = Buffer.from(m[1]!, 'base64url').toString('utf8');
  return endpointId.length > 0 ? endpointId : null;
}

const TAG = /^swy1\.([A-Za-z0-9_-]+)\.([\s\S]*)$/;

/** `content` (a reasoning item's `encrypted_content`) tagged with `endpointId`. */
export function tagEncryptedContent(content: string, endpointId: string): string {
  return `swy1.${Buffer.from(endpointId, 'utf8').toString('base64url')}.${content}`;
}

/** The endpoint id and upstream content of a tagged `encrypted_content`, or null when `s` is not one. */
export function untagEncryptedContent(s: string): { endpointId: string; content: string } | null {
  const m = TAG.exec(s);
  if (m === null) return null;
  const endpointId = Buffer.from(m[1]!, 'base64url').toString('utf8');
  return endpointId.length > 0 ? { endpointId, content: m[2]! } : null;
}

/**
 * The endpoint id named by the last tagged reasoning item of `input` (a request's input items),
 * or null when none carries one.
 */
export function endpointOfReasoning(input: readonly unknown[]): string | null {
  for (let i = input.length - 1; i >= 0; i--) {
    const item = input[i] as { type?: unknown; encrypted_content?: unknown } | null;
    if (item === null || typeof item !== 'object' || item.type !== 'reasoning' || typeof item.encrypted_content !== 'string') continue;
    const tag = untagEncryptedContent(item.encrypted_content);
    if (tag !== null) return tag.endpointId;
  }
  return null;
}
