// The request log's data-chunk writer (gateway/request-log/log-chunks.mjs): what it appends reads
// back unchanged, chunk after chunk through the one reused chunk, for every column type the log
// uses; values a column cannot hold are refused as @duckdb/node-api's vectors refuse them.
import { DuckDBInstance, type DuckDBAppender, type DuckDBConnection } from '@duckdb/node-api';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CHUNK_ROWS, chunkWriter } from '../../gateway/request-log/log-chunks.mjs';

type Row = [string | null, number[] | null, number | null, boolean | null, number | null];
const TYPES = ['VARCHAR', 'INTEGER[]', 'DOUBLE', 'BOOLEAN', 'INTEGER'] as const;

let inst: DuckDBInstance;
let conn: DuckDBConnection;
let appender: DuckDBAppender;
beforeEach(async () => {
  inst = await DuckDBInstance.create(':memory:');
  conn = await inst.connect();
  await conn.run('CREATE TABLE t (s VARCHAR, l INTEGER[], d DOUBLE, b BOOLEAN, i INTEGER)');
  appender = await conn.createAppender('t');
});
afterEach(() => {
  conn.closeSync();
  inst.closeSync();
});

const columnsOf = (rows: readonly Row[]): unknown[][] => TYPES.map((_, c) => rows.map((r) => r[c]));
async function readBack(): Promise<Row[]> {
  appender.flushSync();
  return (await conn.runAndReadAll('SELECT s, l, d, b, i FROM t')).getRowsJS().map((r) => [r[0], r[1] === null ? null : [...(r[1] as number[])], r[2], r[3], r[4]] as Row);
}

describe('request log data chunks', () => {
  it('every batch reads back as written: nulls, short, long, non-ASCII and NUL-free strings, lists, edge numbers', async () => {
    const str = fc.oneof(fc.constant(null), fc.string({ maxLength: 14 }).map((s) => s.replaceAll('\0', '')), fc.string({ unit: 'grapheme', maxLength: 20 }).map((s) => s.replaceAll('\0', '')), fc.uuid());
    const int = fc.integer({ min: -2147483648, max: 2147483647 });
    const row = fc.tuple(str, fc.option(fc.array(int, { maxLength: 7 }), { nil: null }), fc.option(fc.double({ noNaN: true }), { nil: null }), fc.option(fc.boolean(), { nil: null }), fc.option(int, { nil: null }));
    const writer = chunkWriter(TYPES);
    const written: Row[] = [];
    await fc.assert(
      fc.asyncProperty(fc.array(row, { minLength: 1, maxLength: 300 }), async (rows) => {
        appender.appendDataChunk(writer.fill(columnsOf(rows), 0, rows.length));
        written.push(...rows);
      }),
      { numRuns: 60 },
    );
    expect(await readBack()).toEqual(written);
  });

  it('a range of the columns fills a chunk of its own; a full chunk is CHUNK_ROWS rows', async () => {
    const writer = chunkWriter(TYPES);
    const n = CHUNK_ROWS + 100;
    const rows: Row[] = Array.from({ length: n }, (_, k) => [k % 3 === 0 ? `request-${k}-with-a-long-id` : `s${k}`, [k, k + 1], k / 4, k % 2 === 0, k]);
    const cols = columnsOf(rows);
    appender.appendDataChunk(writer.fill(cols, 0, CHUNK_ROWS));
    appender.appendDataChunk(writer.fill(cols, CHUNK_ROWS, n));
    expect(await readBack()).toEqual(rows);
    expect(() => writer.fill(cols, 0, CHUNK_ROWS + 1)).toThrow(/0 to 2048 rows/);
  });

  it('an INTEGER that is not a 32-bit integer, or a VARCHAR that is not a string, is refused', () => {
    const writer = chunkWriter(TYPES);
    const bad = (r: Record<number, unknown>): unknown[][] => {
      const cols = columnsOf([['a', [1], 1, true, 1]]);
      for (const [c, v] of Object.entries(r)) cols[Number(c)]![0] = v;
      return cols;
    };
    expect(() => writer.fill(bad({ 4: 1.5 }), 0, 1)).toThrow(/not a 32-bit integer/);
    expect(() => writer.fill(bad({ 4: 2 ** 31 }), 0, 1)).toThrow(/not a 32-bit integer/);
    expect(() => writer.fill(bad({ 4: 'many' }), 0, 1)).toThrow(/not a 32-bit integer/);
    expect(() => writer.fill(bad({ 1: [1, 0.5] }), 0, 1)).toThrow(/not a 32-bit integer/);
    expect(() => writer.fill(bad({ 0: 42 }), 0, 1)).toThrow();
  });
});
