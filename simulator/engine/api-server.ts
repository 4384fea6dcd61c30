/**
 * The API server in front of an engine: the OpenAI-compatible frontend that parses the HTTP
 * request, tokenises the prompt, detokenises each output token and frames it as an SSE chunk
 * (vLLM's `api_server` process, SGLang's tokenizer manager). Its cost is not part of an engine
 * step, so the step-time model does not see it; a client measuring through HTTP does.
 *
 * Modelled as a delivery delay on what the engine produced, with three terms:
 *   first token delivered  = produced + requestMs + perPromptTokenMs × inputTokens
 *   last token delivered   = produced + requestMs + perPromptTokenMs × inputTokens
 *                                     + perOutputTokenMs × (outputTokens − 1)
 * so TTFT grows by the first two terms and TPOT ((E2E − TTFT) / (outputTokens − 1)) by
 * `perOutputTokenMs`. The engine's scheduling is unchanged: the frontend runs beside the engine
 * loop, and a request's place in the batch does not depend on how fast its tokens are framed.
 * All terms default to 0 (off); `switchyard calibrate --fit` fits them from a gateway log.
 */
import { z } from 'zod';

/** `replicas.api_server:` — the three terms, ms. Absent fields are 0. */
export const ApiServerSchema = z
  .object({
    /** Fixed ms per request (HTTP parsing, request setup), added to TTFT and E2E. */
    request_ms: z.number().finite().nonnegative().default(0),
    /** ms per prompt token (tokenisation), added to TTFT and E2E. */
    per_prompt_token_ms: z.number().finite().nonnegative().default(0),
    /** ms per output token after the first (detokenisation, SSE framing), added to E2E and so to TPOT. */
    per_output_token_ms: z.number().finite().nonnegative().default(0),
  })
  .strict();

/** The API-server terms, ms. */
export interface ApiServerTerm {
  readonly requestMs: number;
  readonly perPromptTokenMs: number;
  readonly perOutputTokenMs: number;
}

/** No API-server latency: what a replica without `api_server:` gets. */
export const NO_API_SERVER: ApiServerTerm = { requestMs: 0, perPromptTokenMs: 0, perOutputTokenMs: 0 };

/** The term of a validated `api_server:` block (`NO_API_SERVER` when absent). */
export function apiServerTerm(block: z.infer<typeof ApiServerSchema> | undefined): ApiServerTerm {
  if (block === undefined) return NO_API_SERVER;
  return { requestMs: block.request_ms, perPromptTokenMs: block.per_prompt_token_ms, perOutputTokenMs: block.per_output_token_ms };
}

/** Delay of the first token after the engine produced it, ms. */
export function firstTokenDelayMs(t: ApiServerTerm, inputTokens: number): number {
  return t.requestMs + t.perPromptTokenMs * inputTokens;
}

/** Extra delay of the last token beyond the first token's delay, ms (0 for one output token). */
export function streamDelayMs(t: ApiServerTerm, outputTokens: number): number {
  return t.perOutputTokenMs * Math.max(0, outputTokens - 1);
}
