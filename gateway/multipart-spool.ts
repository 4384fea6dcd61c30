/**
 * A `multipart/form-data` request body (RFC 7578: image edits, audio transcriptions and
 * translations, video submits) spooled to a temporary file as it arrives, so that every attempt
 * of the request — a retry on the same target, a fallback to another — can send it again
 * without the gateway holding it in memory. The file lives in `os.tmpdir()`, is written with
 * mode 0600, is bounded by the gateway's body limit (the caller stops pushing past it), and is
 * removed with `SpooledUpload.remove` when the request ends (`server/uws.ts`).
 *
 * While the bytes go to the file, a scanner reads the parts' headers and keeps the values of the
 * text fields (each at most `MAX_FIELD_BYTES`); file parts are not kept, only their name,
 * filename, type and size. Each attempt's body is the file with the `model` field's value
 * replaced by the route's upstream model (`uploadBody`), the client's boundary unchanged.
 */
import { randomUUID } from 'node:crypto';
import { createReadStream, createWriteStream, rmSync, type WriteStream } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';

/** Largest text field kept (bytes); a longer one is refused. */
export const MAX_FIELD_BYTES = 64 * 1024;
/** Largest header block of one part (bytes). */
const MAX_PART_HEADER_BYTES = 16 * 1024;

/** One part of a spooled body. */
export interface UploadPart {
  /** The part's form name (`Content-Disposition: form-data; name=…`). */
  readonly name: string;
  /** The filename of a file part, else null (a text field). */
  readonly filename: string | null;
  /** The part's `Content-Type`, or null. */
  readonly contentType: string | null;
  /** A text field's value (UTF-8); null for a file part. */
  readonly value: string | null;
  /** Byte offsets of the part's content in the file: [start, end). */
  readonly start: number;
  readonly end: number;
}

/** A whole body spooled to a file. */
export interface SpooledUpload {
  /** The temporary file's path. */
  readonly path: string;
  /** The client's `Content-Type` (with its boundary), sent upstream as it is. */
  readonly contentType: string;
  /** The body's size, bytes. */
  readonly sizeBytes: number;
  /** The parts, in order. */
  readonly parts: readonly UploadPart[];
  /** Deletes the file (idempotent; never throws). */
  remove(): void;
}

/** The boundary of a `multipart/form-data` content type, or null when it is not one. */
export function multipartBoundary(contentType: string): string | null {
  if (!/^multipart\/form-data\s*(;|$)/i.test(contentType.trim())) return null;
  const m = /;\s*boundary=(?:"([^"]+)"|([^;\s]+))/i.exec(contentType);
  const b = m ? (m[1] ?? m[2]!) : null;
  return b !== null && b.length >= 1 && b.length <= 70 ? b : null;
}

const enum State {
  Preamble,
  Headers,
  Data,
  AfterDelimiter,
  End,
}

/**
 * Receives a body's chunks (`push`), writing them to a temporary file and scanning its parts;
 * `finish` waits for the file and returns the upload, or the problem that refuses the body.
 */
export class MultipartSpool {
  readonly path = join(tmpdir(), `switchyard-upload-${randomUUID()}`);
  private readonly file: WriteStream;
  private readonly delimiter: Buffer;
  private buf: Buffer = Buffer.alloc(0);
  /** Absolute offset of `buf[0]` in the body. */
  private bufStart = 0;
  private size = 0;
  private state = State.Preamble;
  private part: { name: string; filename: string | null; contentType: string | null; start: number } | null = null;
  private readonly parts: UploadPart[] = [];
  private problem: string | null = null;
  private fileError: Error | null = null;

  constructor(
    private readonly contentType: string,
    boundary: string,
  ) {
    this.delimiter = Buffer.from(`\r\n--${boundary}`, 'latin1');
    this.file = createWriteStream(this.path, { flags: 'wx', mode: 0o600 });
    this.file.on('error', (e) => (this.fileError = e));
    // The body starts with the delimiter without its CRLF: scan as if one preceded it.
    this.buf = Buffer.from('\r\n', 'latin1');
    this.bufStart = -2;
  }

  /** Appends one chunk (the caller's copy: it is kept until written). */
  push(chunk: Buffer): void {
    this.size += chunk.length;
    this.file.write(chunk);
    if (this.problem !== null || this.state === State.End) return;
    this.buf = this.buf.length === 0 ? chunk : Buffer.concat([this.buf, chunk]);
    this.scan();
  }

  /** Stops and deletes the file (a body refused half-way, a client gone). */
  abandon(): void {
    this.file.destroy();
    removeQuietly(this.path);
  }

  /**
   * The body is whole: waits for the file to be written.
   * @returns the upload, or `{ problem, status }`: what is wrong with the body (400), or that the
   *   file could not be written (503); the file is then removed.
   */
  finish(): Promise<SpooledUpload | { problem: string; status: 400 | 503 }> {
    return new Promise((resolve) => {
      this.file.end(() => {
        const path = this.path;
        const fail = (problem: string, status: 400 | 503 = 400) => {
          removeQuietly(path);
          resolve({ problem, status });
        };
        if (this.fileError) return fail(`The gateway could not spool the upload to its temporary directory; retry later.`, 503);
        if (this.problem !== null) return fail(this.problem);
        if (this.state !== State.End) return fail('The multipart body ended before its closing boundary; send a complete multipart/form-data body.');
        resolve({ path, contentType: this.contentType, sizeBytes: this.size, parts: this.parts, remove: () => removeQuietly(path) });
      });
    });
  }

  private scan(): void {
    for (;;) {
      switch (this.state) {
        case State.Preamble:
        case State.Data: {
          const i = this.buf.indexOf(this.delimiter);
          if (i < 0) {
            // Keep what could begin a delimiter; a text field keeps its whole value.
            if (this.state === State.Data && this.part!.filename === null) {
              if (this.bufStart + this.buf.length - this.part!.start > MAX_FIELD_BYTES) return this.refuse(`The form field '${this.part!.name}' is longer than ${MAX_FIELD_BYTES} bytes.`);
              return;
            }
            this.drop(Math.max(0, this.buf.length - this.delimiter.length + 1));
            return;
          }
          if (this.state === State.Data) this.endPart(this.bufStart + i);
          this.drop(i + this.delimiter.length);
          this.state = State.AfterDelimiter;
          break;
        }
        case State.AfterDelimiter: {
          if (this.buf.length < 2) return;
          const two = this.buf.toString('latin1', 0, 2);
          if (two === '--') {
            this.state = State.End;
            this.buf = Buffer.alloc(0);
            return;
          }
          // Transport padding (spaces, tabs) may precede the CRLF (RFC 2046).
          const crlf = this.buf.indexOf('\r\n');
          if (crlf < 0) return;
          this.drop(crlf + 2);
          this.state = State.Headers;
          break;
        }
        case State.Headers: {
          const end = this.buf.indexOf('\r\n\r\n');
          if (end < 0) {
            if (this.buf.length > MAX_PART_HEADER_BYTES) return this.refuse('A multipart part has a header block over 16 KiB.');
            return;
          }
          const head = this.buf.toString('utf8', 0, end);
          this.drop(end + 4);
          const part = parsePartHeaders(head);
          if (typeof part === 'string') return this.refuse(part);
          this.part = { ...part, start: this.bufStart };
          this.state = State.Data;
          break;
        }
        case State.End:
          return;
      }
    }
  }

  private endPart(endOffset: number): void {
    const p = this.part!;
    const value = p.filename === null ? this.buf.toString('utf8', 0, endOffset - this.bufStart) : null;
    this.parts.push({ name: p.name, filename: p.filename, contentType: p.contentType, value, start: p.start, end: endOffset });
    this.part = null;
  }

  private drop(n: number): void {
    this.buf = this.buf.subarray(n);
    this.bufStart += n;
  }

  private refuse(problem: string): void {
    this.problem = problem;
    this.buf = Buffer.alloc(0);
  }
}

/** A part's `Content-Disposition` name and filename and its `Content-Type`, or the problem. */
function parsePartHeaders(head: string): { name: string; filename: string | null; contentType: string | null } | string {
  let name: string | null = null;
  let filename: string | null = null;
  let contentType: string | null = null;
  for (const line of head.split('\r\n')) {
    const colon = line.indexOf(':');
    if (colon < 0) continue;
    const key = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    if (key === 'content-type') contentType = value;
    if (key !== 'content-disposition') continue;
    const n = /;\s*name="([^"]*)"|;\s*name=([^;\s]+)/i.exec(value);
    if (n) name = n[1] ?? n[2]!;
    const f = /;\s*filename="([^"]*)"|;\s*filename=([^;\s]+)/i.exec(value);
    if (f) filename = f[1] ?? f[2]!;
  }
  if (name === null) return 'A multipart part has no Content-Disposition name; every part must be form-data with a name.';
  return { name, filename, contentType };
}

function removeQuietly(path: string): void {
  try {
    rmSync(path, { force: true });
  } catch {
    // Already gone, or the temporary directory is not ours to clean.
  }
}

/**
 * The body of one upstream attempt of `upload`: the spooled bytes with the `model` field's value
 * replaced by `upstreamModel` (kept as it is when there is no such field), read from the file.
 * @returns a fresh stream and its length in bytes.
 */
export function uploadBody(upload: SpooledUpload, upstreamModel: string): { body: Readable; lengthBytes: number } {
  const model = upload.parts.find((p) => p.name === 'model' && p.filename === null);
  if (!model) return { body: createReadStream(upload.path), lengthBytes: upload.sizeBytes };
  const name = Buffer.from(upstreamModel, 'utf8');
  async function* pieces(): AsyncGenerator<Buffer> {
    if (model!.start > 0) yield* createReadStream(upload.path, { start: 0, end: model!.start - 1 });
    yield name;
    if (model!.end < upload.sizeBytes) yield* createReadStream(upload.path, { start: model!.end });
  }
  return { body: Readable.from(pieces(), { objectMode: false }), lengthBytes: upload.sizeBytes - (model.end - model.start) + name.length };
}
