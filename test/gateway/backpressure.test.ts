// Backpressure: while a client does not read, the gateway stops reading the upstream (so a fast
// upstream is held back by the TCP window, not buffered in the gateway); a large non-stream body
// reaches a client intact through uWS's tryEnd/onWritable.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pino from 'pino';
import { request } from 'undici';
import { buildGatewayConfig } from '../../gateway/config/load.ts';
import { startGateway, type RunningGateway } from '../../gateway/gateway.ts';
import { startEmulator, type RunningEmulator } from '../../simulator/emulator/emulator.ts';
import { startRawUpstream, type RawUpstream } from './harness.ts';

const FRAME = `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', model: 'demo', choices: [{ index: 0, delta: { content: 'x'.repeat(1000) }, finish_reason: null }] })}\n\n`;
const FRAMES = 40_000; // ~44 MB: far more than every socket buffer on the path together

describe('backpressure', () => {
  let upstream: RawUpstream;
  let gw: RunningGateway;
  let em: RunningEmulator;
  let written = 0;

  beforeAll(async () => {
    // Writes as fast as its socket lets it: only the gateway's backpressure can hold it back.
    upstream = await startRawUpstream((sock) => {
      sock.write('HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n');
      let i = 0;
      const pump = (): void => {
        while (i < FRAMES) {
          i++;
          written += FRAME.length;
          if (!sock.write(FRAME)) return void sock.once('drain', pump);
        }
        sock.end('data: [DONE]\n\n');
      };
      pump();
    });
    em = await startEmulator({ mode: 'echo' });
    const config = buildGatewayConfig({
      models: { models: [{ id: 'demo', route: [{ base_url: upstream.baseUrl }] }, { id: 'embed', route: [{ base_url: em.baseUrl }] }] },
      gateway: { auth: { mode: 'none' } },
    });
    gw = await startGateway({ config, port: 0, seed: 1, logger: pino({ level: 'silent' }) });
  });

  afterAll(async () => {
    await gw.close();
    await em.close();
    await upstream.close();
  });

  it('a paused client holds the upstream back; resumed, it gets every frame in order', async () => {
    const res = await request(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'demo', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(res.statusCode).toBe(200);
    const body = res.body;
    const parts: Buffer[] = [];
    await new Promise<void>((r) =>
      body.on('data', (d: Buffer) => {
        parts.push(d);
        if (parts.length === 1) {
          body.pause();
          r();
        }
      }),
    );
    await new Promise((r) => setTimeout(r, 300));
    const atPause = written;
    await new Promise((r) => setTimeout(r, 300));
    // Held back: the upstream wrote a bounded amount and then nothing more while paused.
    expect(written).toBeLessThan((FRAMES * FRAME.length) / 2);
    expect(written - atPause).toBeLessThan(4 * 1024 * 1024);
    body.resume();
    await new Promise((r) => body.once('end', r));
    const text = Buffer.concat(parts).toString('utf8');
    const frames = text.split('\n\n').filter((f) => f.length > 0);
    expect(frames.at(-1)).toBe('data: [DONE]');
    expect(frames.length).toBe(FRAMES + 1);
    expect(frames.slice(0, -1).every((f) => `${f}\n\n` === FRAME)).toBe(true);
  });

  it('a multi-megabyte non-stream body arrives intact', async () => {
    const input = Array.from({ length: 64 }, (_, i) => `text ${i}`);
    const body = JSON.stringify({ model: 'embed', input, dimensions: 4096 });
    const direct = await (await fetch(`${em.baseUrl}/embeddings`, { method: 'POST', body })).text();
    const via = await (await fetch(`${gw.url}/v1/embeddings`, { method: 'POST', body })).text();
    expect(via.length).toBeGreaterThan(4_000_000);
    expect(via).toBe(direct.replace('"model":"embed"', '"model":"embed"'));
  });
});
