import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { estimatePromptTokens, utf8ByteLength } from '../../../core/index.ts';

describe('utf8ByteLength', () => {
  it('agrees with TextEncoder on any string (lone surrogates included)', () => {
    const enc = new TextEncoder();
    fc.assert(fc.property(fc.string({ unit: 'binary' }), (s) => {
      expect(utf8ByteLength(s)).toBe(enc.encode(s).length);
    }), { numRuns: 500 });
    fc.assert(fc.property(fc.string({ unit: fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)) }), (s) => {
      expect(utf8ByteLength(s)).toBe(enc.encode(s).length);
    }), { numRuns: 500 });
  });
});

describe('estimatePromptTokens (4 bytes per token, 85 per image, 200 per audio)', () => {
  it('counts message text at 4 UTF-8 bytes per token, rounding up', () => {
    expect(estimatePromptTokens({ messages: [{ role: 'user', content: 'abcdefgh' }] }).tokens).toBe(2);
    expect(estimatePromptTokens({ messages: [{ role: 'user', content: 'abcdefghi' }] }).tokens).toBe(3);
    // 'é' is 2 bytes, '😀' 4: 2 + 4 = 6 bytes ⇒ 2 tokens.
    expect(estimatePromptTokens({ messages: [{ role: 'user', content: 'é😀' }] })).toMatchObject({ textBytes: 6, tokens: 2 });
    expect(estimatePromptTokens({ messages: [] }).tokens).toBe(0);
  });

  it('images are 85 tokens and audio inputs 200, text parts count as text', () => {
    const e = estimatePromptTokens({
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'x'.repeat(40) },
            { type: 'image_url', image_url: { url: 'data:image/png;base64,' + 'A'.repeat(10_000) } },
            { type: 'image_url', image_url: { url: 'https://example.com/a.png' } },
            { type: 'input_audio', input_audio: { data: 'B'.repeat(10_000), format: 'wav' } },
          ],
        },
      ],
    });
    expect(e).toEqual({ tokens: 10 + 2 * 85 + 200, textBytes: 40, images: 2, audios: 1 });
  });

  it('counts tool calls, tool results, tool definitions and the response format', () => {
    const toolCalls = [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }];
    const tools = [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }];
    const responseFormat = { type: 'json_schema', json_schema: { name: 'w', schema: { type: 'object' } } };
    const body = {
      messages: [
        { role: 'system', content: 'be brief' },
        { role: 'assistant', content: null, tool_calls: toolCalls },
        { role: 'tool', tool_call_id: 'call_1', content: '{"temp":21}' },
      ],
      tools,
      response_format: responseFormat,
    };
    const bytes = 8 + JSON.stringify(toolCalls).length + 11 + JSON.stringify(tools).length + JSON.stringify(responseFormat).length;
    expect(estimatePromptTokens(body)).toMatchObject({ textBytes: bytes, tokens: Math.ceil(bytes / 4) });
  });

  it('more text never estimates fewer tokens (monotone)', () => {
    fc.assert(
      fc.property(fc.array(fc.string()), fc.string(), (texts, extra) => {
        const body = { messages: texts.map((t) => ({ role: 'user', content: t })) };
        const more = { messages: [...body.messages, { role: 'user', content: extra }] };
        expect(estimatePromptTokens(more).tokens).toBeGreaterThanOrEqual(estimatePromptTokens(body).tokens);
      }),
    );
  });

  it('rejects a body without a messages array, saying what to send', () => {
    expect(() => estimatePromptTokens(null)).toThrow(/JSON object with a "messages" array/);
    expect(() => estimatePromptTokens({ prompt: 'hi' })).toThrow(/"messages" must be an array/);
  });
});
