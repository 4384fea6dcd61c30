// The request log as operators read it: /admin/recent-requests (filters) and
// /admin/recent-requests/offloads (per model, route and reason; share of the model's traffic;
// still-failed excluding client disconnects), read through the writer thread on a live gateway;
// the attempts table (one row per upstream attempt, each with its tokens); and files of the two
// older layouts (before `offload_reason`; attempts as list columns under a view) migrated on open.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { afterEach, describe, expect, it } from 'vitest';
import { REQUEST_LOG_COLUMNS, type AttemptLogRow, type RequestLogRow } from '../../gateway/request-log/log-row.ts';
import { ATTEMPT_LOG_COLUMNS } from '../../gateway/request-log/log-layout.ts';
import { RequestLog } from '../../gateway/request-log/request-log.ts';
import { adminCall } from '../store/harness-http.ts';
import { hello, KEYS, startStack, type Stack } from './harness.ts';
import { logRow } from './log-rows.ts';

let stack: Stack | null = null;
afterEach(async () => {
  await stack?.close();
  stack = null;
});
const dir = mkdtempSync(join(tmpdir(), 'switchyard-reports-'));

const row = (i: number, over: Partial<RequestLogRow>): RequestLogRow => logRow(i, Date.now() - 1000, { endpointId: 'demo:local-1', ...over });

describe('request log reports', () => {
  it('recent requests with filters, and the offloads report counts what the log holds', async () => {
    stack = await startStack([{}, {}], { request_log: { path: join(dir, 'live.duckdb'), flush_interval_ms: 60_000 } });
    const { gw } = stack;
    await stack.client().chat.completions.create({ model: 'demo', messages: hello, max_tokens: 2 });
    const log = gw.requestLog!;
    // Rows as the gateway writes them for offloaded requests (the offload itself is the lifecycle's, tested there).
    log.append(row(1, { endpointId: 'demo:local-9', offloadReason: 'queue_wait' }));
    log.append(row(2, { endpointId: 'demo:local-9', offloadReason: 'queue_wait', status: 'upstream_error', httpStatus: 502 }));
    log.append(row(3, { endpointId: 'demo:local-9', offloadReason: 'queue_wait', status: 'client_disconnected', httpStatus: 499 }));
    log.append(row(4, { endpointId: 'demo:local-9', offloadReason: 'first_token_wait', callerId: 'other', sessionId: 's-1' }));
    log.append(row(5, { model: 'other', api: 'completion' }));

    const recent = await adminCall(gw.url, 'GET', '/admin/recent-requests?limit=10');
    expect(recent.status).toBe(200);
    expect(recent.body.requests).toHaveLength(6);
    const real = recent.body.requests.find((r: { caller_id: string; request_id: string }) => !r.request_id.startsWith('r-'));
    expect(real).toMatchObject({ strategy: 'fixed', attempts: 1 });
    expect(real.attempt_list).toMatchObject([{ attempt_index: 1, outcome: 'ok', reason: 'primary', input_tokens: real.input_tokens, output_tokens: real.output_tokens, cached_tokens: 0 }]);
    expect(stack.ids).toContain(real.attempt_list[0].endpoint_id);
    expect(real.attempt_list[0].end_unix_ms).toBeGreaterThanOrEqual(real.attempt_list[0].start_unix_ms);
    const att = await log.query('SELECT endpoint_id, outcome, reason, attempt_index FROM attempts WHERE request_id = $1', [real.request_id]);
    expect(att).toEqual([{ endpoint_id: real.attempt_list[0].endpoint_id, outcome: 'ok', reason: 'primary', attempt_index: 1 }]);
    const bySession = await adminCall(gw.url, 'GET', '/admin/recent-requests?session=s-1');
    expect(bySession.body.requests.map((r: { request_id: string }) => r.request_id)).toEqual(['r-4']);
    const byType = await adminCall(gw.url, 'GET', '/admin/recent-requests?type=completion');
    expect(byType.body.requests.map((r: { model: string }) => r.model)).toEqual(['other']);

    const report = await adminCall(gw.url, 'GET', '/admin/recent-requests/offloads?days=1');
    expect(report.status).toBe(200);
    // demo: 5 rows (1 real + 4 appended), 3 queue_wait (one failed, one a client disconnect), 1 first_token_wait.
    expect(report.body.offloads).toEqual([
      { model: 'demo', endpoint_id: 'demo:local-9', reason: 'queue_wait', offloaded: 3, share_of_model: 3 / 5, still_failed: 1 },
      { model: 'demo', endpoint_id: 'demo:local-9', reason: 'first_token_wait', offloaded: 1, share_of_model: 1 / 5, still_failed: 0 },
    ]);
    const filtered = await adminCall(gw.url, 'GET', '/admin/recent-requests/offloads?caller=other');
    expect(filtered.body.offloads).toEqual([{ model: 'demo', endpoint_id: 'demo:local-9', reason: 'first_token_wait', offloaded: 1, share_of_model: 1, still_failed: 0 }]);

    for (const [q, param] of [['days=0', 'days'], ['type=image', 'type'], ['colour=red', 'colour']] as const) {
      const bad = await adminCall(gw.url, 'GET', `/admin/recent-requests/offloads?${q}`);
      expect([bad.status, bad.body.error.param], q).toEqual([400, param]);
    }
    expect((await adminCall(gw.url, 'GET', '/admin/recent-requests', { key: KEYS.user })).status).toBe(404);
  });

  it('an unknown model is the same 404 (param model) for a key not allowed it and for an admin key, and both are logged', async () => {
    stack = await startStack([{}], { request_log: { path: join(dir, 'unknown-model.duckdb'), flush_interval_ms: 60_000 } });
    const { gw } = stack;
    const answers: Array<{ status: number; body: { error: { code: string; param: string | null; message: string } } }> = [];
    for (const key of [KEYS.user, KEYS.admin]) {
      const r = await fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'nope', messages: hello }),
      });
      answers.push({ status: r.status, body: await r.json() });
    }
    for (const a of answers) expect([a.status, a.body.error.code, a.body.error.param]).toEqual([404, 'model_not_found', 'model']);
    expect(answers[0]!.body.error.message).toBe(answers[1]!.body.error.message);
    const recent = await adminCall(gw.url, 'GET', '/admin/recent-requests?limit=10');
    const rows = recent.body.requests as Array<{ caller_id: string; model: string; http_status: number; status: string }>;
    expect(rows.map((r) => [r.caller_id, r.model, r.http_status, r.status]).sort()).toEqual([
      ['admin', 'nope', 404, 'model_not_found'],
      ['user', 'nope', 404, 'model_not_found'],
    ]);
  });

  it('without a request log the reports say how to turn it on', async () => {
    stack = await startStack([{}]);
    const r = await adminCall(stack.gw.url, 'GET', '/admin/recent-requests');
    expect([r.status, r.body.error.code]).toEqual([404, 'request_log_off']);
  });

  it('a fallback logs one attempts row per attempt, each with its own tokens', async () => {
    stack = await startStack([{ weight: 1000, apiKey: 'right-key', routeKey: 'wrong-key' }, { weight: 1 }], { request_log: { path: join(dir, 'fallback.duckdb'), flush_interval_ms: 60_000 }, health: { failure_threshold: 1000 } });
    const r = await stack.client().chat.completions.create({ model: 'demo', messages: hello, max_tokens: 3 });
    const log = stack.gw.requestLog!;
    // The log row is appended when the exchange ends, just after the response: wait for it.
    let rows: Array<Record<string, unknown>> = [];
    for (let i = 0; i < 50 && rows.length < 2; i++) {
      rows = await log.query('SELECT attempt_index, endpoint_id, outcome, reason, input_tokens, output_tokens, end_unix_ms >= start_unix_ms AS ordered FROM attempts ORDER BY attempt_index');
      if (rows.length < 2) await new Promise((res) => setTimeout(res, 20));
    }
    expect(rows).toEqual([
      { attempt_index: 1, endpoint_id: stack.ids[0], outcome: 'http_401', reason: 'primary', input_tokens: 0, output_tokens: 0, ordered: true },
      { attempt_index: 2, endpoint_id: stack.ids[1], outcome: 'ok', reason: 'fallback', input_tokens: r.usage!.prompt_tokens, output_tokens: r.usage!.completion_tokens, ordered: true },
    ]);
    const [req] = await log.query('SELECT attempts, fallback, input_tokens, output_tokens FROM requests');
    expect(req).toEqual({ attempts: 2, fallback: true, input_tokens: r.usage!.prompt_tokens, output_tokens: r.usage!.completion_tokens });
  });

  it('a file of the first layout (before offload_reason) is migrated on open and keeps its rows', async () => {
    const path = join(dir, 'old-layout.duckdb');
    const old = REQUEST_LOG_COLUMNS.slice(0, REQUEST_LOG_COLUMNS.findIndex((c) => c.column === 'offload_reason'));
    await withDb(path, async (conn) => {
      await conn.run(`CREATE TABLE requests (${old.map((c) => `${c.column} ${c.type}`).join(', ')})`);
      await conn.run(`INSERT INTO requests (arrival_unix_ms, request_id, input_tokens, output_tokens, stream, e2e_ms, api, attempts, http_status, status, fallback, cached_tokens, cost_usd) VALUES (1, 'old-1', 1, 1, false, 1, 'chat', 1, 200, 'ok', false, 0, 0)`);
    });
    const log = await RequestLog.open({ path, bufferRows: 100, batchRows: 10, flushIntervalMs: 60_000, memoryLimitMb: 32 });
    log.append(row(7, { offloadReason: 'queue_wait', attemptLog: [attempt('a', 'http_503', 'primary', 0, 40, 0), attempt('b', 'ok', 'offload', 40, 50, 10)] }));
    const attemptRows = await log.query('SELECT request_id, attempt_index, endpoint_id, reason, input_tokens FROM attempts ORDER BY request_id, attempt_index');
    expect(log.writerError).toBeNull();
    expect(attemptRows).toEqual([
      { request_id: 'r-7', attempt_index: 1, endpoint_id: 'a', reason: 'primary', input_tokens: 0 },
      { request_id: 'r-7', attempt_index: 2, endpoint_id: 'b', reason: 'offload', input_tokens: 10 },
    ]);
    const rows = await log.query('SELECT request_id, offload_reason FROM requests ORDER BY request_id');
    await log.close();
    expect(rows).toEqual([
      { request_id: 'old-1', offload_reason: null },
      { request_id: 'r-7', offload_reason: 'queue_wait' },
    ]);
  });

  it('a file that kept attempts as list columns under an attempts view gets the attempts table, its rows copied', async () => {
    const path = join(dir, 'view-layout.duckdb');
    await withDb(path, async (conn) => {
      await conn.run(`CREATE TABLE requests (${REQUEST_LOG_COLUMNS.map((c) => `${c.column} ${c.type}`).join(', ')}, attempt_endpoints VARCHAR[], attempt_targets VARCHAR[], attempt_outcomes VARCHAR[], attempt_start_ms DOUBLE[], attempt_ms DOUBLE[], attempt_reasons VARCHAR[])`);
      await conn.run(`INSERT INTO requests (arrival_unix_ms, request_id, input_tokens, output_tokens, stream, e2e_ms, api, attempts, http_status, status, fallback, cached_tokens, cost_usd, attempt_endpoints, attempt_targets, attempt_outcomes, attempt_start_ms, attempt_ms, attempt_reasons)
        VALUES (1000, 'v-1', 5, 2, false, 30, 'chat', 2, 200, 'ok', true, 0, 0, ['x', 'y'], [NULL, NULL], ['http_503', 'ok'], [0, 10], [10, 20], ['primary', 'fallback']),
               (2000, 'v-2', 5, 0, false, 1, 'chat', 0, 400, 'invalid_request', false, 0, 0, [], [], [], [], [], [])`);
      await conn.run(`CREATE VIEW attempts AS SELECT request_id, unnest(attempt_endpoints) AS endpoint_id FROM requests`);
    });
    const log = await RequestLog.open({ path, bufferRows: 100, batchRows: 10, flushIntervalMs: 60_000, memoryLimitMb: 32 });
    const r8 = row(8, { attemptLog: [attempt('z', 'ok', 'primary', 0, 5, 10)] });
    log.append(r8);
    const copied = await log.query('SELECT request_id, attempt_index, endpoint_id, outcome, reason, start_unix_ms, end_unix_ms, input_tokens FROM attempts ORDER BY request_id, attempt_index');
    const kinds = await log.query("SELECT table_name FROM duckdb_tables() WHERE table_name IN ('requests', 'attempts') ORDER BY table_name");
    const lists = await log.query("SELECT count(*)::INTEGER AS n FROM duckdb_columns() WHERE table_name = 'requests' AND column_name LIKE 'attempt\\_%' ESCAPE '\\'");
    const requests = await log.query('SELECT request_id FROM requests ORDER BY request_id');
    await log.close();
    expect(log.writerError).toBeNull();
    expect(copied).toEqual([
      { request_id: 'r-8', attempt_index: 1, endpoint_id: 'z', outcome: 'ok', reason: 'primary', start_unix_ms: r8.arrivalUnixMs, end_unix_ms: r8.arrivalUnixMs + 5, input_tokens: 10 },
      { request_id: 'v-1', attempt_index: 1, endpoint_id: 'x', outcome: 'http_503', reason: 'primary', start_unix_ms: 1000, end_unix_ms: 1010, input_tokens: null },
      { request_id: 'v-1', attempt_index: 2, endpoint_id: 'y', outcome: 'ok', reason: 'fallback', start_unix_ms: 1010, end_unix_ms: 1030, input_tokens: null },
    ]);
    expect(kinds).toEqual([{ table_name: 'attempts' }, { table_name: 'requests' }]);
    expect(lists).toEqual([{ n: 0 }]);
    expect(requests.map((r) => r.request_id)).toEqual(['r-8', 'v-1', 'v-2']);
    // Opening the migrated file again changes nothing.
    const again = await RequestLog.open({ path, bufferRows: 100, batchRows: 10, flushIntervalMs: 60_000, memoryLimitMb: 32 });
    expect(await again.query('SELECT count(*)::INTEGER AS n FROM attempts')).toEqual([{ n: 3 }]);
    await again.close();
  });

  it('an attempts table without the per-attempt cost gets cost_usd (null in its old rows)', async () => {
    const path = join(dir, 'no-attempt-cost.duckdb');
    const before = ATTEMPT_LOG_COLUMNS.filter((c) => c.column !== 'cost_usd');
    await withDb(path, async (conn) => {
      await conn.run(`CREATE TABLE requests (${REQUEST_LOG_COLUMNS.map((c) => `${c.column} ${c.type}`).join(', ')})`);
      await conn.run(`CREATE TABLE attempts (${before.map((c) => `${c.column} ${c.type}`).join(', ')})`);
      await conn.run(`INSERT INTO attempts (request_id, arrival_unix_ms, attempt_index, endpoint_id, outcome, reason, start_unix_ms, end_unix_ms) VALUES ('old', 1, 1, 'x', 'ok', 'primary', 1, 2)`);
    });
    const log = await RequestLog.open({ path, bufferRows: 100, batchRows: 10, flushIntervalMs: 60_000, memoryLimitMb: 32 });
    log.append(row(9, { attemptLog: [{ ...attempt('z', 'ok', 'primary', 0, 5, 10), costUsd: 0.25 }] }));
    const rows = await log.query('SELECT request_id, cost_usd FROM attempts ORDER BY request_id');
    await log.close();
    expect(log.writerError).toBeNull();
    expect(rows).toEqual([
      { request_id: 'old', cost_usd: null },
      { request_id: 'r-9', cost_usd: 0.25 },
    ]);
  });
});

/** Runs `f` on a fresh connection to the DuckDB file at `path`, then closes it (to build old layouts). */
async function withDb(path: string, f: (conn: DuckDBConnection) => Promise<void>): Promise<void> {
  const inst = await DuckDBInstance.create(path);
  const conn = await inst.connect();
  await f(conn);
  conn.closeSync();
  inst.closeSync();
}

/** A logged attempt from `startMs` to `endMs` after arrival with `inputTokens` (no output). */
function attempt(endpointId: string, outcome: string, reason: string, startMs: number, endMs: number, inputTokens: number): AttemptLogRow {
  return { endpointId, target: null, outcome, reason, startOffsetMs: startMs, endOffsetMs: endMs, inputTokens, outputTokens: 0, cachedTokens: 0, costUsd: 0 };
}
