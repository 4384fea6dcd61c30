// The four committed Arrow traces: their counts and sums, and that a conversion of the raw
// samples committed beside them (traces/samples/: the first requests of each source, sums
// computed here by an independent parse) gives their first rows.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readTrace, readTraceBatches, readTraceMeta } from '../../traces/arrow-trace.ts';
import { CONVERSIONS, TRACES_DIR } from '../../traces/convert-all.ts';
import { importTrace } from '../../traces/import.ts';
import type { TraceRow } from '../../traces/trace-row.ts';
import { tempDir } from './trace-fixtures.ts';

interface Totals {
  rows: number;
  inputTokens: number;
  outputTokens: number;
  hashIds: number;
}

// Computed once from the whole raw files (wc -l / a plain JSON and CSV parse, as rawTotals does).
const EXPECTED: Record<string, Totals & { sessions: number; lastArrivalMs: number }> = {
  'mooncake/conversation.arrow': { rows: 12_031, inputTokens: 144_793_823, outputTokens: 4_122_048, hashIds: 288_500, sessions: 7_373, lastArrivalMs: 3_536_999 },
  'mooncake/synthetic.arrow': { rows: 3_993, inputTokens: 61_194_628, outputTokens: 595_432, hashIds: 121_877, sessions: 2_211, lastArrivalMs: 1_022_025 },
  'azure-2023/code.arrow': { rows: 8_819, inputTokens: 18_059_974, outputTokens: 245_896, hashIds: 0, sessions: 0, lastArrivalMs: 3_435_948.056 },
  'azure-2023/conv.arrow': { rows: 19_366, inputTokens: 22_361_870, outputTokens: 4_088_665, hashIds: 0, sessions: 0, lastArrivalMs: 3_501_721.937 },
};

function totals(rows: readonly TraceRow[]): Totals {
  return {
    rows: rows.length,
    inputTokens: rows.reduce((a, r) => a + r.inputTokens, 0),
    outputTokens: rows.reduce((a, r) => a + r.outputTokens, 0),
    hashIds: rows.reduce((a, r) => a + (r.hashIds?.length ?? 0), 0),
  };
}

/** Independent parse of a raw source: JSONL via JSON.parse, CSV by splitting on commas. */
function rawTotals(format: 'mooncake' | 'azure', path: string): Totals {
  const lines = readFileSync(path, 'utf8').split(/\r?\n/).filter((l) => l.length > 0);
  if (format === 'mooncake') {
    const recs = lines.map((l) => JSON.parse(l) as { input_length: number; output_length: number; hash_ids: number[] });
    return {
      rows: recs.length,
      inputTokens: recs.reduce((a, r) => a + r.input_length, 0),
      outputTokens: recs.reduce((a, r) => a + r.output_length, 0),
      hashIds: recs.reduce((a, r) => a + r.hash_ids.length, 0),
    };
  }
  const body = lines.slice(1).map((l) => l.split(','));
  return {
    rows: body.length,
    inputTokens: body.reduce((a, c) => a + Number(c[1]), 0),
    outputTokens: body.reduce((a, c) => a + Number(c[2]), 0),
    hashIds: 0,
  };
}

describe('committed Arrow traces', () => {
  for (const c of CONVERSIONS) {
    const path = join(TRACES_DIR, c.target);
    const want = EXPECTED[c.target]!;

    it(`${c.target}: counts, sums, sessions and metadata`, async () => {
      const started = performance.now();
      const { meta, rows } = await readTrace(path);
      const readMs = performance.now() - started;
      expect(totals(rows)).toEqual({ rows: want.rows, inputTokens: want.inputTokens, outputTokens: want.outputTokens, hashIds: want.hashIds });
      expect(new Set(rows.flatMap((r) => (r.sessionId === null ? [] : [r.sessionId]))).size).toBe(want.sessions);
      expect(rows[0]!.arrivalMs).toBe(0);
      expect(rows.at(-1)!.arrivalMs).toBe(want.lastArrivalMs);
      expect(rows.every((r) => r.stream && r.callerId === null && r.model === null && r.ttftMs === null)).toBe(true);
      expect(rows.map((r) => r.requestId).slice(0, 3)).toEqual(['0', '1', '2']);
      expect(await readTraceMeta(path)).toEqual(meta);
      if (c.format === 'mooncake') {
        expect(meta).toMatchObject({ licence: 'Apache-2.0', blockSize: 512, blockUnit: 'tokens' });
        expect(meta.sessionRule).toMatch(/^derived:first-uncommon-block/);
        expect(meta.citation).toMatch(/Qin et al\..*FAST'25/);
      } else {
        expect(meta).toMatchObject({ licence: 'CC-BY-4.0', blockSize: 0, sessionRule: 'none', servedModel: 'unknown' });
        expect(meta.citation).toMatch(/Patel et al\., "Splitwise: Efficient generative LLM inference using phase splitting", ISCA 2024/);
        expect(rows.every((r) => r.sessionId === null && r.hashIds === null)).toBe(true);
      }
      expect(meta.source).toContain(c.sourceFile);
      expect(meta.source).toMatch(/@ [0-9a-f]{40}$/);
      // Generous bound; typical is 0.05–0.3 s (including JIT warm-up).
      expect(readMs).toBeLessThan(3000);
    });

    it(`${c.target}: SOURCE.txt and LICENSE sit beside it`, () => {
      expect(existsSync(join(path, '..', 'SOURCE.txt'))).toBe(true);
      expect(readFileSync(join(path, '..', 'LICENSE'), 'utf8')).toContain(c.format === 'mooncake' ? 'Apache' : 'CC-BY-4.0');
    });
  }

  it('readTraceBatches yields record batches of at most 4096 rows', async () => {
    const sizes: number[] = [];
    for await (const b of readTraceBatches(join(TRACES_DIR, 'mooncake/conversation.arrow'))) sizes.push(b.length);
    expect(sizes).toEqual([4096, 4096, 3839]);
  });
});

/** The raw sample of a conversion's source: `traces/samples/<source folder>/<stem>.head-300.<ext>`. */
const SAMPLE_ROWS = 300;
function samplePath(c: (typeof CONVERSIONS)[number]): string {
  return join(TRACES_DIR, 'samples', c.sourceFolder, c.sourceFile.replace(/\.(jsonl|csv)$/, `.head-${SAMPLE_ROWS}.$1`));
}

describe('conversion of the committed raw samples (traces/samples/)', () => {
  const out = tempDir();
  for (const c of CONVERSIONS) {
    it(`${c.sourceFolder}/${c.sourceFile} (first ${SAMPLE_ROWS} requests) → the first rows of ${c.target}`, async () => {
      const src = samplePath(c);
      const dst = join(out, c.target);
      const stats = await importTrace(c.format, src, dst);
      const raw = rawTotals(c.format, src);
      expect(raw.rows).toBe(SAMPLE_ROWS);
      const { rows } = await readTrace(dst);
      expect(totals(rows)).toEqual(raw);
      expect({ rows: stats.rows, inputTokens: stats.inputTokens, outputTokens: stats.outputTokens, hashIds: stats.hashIds }).toEqual(raw);
      // The committed trace starts with the same requests. Session ids are derived from block
      // frequencies over the whole trace, so only they may differ.
      const committed = (await readTrace(join(TRACES_DIR, c.target))).rows.slice(0, SAMPLE_ROWS);
      const unsessioned = (r: TraceRow) => ({ ...r, sessionId: null });
      expect(rows.map(unsessioned)).toEqual(committed.map(unsessioned));
      // The sample's SOURCE note carries the committed trace's SOURCE note verbatim, and a licence.
      const folder = join(TRACES_DIR, c.target, '..');
      expect(readFileSync(join(src, '..', 'SOURCE.txt'), 'utf8').endsWith(readFileSync(join(folder, 'SOURCE.txt'), 'utf8'))).toBe(true);
      expect(readFileSync(join(src, '..', 'LICENSE'), 'utf8')).toContain(c.format === 'mooncake' ? 'Apache' : 'CC-BY-4.0');
    });
  }
});
