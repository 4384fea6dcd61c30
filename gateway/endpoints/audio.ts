/**
 * The audio families: `POST /v1/audio/transcriptions` and `/v1/audio/translations`
 * (multipart: a `file` part is required; the body is spooled so that a fallback can send it
 * again, `multipart-spool.ts`; a transcription with `stream=true` is relayed as the upstream's
 * event stream, or, from an upstream that answers whole, as one delta and the done event) and
 * `POST /v1/audio/speech` (JSON: `input` and `voice` required; the answer is the upstream's
 * audio bytes with its content type, relayed whole — never SSE).
 * Prompt size: 200 tokens per audio file (seed 000's per-audio estimate), `input` by bytes for
 * speech; no input modality is named (a route's `input_modalities` are its chat model's, and
 * the audio file is these families' own input). On a multi-target alias a target that cannot
 * serve the family ends the request with a 501 (a missing capability, seed 003).
 */
import type { EndpointFamily } from './endpoint-family.ts';
import { checkNumber, invalid, jsonTypeOf, promptTokens } from './openai-fields.ts';

/** Estimated prompt tokens of one audio file (the core's per-audio estimate). */
const AUDIO_TOKENS = 200;

function checkFile(body: Record<string, unknown>) {
  const f = body.file as { filename?: unknown } | undefined | null;
  if (f === undefined || f === null || typeof f !== 'object' || f.filename === undefined) return invalid('file', `You must provide 'file' as a multipart file part (multipart/form-data).`);
  return checkNumber(body, 'temperature', { min: 0, max: 1 });
}

const MISSING_CAPABILITY = { status: 501, notProviderStatus: 501 } as const;

/** The transcription family. */
export const audioTranscriptions: EndpointFamily = {
  endpoint: 'transcription',
  path: '/v1/audio/transcriptions',
  streams: true,
  multipart: true,
  targetMustServe: MISSING_CAPABILITY,
  latencyAtHeaders: 'stream',
  check: checkFile,
  prompt: () => ({ inputTokens: AUDIO_TOKENS, modalities: [] }),
};

/** The translation family (speech in any language to English text). */
export const audioTranslations: EndpointFamily = {
  endpoint: 'translation',
  path: '/v1/audio/translations',
  streams: false,
  multipart: true,
  targetMustServe: MISSING_CAPABILITY,
  check: checkFile,
  prompt: () => ({ inputTokens: AUDIO_TOKENS, modalities: [] }),
};

/** The speech (text to audio) family. */
export const audioSpeech: EndpointFamily = {
  endpoint: 'speech',
  path: '/v1/audio/speech',
  streams: false,
  targetMustServe: MISSING_CAPABILITY,
  latencyAtHeaders: 'always',
  check(body) {
    if (typeof body.input !== 'string' || body.input.length === 0) return invalid('input', `You must provide 'input' (a non-empty string), but got ${jsonTypeOf(body.input)}.`);
    if (body.voice === undefined || body.voice === null) return invalid('voice', `You must provide a 'voice'.`);
    return checkNumber(body, 'speed', { min: 0.25, max: 4 });
  },
  prompt: (body) => ({ inputTokens: promptTokens(body.input), modalities: [] }),
};
