// Property: writeTrace then readTrace returns exactly the rows and metadata written, for
// arbitrary valid rows (Float32 ITL values are generated as Float32 so they are exact).
import { join } from 'node:path';
import fc from 'fast-check';
import { expect, it } from 'vitest';
import { readTrace, writeTrace } from '../../traces/arrow-trace.ts';
import type { TraceMeta, TraceRow } from '../../traces/trace-row.ts';
import { tempDir } from './trace-fixtures.ts';

const dir = tempDir();
const text = fc.string({ unit: 'grapheme', maxLength: 12 });
const maybe = <T>(a: fc.Arbitrary<T>) => fc.option(a, { nil: null });
const tokens = fc.integer({ min: 0, max: 2 ** 31 - 1 });
const ms = fc.double({ min: 0, max: 1e7, noNaN: true });

const rowArb = fc.record({
  gapMs: fc.oneof(fc.constant(0), ms),
  requestId: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 12 }),
  sessionId: maybe(text),
  callerId: maybe(text),
  model: maybe(text),
  inputTokens: tokens,
  outputTokens: tokens,
  hashIds: maybe(fc.array(fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }), { maxLength: 30 })),
  stream: fc.boolean(),
  ttftMs: maybe(ms),
  e2eMs: maybe(ms),
  itlMs: maybe(fc.array(fc.float({ min: 0, max: 1e5, noNaN: true }), { maxLength: 20 })),
});

const metaArb: fc.Arbitrary<TraceMeta> = fc.record({
  source: text,
  licence: text,
  citation: text,
  hardware: text,
  engine: text,
  servedModel: text,
  blockSize: fc.nat(),
  blockUnit: fc.constantFrom('tokens' as const, 'bytes' as const),
  sessionRule: text,
});

it('writeTrace then readTrace is the identity on valid traces', async () => {
  let run = 0;
  await fc.assert(
    fc.asyncProperty(metaArb, fc.uniqueArray(rowArb, { selector: (r) => r.requestId, maxLength: 40 }), async (meta, drawn) => {
      let t = 0;
      const rows: TraceRow[] = drawn.map(({ gapMs, ...r }) => ({ ...r, arrivalMs: (t += gapMs) }));
      const path = join(dir, `p-${run++}.arrow`);
      await writeTrace(path, meta, rows);
      expect(await readTrace(path)).toEqual({ meta, rows });
    }),
    { numRuns: 150 },
  );
});
