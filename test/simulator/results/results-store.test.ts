import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type {
  AttemptRow,
  EndpointSampleRow,
  EventRow,
  ComparisonRow,
  ExperimentRow,
  RequestRow,
  RunRow,
} from '../../../simulator/results/result-rows.ts';
import { ResultsStore } from '../../../simulator/results/results-store.ts';
import { TABLE_NAMES, TABLES, snakeCase, type TableName } from '../../../simulator/results/schema.ts';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'switchyard-results-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Reads a table back as camelCase rows, in `order by` order. */
async function readBack<T>(store: ResultsStore, table: TableName, orderBy: string): Promise<T[]> {
  const rows = await store.query<Record<string, unknown>>(`select * from ${table} order by ${orderBy}`);
  return rows.map((r) => {
    const out: Record<string, unknown> = {};
    for (const c of TABLES[table].columns) out[c.field] = r[c.column];
    return out as T;
  });
}

function request(over: Partial<RequestRow> = {}): RequestRow {
  return {
    runId: 'run-1',
    requestId: 'req-0',
    sessionId: 'sess-1',
    callerId: 'caller-1',
    arrivalMs: 12.5,
    endpointId: 'ep-a',
    queueWaitMs: 3.25,
    ttftMs: 120.75,
    tpotMs: 21.5,
    e2eMs: 900.125,
    inputTokens: 1000,
    outputTokens: 40,
    cachedTokens: 256,
    status: 'ok',
    costUsd: 0.00123,
    fallbacks: 0,
    offloadReason: null,
    stream: true,
    tries: 1,
    gatewayReplica: 0,
    ...over,
  };
}

describe('schema', () => {
  it('names every column as the snake_case form of its field', () => {
    expect(TABLES.requests.columns.map((c) => c.column)).toContain('queue_wait_ms');
    expect(TABLES.summary.columns.map((c) => c.column)).toContain('e2e_p99_ms');
    expect(TABLES.summary.columns.map((c) => c.column)).toContain('cost_per_1k_requests_usd');
    for (const name of TABLE_NAMES) {
      for (const c of TABLES[name].columns) expect(c.column).toBe(snakeCase(c.field));
    }
  });
});

describe('ResultsStore', () => {
  it('creates every results table on open, even empty, and reopening is idempotent', async () => {
    const path = join(dir, 'nested', 'deeper', 'tables.duckdb');
    for (let i = 0; i < 2; i++) {
      const store = await ResultsStore.open(path);
      const tables = await store.query<{ table_name: string }>(
        'select table_name from duckdb_tables() order by table_name',
      );
      expect(tables.map((t) => t.table_name)).toEqual([...TABLE_NAMES].sort());
      for (const name of TABLE_NAMES) {
        expect(await store.query(`select count(*) as n from ${name}`)).toEqual([{ n: 0 }]);
      }
      await store.close();
    }
  });

  it('round-trips every row type, nulls included, across close and reopen', async () => {
    const path = join(dir, 'roundtrip.duckdb');
    const experiment: ExperimentRow = {
      experimentId: 'exp-1',
      name: 'baseline',
      tracePath: 'traces/x.jsonl',
      traceSource: 'synthetic',
      startedAt: '2024-05-01T12:00:00.000Z',
      configJson: '{"a":1}',
      seed: 2 ** 40 + 7,
    };
    const run: RunRow = {
      runId: 'run-1',
      experimentId: 'exp-1',
      strategy: 'least-load',
      paramsJson: '{"k":2}',
      seed: 42,
      nodeVersion: 'v20.19.0',
      gitRevision: 'unknown',
      wallSeconds: 1.5,
      label: 'll',
      pairKey: 'scenario=outage,replicas=2',
    };
    const requests: RequestRow[] = [
      request({ offloadReason: 'queue_wait', fallbacks: 2 }),
      request({
        requestId: 'req-1',
        sessionId: null,
        callerId: null,
        endpointId: null,
        queueWaitMs: null,
        ttftMs: null,
        tpotMs: null,
        e2eMs: null,
        status: 'no_endpoint',
        outputTokens: 0,
        cachedTokens: 0,
        costUsd: 0,
      }),
    ];
    const attempts: AttemptRow[] = [
      { runId: 'run-1', requestId: 'req-0', attemptId: 0, endpointId: 'ep-b', startMs: 1, endMs: 2.5, outcome: 'http_status', status: 429, clientTry: 0, retryAfterMs: 2000, cause: 'rate_limited', costUsd: 0 },
      { runId: 'run-1', requestId: 'req-0', attemptId: 1, endpointId: 'ep-a', startMs: 2.5, endMs: 900, outcome: 'ok', status: null, clientTry: 1, retryAfterMs: null, cause: null, costUsd: 0.0025 },
    ];
    const samples: EndpointSampleRow[] = [
      { runId: 'run-1', endpointId: 'ep-a', atMs: 0, running: 0, waiting: 0, kvUsage: 0, prefillBacklogTokens: 0, batchTokens: 0, steps: 0, preemptions: 0 },
      { runId: 'run-1', endpointId: 'ep-a', atMs: 100, running: 3, waiting: 1, kvUsage: 0.375, prefillBacklogTokens: 5_000_000_000, batchTokens: 4096, steps: 12, preemptions: 1 },
    ];
    const events: EventRow[] = [
      { runId: 'run-1', atMs: 10, kind: 'breaker', endpointId: 'ep-b', detailJson: '{"from":"closed","to":"open"}' },
      { runId: 'run-1', atMs: 20, kind: 'fault', endpointId: null, detailJson: '{}' },
    ];

    const store = await ResultsStore.open(path);
    await store.addExperiment(experiment);
    await store.addRun(run);
    await store.appendRequests(requests);
    await store.appendAttempts(attempts);
    await store.appendTimeseries(samples);
    await store.appendEvents(events);
    await store.close();

    const again = await ResultsStore.open(path);
    expect(await readBack(again, 'experiments', 'experiment_id')).toEqual([experiment]);
    expect(await readBack(again, 'runs', 'run_id')).toEqual([run]);
    expect(await readBack(again, 'requests', 'request_id')).toEqual(requests);
    expect(await readBack(again, 'attempts', 'attempt_id')).toEqual(attempts);
    expect(await readBack(again, 'endpoint_timeseries', 'at_ms')).toEqual(samples);
    expect(await readBack(again, 'events', 'at_ms')).toEqual(events);
    await again.close();
  });

  it('appends 24,000 requests fast and they survive close and reopen', async () => {
    const path = join(dir, 'bulk.duckdb');
    const rows: RequestRow[] = [];
    for (let i = 0; i < 24_000; i++) {
      rows.push(
        request({
          requestId: `req-${i}`,
          sessionId: i % 3 === 0 ? null : `sess-${i % 97}`,
          arrivalMs: i * 12.5,
          ttftMs: i % 13 === 0 ? null : 100 + (i % 400),
          tpotMs: i % 11 === 0 ? null : 20 + (i % 30),
          status: i % 13 === 0 ? 'http_500' : 'ok',
          inputTokens: 500 + (i % 1500),
        }),
      );
    }
    const store = await ResultsStore.open(path, { overwrite: true });
    const t0 = performance.now();
    await store.appendRequests(rows);
    const appendMs = performance.now() - t0;
    console.log(`appendRequests(24,000 rows): ${appendMs.toFixed(1)} ms`);
    // Typically 100–250 ms; the bound is loose so a loaded machine does not flake.
    expect(appendMs).toBeLessThan(2_000);
    await store.close();
    expect(existsSync(`${path}.wal`)).toBe(false);

    const reopened = await ResultsStore.open(path);
    expect(await reopened.query('select count(*) as n from requests')).toEqual([{ n: 24_000 }]);
    await reopened.close();

    // A plain DuckDB instance (not via the store) sees the same rows.
    const instance = await DuckDBInstance.create(path);
    const conn = await instance.connect();
    const reader = await conn.runAndReadAll('select count(*) from requests');
    expect(reader.getRowsJS()).toEqual([[24_000n]]);
    conn.closeSync();
    instance.closeSync();
  });

  it('computes the summary in SQL on a hand-computed set', async () => {
    const store = await ResultsStore.open(join(dir, 'summary.duckdb'), { overwrite: true });
    const r = (i: number, over: Partial<RequestRow>): RequestRow =>
      request({ requestId: `req-${i}`, inputTokens: 100, ...over });
    await store.appendRequests([
      r(1, { ttftMs: 100, tpotMs: 10, e2eMs: 1000, outputTokens: 10, cachedTokens: 0 }),
      r(2, { ttftMs: 200, tpotMs: null, e2eMs: 2000, outputTokens: 1, cachedTokens: 50 }),
      r(3, { ttftMs: 300, tpotMs: 30, e2eMs: 3000, outputTokens: 20, cachedTokens: 100 }),
      r(4, { ttftMs: 400, tpotMs: 50, e2eMs: 4000, outputTokens: 30, cachedTokens: 100 }),
      r(5, { status: 'upstream_rate_limited', ttftMs: null, tpotMs: null, e2eMs: null, outputTokens: 0, cachedTokens: 0, tries: 3, costUsd: 0.5, fallbacks: 1 }),
      // Another run's row must not count.
      request({ runId: 'run-2', requestId: 'x', ttftMs: 1, inputTokens: 1000, cachedTokens: 0 }),
    ]);
    const opts = { sloTtftMs: 300, sloTpotMs: 40, durationMs: 2000, fixedCostUsd: 1, gpuHours: 4, gpuCostUsd: 10 };
    const summary = await store.computeSummary('run-1', 'least-load', opts);
    expect(summary).toMatchObject({
      runId: 'run-1',
      strategy: 'least-load',
      requests: 5,
      okRequests: 4,
      ttftP50Ms: 250, // ok TTFTs 100, 200, 300, 400: midway between 200 and 300
      tpotP50Ms: 30, // ok non-null TPOTs 10, 30, 50
      e2eP50Ms: 2500,
      throughputRps: 2, // 4 ok / 2 s
      outputTokensPerSec: 30.5, // (10 + 1 + 20 + 30) / 2 s
      prefixCacheHitRate: 0.5, // 250 cached / 500 input
      sloTtftMs: 300,
      sloTpotMs: 40,
      goodput: 0.6, // req 1, 2 (no TPOT) and 3 (at the SLO); not 4 (TPOT 50) nor 5 (error)
      successRate: 0.8,
      failedRequests: 1,
      rateLimitedRequests: 1,
      clientGoneRequests: 0,
      retriedRequests: 1,
      fallbackRequests: 1,
      fixedCostUsd: 1,
      gpuHours: 4,
      gpuCostUsd: 10,
      durationMs: 2000,
    });
    expect(summary.tokenCostUsd).toBeCloseTo(4 * 0.00123 + 0.5, 12);
    expect(summary.totalCostUsd).toBeCloseTo(4 * 0.00123 + 0.5 + 1 + 10, 12);
    expect(summary.costPer1kRequestsUsd).toBeCloseTo(((4 * 0.00123 + 0.5 + 11) / 5) * 1000, 9);
    expect(summary.ttftP90Ms).toBeCloseTo(370, 9); // 300 + 0.7 · 100
    expect(summary.ttftP99Ms).toBeCloseTo(397, 9);

    // Stored row equals the returned one; recomputing replaces rather than duplicates.
    const again = await store.computeSummary('run-1', 'least-load', opts);
    expect(again).toEqual(summary);
    expect(await readBack(store, 'summary', 'run_id')).toEqual([summary]);
    await store.close();
  });

  it('gives null percentiles and zero rates without ok requests', async () => {
    const store = await ResultsStore.open(join(dir, 'summary-empty.duckdb'), { overwrite: true });
    await store.appendRequests([
      request({ status: 'transport', ttftMs: null, tpotMs: null, e2eMs: null, inputTokens: 0, cachedTokens: 0 }),
    ]);
    const s = await store.computeSummary('run-1', 'rr', { sloTtftMs: 1, sloTpotMs: 1, durationMs: 1000 });
    expect(s).toMatchObject({
      requests: 1,
      okRequests: 0,
      ttftP50Ms: null,
      tpotP99Ms: null,
      e2eP90Ms: null,
      throughputRps: 0,
      outputTokensPerSec: 0,
      prefixCacheHitRate: 0,
      goodput: 0,
    });
    const none = await store.computeSummary('no-such-run', 'rr', { sloTtftMs: 1, sloTpotMs: 1, durationMs: 1000 });
    expect(none).toMatchObject({ requests: 0, goodput: 0, ttftP50Ms: null });
    await expect(
      store.computeSummary('run-1', 'rr', { sloTtftMs: 1, sloTpotMs: 1, durationMs: 0 }),
    ).rejects.toThrow(RangeError);
    await store.close();
  });

  it('replaces the comparisons of one baseline and keeps the others', async () => {
    const store = await ResultsStore.open(join(dir, 'comparisons.duckdb'), { overwrite: true });
    const row = (over: Partial<ComparisonRow>): ComparisonRow => ({
      experimentId: 'exp-1',
      baseline: 'fixed',
      candidate: 'round_robin',
      pairKey: '',
      metric: 'ttft_p50_ms',
      better: 'lower',
      seeds: 5,
      baselineMean: 100,
      candidateMean: 90,
      diffMean: -10,
      diffRel: -0.1,
      ciLow: -15,
      ciHigh: -5,
      confidence: 0.95,
      resamples: 10_000,
      significant: true,
      candidateBetter: true,
      ...over,
    });
    const goodput = row({ metric: 'goodput', better: 'higher', ciLow: null, ciHigh: null, diffRel: null, significant: false, candidateBetter: false });
    const m = row({}).metric;
    await store.mergeComparisons('exp-1', 'fixed', [m, 'goodput'], [row({}), goodput]);
    await store.mergeComparisons('exp-1', 'round_robin', [m], [row({ baseline: 'round_robin', candidate: 'fixed' })]);
    // A second comparison of one metric replaces that metric's rows and keeps the others.
    await store.mergeComparisons('exp-1', 'fixed', [m], [row({ diffMean: -11 })]);
    const back = await readBack<ComparisonRow>(store, 'comparisons', 'baseline, metric');
    expect(back).toEqual([goodput, row({ diffMean: -11 }), row({ baseline: 'round_robin', candidate: 'fixed' })].sort((a, b) => a.baseline.localeCompare(b.baseline) || a.metric.localeCompare(b.metric)));
    // A metric compared again with no rows left (e.g. no candidate) is emptied, not kept stale.
    await store.mergeComparisons('exp-1', 'round_robin', [m], []);
    expect((await readBack<ComparisonRow>(store, 'comparisons', 'baseline, metric')).filter((r) => r.baseline === 'round_robin')).toEqual([]);
    await store.close();
  });

  it('overwrite replaces an existing file; a plain open keeps it', async () => {
    const path = join(dir, 'overwrite.duckdb');
    const first = await ResultsStore.open(path);
    await first.appendRequests([request()]);
    await first.close();

    const kept = await ResultsStore.open(path);
    expect(await kept.query('select count(*) as n from requests')).toEqual([{ n: 1 }]);
    await kept.close();

    const fresh = await ResultsStore.open(path, { overwrite: true });
    expect(await fresh.query('select count(*) as n from requests')).toEqual([{ n: 0 }]);
    await fresh.close();
  });

  it('rejects a bad row without writing any of its batch', async () => {
    const store = await ResultsStore.open(join(dir, 'invalid.duckdb'), { overwrite: true });
    const good = request();
    await expect(store.appendRequests([good, request({ inputTokens: 1.5 })])).rejects.toThrow(
      /requests\[1\]\.inputTokens/,
    );
    await expect(store.appendRequests([good, request({ ttftMs: Number.NaN })])).rejects.toThrow(RangeError);
    await expect(
      store.appendRequests([request({ status: null as unknown as string })]),
    ).rejects.toThrow(TypeError);
    expect(await store.query('select count(*) as n from requests')).toEqual([{ n: 0 }]);
    // The store is still usable after a rolled-back batch.
    await store.appendRequests([good]);
    expect(await store.query('select count(*) as n from requests where run_id = $1', ['run-1'])).toEqual([{ n: 1 }]);
    await store.close();
    await store.close(); // idempotent
    await expect(store.query('select 1')).rejects.toThrow('ResultsStore is closed');
  });

  it('refuses a file whose tables have another schema', async () => {
    const path = join(dir, 'old-schema.duckdb');
    const instance = await DuckDBInstance.create(path);
    const conn = await instance.connect();
    await conn.run('create table requests (run_id varchar, request_id varchar)');
    conn.closeSync();
    instance.closeSync();
    await expect(ResultsStore.open(path)).rejects.toThrow(/table requests has columns/);
    const replaced = await ResultsStore.open(path, { overwrite: true });
    await replaced.close();
  });
});
