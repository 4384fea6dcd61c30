/**
 * The image families: `POST /v1/images/generations` (JSON: `prompt` required, `n` a positive
 * integer) and `POST /v1/images/edits` (multipart, or JSON with image URLs: `prompt` and
 * `image` required). The edits body is spooled to a file so that a fallback can send it again
 * (`multipart-spool.ts`). Prompt size: 4 UTF-8 bytes per token over `prompt`. No input
 * modality is named: a route's `input_modalities` say what its chat model reads, and an edit's
 * image is this family's own input. Streamed image events are not relayed as a stream: an
 * upstream that streams anyway is answered whole, as its bytes.
 *
 * On a multi-target alias (seed 003): a target that is not an OpenAI-style provider ends the
 * request with a 400 naming the alias and the target; one whose route lacks image generation
 * with a 501; an edit with a 400 either way.
 */
import type { EndpointFamily } from './endpoint-family.ts';
import { checkNumber, invalid, jsonTypeOf, promptTokens } from './openai-fields.ts';

/** `prompt`: a non-empty string. */
function checkPrompt(body: Record<string, unknown>) {
  if (typeof body.prompt !== 'string' || body.prompt.length === 0) return invalid('prompt', `You must provide a 'prompt' (a non-empty string), but got ${jsonTypeOf(body.prompt)}.`);
  return checkNumber(body, 'n', { integer: true, min: 1, max: 10 });
}

/** The image generation family. */
export const imageGenerations: EndpointFamily = {
  endpoint: 'image_generation',
  path: '/v1/images/generations',
  streams: false,
  targetMustServe: { status: 501, notProviderStatus: 400 },
  check: checkPrompt,
  prompt(body) {
    return { inputTokens: promptTokens(body.prompt), modalities: [] };
  },
};

/** The image edit family. */
export const imageEdits: EndpointFamily = {
  endpoint: 'image_edit',
  path: '/v1/images/edits',
  streams: false,
  multipart: true,
  targetMustServe: { status: 400, notProviderStatus: 400 },
  check(body) {
    if (body.image === undefined || body.image === null) return invalid('image', `You must provide an 'image' (a file part, or an image URL in a JSON body).`);
    return checkPrompt(body);
  },
  prompt(body) {
    return { inputTokens: promptTokens(body.prompt), modalities: [] };
  },
};
