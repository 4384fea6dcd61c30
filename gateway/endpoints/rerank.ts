/**
 * `POST /v1/rerank` (the Cohere/Jina shape vLLM and hosted rerankers serve): `query` is a
 * non-empty string, `documents` a non-empty array of strings or objects, `top_n` a positive
 * integer. Never streams. Prompt size: 4 UTF-8 bytes per token over the query and documents.
 * On a multi-target alias a target that cannot rerank ends the request with a 400 naming the
 * alias and the target (seed 003).
 */
import type { EndpointFamily } from './endpoint-family.ts';
import { checkNumber, invalid, jsonTypeOf, promptTokens } from './openai-fields.ts';

/** The rerank family. */
export const rerank: EndpointFamily = {
  endpoint: 'rerank',
  path: '/v1/rerank',
  streams: false,
  targetMustServe: { status: 400, notProviderStatus: 400 },
  check(body) {
    if (typeof body.query !== 'string' || body.query.length === 0) return invalid('query', `'query' must be a non-empty string, but got ${jsonTypeOf(body.query)}.`);
    if (!Array.isArray(body.documents) || body.documents.length === 0) return invalid('documents', `'documents' must be a non-empty array of strings (or objects with a 'text'), but got ${jsonTypeOf(body.documents)}.`);
    return checkNumber(body, 'top_n', { integer: true, min: 1 });
  },
  prompt(body) {
    return { inputTokens: promptTokens(body.query) + promptTokens(body.documents), modalities: [] };
  },
};
