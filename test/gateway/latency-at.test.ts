// What the gateway asks least_latency to measure per endpoint family (seed 003): speech and a
// streamed transcription to the upstream's response headers, everything else to its first
// token (streams) or whole body.
import { describe, expect, it } from 'vitest';
import { audioSpeech, audioTranscriptions, audioTranslations } from '../../gateway/endpoints/audio.ts';
import { chatCompletions } from '../../gateway/endpoints/chat-completions.ts';
import type { EndpointFamily } from '../../gateway/endpoints/endpoint-family.ts';
import { routeRequestOf } from '../../gateway/server/route-request.ts';

const meta = { requestId: 'r', sessionId: null, affinityKey: null, pin: null, routingTags: null, clientIp: null, headers: null, cookies: null } as never;
const of = (family: EndpointFamily, stream: boolean) =>
  routeRequestOf({ model: 'm', body: {}, stream, inputTokens: 1, outputTokensHint: null, modalities: [], endpoint: family.endpoint, family } as never, meta).latencyAt;

describe('RouteRequest.latencyAt by family', () => {
  it('speech: the response headers, whole or streamed', () => {
    expect(of(audioSpeech, false)).toBe('headers');
    expect(of(audioSpeech, true)).toBe('headers');
  });

  it('transcription: the headers when streamed, the whole answer otherwise', () => {
    expect(of(audioTranscriptions, true)).toBe('headers');
    expect(of(audioTranscriptions, false)).toBe('first_token');
  });

  it('translation and chat: first token / whole body', () => {
    expect(of(audioTranslations, false)).toBe('first_token');
    expect(of(chatCompletions, true)).toBe('first_token');
  });
});
