// The endpoint families beyond text generation (seed 003 "支持的端点"), end to end: the official
// `openai` client against a real gateway on loopback over emulators — rerank, images, audio,
// embeddings, videos — with a multipart fallback after a target that never answered, the
// spool file gone afterwards, the capability errors (400 / 501) of multi-target aliases, the
// 501 of endpoints the gateway does not serve, video stickiness and the no-replay rule.
import { readdirSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import OpenAI, { toFile } from 'openai';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { endpointId } from '../../core/index.ts';
import { hashKey } from '../../gateway/callers.ts';
import { buildGatewayConfig } from '../../gateway/config/load.ts';
import { decodeVideoId, encodeVideoId } from '../../gateway/endpoints/video-id.ts';
import { startGateway, type RunningGateway } from '../../gateway/gateway.ts';
import { startEmulator, type RunningEmulator } from '../../simulator/emulator/emulator.ts';
import { rawJson, startRawUpstream, servedEndpoint } from './harness.ts';
import { SPEECH_BYTES, TINY_PNG_B64, TRANSCRIPT_TEXT, VIDEO_BYTES } from '../../simulator/emulator/family-shapes.ts';

const KEY = 'sk-families';
const LIMITED = 'sk-families-limited';

async function closedPortUrl(): Promise<string> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as { port: number }).port;
  await new Promise((r) => s.close(r));
  return `http://127.0.0.1:${port}/v1`;
}

/** Spool files of this gateway's uploads now in the temporary directory. */
function spoolFiles(): string[] {
  return readdirSync(tmpdir()).filter((f) => f.startsWith('switchyard-upload-'));
}

let gw: RunningGateway;
let good: RunningEmulator;
let second: RunningEmulator;
let failing: RunningEmulator;
let resetting: RunningEmulator;
let dead: string;
let client: OpenAI;

beforeAll(async () => {
  [good, second, failing, resetting] = await Promise.all([
    startEmulator({ mode: 'echo', videoPolls: 1 }),
    startEmulator({ mode: 'echo', videoPolls: 0 }),
    startEmulator({ mode: 'echo', faults: { error_rate: 1, error_status: 500 } }),
    startEmulator({ mode: 'echo', faults: { reset_rate: 1 } }),
  ]);
  dead = await closedPortUrl();
  const config = buildGatewayConfig({
    models: {
      models: [
        { id: 'direct', route: [{ base_url: good.baseUrl, provider_model_id: 'up-model' }] },
        { id: 'direct-b', route: [{ base_url: second.baseUrl }] },
        { id: 'direct-dead', route: [{ base_url: dead }] },
        { id: 'direct-500', route: [{ base_url: failing.baseUrl }] },
        { id: 'direct-reset', route: [{ base_url: resetting.baseUrl }] },
        // A router model whose first route answers 500: chat fails over, a video submit does not.
        { id: 'two-routes', route: [{ base_url: failing.baseUrl }, { base_url: second.baseUrl, weight: 0.000001 }] },
        { id: 'chat-only', route: [{ base_url: good.baseUrl, endpoints: ['chat'] }] },
        { id: 'claude-img', route: [{ kind: 'anthropic', base_url: good.baseUrl }] },
        // Fallback: the first target refuses connections, the second answers.
        { id: 'group', routing: { targets: [{ model: 'direct-dead' }, { model: 'direct' }] } },
        // The first target reads the whole upload, then resets the connection without answering.
        { id: 'upload-group', routing: { targets: [{ model: 'direct-reset' }, { model: 'direct' }] } },
        { id: 'video-group', routing: { targets: [{ model: 'direct-dead' }, { model: 'direct-b' }] } },
        { id: 'video-500', routing: { targets: [{ model: 'direct-500' }, { model: 'direct-b' }] } },
        // Capability errors: the first target cannot serve the family.
        { id: 'img-group', routing: { targets: [{ model: 'claude-img' }, { model: 'direct' }] } },
        { id: 'cap-group', routing: { targets: [{ model: 'chat-only' }, { model: 'direct' }] } },
        // A target that cannot serve the family after one that failed retryably.
        { id: 'late-cap', routing: { targets: [{ model: 'direct-dead' }, { model: 'chat-only' }, { model: 'direct' }] } },
      ],
    },
    gateway: {
      server: { body_limit_mb: 2 },
      routing_settings: { affinity_enabled: false, prefill_aware_enabled: false },
      health: { failure_threshold: 1000 },
      auth: {
        mode: 'keys',
        keys: [
          { id: 'user', sha256: hashKey(KEY) },
          { id: 'limited', sha256: hashKey(LIMITED), allowed_models: ['direct'] },
        ],
      },
    },
  });
  gw = await startGateway({ config, host: '127.0.0.1', port: 0, seed: 5, logger: pino({ level: 'silent' }) });
  client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: KEY, maxRetries: 0, timeout: 10_000 });
});

afterAll(async () => {
  await gw?.close();
  await Promise.all([good, second, failing, resetting].map((e) => e?.close()));
});

const post = (path: string, body: unknown) =>
  fetch(`${gw.url}${path}`, { method: 'POST', headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });

/** The requests `emu` received on `path` since `from` (a count of its log). */
const received = (emu: RunningEmulator, path: string, from = 0) => emu.log.all().slice(from).filter((r) => r.path === path);

describe('the openai client on every family, over a multi-target alias with a dead first target', () => {
  it('embeddings.create falls back and answers', async () => {
    const r = await client.embeddings.create({ model: 'group', input: 'hello' });
    expect(r.data[0]!.embedding.length).toBeGreaterThan(0);
  });

  it('images.generate returns the emulated PNG', async () => {
    const r = await client.images.generate({ model: 'group', prompt: 'a cat', n: 2 });
    expect(r.data?.map((d) => d.b64_json)).toEqual([TINY_PNG_B64, TINY_PNG_B64]);
  });

  it('rerank (no client method: raw JSON) scores every document', async () => {
    const r = await post('/v1/rerank', { model: 'group', query: 'q', documents: ['a', 'b', 'c'], top_n: 2 });
    expect(r.status).toBe(200);
    const body = (await r.json()) as { model: string; results: Array<{ index: number }> };
    expect(body.model).toBe('group');
    expect(body.results.map((x) => x.index)).toEqual([0, 1]);
  });

  it('images.edit (multipart) is retried on the next target, sent with its model name, and its spool file is removed', async () => {
    const before = spoolFiles().length;
    const from = good.log.all().length;
    const fromReset = resetting.log.all().length;
    const png = Buffer.from(TINY_PNG_B64, 'base64');
    const image = await toFile(png, 'cat.png', { type: 'image/png' });
    const { data: r, response } = await client.images.edit({ model: 'upload-group', image, prompt: 'add a hat' }).withResponse();
    expect(r.data?.[0]?.b64_json).toBe(TINY_PNG_B64);
    // The alias's answer names the direct model that served it.
    expect(response.headers.get('x-switchyard-served-by')).toBe('direct');
    expect(await servedEndpoint(gw, response)).toBe(endpointId('direct', 'openai_compat', good.baseUrl));
    // Both targets got the whole body: the second from the spool file, after the first reset.
    const first = received(resetting, '/v1/images/edits', fromReset);
    const up = received(good, '/v1/images/edits', from);
    expect(first).toHaveLength(1);
    expect(up).toHaveLength(1);
    for (const rec of [first[0]!, up[0]!]) {
      const fields = rec.body as Record<string, unknown>;
      expect(fields.prompt).toBe('add a hat');
      expect(fields.image).toMatchObject({ filename: 'cat.png', size_bytes: png.length });
    }
    expect((up[0]!.body as Record<string, unknown>).model).toBe('up-model');
    expect((first[0]!.body as Record<string, unknown>).model).toBe('direct-reset');
    expect(spoolFiles().length).toBe(before);
  });

  it('audio.transcriptions.create: json, text, and a relayed stream', async () => {
    const file = () => toFile(Buffer.from('RIFF....WAVEfmt '), 'hello.wav', { type: 'audio/wav' });
    const json = await client.audio.transcriptions.create({ model: 'group', file: await file() });
    expect(json.text).toBe(TRANSCRIPT_TEXT);
    const text = await client.audio.transcriptions.create({ model: 'group', file: await file(), response_format: 'text' });
    expect(text).toBe(TRANSCRIPT_TEXT);
    const stream = await client.audio.transcriptions.create({ model: 'group', file: await file(), stream: true });
    let deltas = '';
    let done = '';
    for await (const ev of stream) {
      if (ev.type === 'transcript.text.delta') deltas += ev.delta;
      if (ev.type === 'transcript.text.done') done = ev.text;
    }
    expect(deltas).toBe(TRANSCRIPT_TEXT);
    expect(done).toBe(TRANSCRIPT_TEXT);
    expect(spoolFiles().filter((f) => f.length > 0).length).toBe(spoolFiles().length);
  });

  it('a streamed transcription from an upstream that answers whole comes as the stream asked for', async () => {
    const whole = await startRawUpstream((sock) => sock.end(rawJson(200, { text: 'whole answer', usage: { type: 'tokens', input_tokens: 3, output_tokens: 2 } })));
    const raw = buildGatewayConfig({
      models: { models: [{ id: 'w', route: [{ base_url: whole.baseUrl }] }] },
      gateway: { auth: { mode: 'keys', keys: [{ id: 'user', sha256: hashKey(KEY) }] } },
    });
    const g = await startGateway({ config: raw, host: '127.0.0.1', port: 0, seed: 1, logger: pino({ level: 'silent' }) });
    try {
      const c = new OpenAI({ baseURL: `${g.url}/v1`, apiKey: KEY, maxRetries: 0 });
      const stream = await c.audio.transcriptions.create({ model: 'w', file: await toFile(Buffer.from('RIFF'), 'a.wav'), stream: true });
      const events: string[] = [];
      for await (const ev of stream) events.push(ev.type === 'transcript.text.delta' ? `delta:${ev.delta}` : ev.type === 'transcript.text.done' ? `done:${ev.text}` : ev.type);
      expect(events).toEqual(['delta:whole answer', 'done:whole answer']);
    } finally {
      await g.close();
      await whole.close();
    }
  });

  it('audio.translations.create answers the transcript', async () => {
    const r = await client.audio.translations.create({ model: 'group', file: await toFile(Buffer.from('audio'), 'x.mp3', { type: 'audio/mpeg' }) });
    expect(r.text).toBe(TRANSCRIPT_TEXT);
  });

  it('audio.speech.create relays the audio bytes and their type, not SSE', async () => {
    const r = await client.audio.speech.create({ model: 'group', voice: 'alloy', input: 'hello' });
    expect(r.headers.get('content-type')).toBe('audio/mpeg');
    expect(Buffer.from(await r.arrayBuffer())).toEqual(SPEECH_BYTES);
  });
});

describe('videos stay on the target that accepted them', () => {
  it('create → retrieve → downloadContent go to that target; the status echoes the alias', async () => {
    const from = second.log.all().length;
    const job = await client.videos.create({ model: 'video-group', prompt: 'a sunrise' });
    const ref = decodeVideoId(job.id);
    expect(ref).toMatchObject({ endpointId: endpointId('direct-b', 'openai_compat', second.baseUrl), model: 'video-group', upstreamId: 'video_emu_1' });
    expect(job.model).toBe('video-group');
    const status = await client.videos.retrieve(job.id);
    expect(status).toMatchObject({ id: job.id, model: 'video-group', status: 'completed' });
    const content = await client.videos.downloadContent(job.id);
    expect(Buffer.from(await content.arrayBuffer())).toEqual(VIDEO_BYTES);
    expect(received(second, '/v1/videos', from)).toHaveLength(1);
    expect(second.log.all().slice(from).map((r) => r.path)).toEqual(['/v1/videos', '/v1/videos/video_emu_1', '/v1/videos/video_emu_1/content']);
  });

  it('on a model with routes, the id names the route that accepted the job', async () => {
    const job = await client.videos.create({ model: 'direct-b', prompt: 'a sunset' });
    expect(decodeVideoId(job.id)?.endpointId).toBe(endpointId('direct-b', 'openai_compat', second.baseUrl));
    const { data, response } = await client.videos.retrieve(job.id).withResponse();
    expect(data).toMatchObject({ id: job.id, model: 'direct-b', status: 'completed' });
    expect(response.headers.get('x-switchyard-served-by')).toBeNull();
    expect(await servedEndpoint(gw, response)).toBe(endpointId('direct-b', 'openai_compat', second.baseUrl));
  });

  it('an id the gateway did not issue, or of a model the key may not use, is a 404', async () => {
    const job = await client.videos.create({ model: 'video-group', prompt: 'x' });
    const other = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: LIMITED, maxRetries: 0 });
    await expect(other.videos.retrieve(job.id)).rejects.toMatchObject({ status: 404, code: 'video_not_found' });
    await expect(client.videos.retrieve('video_123')).rejects.toMatchObject({ status: 404, code: 'video_not_found' });
    // A job its target no longer knows: the target's own 404, passed on.
    const gone = encodeVideoId({ endpointId: endpointId('direct-b', 'openai_compat', second.baseUrl), model: 'video-group', upstreamId: 'video_gone' });
    await expect(client.videos.retrieve(gone)).rejects.toMatchObject({ status: 404, code: 'video_not_found', message: expect.stringContaining('video_gone') });
  });

  it('a submit that failed after the upstream answered is never replayed', async () => {
    const fromFailing = failing.log.all().length;
    const fromSecond = second.log.all().length;
    await expect(client.videos.create({ model: 'video-500', prompt: 'x' })).rejects.toMatchObject({ status: 502 });
    expect(received(failing, '/v1/videos', fromFailing)).toHaveLength(1);
    expect(received(second, '/v1/videos', fromSecond)).toHaveLength(0);
  });

  it('nor on the next route of a model with routes, where chat fails over', async () => {
    const fromFailing = failing.log.all().length;
    const fromSecond = second.log.all().length;
    await expect(client.videos.create({ model: 'two-routes', prompt: 'x' })).rejects.toMatchObject({ status: 502 });
    expect(received(failing, '/v1/videos', fromFailing)).toHaveLength(1);
    expect(received(second, '/v1/videos', fromSecond)).toHaveLength(0);
    const chat = await client.chat.completions.create({ model: 'two-routes', messages: [{ role: 'user', content: 'hi' }] });
    expect(chat.choices[0]!.message.content).toBeTruthy();
  });
});

describe('capability errors of multi-target aliases (seed 003)', () => {
  const errorOf = async (r: Response) => ({ status: r.status, ...((await r.json()) as { error: { code: string; message: string } }).error });

  it('rerank and images on a target that is not an OpenAI provider: 400 naming alias and target, no fallback', async () => {
    for (const [path, body] of [
      ['/v1/rerank', { model: 'img-group', query: 'q', documents: ['a'] }],
      ['/v1/images/generations', { model: 'img-group', prompt: 'p' }],
    ] as const) {
      const e = await errorOf(await post(path, body));
      expect(e).toMatchObject({ status: 400, code: 'target_cannot_serve' });
      expect(e.message).toContain('`img-group`');
      expect(e.message).toContain('`claude-img`');
    }
    const image = await toFile(Buffer.from('x'), 'a.png', { type: 'image/png' });
    await expect(client.images.edit({ model: 'img-group', image, prompt: 'p' })).rejects.toMatchObject({ status: 400, code: 'target_cannot_serve' });
  });

  it('completions, embeddings, images and videos on a target lacking the capability: 501', async () => {
    for (const [path, body] of [
      ['/v1/completions', { model: 'cap-group', prompt: 'p' }],
      ['/v1/embeddings', { model: 'cap-group', input: 'p' }],
      ['/v1/images/generations', { model: 'cap-group', prompt: 'p' }],
      ['/v1/videos', { model: 'cap-group', prompt: 'p' }],
    ] as const) {
      const e = await errorOf(await post(path, body));
      expect(e, path).toMatchObject({ status: 501, code: 'target_cannot_serve' });
      expect(e.message).toContain('`cap-group` (target `chat-only`)');
    }
  });

  it('reached after a retryable failure, the incapable target still ends the request (the next is not tried)', async () => {
    const from = good.log.all().length;
    const e = await errorOf(await post('/v1/embeddings', { model: 'late-cap', input: 'p' }));
    expect(e).toMatchObject({ status: 501, code: 'target_cannot_serve' });
    expect(received(good, '/v1/embeddings', from)).toHaveLength(0);
  });

  it('chat keeps skipping a target that does not serve it', async () => {
    const r = await client.chat.completions.create({ model: 'img-group', messages: [{ role: 'user', content: 'hi' }] });
    expect(r.choices[0]!.message.content).toBeTruthy();
  });
});

describe('endpoints out of scope', () => {
  it.each(['/v1/realtime', '/v1/files', '/v1/batches', '/v1/fine_tuning/jobs', '/v1/systemone', '/v1/decisions'])('%s is a 501 naming it', async (path) => {
    const r = await post(path, { model: 'group' });
    expect(r.status).toBe(501);
    const e = ((await r.json()) as { error: { code: string; message: string } }).error;
    expect(e.code).toBe('endpoint_not_supported');
    expect(e.message).toContain(path.startsWith('/v1/fine_tuning') ? '/v1/fine_tuning' : path);
  });
});

describe('multipart bodies', () => {
  it('a body over the limit is a 413 and leaves no spool file; a broken one is a 400', async () => {
    const before = spoolFiles().length;
    // Chunked, so no Content-Length refuses it early: the spool itself hits the limit.
    const status = await new Promise<number>((resolve, reject) => {
      const u = new URL(`${gw.url}/v1/audio/transcriptions`);
      const r = httpRequest({ host: u.hostname, port: u.port, path: u.pathname, method: 'POST', headers: { authorization: `Bearer ${KEY}`, 'content-type': 'multipart/form-data; boundary=b0', 'transfer-encoding': 'chunked' } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      r.on('error', reject);
      r.write('--b0\r\nContent-Disposition: form-data; name="file"; filename="big.wav"\r\n\r\n');
      const chunk = Buffer.alloc(256 * 1024);
      let sent = 0;
      const more = (): void => {
        while (sent < 3 * 1024 * 1024) {
          sent += chunk.length;
          if (!r.write(chunk)) return void r.once('drain', more);
        }
        r.end('\r\n--b0--\r\n');
      };
      more();
    });
    expect(status).toBe(413);
    const broken = await fetch(`${gw.url}/v1/audio/transcriptions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'multipart/form-data; boundary=xyz' },
      body: '--xyz\r\nContent-Disposition: form-data; name="model"\r\n\r\ngroup\r\n',
    });
    expect(broken.status).toBe(400);
    expect(spoolFiles().length).toBe(before);
  });

  it('a transcription without a file part names the field', async () => {
    const form = new FormData();
    form.append('model', 'group');
    const r = await fetch(`${gw.url}/v1/audio/transcriptions`, { method: 'POST', headers: { authorization: `Bearer ${KEY}` }, body: form });
    expect(r.status).toBe(400);
    expect(((await r.json()) as { error: { param: string } }).error.param).toBe('file');
  });
});
