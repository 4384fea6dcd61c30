/**
 * What the `openai_compat` adapter does differently for the families beyond text generation
 * (rerank, images, audio, videos; seed 003 "支持的端点"): the upstream request of an attempt —
 * a spooled multipart body sent again with the route's model name (`multipart-spool.ts`), or
 * the GET of a video job's status or content — and the reading of a whole answer: JSON with the
 * model name rewritten (usage in either the Chat or the Responses/audio shape), a video job's id
 * replaced by the gateway's (`endpoints/video-id.ts`), or bytes that are not JSON (speech audio,
 * video content, a transcript as text or subtitles) relayed with their content type. A streamed
 * transcription's events pass through as they are (`TranscriptPassthrough`).
 */
import type { Readable } from 'node:stream';
import type { Usage } from '../../core/index.ts';
import { encodeVideoId, sealEndpointId } from '../endpoints/video-id.ts';
import { uploadBody } from '../multipart-spool.ts';
import type { ClientRequest } from '../request-body.ts';
import type { ChunkTranslator, RelayEvent } from '../sse-relay.ts';
import type { ClientWire } from '../endpoints/client-wire.ts';
import { openAiWire } from '../endpoints/openai-wire.ts';
import type { TranslatedEvent } from '../translate/translated.ts';
import type { AttemptEnd } from './adapter.ts';

/** A request body other than JSON text: a fresh stream of a spooled upload, with its length and type. */
export interface StreamedBody {
  readonly body: Readable;
  readonly lengthBytes: number;
  readonly contentType: string;
}

/** The multipart body of one attempt of `req` (a fresh read of its spooled file), or null for a JSON body. */
export function attemptUpload(req: ClientRequest, upstreamModel: string): StreamedBody | null {
  if (!req.upload) return null;
  const b = uploadBody(req.upload, upstreamModel);
  return { body: b.body, lengthBytes: b.lengthBytes, contentType: req.upload.contentType };
}

/** The upstream path (after the route's base path) of a video status or content request. */
export function videoFetchPath(fetch: NonNullable<ClientRequest['videoFetch']>): string {
  const id = encodeURIComponent(fetch.upstreamId);
  return fetch.op === 'content' ? `/videos/${id}/content` : `/videos/${id}`;
}

/** Whether a response content type is JSON. */
export function isJsonType(contentType: string | null): boolean {
  return contentType === null || contentType === '' || /\bjson\b/i.test(contentType);
}

/** Usage of a whole answer's `usage` object: Chat's `prompt_tokens` / `completion_tokens`, else `input_tokens` / `output_tokens`. */
export function anyUsage(u: unknown): Usage | null {
  if (u === null || typeof u !== 'object') return null;
  const o = u as Record<string, unknown>;
  const n = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) && v > 0 ? Math.floor(v) : 0);
  return { inputTokens: n(o.prompt_tokens ?? o.input_tokens), outputTokens: n(o.completion_tokens ?? o.output_tokens), cachedTokens: 0 };
}

/**
 * A whole JSON answer of one of these families: `model` rewritten to `publicModel` where the
 * body has one, and for a video job (submit or status) its `id` replaced by the gateway's id
 * naming `endpointId`. Null when the text is not a JSON object (a protocol violation).
 */
export function familyBody(text: string, req: ClientRequest, publicModel: string, endpointId: string): AttemptEnd | null {
  let obj: unknown;
  try {
    obj = JSON.parse(text);
  } catch {
    return null;
  }
  if (obj === null || typeof obj !== 'object' || Array.isArray(obj)) return null;
  const o = obj as Record<string, unknown>;
  let changed = false;
  if (typeof o.model === 'string' && o.model !== publicModel) {
    o.model = publicModel;
    changed = true;
  }
  if (req.endpoint === 'video' && typeof o.id === 'string') {
    o.id = req.videoFetch?.publicId ?? encodeVideoId({ endpointId: req.auto ? sealEndpointId(endpointId) : endpointId, model: publicModel, upstreamId: o.id });
    if (req.videoFetch === undefined) o.model = publicModel;
    changed = true;
  }
  return { kind: 'body', text: changed ? JSON.stringify(o) : text, usage: anyUsage(o.usage) };
}

/** Whether `req` is answered with bytes whatever their type says (speech audio, a video's content). */
export function answersWithBytes(req: ClientRequest): boolean {
  return req.endpoint === 'speech' || req.videoFetch?.op === 'content';
}

/**
 * A streamed transcription (`stream=true`): each upstream event goes to the client as it is;
 * a `transcript.text.delta` is model output, `transcript.text.done` ends the answer (its usage
 * is read by the relay from the chunk's `usage`).
 */
export class TranscriptPassthrough implements ChunkTranslator {
  chunk(chunk: Record<string, unknown>): readonly TranslatedEvent[] {
    return [{ name: null, data: JSON.stringify(chunk), token: chunk.type === 'transcript.text.delta' }];
  }

  end(): readonly TranslatedEvent[] {
    return [];
  }

  finishes(chunk: Record<string, unknown>): boolean {
    return chunk.type === 'transcript.text.done';
  }
}

/**
 * The events of a streamed transcription whose upstream answered whole (JSON `{text, usage?}`):
 * one `transcript.text.delta` with all the text, `transcript.text.done`, then `done` — what
 * the client asked for, from an upstream that does not stream. Null when the body is not such
 * an answer.
 */
export function transcriptEvents(text: string, wire: ClientWire = openAiWire): RelayEvent[] | null {
  let o: unknown;
  try {
    o = JSON.parse(text);
  } catch {
    return null;
  }
  if (o === null || typeof o !== 'object' || typeof (o as { text?: unknown }).text !== 'string') return null;
  const answer = o as { text: string; usage?: unknown };
  const done: Record<string, unknown> = { type: 'transcript.text.done', text: answer.text };
  if (answer.usage !== undefined) done.usage = answer.usage;
  return [
    { kind: 'frame', text: wire.streamEvent(null, JSON.stringify({ type: 'transcript.text.delta', delta: answer.text })), token: true },
    { kind: 'frame', text: wire.streamEvent(null, JSON.stringify(done)), token: false },
    { kind: 'done', usage: anyUsage(answer.usage) },
  ];
}
