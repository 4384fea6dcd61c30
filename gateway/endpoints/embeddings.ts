/**
 * `POST /v1/embeddings`: `input` is required; `dimensions` is a positive integer. Never streams.
 * Prompt size: 4 UTF-8 bytes per token over `input` (token-id arrays count one per id).
 * On a multi-target alias a target that cannot embed ends the request with a 501 (seed 003).
 */
import type { EndpointFamily } from './endpoint-family.ts';
import { checkNumber, invalid, promptTokens } from './openai-fields.ts';

/** The embeddings family. */
export const embeddings: EndpointFamily = {
  endpoint: 'embedding',
  path: '/v1/embeddings',
  targetMustServe: { status: 501, notProviderStatus: 501 },
  streams: false,
  check(body) {
    if (body.input === undefined || body.input === null) return invalid('input', `You must provide 'input'.`);
    return checkNumber(body, 'dimensions', { integer: true, min: 1 });
  },
  prompt(body) {
    return { inputTokens: promptTokens(body.input), modalities: [] };
  },
};
