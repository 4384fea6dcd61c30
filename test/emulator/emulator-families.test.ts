// The emulator's answers on rerank, images, audio and videos: deterministic shapes, a video
// job that completes after its set number of polls, and multipart bodies read into fields.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator } from '../../simulator/emulator/emulator.ts';
import { SPEECH_BYTES, TINY_PNG_B64, TRANSCRIPT_TEXT, VIDEO_BYTES } from '../../simulator/emulator/family-shapes.ts';

let emu: RunningEmulator;
beforeAll(async () => {
  emu = await startEmulator({ mode: 'echo', videoPolls: 2 });
});
afterAll(() => emu?.close());

const post = (path: string, body: unknown) => fetch(`${emu.baseUrl}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

describe('emulator families', () => {
  it('rerank scores fall with the document index and stop at top_n', async () => {
    const r = (await (await post('/rerank', { model: 'm', query: 'q', documents: ['a', 'b', 'c'], top_n: 2 })).json()) as { results: Array<{ index: number; relevance_score: number }> };
    expect(r.results).toEqual([expect.objectContaining({ index: 0, relevance_score: 1 }), expect.objectContaining({ index: 1, relevance_score: 0.5 })]);
  });

  it('images are a tiny PNG; speech is a few audio bytes; a missing field is a 400', async () => {
    expect(((await (await post('/images/generations', { model: 'm', prompt: 'p' })).json()) as { data: Array<{ b64_json: string }> }).data).toEqual([{ b64_json: TINY_PNG_B64 }]);
    const speech = await post('/audio/speech', { model: 'm', input: 'hi', voice: 'alloy' });
    expect(speech.headers.get('content-type')).toBe('audio/mpeg');
    expect(Buffer.from(await speech.arrayBuffer())).toEqual(SPEECH_BYTES);
    expect((await post('/images/generations', { model: 'm' })).status).toBe(400);
  });

  it('a multipart transcription is read into fields and answered in its response_format', async () => {
    const form = new FormData();
    form.append('model', 'whisper');
    form.append('response_format', 'text');
    form.append('file', new Blob([Buffer.from('RIFF')]), 'a.wav');
    const r = await fetch(`${emu.baseUrl}/audio/transcriptions`, { method: 'POST', body: form });
    expect(await r.text()).toBe(TRANSCRIPT_TEXT);
    const rec = emu.log.all().at(-1)!;
    expect(rec.body).toMatchObject({ model: 'whisper', response_format: 'text', file: { filename: 'a.wav', size_bytes: 4 } });
  });

  it('a video job is queued, completes on its second poll, and only then has content', async () => {
    const job = (await (await post('/videos', { model: 'sora', prompt: 'p' })).json()) as { id: string; status: string };
    expect(job.status).toBe('queued');
    const get = (p: string) => fetch(`${emu.baseUrl}/videos/${p}`);
    expect((await get(`${job.id}/content`)).status).toBe(404);
    expect(((await (await get(job.id)).json()) as { status: string }).status).toBe('queued');
    expect(((await (await get(job.id)).json()) as { status: string; progress: number })).toMatchObject({ status: 'completed', progress: 100 });
    expect(Buffer.from(await (await get(`${job.id}/content`)).arrayBuffer())).toEqual(VIDEO_BYTES);
    expect((await get('video_none')).status).toBe(404);
  });
});
