// Rows as columns (what sweep workers hand to the results thread) and a trace as shared columns
// (what workers replay): both decode to exactly what was encoded, and columnar appends store the
// same rows as the row appender.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeRows, encodeRows, transferList } from '../../../simulator/results/columnar-rows.ts';
import type { EndpointSampleRow, RequestRow } from '../../../simulator/results/result-rows.ts';
import { ResultsStore } from '../../../simulator/results/results-store.ts';
import { readTrace } from '../../../traces/arrow-trace.ts';
import { traceFromColumns, traceToColumns } from '../../../traces/trace-columns.ts';
import { azureConv, mooncakeConversation } from '../fixtures.ts';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'switchyard-columnar-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const maybe = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: null });
const requestArb: fc.Arbitrary<RequestRow> = fc.record({
  runId: fc.constantFrom('fixed/s1', 'rr/s1'),
  requestId: fc.string(),
  sessionId: maybe(fc.string()),
  callerId: maybe(fc.constantFrom('caller-0', 'caller-1')),
  arrivalMs: fc.double({ noNaN: true, noDefaultInfinity: true }),
  endpointId: maybe(fc.constantFrom('replica-0', 'deepinfra')),
  queueWaitMs: maybe(fc.double({ noNaN: true, noDefaultInfinity: true })),
  ttftMs: maybe(fc.double({ noNaN: true, noDefaultInfinity: true })),
  tpotMs: maybe(fc.double({ noNaN: true, noDefaultInfinity: true })),
  e2eMs: maybe(fc.double({ noNaN: true, noDefaultInfinity: true })),
  inputTokens: fc.integer(),
  outputTokens: fc.integer({ min: 0 }),
  cachedTokens: fc.integer({ min: 0 }),
  status: fc.constantFrom('ok', 'upstream_rate_limited'),
  costUsd: fc.double({ noNaN: true, noDefaultInfinity: true }),
  fallbacks: fc.integer({ min: 0, max: 5 }),
  offloadReason: maybe(fc.constantFrom('queue_wait')),
  stream: fc.boolean(),
  tries: fc.integer({ min: 1, max: 4 }),
  gatewayReplica: fc.integer({ min: 0, max: 3 }),
});

describe('columnar rows', () => {
  it('decode to the rows encoded, field for field, from any offset', () => {
    fc.assert(
      fc.property(fc.array(requestArb, { maxLength: 40 }), fc.nat(), (rows, cut) => {
        const from = rows.length === 0 ? 0 : cut % rows.length;
        expect(decodeRows(encodeRows('requests', rows))).toEqual(rows);
        expect(decodeRows(encodeRows('requests', rows, from))).toEqual(rows.slice(from));
      }),
    );
  });

  it('refuse a value that does not fit its column, naming the row and field', () => {
    const good = fc.sample(requestArb, 1)[0]!;
    expect(() => encodeRows('requests', [good, { ...good, inputTokens: 1.5 }])).toThrow(/requests\[1\]\.inputTokens/);
    expect(() => encodeRows('requests', [{ ...good, ttftMs: Number.NaN }])).toThrow(RangeError);
    expect(() => encodeRows('requests', [{ ...good, status: null as unknown as string }])).toThrow(TypeError);
  });

  it('list each buffer once for transfer', () => {
    const batch = encodeRows('requests', fc.sample(requestArb, 5));
    const list = transferList([batch, batch]);
    expect(new Set(list).size).toBe(list.length);
    expect(list.length).toBeGreaterThan(0);
  });

  it('append through DuckDB data chunks as the row appender does (BIGINT, nulls, booleans, > 2,048 rows)', async () => {
    const rows = fc.sample(requestArb, 5000).map((r, i) => ({ ...r, requestId: `r${i}` }));
    const samples: EndpointSampleRow[] = Array.from({ length: 3000 }, (_, i) => ({
      runId: 'fixed/s1',
      endpointId: `replica-${i % 3}`,
      atMs: i * 5000,
      running: i % 7,
      waiting: i % 5,
      kvUsage: (i % 100) / 100,
      prefillBacklogTokens: 2 ** 40 + i,
      batchTokens: i,
      steps: i * 3,
      preemptions: 0,
    }));
    const a = await ResultsStore.open(join(dir, 'rows.duckdb'));
    const b = await ResultsStore.open(join(dir, 'columns.duckdb'));
    try {
      await a.appendRequests(rows);
      await a.appendTimeseries(samples);
      await b.appendColumns(encodeRows('requests', rows, 0, 2500));
      await b.appendColumns(encodeRows('requests', rows, 2500));
      await b.appendColumns(encodeRows('endpoint_timeseries', samples));
      for (const t of ['requests', 'endpoint_timeseries']) {
        expect(await b.query(`select * from ${t}`)).toEqual(await a.query(`select * from ${t}`));
      }
    } finally {
      await a.close();
      await b.close();
    }
  });
});

describe('trace columns', () => {
  it('rebuild the rows of the bundled traces exactly (hash ids, nulls, strings)', async () => {
    for (const path of [mooncakeConversation, azureConv]) {
      const { rows } = await readTrace(path);
      const cols = traceToColumns(rows);
      expect(cols.arrivalMs.buffer).toBeInstanceOf(SharedArrayBuffer);
      expect(traceFromColumns(cols)).toEqual(rows);
      // What a worker receives is a structured clone: the numbers stay shared.
      expect(traceFromColumns(structuredClone(cols))).toEqual(rows);
    }
  });

  it('keep nulls and lists apart from empty ones', () => {
    const base = { arrivalMs: 1, requestId: 'a', sessionId: null, callerId: null, model: null, inputTokens: 3, outputTokens: 4, hashIds: null, stream: false, ttftMs: null, e2eMs: null, itlMs: null };
    const rows = [base, { ...base, requestId: 'b', sessionId: '', model: 'm', hashIds: [], itlMs: [1.5, 2], ttftMs: 0, e2eMs: 9, stream: true }];
    expect(traceFromColumns(traceToColumns(rows))).toEqual(rows);
  });
});
