// The peer gateway of the gateway benchmark (Portkey, bench/peer-gateway.ts) starts on 127.0.0.1
// and relays a non-stream and a stream chat completion from the official `openai` client to the
// echo emulator. Skipped only when the @portkey-ai/gateway package is not installed.
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { peerGatewayInstalled, peerHeaders, startPeerGateway, type PeerGateway } from '../../bench/peer-gateway.ts';
import { startEmulator, type RunningEmulator } from '../../simulator/emulator/emulator.ts';

describe.skipIf(!peerGatewayInstalled())('peer gateway (Portkey) launcher', () => {
  let emu: RunningEmulator;
  let peer: PeerGateway;
  let client: OpenAI;

  beforeAll(async () => {
    emu = await startEmulator({ mode: 'echo' });
    peer = await startPeerGateway({ startTimeoutMs: 8000 });
    client = new OpenAI({ baseURL: `${peer.url}/v1`, apiKey: 'sk-peer-test', defaultHeaders: peerHeaders(emu.baseUrl), maxRetries: 0, timeout: 5000 });
  }, 15_000);

  afterAll(async () => {
    await peer?.stop();
    await emu?.close();
  });

  it('listens on 127.0.0.1 only', () => {
    expect(peer.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  });

  it('relays a non-stream chat completion', async () => {
    const r = await client.chat.completions.create({ model: 'bench', messages: [{ role: 'user', content: 'Say ok.' }], max_tokens: 1 });
    expect(r.choices[0]?.message.content).toBe('ok');
    expect(r.model).toBe('bench');
    const rec = emu.log.all().at(-1)!;
    expect(rec).toMatchObject({ path: '/v1/chat/completions', stream: false, authorization: 'Bearer sk-peer-test' });
  });

  it('relays a stream chat completion chunk by chunk', async () => {
    const stream = await client.chat.completions.create({ model: 'bench', stream: true, messages: [{ role: 'user', content: 'Say ok.' }], max_tokens: 1 });
    let text = '';
    let chunks = 0;
    let finish: string | null | undefined;
    for await (const c of stream) {
      chunks++;
      text += c.choices[0]?.delta.content ?? '';
      finish = c.choices[0]?.finish_reason ?? finish;
    }
    expect(text).toBe('ok');
    expect(chunks).toBeGreaterThanOrEqual(2);
    expect(finish).toBe('length');
    expect(emu.log.all().at(-1)).toMatchObject({ path: '/v1/chat/completions', stream: true });
  });
});
