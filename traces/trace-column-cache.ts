/**
 * A decoded trace kept on disk between runs: the metadata and the arrival-sorted columns
 * (`traceToColumns`) of an Arrow trace, written once and read back as a few typed arrays, so a
 * run of an unchanged trace skips the Arrow decoding, the per-row checks and the sort (most of
 * a start-up's trace time). The file lives in the OS temp folder, one per trace path; it is used
 * only while the trace and the reader's sources still have the size and mtime recorded in it, so
 * a changed trace or reader decodes afresh. The columns read back equal those it was written from,
 * array for array (a test checks it). `SWITCHYARD_TRACE_CACHE=0` turns it off.
 *
 * File layout: `SYTC` (4 bytes), a uint32 header length, the header (JSON: key, meta, length,
 * text, and each array's byte length in `ARRAYS` order), zero padding to 8 bytes, then the arrays'
 * bytes in that order, each padded to 8 bytes.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { TraceColumns } from './trace-columns.ts';
import type { TraceMeta } from './trace-row.ts';

const MAGIC = 0x43545953; // 'SYTC' little-endian
const FORMAT = 1;
/** The reader's sources: a change to any of them can change what a trace decodes to. */
const READER_SOURCES = ['arrow-trace.ts', 'trace-batch.ts', 'trace-row-check.ts', 'trace-schema.ts', 'trace-columns.ts', 'trace-row.ts'];

type ArrayName = 'arrivalMs' | 'inputTokens' | 'outputTokens' | 'stream' | 'ttftMs' | 'e2eMs' | 'strings' | 'hashIds.offsets' | 'hashIds.values' | 'itlMs.offsets' | 'itlMs.values';
const ARRAYS: readonly { name: ArrayName; Ctor: typeof Float64Array | typeof Int32Array | typeof Uint8Array }[] = [
  { name: 'arrivalMs', Ctor: Float64Array },
  { name: 'inputTokens', Ctor: Float64Array },
  { name: 'outputTokens', Ctor: Float64Array },
  { name: 'stream', Ctor: Uint8Array },
  { name: 'ttftMs', Ctor: Float64Array },
  { name: 'e2eMs', Ctor: Float64Array },
  { name: 'strings', Ctor: Int32Array },
  { name: 'hashIds.offsets', Ctor: Int32Array },
  { name: 'hashIds.values', Ctor: Float64Array },
  { name: 'itlMs.offsets', Ctor: Int32Array },
  { name: 'itlMs.values', Ctor: Float64Array },
];

function arrayOf(c: TraceColumns, name: ArrayName): Float64Array | Int32Array | Uint8Array {
  switch (name) {
    case 'hashIds.offsets':
      return c.hashIds.offsets;
    case 'hashIds.values':
      return c.hashIds.values;
    case 'itlMs.offsets':
      return c.itlMs.offsets;
    case 'itlMs.values':
      return c.itlMs.values;
    default:
      return c[name];
  }
}

const pad8 = (n: number) => (n + 7) & ~7;

/** Whether the cache is on (`SWITCHYARD_TRACE_CACHE` is not `0`). */
export function traceCacheEnabled(): boolean {
  return process.env.SWITCHYARD_TRACE_CACHE !== '0';
}

/**
 * What a cached decoding of `tracePath` must match: its absolute path, size and mtime, and
 * the size and mtime of each reader source (those found next to this file).
 * @throws the `statSync` error when the trace cannot be stat'ed.
 */
function cacheKey(tracePath: string): string {
  const abs = resolve(tracePath);
  const st = statSync(abs);
  const parts: (string | number)[] = [FORMAT, abs, st.size, st.mtimeMs];
  for (const f of READER_SOURCES) {
    try {
      const s = statSync(join(import.meta.dirname, f));
      parts.push(f, s.size, s.mtimeMs);
    } catch {
      parts.push(f, 'missing');
    }
  }
  return JSON.stringify(parts);
}

/** The cache file of `tracePath`: one per absolute path, in the OS temp folder. */
export function traceCacheFile(tracePath: string): string {
  const name = createHash('sha256').update(resolve(tracePath)).digest('hex').slice(0, 20);
  return join(tmpdir(), 'switchyard-trace-cache', `${name}.sytc`);
}

/**
 * The cached metadata and columns of `tracePath` (numbers in fresh `SharedArrayBuffer`s), or
 * null when there is none, it is for another state of the trace or reader, or it cannot be read.
 */
export function readCachedColumns(tracePath: string): { meta: TraceMeta; columns: TraceColumns } | null {
  try {
    const key = cacheKey(tracePath);
    const buf = readFileSync(traceCacheFile(tracePath));
    if (buf.length < 8 || buf.readUInt32LE(0) !== MAGIC) return null;
    const headerLength = buf.readUInt32LE(4);
    const header = JSON.parse(buf.toString('utf8', 8, 8 + headerLength)) as { key: string; meta: TraceMeta; length: number; text: string; bytes: number[] };
    if (header.key !== key || header.bytes.length !== ARRAYS.length) return null;
    let at = pad8(8 + headerLength);
    const out: Partial<Record<ArrayName, Float64Array | Int32Array | Uint8Array>> = {};
    for (let i = 0; i < ARRAYS.length; i++) {
      const { name, Ctor } = ARRAYS[i]!;
      const bytes = header.bytes[i]!;
      if (at + bytes > buf.length || bytes % Ctor.BYTES_PER_ELEMENT !== 0) return null;
      const sab = new SharedArrayBuffer(bytes);
      new Uint8Array(sab).set(buf.subarray(at, at + bytes));
      out[name] = new (Ctor as unknown as new (b: SharedArrayBuffer) => Float64Array | Int32Array | Uint8Array)(sab);
      at += pad8(bytes);
    }
    const columns: TraceColumns = {
      length: header.length,
      arrivalMs: out.arrivalMs as Float64Array,
      inputTokens: out.inputTokens as Float64Array,
      outputTokens: out.outputTokens as Float64Array,
      stream: out.stream as Uint8Array,
      ttftMs: out.ttftMs as Float64Array,
      e2eMs: out.e2eMs as Float64Array,
      strings: out.strings as Int32Array,
      text: header.text,
      hashIds: { offsets: out['hashIds.offsets'] as Int32Array, values: out['hashIds.values'] as Float64Array },
      itlMs: { offsets: out['itlMs.offsets'] as Int32Array, values: out['itlMs.values'] as Float64Array },
    };
    return { meta: header.meta, columns };
  } catch {
    return null;
  }
}

/**
 * Writes `meta` and `columns` (decoded from `tracePath` as it is now) as its cache file, through
 * a temporary file and a rename, so a reader never sees half a file. A failure (no space, no
 * permission) leaves no cache and is not an error: the next run decodes again.
 */
export function writeCachedColumns(tracePath: string, meta: TraceMeta, columns: TraceColumns): void {
  try {
    const key = cacheKey(tracePath);
    const arrays = ARRAYS.map(({ name }) => arrayOf(columns, name));
    const header = Buffer.from(JSON.stringify({ key, meta, length: columns.length, text: columns.text, bytes: arrays.map((a) => a.byteLength) }), 'utf8');
    let total = pad8(8 + header.length);
    for (const a of arrays) total += pad8(a.byteLength);
    const buf = Buffer.alloc(total);
    buf.writeUInt32LE(MAGIC, 0);
    buf.writeUInt32LE(header.length, 4);
    header.copy(buf, 8);
    let at = pad8(8 + header.length);
    for (const a of arrays) {
      buf.set(new Uint8Array(a.buffer, a.byteOffset, a.byteLength), at);
      at += pad8(a.byteLength);
    }
    const file = traceCacheFile(tracePath);
    mkdirSync(join(file, '..'), { recursive: true });
    const tmp = `${file}.${process.pid}.${Date.now()}.tmp`;
    writeFileSync(tmp, buf);
    renameSync(tmp, file);
  } catch {
    // No cache this time.
  }
}
