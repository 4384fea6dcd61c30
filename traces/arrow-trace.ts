/**
 * Reading and writing trace files (Arrow IPC *file* format, schema in `trace-schema.ts`,
 * documented in `traces/README.md`). Both directions validate every row, so a trace that
 * reads without error satisfies the `TraceRow` contract.
 */
import { open, rename, rm, writeFile } from 'node:fs/promises';
import { RecordBatchFileWriter, RecordBatchReader } from 'apache-arrow';
import type { RecordBatch } from 'apache-arrow';
import type { TraceMeta, TraceRow } from './trace-row.ts';
import { checkTraceRow, rowProblemMessage } from './trace-row-check.ts';
import { checkTraceSchema, decodeTraceBatch, encodeTraceBatch } from './trace-batch.ts';
import { metaFromArrowMetadata, traceSchema } from './trace-schema.ts';

/** Rows per record batch written by `writeTrace`. */
export const TRACE_BATCH_ROWS = 4096;

/**
 * Writes a trace as an Arrow IPC file: `meta` as schema metadata, rows in record batches of
 * `TRACE_BATCH_ROWS`. The file is written to a temporary name beside `path` and renamed, so a
 * failed write never leaves a truncated trace behind.
 * @param path destination file (its folder must exist); overwritten if present.
 * @param rows in arrival order; consumed once.
 * @returns the number of rows written.
 * @throws Error `<path>: row N (1-based), column <col>: got …; allowed: …` for the first
 *   invalid row (see `checkTraceRow`); nothing is written then.
 */
export async function writeTrace(path: string, meta: TraceMeta, rows: Iterable<TraceRow>): Promise<number> {
  const schema = traceSchema(meta);
  const batches: RecordBatch[] = [];
  const seen = new Set<string>();
  let prev: number | null = null;
  let count = 0;
  let pending: TraceRow[] = [];
  for (const row of rows) {
    count++;
    const problem = checkTraceRow(row, prev, seen);
    if (problem) throw new Error(rowProblemMessage(path, count, problem));
    prev = row.arrivalMs;
    pending.push(row);
    if (pending.length === TRACE_BATCH_ROWS) {
      batches.push(encodeTraceBatch(schema, pending));
      pending = [];
    }
  }
  if (pending.length > 0) batches.push(encodeTraceBatch(schema, pending));
  const writer = new RecordBatchFileWriter();
  writer.reset(undefined, schema); // so a zero-row trace still carries its schema and metadata
  for (const b of batches) writer.write(b);
  const bytes = writer.finish().toUint8Array(true);
  const tmp = `${path}.tmp-${process.pid}`;
  try {
    await writeFile(tmp, bytes);
    await rename(tmp, path);
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
  return count;
}

/**
 * Streams a trace file batch by batch (one array per Arrow record batch, in file order),
 * reading the file through a handle rather than loading it whole.
 * Every row is validated; row numbers in errors are 1-based across the whole file.
 * @throws Error naming `path` when the file is not an Arrow IPC file, when the schema lacks a
 *   column or has a wrong type, when schema metadata is missing/invalid, or for the first bad
 *   row: `<path>: row N (1-based), column <col>: got <value>; allowed: <rule>`.
 */
export async function* readTraceBatches(path: string): AsyncGenerator<TraceRow[]> {
  yield* traceBatches(path, () => undefined);
}

/** `readTraceBatches`, handing the parsed metadata to `onMeta` once the schema is read. */
async function* traceBatches(path: string, onMeta: (meta: TraceMeta) => void): AsyncGenerator<TraceRow[]> {
  const fh = await open(path, 'r');
  try {
    const reader = await openReader(path, fh);
    checkTraceSchema(path, reader.schema);
    onMeta(metaFromArrowMetadata(path, reader.schema.metadata));
    const seen = new Set<string>();
    let prev: number | null = null;
    let rowNumber = 0;
    for await (const batch of reader) {
      const rows = decodeTraceBatch(batch);
      for (const row of rows) {
        rowNumber++;
        const problem = checkTraceRow(row, prev, seen);
        if (problem) throw new Error(rowProblemMessage(path, rowNumber, problem));
        prev = row.arrivalMs;
      }
      yield rows;
    }
  } finally {
    await fh.close().catch(() => undefined); // the Arrow reader may have closed it already
  }
}

/**
 * Reads only the schema metadata of a trace file (cheap: no record batch is decoded).
 * @throws Error naming `path` when it is not an Arrow IPC file, its schema is not a trace
 *   schema, or a metadata key is missing or invalid.
 */
export async function readTraceMeta(path: string): Promise<TraceMeta> {
  const fh = await open(path, 'r');
  try {
    const reader = await openReader(path, fh);
    checkTraceSchema(path, reader.schema);
    return metaFromArrowMetadata(path, reader.schema.metadata);
  } finally {
    await fh.close().catch(() => undefined);
  }
}

/**
 * Reads a whole trace into memory: metadata and every row in arrival order.
 * @throws the errors of `readTraceMeta` and `readTraceBatches`.
 */
export async function readTrace(path: string): Promise<{ meta: TraceMeta; rows: TraceRow[] }> {
  let meta: TraceMeta | undefined;
  const rows: TraceRow[] = [];
  for await (const batch of traceBatches(path, (m) => (meta = m))) {
    for (const row of batch) rows.push(row);
  }
  if (meta === undefined) throw new Error(`${path}: no schema read`); // unreachable: traceBatches sets it or throws
  return { meta, rows };
}

type OpenFile = Awaited<ReturnType<typeof open>>;

/** What to do when a trace path holds something else (often the raw JSON Lines or CSV trace itself). */
const NOT_ARROW_FIX = "a raw trace (JSON Lines, CSV, JSON) must be converted first: 'switchyard trace import <format> <src> <dst.arrow>' (formats: 'switchyard trace import --help')";

/**
 * Opens the Arrow reader on `fh`.
 * @throws Error naming `path` when the file is empty, or is not an Arrow IPC file (the Arrow
 *   reader's reason, or no schema in it).
 */
async function openReader(path: string, fh: OpenFile) {
  if ((await fh.stat()).size === 0) {
    throw new Error(`${path}: the file is empty (0 bytes), not an Arrow trace; write one with 'switchyard trace import' or 'switchyard trace export'`);
  }
  let reader;
  try {
    reader = await RecordBatchReader.from(fh);
    await reader.open();
  } catch (err) {
    throw new Error(`${path}: not a readable Arrow IPC trace file (${(err as Error).message}); ${NOT_ARROW_FIX}`);
  }
  // The reader accepts some non-Arrow bytes without a schema rather than throwing.
  if (!reader.schema) throw new Error(`${path}: not a readable Arrow IPC trace file (no Arrow schema in it); ${NOT_ARROW_FIX}`);
  return reader;
}
