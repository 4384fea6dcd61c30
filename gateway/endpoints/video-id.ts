/**
 * The id of a video job as the gateway hands it out: `video_sy` followed by base64url of
 * `[endpointId, model, upstreamId]` — the target that accepted the job (its endpoint id), the
 * model the client submitted on (the status body echoes it), and the upstream's own id. A
 * status or content request decodes it and goes to that target only (seed 003: a video stays
 * on the provider that accepted it). The id carries no secret: a caller still needs a key
 * allowed to use the model.
 */

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
