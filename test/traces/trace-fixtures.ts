// Shared helpers for the trace tests: temp folders, a sample row/meta, and a raw Arrow writer
// that bypasses writeTrace's validation (to produce deliberately bad files).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RecordBatchFileWriter } from 'apache-arrow';
import type { Schema } from 'apache-arrow';
import { afterAll } from 'vitest';
import { encodeTraceBatch } from '../../traces/trace-batch.ts';
import type { TraceMeta, TraceRow } from '../../traces/trace-row.ts';

/** A fresh temp folder, removed after the test file finishes. */
export function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-traces-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Metadata for hand-made test traces. */
export const META: TraceMeta = {
  source: 'test',
  licence: 'CC0-1.0',
  citation: '',
  hardware: 'unknown',
  engine: 'unknown',
  servedModel: 'unknown',
  blockSize: 512,
  blockUnit: 'tokens',
  sessionRule: 'none',
};

/** A valid row with arrival `i` ms and id `r<i>`, overridable. */
export function row(i: number, over: Partial<TraceRow> = {}): TraceRow {
  return {
    arrivalMs: i,
    requestId: `r${i}`,
    sessionId: null,
    callerId: null,
    model: null,
    inputTokens: 100,
    outputTokens: 10,
    hashIds: [1, 2],
    stream: true,
    ttftMs: null,
    e2eMs: null,
    itlMs: null,
    ...over,
  };
}

/** Writes `batches` (each a list of rows) as an Arrow IPC file with no validation. */
export function writeRawTrace(path: string, schema: Schema, batches: readonly TraceRow[][]): void {
  const w = new RecordBatchFileWriter();
  w.reset(undefined, schema);
  for (const b of batches) w.write(encodeTraceBatch(schema, b));
  writeFileSync(path, w.finish().toUint8Array(true));
}
