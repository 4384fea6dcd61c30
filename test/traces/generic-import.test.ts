// The generic importer: RFC 4180 splitting, each preset on its committed sample (traces/samples/),
// a column map from the command line with units and absolute arrivals, the source note in the
// metadata, and a bad row reported by row number and column with nothing written.
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readTrace } from '../../traces/arrow-trace.ts';
import { parseCsv } from '../../traces/import/csv-records.ts';
import { importGeneric, parseColumnMap, type GenericFormat } from '../../traces/import/generic-import.ts';
import { GENERIC_PRESETS, type PresetName } from '../../traces/import/generic-presets.ts';
import { traceImportCommand } from '../../traces/import-command.ts';
import { importTrace } from '../../traces/import.ts';
import { tempDir } from './trace-fixtures.ts';

const dir = tempDir();
const samples = join(import.meta.dirname, '..', '..', 'traces', 'samples');
let n = 0;
const out = () => join(dir, `t-${++n}.arrow`);

const viaPreset = async (name: PresetName, file: string) => {
  const p = GENERIC_PRESETS[name];
  const dst = out();
  await importGeneric(p.format, file, dst, { ...p.options, map: p.map, timeUnit: p.timeUnit, arrivals: p.arrivals });
  return readTrace(dst);
};

describe('parseCsv (RFC 4180)', () => {
  it('splits quoted fields with commas, doubled quotes and line breaks; CRLF or LF; final newline optional', () => {
    expect(parseCsv('a,b\r\n"x,y","say ""hi"""\n"two\nlines",\n3,4', 'f.csv')).toEqual([
      { lineNo: 1, fields: ['a', 'b'] },
      { lineNo: 2, fields: ['x,y', 'say "hi"'] },
      { lineNo: 3, fields: ['two\nlines', ''] },
      { lineNo: 5, fields: ['3', '4'] },
    ]);
  });
  it('names the line of an unclosed quote or text after a closing quote', () => {
    expect(() => parseCsv('a\n1\n"open', 'f.csv')).toThrow(/f\.csv: line 3 \(1-based\): a quoted field is never closed/);
    expect(() => parseCsv('a,b\n"x"y,1', 'f.csv')).toThrow(/f\.csv: line 2 \(1-based\): text after a closing quote/);
  });
});

describe('presets on their samples', () => {
  it('splitwise: the real Azure excerpt matches the azure converter row for row', async () => {
    const sample = join(samples, 'splitwise', 'AzureLLMInferenceTrace_conv.csv');
    const { meta, rows } = await viaPreset('splitwise', sample);
    const azure = out();
    await importTrace('azure', sample, azure);
    expect(rows).toEqual((await readTrace(azure)).rows);
    expect(rows).toHaveLength(40);
    expect(rows[0]).toMatchObject({ arrivalMs: 0, inputTokens: 374, outputTokens: 44, requestId: '0' });
    expect(rows.at(-1)).toMatchObject({ inputTokens: 28, outputTokens: 175 });
    expect(meta.source).toBe('https://github.com/Azure/AzurePublicDataset data/AzureLLMInferenceTrace_conv.csv @ b469a113cedca53ddc3bdea71a143dc4b7d8700c');
    expect(meta.licence).toBe('CC-BY-4.0');
    expect(meta.citation).toMatch(/Splitwise/);
  });

  it('burstgpt: seconds from the start, model kept, licence and citation from the preset', async () => {
    const { meta, rows } = await viaPreset('burstgpt', join(samples, 'burstgpt', 'burstgpt-synthetic.csv'));
    expect(rows).toHaveLength(30);
    expect(rows[0]).toMatchObject({ arrivalMs: 5000, model: 'GPT-4', inputTokens: 191, outputTokens: 17 });
    expect(meta.source).toMatch(/^Synthetic sample in the BurstGPT CSV format/);
    expect(meta.licence).toBe('CC-BY-4.0');
  });

  it('lmbench: Unix-second launches become ms from the first, sorted; sessions and rounds kept; TTFT in ms', async () => {
    const { meta, rows } = await viaPreset('lmbench', join(samples, 'lmbench', 'lmbench-summary-synthetic.csv'));
    expect(rows).toHaveLength(20);
    expect(rows[0]).toMatchObject({ arrivalMs: 0, requestId: '0#0', sessionId: '0', inputTokens: 600 });
    expect(rows[1]!.arrivalMs).toBeCloseTo(700, 3);
    for (let i = 1; i < rows.length; i++) expect(rows[i]!.arrivalMs).toBeGreaterThanOrEqual(rows[i - 1]!.arrivalMs);
    expect(rows[0]!.ttftMs).toBeCloseTo(110.6, 6);
    expect(new Set(rows.map((r) => r.sessionId)).size).toBe(4);
    expect(meta.sessionRule).toBe('source');
  });

  it('vllm-bench: request_rate inf ⇒ every request at 0; TTFT and ITLs converted from s', async () => {
    const { meta, rows } = await viaPreset('vllm-bench', join(samples, 'vllm-bench', 'vllm-bench-synthetic.json'));
    expect(rows).toHaveLength(12);
    expect(rows.every((r) => r.arrivalMs === 0)).toBe(true);
    expect(rows[0]!.ttftMs).toBeGreaterThan(50);
    expect(rows[0]!.itlMs!.length).toBeGreaterThan(0);
    expect(meta.engine).toBe('vllm');
    const finite = join(dir, 'finite.json');
    writeFileSync(finite, JSON.stringify({ request_rate: 4, input_lens: [1], output_lens: [2] }));
    await expect(viaPreset('vllm-bench', finite)).rejects.toThrow(/row 1 \(1-based\), column start_times: the result file does not record when each request was sent/);
  });
});

describe('trace import jsonl|csv|json --map', () => {
  it('maps columns, converts s to ms, subtracts the earliest absolute arrival and stores --source-note', async () => {
    const src = join(dir, 'own.jsonl');
    writeFileSync(src, ['{"t": 100.5, "p": 10, "g": 3, "s": "a", "h": [1, 2]}', '{"t": 100.0, "p": 20, "g": 4, "s": "b", "h": [1]}'].join('\n'));
    const note = join(dir, 'note.txt');
    writeFileSync(note, 'our staging gateway, 2026-11-30, exported by hand\n');
    const dst = out();
    const lines: string[] = [];
    const write = process.stdout.write;
    process.stdout.write = ((s: string) => lines.push(s) > 0) as typeof process.stdout.write;
    try {
      const code = await traceImportCommand.run(['jsonl', src, dst, '--map', 'arrival=t,input=p,output=g,session=s,prefix_hashes=h', '--time-unit', 's', '--arrivals', 'absolute', '--block-size', '16', '--source-note', note]);
      expect(code).toBe(0);
    } finally {
      process.stdout.write = write;
    }
    expect(JSON.parse(lines[0]!)).toMatchObject({ rows: 2, spanMs: 500 });
    const { meta, rows } = await readTrace(dst);
    expect(rows.map((r) => [r.arrivalMs, r.requestId, r.sessionId, r.hashIds])).toEqual([
      [0, '1', 'b', [1]],
      [500, '0', 'a', [1, 2]],
    ]);
    expect(meta).toMatchObject({ source: 'our staging gateway, 2026-11-30, exported by hand', blockSize: 16, sessionRule: 'source' });
  });

  it('reports a bad row by row number, line and column, and writes nothing', async () => {
    const cases: Array<[GenericFormat, string, string, RegExp]> = [
      ['csv', 'ts,in,out\n0,5,1\n1,"x",1\n', 'arrival=ts,input=in,output=out', /row 2 \(1-based, line 3\), column in: 'x' is not an integer/],
      ['csv', 'ts,in,out\n0,5,1\n-1,5,1\n', 'arrival=ts,input=in,output=out', /row 2 \(1-based, line 3\), column ts: '-1' is not a number ≥ 0/],
      ['csv', 'ts,in,out\n0,5\n', 'arrival=ts,input=in,output=out', /row 1 \(1-based, line 2\), column \(whole row\): has 2 fields; the header has 3/],
      ['jsonl', '{"ts":0,"in":1,"out":1}\n\n{"ts":1,"in":1}\n', 'arrival=ts,input=in,output=out', /row 2 \(1-based, line 3\), column out: missing/],
      ['json', '[{"ts":0,"in":1,"out":1,"h":"[1,x]"}]', 'arrival=ts,input=in,output=out,prefix_hashes=h', /row 1 \(1-based\), column h: '\[1,x\]' is not a list/],
      ['csv', 'u,q,ts,in,out\na,0,0,1,1\na,0,1,1,1\n', 'arrival=ts,input=in,output=out,session=u,round=q', /row 2 \(1-based, line 3\), column q: session a has round 0 twice/],
    ];
    for (const [format, text, map, err] of cases) {
      const src = join(dir, `bad-${++n}.${format}`);
      writeFileSync(src, text);
      const dst = out();
      await expect(importGeneric(format, src, dst, { map: parseColumnMap(map), blockSize: 4 })).rejects.toThrow(err);
      expect(existsSync(dst)).toBe(false);
    }
    expect(() => parseColumnMap('arrival=t,input=p')).toThrow(/needs output=<column>/);
    expect(() => parseColumnMap('arrival=t,input=p,output=o,colour=c')).toThrow(/unknown field 'colour'/);
  });
});
