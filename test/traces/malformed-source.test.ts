// A malformed source row stops the import with the source file, the 1-based line number and
// the field, and writes nothing.
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { importTrace } from '../../traces/import.ts';
import { readTrace } from '../../traces/arrow-trace.ts';
import { parseWallClock, wallClockDiffMs } from '../../traces/import-azure.ts';
import { tempDir } from './trace-fixtures.ts';

const dir = tempDir();
let n = 0;

/** Writes `text` to a fresh source file and imports it; resolves to the error message. */
async function importError(format: 'mooncake' | 'azure', text: string): Promise<{ message: string; src: string; dst: string }> {
  n++;
  const src = join(dir, `bad-${n}.${format === 'mooncake' ? 'jsonl' : 'csv'}`);
  const dst = join(dir, `bad-${n}.arrow`);
  writeFileSync(src, text);
  const err = await importTrace(format, src, dst).then(
    () => new Error('import succeeded'),
    (e: unknown) => e as Error,
  );
  expect(existsSync(dst)).toBe(false);
  return { message: err.message, src, dst };
}

const ok = (ts: number, extra = '') => `{"timestamp": ${ts}, "input_length": 600, "output_length": 5, "hash_ids": [0, 1]${extra}}`;

describe('Mooncake JSONL: malformed rows', () => {
  const cases: Array<[string, string, RegExp]> = [
    ['bad JSON', `${ok(0)}\n${ok(1)}\n{"timestamp": 2, "input_length": \n`, /line 3 \(1-based\), field \(whole line\): not valid JSON/],
    ['missing field', `${ok(0)}\n{"timestamp": 1, "input_length": 3, "hash_ids": []}\n`, /line 2 \(1-based\), field output_length: missing/],
    ['negative tokens', `${ok(0)}\n{"timestamp": 1, "input_length": -3, "output_length": 1, "hash_ids": []}\n`, /line 2 \(1-based\), field input_length: -3 is not an integer/],
    ['non-integer tokens', `{"timestamp": 1, "input_length": 3, "output_length": 1.5, "hash_ids": []}\n`, /line 1 \(1-based\), field output_length: 1\.5 is not an integer/],
    ['tokens as a string', `{"timestamp": 1, "input_length": "3", "output_length": 1, "hash_ids": []}\n`, /line 1 \(1-based\), field input_length: "3"/],
    ['bad hash id', `${ok(0)}\n${ok(0)}\n{"timestamp": 1, "input_length": 3, "output_length": 1, "hash_ids": [4, -1]}\n`, /line 3 \(1-based\), field hash_ids\[1\]: -1/],
    ['bad timestamp', `${ok(0)}\n{"timestamp": "soon", "input_length": 3, "output_length": 1, "hash_ids": []}\n`, /line 2 \(1-based\), field timestamp: "soon" is not a finite number/],
    ['decreasing timestamp', `${ok(5)}\n${ok(4)}\n`, /line 2 \(1-based\), field timestamp: 4 is below the previous line's 5/],
    ['empty line in the middle', `${ok(0)}\n\n${ok(1)}\n`, /line 2 \(1-based\), field \(whole line\): empty line/],
    ['not an object', `${ok(0)}\n[1, 2]\n`, /line 2 \(1-based\), field \(whole line\): not a JSON object/],
  ];
  for (const [name, text, re] of cases) {
    it(name, async () => {
      const { message, src } = await importError('mooncake', text);
      expect(message.startsWith(`${src}: `)).toBe(true);
      expect(message).toMatch(re);
    });
  }

  it('a good file without a final newline and without SOURCE.txt imports', async () => {
    const src = join(dir, 'good.jsonl');
    const dst = join(dir, 'sub/good.arrow');
    writeFileSync(src, `${ok(0)}\n${ok(3)}\n{"timestamp": 7, "input_length": 2, "output_length": 1, "hash_ids": [0, 9]}`);
    const stats = await importTrace('mooncake', src, dst);
    expect(stats).toMatchObject({ rows: 3, inputTokens: 1202, outputTokens: 11, hashIds: 6, spanMs: 7 });
    const { meta, rows } = await readTrace(dst);
    expect(meta.source).toBe('local file good.jsonl (no SOURCE.txt beside it)');
    // In a 3-request trace every block is in more than 10 % of requests, so all are common
    // and each request is its own session (the rule needs a trace of realistic size).
    expect(rows.map((r) => r.sessionId)).toEqual(['req-0', 'req-1', 'req-2']);
  });
});

const header = 'TIMESTAMP,ContextTokens,GeneratedTokens';
const line = (t: string, a = '10', b = '2') => `2023-11-16 18:17:${t},${a},${b}`;

describe('Azure CSV: malformed rows', () => {
  const cases: Array<[string, string, RegExp]> = [
    ['unparsable timestamp', [header, line('03.9799600'), 'yesterday,1,2'].join('\r\n'), /line 3 \(1-based\), field TIMESTAMP: 'yesterday' is not a timestamp/],
    ['impossible date', [header, '2023-02-30 00:00:00.0000000,1,2'].join('\r\n'), /line 2 \(1-based\), field TIMESTAMP/],
    ['negative tokens', [header, line('03.1'), line('04.2', '-4')].join('\r\n'), /line 3 \(1-based\), field ContextTokens: '-4' is not an integer/],
    ['non-integer tokens', [header, line('03.1', '4', '2.5')].join('\n'), /line 2 \(1-based\), field GeneratedTokens: '2\.5' is not an integer/],
    ['empty token cell', [header, line('03.1', '')].join('\n'), /line 2 \(1-based\), field ContextTokens: '' is not an integer/],
    ['wrong field count', [header, line('03.1'), '2023-11-16 18:17:05.0,1'].join('\n'), /line 3 \(1-based\), field \(whole line\): has 2 fields; the header has 3/],
    ['missing header column', ['TIMESTAMP,ContextTokens,Output', line('03.1')].join('\n'), /line 1 \(1-based\), field GeneratedTokens: missing from the header/],
    ['decreasing timestamp', [header, line('03.5'), line('03.4')].join('\n'), /line 3 \(1-based\), field TIMESTAMP: '2023-11-16 18:17:03\.4' is earlier/],
  ];
  for (const [name, text, re] of cases) {
    it(name, async () => {
      const { message, src } = await importError('azure', text);
      expect(message.startsWith(`${src}: `)).toBe(true);
      expect(message).toMatch(re);
    });
  }

  it('timestamps are exact to 100 ns and relative to the first row', async () => {
    const src = join(dir, 'good.csv');
    const dst = join(dir, 'good-azure.arrow');
    writeFileSync(src, [header, '2023-11-16 23:59:59.9999999,5,1', '2023-11-17 00:00:00.0000001,6,2', '2023-11-17 00:00:01.0519600,7,3'].join('\r\n'));
    await importTrace('azure', src, dst);
    const { rows } = await readTrace(dst);
    expect(rows.map((r) => r.arrivalMs)).toEqual([0, 0.0002, 1051.9601]);
    expect(rows.map((r) => [r.requestId, r.inputTokens, r.outputTokens])).toEqual([['0', 5, 1], ['1', 6, 2], ['2', 7, 3]]);
  });

  it('parseWallClock keeps the fraction as integer nanoseconds', () => {
    const a = parseWallClock('2023-11-16 18:17:03.9799600');
    const b = parseWallClock('2023-11-16 18:17:04.0319600');
    expect(a).toEqual({ seconds: Date.UTC(2023, 10, 16, 18, 17, 3) / 1000, nanos: 979_960_000 });
    expect(wallClockDiffMs(a!, b!)).toBe(52);
    expect(parseWallClock('2023-11-16 24:00:00')).toBeNull();
    expect(parseWallClock('2023-11-16 18:17:03.1234567890')).toBeNull();
  });
});

it('importTrace rejects an unknown format', async () => {
  await expect(importTrace('parquet' as never, 'a', join(dir, 'x.arrow'))).rejects.toThrow(/unknown trace format 'parquet'; allowed: mooncake, azure/);
});
