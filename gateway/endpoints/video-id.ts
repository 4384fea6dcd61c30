/**
 * The id of a video job as the gateway hands it out: `video_sy` followed by base64url of
 * `[endpointId, model, upstreamId]` — the target that accepted the job (its endpoint id), the
 * model the client submitted on (the status body echoes it), and the upstream's own id. A
 * status or content request decodes it and goes to that target only (seed 003: a video stays
 * on the provider that accepted it). The id carries no secret: a caller still needs a key
 * allowed to use the model. A job submitted on an auto model, whose client must not learn the
 * serving model, carries its endpoint sealed (`sealEndpointId`: a SHA-256 digest that names no
 * target; the gateway finds the endpoint among its own by the same digest).
 */
import { createHash } from 'node:crypto';

/** Prefix of gateway video ids. */
export const VIDEO_ID_PREFIX = 'video_sy';

/** What a gateway video id names. */
export interface VideoRef {
  /** Endpoint id of the target that accepted the job. */
  readonly endpointId: string;
  /** The model the job was submitted on (alias or model id). */
  readonly model: string;
  /** The upstream's id of the job. */
  readonly upstreamId: string;
}

/** The gateway's id for `ref`. */
export function encodeVideoId(ref: VideoRef): string {
  return VIDEO_ID_PREFIX + Buffer.from(JSON.stringify([ref.endpointId, ref.model, ref.upstreamId]), 'utf8').toString('base64url');
}

/** What gateway video id `id` names, or null when it is not one. */
export function decodeVideoId(id: string): VideoRef | null {
  if (!id.startsWith(VIDEO_ID_PREFIX)) return null;
  try {
    const v = JSON.parse(Buffer.from(id.slice(VIDEO_ID_PREFIX.length), 'base64url').toString('utf8')) as unknown;
    if (!Array.isArray(v) || v.length !== 3 || !v.every((x) => typeof x === 'string' && x.length > 0)) return null;
    return { endpointId: v[0] as string, model: v[1] as string, upstreamId: v[2] as string };
  } catch {
    return null;
  }
}

/** Prefix of a sealed endpoint id inside a video id. */
const SEALED = '#';

/**
 * `endpointId` as a video id of an auto model carries it: `#` and the first 32 hex digits of its
 * SHA-256, stable across processes and replicas, naming neither the model nor the upstream.
 */
export function sealEndpointId(endpointId: string): string {
  return SEALED + createHash('sha256').update(endpointId, 'utf8').digest('hex').slice(0, 32);
}

/**
 * The endpoint a video id names: `ref.endpointId` itself, or for a sealed one the endpoint among
 * `endpointIds` with the same digest (null when none has it: the job's endpoint is gone).
 */
export function resolveVideoEndpoint(ref: VideoRef, endpointIds: Iterable<string>): string | null {
  if (!ref.endpointId.startsWith(SEALED)) return ref.endpointId;
  for (const id of endpointIds) if (sealEndpointId(id) === ref.endpointId) return id;
  return null;
}
