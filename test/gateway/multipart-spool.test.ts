// A multipart body spooled to a file: the same parts however the body is cut into chunks, the
// attempt body with the upstream model name, refusals, and the file removed.
import { existsSync, readFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MultipartSpool, multipartBoundary, uploadBody, type SpooledUpload } from '../../gateway/multipart-spool.ts';
import { isBodyProblem, readUploadRequest } from '../../gateway/request-body.ts';

const BOUNDARY = '----sy7MA4YWxkTrZu0gW';
const TYPE = `multipart/form-data; boundary=${BOUNDARY}`;

/** A body with the text fields and one file part (its bytes, which may hold CR, LF and dashes). */
function body(fields: Record<string, string>, file: Buffer): Buffer {
  const parts: Buffer[] = [];
  for (const [k, v] of Object.entries(fields)) parts.push(Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`));
  parts.push(Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="a.wav"\r\nContent-Type: audio/wav\r\n\r\n`), file, Buffer.from(`\r\n--${BOUNDARY}--\r\n`));
  return Buffer.concat(parts);
}

async function spool(bytes: Buffer, cuts: number[]): Promise<SpooledUpload | { problem: string }> {
  const s = new MultipartSpool(TYPE, BOUNDARY);
  let at = 0;
  for (const c of [...cuts.filter((x) => x > 0 && x < bytes.length)].sort((a, b) => a - b)) {
    s.push(bytes.subarray(at, c));
    at = c;
  }
  s.push(bytes.subarray(at));
  return s.finish();
}

describe('MultipartSpool', () => {
  it('reads the same parts however the body is cut, and the attempt body swaps only the model', async () => {
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ maxLength: 300 }), fc.array(fc.nat(600), { maxLength: 8 }), fc.string({ minLength: 1, maxLength: 20 }), async (fileBytes, cuts, prompt) => {
        const file = Buffer.concat([Buffer.from('\r\n--'), Buffer.from(fileBytes), Buffer.from(`\r\n--${BOUNDARY.slice(0, 10)}`)]);
        const bytes = body({ model: 'group', prompt }, file);
        const u = await spool(bytes, cuts);
        if ('problem' in u) throw new Error(u.problem);
        try {
          expect(u.sizeBytes).toBe(bytes.length);
          expect(readFileSync(u.path)).toEqual(bytes);
          expect(u.parts.map((p) => [p.name, p.value])).toEqual([['model', 'group'], ['prompt', prompt], ['file', null]]);
          const f = u.parts[2]!;
          expect(bytes.subarray(f.start, f.end)).toEqual(file);
          const b = uploadBody(u, 'up-model');
          const chunks: Buffer[] = [];
          for await (const c of b.body) chunks.push(Buffer.from(c as Buffer));
          const want = body({ model: 'up-model', prompt }, file);
          expect(Buffer.concat(chunks)).toEqual(want);
          expect(b.lengthBytes).toBe(want.length);
        } finally {
          u.remove();
        }
        expect(existsSync(u.path)).toBe(false);
      }),
      { numRuns: 60 },
    );
  });

  it('an attempt body is byte-exact with the model replaced', async () => {
    const file = Buffer.from([0, 255, 13, 10, 45, 45, 1, 2, 3]);
    const u = await spool(body({ model: 'group', n: '1' }, file), [5, 50, 120]);
    if ('problem' in u) throw new Error(u.problem);
    const b = uploadBody(u, 'upstream-name');
    const chunks: Buffer[] = [];
    for await (const c of b.body) chunks.push(Buffer.from(c as Buffer));
    expect(Buffer.concat(chunks)).toEqual(body({ model: 'upstream-name', n: '1' }, file));
    expect(b.lengthBytes).toBe(Buffer.concat(chunks).length);
    const req = readUploadRequest('transcription', u);
    expect(isBodyProblem(req)).toBe(false);
    if (!isBodyProblem(req)) expect(req.body).toMatchObject({ model: 'group', n: '1', file: { filename: 'a.wav', content_type: 'audio/wav', size_bytes: file.length } });
    u.remove();
  });

  it('refuses a body without its closing boundary or a part without a name, and removes the file', async () => {
    const cut = await spool(Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="model"\r\n\r\nm\r\n`), []);
    expect(cut).toMatchObject({ problem: expect.stringMatching(/closing boundary/) });
    const s = new MultipartSpool(TYPE, BOUNDARY);
    const path = s.path;
    s.push(Buffer.from(`--${BOUNDARY}\r\nContent-Type: text/plain\r\n\r\nx\r\n--${BOUNDARY}--\r\n`));
    expect(await s.finish()).toMatchObject({ problem: expect.stringMatching(/name/) });
    expect(existsSync(path)).toBe(false);
  });

  it('reads the boundary of a multipart content type only', () => {
    expect(multipartBoundary('multipart/form-data; boundary=abc')).toBe('abc');
    expect(multipartBoundary('multipart/form-data; boundary="a b"')).toBe('a b');
    expect(multipartBoundary('application/json')).toBeNull();
    expect(multipartBoundary('multipart/form-data')).toBeNull();
  });
});
