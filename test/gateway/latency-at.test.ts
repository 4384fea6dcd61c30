// What the gateway asks least_latency to measure per endpoint family (seed 003): speech and a
// streamed transcription to the upstream's response headers, everything else to its first
// token (streams) or whole body; and, on a real gateway, that such an attempt is sampled at its
// headers and stays busy (in flight, what least_busy counts) until its relayed answer ends.
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { endpointId } from '../../core/index.ts';
import { hashKey } from '../../gateway/callers.ts';
import { buildGatewayConfig } from '../../gateway/config/load.ts';
import { startGateway } from '../../gateway/gateway.ts';
import { RAW_SSE_HEAD, rawChunk, servedEndpoint, startRawUpstream } from './harness.ts';
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

describe('on a real gateway: measured to the headers, busy until the relayed answer ends', () => {
  /** Resolves once `ok()` holds, checking every few ms (the test's own timeout bounds it). */
  async function until(ok: () => boolean): Promise<void> {
    while (!ok()) await new Promise((r) => setTimeout(r, 5));
  }

  it('speech and a streamed transcription, through a least_latency alias over hand-written upstreams that pause mid-answer', async () => {
    let release: (() => void) | null = null;
    const up = await startRawUpstream((sock, body) => {
      if (body.includes('"voice"')) {
        // Speech: the headers and part of the audio now, the rest when released.
        sock.write('HTTP/1.1 200 OK\r\ncontent-type: audio/mpeg\r\ncontent-length: 8\r\n\r\nID3a');
        release = () => sock.write('bcde');
      } else {
        sock.write(RAW_SSE_HEAD + rawChunk(`data: ${JSON.stringify({ type: 'transcript.text.delta', delta: 'hel' })}\n\n`));
        release = () => sock.end(rawChunk(`data: ${JSON.stringify({ type: 'transcript.text.delta', delta: 'lo' })}\n\n`) + rawChunk(`data: ${JSON.stringify({ type: 'transcript.text.done', text: 'hello' })}\n\n`) + '0\r\n\r\n');
      }
    });
    const config = buildGatewayConfig({
      models: {
        models: [
          { id: 'speech-up', route: [{ base_url: up.baseUrl }] },
          { id: 'stt-up', route: [{ base_url: up.baseUrl }] },
          { id: 'speech', routing: { strategy: 'least_latency', targets: [{ model: 'speech-up' }] } },
          { id: 'stt', routing: { strategy: 'least_busy', targets: [{ model: 'stt-up' }] } },
        ],
      },
      gateway: { routing_settings: { affinity_enabled: false, prefill_aware_enabled: false }, auth: { mode: 'keys', keys: [{ id: 'u', sha256: hashKey('sk-latency-at') }] } },
    });
    const gw = await startGateway({ config, host: '127.0.0.1', port: 0, seed: 1, logger: pino({ level: 'silent' }) });
    const stats = () => gw.core.endpointStats;
    try {
      const auth = { authorization: 'Bearer sk-latency-at' };
      const speechId = endpointId('speech-up', 'openai_compat', up.baseUrl);
      const speech = fetch(`${gw.url}/v1/audio/speech`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'speech', voice: 'alloy', input: 'hi' }) });
      await until(() => stats().latencyMs(speechId) !== null);
      expect(stats().inFlight(speechId)).toBe(1);
      release!();
      const r = await speech;
      expect(Buffer.from(await r.arrayBuffer()).toString()).toBe('ID3abcde');
      await servedEndpoint(gw, r);
      expect(stats().inFlight(speechId)).toBe(0);

      release = null;
      const sttId = endpointId('stt-up', 'openai_compat', up.baseUrl);
      const form = new FormData();
      form.append('model', 'stt');
      form.append('stream', 'true');
      form.append('file', new Blob([Buffer.from('RIFF')], { type: 'audio/wav' }), 'a.wav');
      const stt = await fetch(`${gw.url}/v1/audio/transcriptions`, { method: 'POST', headers: auth, body: form });
      expect(stt.headers.get('content-type')).toBe('text/event-stream');
      const reader = stt.body!.getReader();
      const first = new TextDecoder().decode((await reader.read()).value);
      expect(first).toContain('hel');
      // The relayed stream is open: sampled at its headers, still busy.
      expect(stats().latencyMs(sttId)).not.toBeNull();
      expect(stats().inFlight(sttId)).toBe(1);
      release!();
      let rest = '';
      for (let c = await reader.read(); !c.done; c = await reader.read()) rest += new TextDecoder().decode(c.value);
      expect(rest).toContain('transcript.text.done');
      await servedEndpoint(gw, stt);
      expect(stats().inFlight(sttId)).toBe(0);
    } finally {
      await gw.close();
      await up.close();
    }
  });
});
