import { describe, expect, it } from 'vitest';
import { anthropicUsageFromOpenAi, openAiUsageFromAnthropic, usageFromAnthropic } from '../../../gateway/translate/usage.ts';

describe('usage translation', () => {
  it('counts all three Anthropic prompt parts as input and cache reads as cached', () => {
    expect(usageFromAnthropic({ input_tokens: 10, output_tokens: 5, cache_read_input_tokens: 100, cache_creation_input_tokens: 7 }))
      .toEqual({ inputTokens: 117, outputTokens: 5, cachedTokens: 100 });
  });
  it('reads missing and malformed counts as 0', () => {
    expect(usageFromAnthropic(undefined)).toEqual({ inputTokens: 0, outputTokens: 0, cachedTokens: 0 });
    expect(usageFromAnthropic({ input_tokens: 'x', output_tokens: -3 })).toEqual({ inputTokens: 0, outputTokens: 0, cachedTokens: 0 });
  });
  it('splits OpenAI prompt tokens into uncached and cache reads', () => {
    expect(anthropicUsageFromOpenAi({ prompt_tokens: 120, completion_tokens: 9, prompt_tokens_details: { cached_tokens: 100 } }))
      .toEqual({ input_tokens: 20, output_tokens: 9, cache_read_input_tokens: 100, cache_creation_input_tokens: 0 });
    expect(anthropicUsageFromOpenAi({ prompt_tokens: 3, completion_tokens: 1 }))
      .toEqual({ input_tokens: 3, output_tokens: 1, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 });
    expect(anthropicUsageFromOpenAi(null)).toEqual({ input_tokens: 0, output_tokens: 0, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 });
  });
  it('sums Anthropic prompt parts into OpenAI prompt tokens', () => {
    expect(openAiUsageFromAnthropic({ input_tokens: 10, output_tokens: 5, cache_read_input_tokens: 100, cache_creation_input_tokens: 7 }))
      .toEqual({ prompt_tokens: 117, completion_tokens: 5, total_tokens: 122, prompt_tokens_details: { cached_tokens: 100 } });
  });
  it('round-trips OpenAI usage through Anthropic shape', () => {
    const u = { prompt_tokens: 50, completion_tokens: 4, total_tokens: 54, prompt_tokens_details: { cached_tokens: 30 } };
    expect(openAiUsageFromAnthropic(anthropicUsageFromOpenAi(u))).toEqual(u);
  });
});
