import { copyFileSync, rmSync, utimesSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readTrace } from '../../traces/arrow-trace.ts';
import { readCachedColumns, traceCacheFile, writeCachedColumns } from '../../traces/trace-column-cache.ts';
import { traceFromColumns, traceToColumns } from '../../traces/trace-columns.ts';
import { azureConv, mooncakeConversation } from '../simulator/fixtures.ts';
import { tempDir } from './trace-fixtures.ts';

const dir = tempDir();
const written: string[] = [];
afterAll(() => {
  for (const f of written) rmSync(traceCacheFile(f), { force: true });
  rmSync(dir, { recursive: true, force: true });
});

describe('trace column cache', () => {
  it('reads back the columns and metadata it wrote, as shared arrays, for the bundled traces', async () => {
    for (const [i, src] of [mooncakeConversation, azureConv].entries()) {
      const path = join(dir, `t${i}.arrow`);
      copyFileSync(src, path);
      written.push(path);
      expect(readCachedColumns(path)).toBeNull();
      const { meta, rows } = await readTrace(path);
      const columns = traceToColumns([...rows].sort((a, b) => a.arrivalMs - b.arrivalMs));
      writeCachedColumns(path, meta, columns);
      const back = readCachedColumns(path)!;
      expect(back).not.toBeNull();
      expect(back.meta).toEqual(meta);
      const c = back.columns;
      expect([c.length, c.text]).toEqual([columns.length, columns.text]);
      const pairs = [
        [c.arrivalMs, columns.arrivalMs], [c.inputTokens, columns.inputTokens], [c.outputTokens, columns.outputTokens],
        [c.stream, columns.stream], [c.ttftMs, columns.ttftMs], [c.e2eMs, columns.e2eMs], [c.strings, columns.strings],
        [c.hashIds.offsets, columns.hashIds.offsets], [c.hashIds.values, columns.hashIds.values],
        [c.itlMs.offsets, columns.itlMs.offsets], [c.itlMs.values, columns.itlMs.values],
      ] as const;
      for (const [a, b] of pairs) {
        // Byte for byte (NaN payloads included), and shared so workers get them without a copy.
        expect(a.constructor).toBe(b.constructor);
        expect(Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(Buffer.from(b.buffer, b.byteOffset, b.byteLength))).toBe(true);
        expect(a.buffer).toBeInstanceOf(SharedArrayBuffer);
      }
      expect(traceFromColumns(c).slice(0, 50)).toEqual(traceFromColumns(columns).slice(0, 50));
    }
  });

  it('ignores the file once the trace has changed', async () => {
    const path = join(dir, 'changed.arrow');
    copyFileSync(mooncakeConversation, path);
    written.push(path);
    const { meta, rows } = await readTrace(path);
    writeCachedColumns(path, meta, traceToColumns(rows));
    expect(readCachedColumns(path)).not.toBeNull();
    utimesSync(path, new Date(), new Date(Date.now() + 5000));
    expect(readCachedColumns(path)).toBeNull();
  });
});
