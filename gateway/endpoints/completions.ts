/**
 * `POST /v1/completions` (text completions): `prompt` is required; the sampling knobs are checked
 * as `openai-fields.ts` says, and `logprobs` is an integer 0–5 here. Prompt size: 4 UTF-8 bytes
 * per token over `prompt` (token-id arrays count one per id; seed 000, "prefill load").
 * On a multi-target alias a target that cannot serve completions ends the request with a 501
 * (seed 003).
 */
import type { EndpointFamily } from './endpoint-family.ts';
import { checkNumber, checkSampling, invalid, promptTokens } from './openai-fields.ts';

/** The text completions family. */
export const completions: EndpointFamily = {
  endpoint: 'completion',
  path: '/v1/completions',
  targetMustServe: { status: 501, notProviderStatus: 501 },
  streams: true,
  check(body) {
    if (body.prompt === undefined || body.prompt === null) return invalid('prompt', `You must provide 'prompt'.`);
    return checkSampling(body) ?? checkNumber(body, 'logprobs', { integer: true, min: 0, max: 5 });
  },
  prompt(body) {
    return { inputTokens: promptTokens(body.prompt), modalities: [] };
  },
};
