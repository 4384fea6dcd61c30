// The Arrow reader and writer: bad rows are reported with file, 1-based row and column;
// schema and metadata problems are reported; batches and nullable columns behave.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Float64, Int32, Schema, Table, Utf8, tableToIPC, vectorFromArray } from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import { readTrace, readTraceBatches, readTraceMeta, writeTrace } from '../../traces/arrow-trace.ts';
import { metaToArrowMetadata, traceFields, traceSchema } from '../../traces/trace-schema.ts';
import type { TraceRow } from '../../traces/trace-row.ts';
import { META, row, tempDir, writeRawTrace } from './trace-fixtures.ts';

const dir = tempDir();
let n = 0;
const fresh = (): string => join(dir, `t-${++n}.arrow`);

async function readError(path: string): Promise<string> {
  try {
    await readTrace(path);
  } catch (e) {
    return (e as Error).message;
  }
  throw new Error('read succeeded');
}

describe('reader rejects bad rows', () => {
  const bad: Array<[string, Partial<TraceRow>, string, RegExp]> = [
    ['negative input tokens', { inputTokens: -5 }, 'input_tokens', /got -5; allowed: an integer in \[0, 2147483647\]/],
    ['negative output tokens', { outputTokens: -1 }, 'output_tokens', /got -1/],
    ['null output tokens', { outputTokens: null as never }, 'output_tokens', /got null/],
    ['empty request id', { requestId: '' }, 'request_id', /got ""; allowed: a non-empty/],
    ['duplicate request id', { requestId: 'r0' }, 'request_id', /not used by an earlier row/],
    ['NaN arrival', { arrivalMs: Number.NaN }, 'arrival_ms', /got NaN; allowed: a finite number ≥ 0/],
    ['decreasing arrival', { arrivalMs: 0.5 }, 'arrival_ms', /got 0\.5; allowed: non-decreasing arrivals \(previous row: 1\)/],
    ['negative ttft', { ttftMs: -2 }, 'ttft_ms', /got -2/],
    ['negative ITL value', { itlMs: [1, -3] }, 'itl_ms', /got -3/],
  ];
  for (const [name, over, column, re] of bad) {
    it(`${name}: names file, row 3 and ${column}`, async () => {
      const path = fresh();
      writeRawTrace(path, traceSchema(META), [[row(0), row(1), row(2, over)]]);
      const msg = await readError(path);
      expect(msg.startsWith(`${path}: row 3 (1-based), column ${column}: `)).toBe(true);
      expect(msg).toMatch(re);
    });
  }

  it('row numbers count across record batches', async () => {
    const path = fresh();
    writeRawTrace(path, traceSchema(META), [[row(0), row(1), row(2)], [row(3), row(4, { inputTokens: -1 })]]);
    expect(await readError(path)).toMatch(/: row 5 \(1-based\), column input_tokens: got -1/);
    // The good first batch is still delivered before the error.
    const seen: number[] = [];
    await expect(
      (async () => {
        for await (const b of readTraceBatches(path)) seen.push(b.length);
      })(),
    ).rejects.toThrow(/row 5/);
    expect(seen).toEqual([3]);
  });
});

describe('reader rejects bad files', () => {
  it('not an Arrow file', async () => {
    const path = fresh();
    writeFileSync(path, 'timestamp,input\n1,2\n');
    expect(await readError(path)).toMatch(new RegExp(`^${path}: not a readable Arrow IPC trace file`));
    // It says how to get an Arrow trace from the raw file.
    expect(await readError(path)).toMatch(/must be converted first: 'switchyard trace import <format> <src> <dst\.arrow>'/);
  });

  it('missing metadata key', async () => {
    const path = fresh();
    const meta = metaToArrowMetadata(META);
    meta.delete('licence');
    writeRawTrace(path, new Schema(traceFields(), meta), [[row(0)]]);
    expect(await readError(path)).toBe(`${path}: schema metadata key 'licence' is missing (required keys: source, licence, citation, hardware, engine, served_model, block_size, block_unit, session_rule)`);
    await expect(readTraceMeta(path)).rejects.toThrow(/'licence' is missing/);
  });

  it('invalid block_unit', async () => {
    const path = fresh();
    writeRawTrace(path, new Schema(traceFields(), metaToArrowMetadata({ ...META, blockUnit: 'pages' as never })), [[row(0)]]);
    expect(await readError(path)).toMatch(/'block_unit' is 'pages'; allowed: 'tokens' or 'bytes'/);
  });

  it('wrong column type or missing required column', async () => {
    // Built with plain apache-arrow, as another tool would: input_tokens as Float64, no stream.
    const table = new Table({
      arrival_ms: vectorFromArray([0, 1], new Float64()),
      request_id: vectorFromArray(['a', 'b'], new Utf8()),
      input_tokens: vectorFromArray([1, 2], new Float64()),
      output_tokens: vectorFromArray([1, 2], new Int32()),
    });
    const path = fresh();
    writeFileSync(path, tableToIPC(table, 'file'));
    expect(await readError(path)).toBe(`${path}: column input_tokens has type Float64; allowed: Int32`);
  });
});

describe('writer', () => {
  it('refuses a bad row, naming the destination, row and column, and writes nothing', async () => {
    const path = fresh();
    await expect(writeTrace(path, META, [row(0), row(1, { inputTokens: 2.5 })])).rejects.toThrow(
      `${path}: row 2 (1-based), column input_tokens: got 2.5; allowed: an integer in [0, 2147483647] (tokens)`,
    );
    await expect(readTrace(path)).rejects.toThrow(/ENOENT/);
  });

  it('writes record batches of 4096 rows and reads them back in order', async () => {
    const path = fresh();
    const rows = Array.from({ length: 10_000 }, (_, i) => row(i * 0.25, { requestId: String(i), sessionId: `s${i % 7}` }));
    expect(await writeTrace(path, META, rows)).toBe(10_000);
    const sizes: number[] = [];
    const back: TraceRow[] = [];
    for await (const b of readTraceBatches(path)) {
      sizes.push(b.length);
      back.push(...b);
    }
    expect(sizes).toEqual([4096, 4096, 1808]);
    expect(back).toEqual(rows);
  });

  it('an empty trace keeps its metadata', async () => {
    const path = fresh();
    await writeTrace(path, META, []);
    expect(await readTrace(path)).toEqual({ meta: META, rows: [] });
  });

  it('absent nullable columns read as null', async () => {
    const path = fresh();
    const required = traceFields().filter((f) => !f.nullable);
    writeRawTrace(path, new Schema(required, metaToArrowMetadata(META)), [[row(0), row(1)]]);
    const { rows } = await readTrace(path);
    expect(rows[1]).toEqual(row(1, { hashIds: null }));
  });
});
