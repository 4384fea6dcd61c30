/**
 * The emulator's answers on the OpenAI families beyond text generation: small, deterministic
 * bodies in the shapes the official clients read — rerank scores, a 1×1 PNG as base64, a
 * transcript (JSON, text, or an event stream of `transcript.text.delta` / `.done`), a few bytes
 * of audio, and a video job that completes after a set number of status polls. No engine
 * timing: these answer at once (fault knobs still apply, `emulator.ts`).
 */

/** A 1×1 transparent PNG, base64 (what every emulated image is). */
export const TINY_PNG_B64 = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGD4DwABBAEAwS2OUAAAAABJRU5ErkJggg==';

/** The transcript every emulated transcription and translation returns. */
export const TRANSCRIPT_TEXT = 'Hello from the emulator.';

/** The bytes of every emulated speech answer (an `ID3` tag head, as an MP3 starts). */
export const SPEECH_BYTES = Buffer.from('ID3\u0004\u0000\u0000\u0000\u0000\u0000\u0000emulated-audio', 'latin1');

/** The bytes of every emulated video's content (an MP4 `ftyp` box head). */
export const VIDEO_BYTES = Buffer.from('\u0000\u0000\u0000\u0018ftypmp42emulated-video', 'latin1');

/**
 * The fields of a `multipart/form-data` body: text fields as strings (`stream` as a boolean
 * when `true` / `false`), each file part as `{ filename, content_type, size_bytes }`. Null when
 * `contentType` has no boundary.
 */
export function multipartFields(body: Buffer, contentType: string): Record<string, unknown> | null {
  const m = /boundary=(?:"([^"]+)"|([^;\s]+))/i.exec(contentType);
  if (!m) return null;
  const delim = Buffer.from(`--${m[1] ?? m[2]}`, 'latin1');
  const out: Record<string, unknown> = {};
  let at = body.indexOf(delim);
  while (at >= 0) {
    const headStart = at + delim.length + 2;
    if (body.toString('latin1', at + delim.length, at + delim.length + 2) === '--') break;
    const headEnd = body.indexOf('\r\n\r\n', headStart);
    if (headEnd < 0) break;
    const next = body.indexOf(Buffer.concat([Buffer.from('\r\n', 'latin1'), delim]), headEnd + 4);
    if (next < 0) break;
    const head = body.toString('utf8', headStart, headEnd);
    const name = /name="([^"]*)"/i.exec(head)?.[1];
    const filename = /filename="([^"]*)"/i.exec(head)?.[1];
    const type = /content-type:\s*([^\r\n]+)/i.exec(head)?.[1] ?? null;
    if (name !== undefined) {
      const key = name.endsWith('[]') ? name.slice(0, -2) : name;
      const value = body.toString('utf8', headEnd + 4, next);
      out[key] = filename !== undefined ? { filename, content_type: type, size_bytes: next - headEnd - 4 } : key === 'stream' && (value === 'true' || value === 'false') ? value === 'true' : value;
    }
    at = next + 2;
  }
  return out;
}

/** `POST /v1/rerank`: one result per document, scores falling with the index, sorted, cut at `top_n`. */
export function rerankBody(body: Record<string, unknown>, model: string): string {
  const docs = Array.isArray(body.documents) ? body.documents : [];
  const topN = typeof body.top_n === 'number' && body.top_n > 0 ? Math.floor(body.top_n) : docs.length;
  const results = docs.map((d, index) => ({ index, relevance_score: Math.round((1 / (index + 1)) * 1000) / 1000, document: { text: typeof d === 'string' ? d : JSON.stringify(d) } })).slice(0, topN);
  const tokens = Math.ceil((String(body.query ?? '').length + JSON.stringify(docs).length) / 4);
  return JSON.stringify({ id: 'rerank-emu', model, results, usage: { prompt_tokens: tokens, total_tokens: tokens } });
}

/** `POST /v1/images/generations` and `/edits`: `n` tiny PNGs as base64. */
export function imagesBody(body: Record<string, unknown>): string {
  const n = typeof body.n === 'number' && body.n >= 1 ? Math.min(10, Math.floor(Number(body.n))) : typeof body.n === 'string' ? Math.max(1, Math.min(10, Number(body.n) || 1)) : 1;
  return JSON.stringify({ created: 0, data: Array.from({ length: n }, () => ({ b64_json: TINY_PNG_B64 })), usage: { input_tokens: 4, output_tokens: 16, total_tokens: 20 } });
}

/** A transcription's or translation's answer in its `response_format`: `json` (default), `verbose_json`, `text`, `srt` or `vtt`. */
export function transcriptAnswer(body: Record<string, unknown>): { contentType: string; body: string } {
  const format = typeof body.response_format === 'string' ? body.response_format : 'json';
  switch (format) {
    case 'text':
      return { contentType: 'text/plain; charset=utf-8', body: TRANSCRIPT_TEXT };
    case 'srt':
      return { contentType: 'text/plain; charset=utf-8', body: `1\n00:00:00,000 --> 00:00:01,000\n${TRANSCRIPT_TEXT}\n` };
    case 'vtt':
      return { contentType: 'text/vtt; charset=utf-8', body: `WEBVTT\n\n00:00:00.000 --> 00:00:01.000\n${TRANSCRIPT_TEXT}\n` };
    case 'verbose_json':
      return { contentType: 'application/json', body: JSON.stringify({ task: 'transcribe', language: 'english', duration: 1, text: TRANSCRIPT_TEXT, segments: [] }) };
    default:
      return { contentType: 'application/json', body: JSON.stringify({ text: TRANSCRIPT_TEXT, usage: { type: 'tokens', input_tokens: 10, output_tokens: 5, total_tokens: 15 } }) };
  }
}

/** A streamed transcription: one `transcript.text.delta` per word, `transcript.text.done`, then `[DONE]`. */
export function transcriptStream(): string {
  const words = TRANSCRIPT_TEXT.split(' ');
  let out = '';
  words.forEach((w, i) => {
    out += `data: ${JSON.stringify({ type: 'transcript.text.delta', delta: i === 0 ? w : ` ${w}` })}\n\n`;
  });
  out += `data: ${JSON.stringify({ type: 'transcript.text.done', text: TRANSCRIPT_TEXT, usage: { type: 'tokens', input_tokens: 10, output_tokens: 5, total_tokens: 15 } })}\n\n`;
  return out + 'data: [DONE]\n\n';
}

/** One emulated video job. */
interface VideoJob {
  readonly id: string;
  readonly model: string;
  readonly prompt: string;
  readonly createdAt: number;
  /** Status polls seen so far. */
  polls: number;
}

/**
 * The emulator's video jobs: a submit is `queued`, and a job reads `completed` (progress 100)
 * from its `pollsToComplete`-th status poll on (0: completed at submit). Ids are
 * `video_emu_<n>`; content is `VIDEO_BYTES`.
 */
export class VideoJobs {
  private readonly jobs = new Map<string, VideoJob>();
  private seq = 0;

  constructor(private readonly pollsToComplete: number) {}

  /** Submits a job; its status JSON. */
  submit(body: Record<string, unknown>, model: string): string {
    const job: VideoJob = { id: `video_emu_${++this.seq}`, model, prompt: String(body.prompt ?? ''), createdAt: 0, polls: 0 };
    this.jobs.set(job.id, job);
    return this.view(job);
  }

  /** A status poll of job `id`: its status JSON, or null when there is no such job. */
  poll(id: string): string | null {
    const job = this.jobs.get(id);
    if (!job) return null;
    job.polls++;
    return this.view(job);
  }

  /** Whether job `id` is complete (its content can be downloaded). */
  complete(id: string): boolean {
    const job = this.jobs.get(id);
    return job !== undefined && job.polls >= this.pollsToComplete;
  }

  private view(job: VideoJob): string {
    const done = job.polls >= this.pollsToComplete;
    return JSON.stringify({
      id: job.id,
      object: 'video',
      model: job.model,
      status: done ? 'completed' : 'queued',
      progress: done ? 100 : 0,
      created_at: job.createdAt,
      completed_at: done ? 1 : null,
      expires_at: null,
      prompt: job.prompt,
      seconds: '4',
      size: '720x1280',
      error: null,
      remixed_from_video_id: null,
    });
  }
}
