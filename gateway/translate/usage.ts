/**
 * Token usage between the two wire formats and the core's `Usage`.
 *
 * Anthropic counts prompt tokens in three disjoint parts — `input_tokens` (uncached),
 * `cache_read_input_tokens` and `cache_creation_input_tokens` — while OpenAI reports one
 * `prompt_tokens` total with `prompt_tokens_details.cached_tokens` as the cached part. The core
 * (like OpenAI) counts the whole prompt as input and the cache reads as cached. Missing or
 * malformed counts read as 0.
 */
import type { Usage } from '../../core/index.ts';
import { count, isRecord } from './json-values.ts';

/**
 * The core's usage from an Anthropic usage object: inputTokens = input_tokens +
 * cache_read_input_tokens + cache_creation_input_tokens; outputTokens = output_tokens;
 * cachedTokens = cache_read_input_tokens. A non-object reads as all zeros.
 */
export function usageFromAnthropic(u: unknown): Usage {
  const r = isRecord(u) ? u : {};
  const cacheRead = count(r.cache_read_input_tokens);
  return {
    inputTokens: count(r.input_tokens) + cacheRead + count(r.cache_creation_input_tokens),
    outputTokens: count(r.output_tokens),
    cachedTokens: cacheRead,
  };
}

/**
 * An Anthropic usage object from an OpenAI one ({prompt_tokens, completion_tokens,
 * prompt_tokens_details.cached_tokens}): input_tokens = prompt − cached (never below 0),
 * output_tokens = completion, cache_read_input_tokens = cached, cache_creation_input_tokens = 0
 * (OpenAI-compatible servers do not report cache writes).
 */
export function anthropicUsageFromOpenAi(u: unknown): Record<string, number> {
  const r = isRecord(u) ? u : {};
  const details = isRecord(r.prompt_tokens_details) ? r.prompt_tokens_details : {};
  const prompt = count(r.prompt_tokens);
  const cached = Math.min(count(details.cached_tokens), prompt);
  return {
    input_tokens: prompt - cached,
    output_tokens: count(r.completion_tokens),
    cache_read_input_tokens: cached,
    cache_creation_input_tokens: 0,
  };
}

/**
 * An OpenAI usage object from an Anthropic one: prompt_tokens = input + cache_read +
 * cache_creation, completion_tokens = output, total_tokens = their sum,
 * prompt_tokens_details.cached_tokens = cache_read.
 */
export function openAiUsageFromAnthropic(u: unknown): Record<string, unknown> {
  const core = usageFromAnthropic(u);
  return {
    prompt_tokens: core.inputTokens,
    completion_tokens: core.outputTokens,
    total_tokens: core.inputTokens + core.outputTokens,
    prompt_tokens_details: { cached_tokens: core.cachedTokens },
  };
}
