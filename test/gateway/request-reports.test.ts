// The request log as operators read it: /admin/recent-requests (filters) and
// /admin/recent-requests/offloads (per model, route and reason; share of the model's traffic;
// still-failed excluding client disconnects), read through the writer thread on a live gateway;
// the attempts view (one row per upstream attempt); and a file of the layout before
// `offload_reason` and the attempt lists migrated on open.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterEach, describe, expect, it } from 'vitest';
import { REQUEST_LOG_COLUMNS, type RequestLogRow } from '../../gateway/request-log/log-row.ts';
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
    expect(real).toMatchObject({ strategy: 'fixed', attempt_outcomes: ['ok'], attempt_reasons: ['primary'], attempts: 1 });
    expect(stack.ids).toContain(real.attempt_endpoints[0]);
    const att = await log.query("SELECT endpoint_id, outcome, reason, attempt_index FROM attempts WHERE request_id = $1", [real.request_id]);
    expect(att).toEqual([{ endpoint_id: real.attempt_endpoints[0], outcome: 'ok', reason: 'primary', attempt_index: 1 }]);
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

  it('without a request log the reports say how to turn it on', async () => {
    stack = await startStack([{}]);
    const r = await adminCall(stack.gw.url, 'GET', '/admin/recent-requests');
    expect([r.status, r.body.error.code]).toEqual([404, 'request_log_off']);
  });

  it('a file of the layout before offload_reason is migrated on open and keeps its rows', async () => {
    const path = join(dir, 'old-layout.duckdb');
    const old = REQUEST_LOG_COLUMNS.slice(0, REQUEST_LOG_COLUMNS.findIndex((c) => c.column === 'offload_reason'));
    const inst = await DuckDBInstance.create(path);
    const conn = await inst.connect();
    await conn.run(`CREATE TABLE requests (${old.map((c) => `${c.column} ${c.type}`).join(', ')})`);
    await conn.run(`INSERT INTO requests (arrival_unix_ms, request_id, input_tokens, output_tokens, stream, e2e_ms, api, attempts, http_status, status, fallback, cached_tokens, cost_usd) VALUES (1, 'old-1', 1, 1, false, 1, 'chat', 1, 200, 'ok', false, 0, 0)`);
    conn.closeSync();
    inst.closeSync();
    const log = await RequestLog.open({ path, bufferRows: 100, batchRows: 10, flushIntervalMs: 60_000, memoryLimitMb: 32 });
    log.append(row(7, { offloadReason: 'queue_wait', attemptEndpoints: ['a', 'b'], attemptTargets: [null, null], attemptOutcomes: ['http_503', 'ok'], attemptStartMs: [0, 40], attemptMs: [40, 10], attemptReasons: ['primary', 'offload'] }));
    const viewRows = await log.query('SELECT request_id, attempt_index, endpoint_id, reason FROM attempts ORDER BY request_id, attempt_index');
    expect(log.writerError).toBeNull();
    expect(viewRows).toEqual([
      { request_id: 'r-7', attempt_index: 1, endpoint_id: 'a', reason: 'primary' },
      { request_id: 'r-7', attempt_index: 2, endpoint_id: 'b', reason: 'offload' },
    ]);
    const rows = await log.query('SELECT request_id, offload_reason FROM requests ORDER BY request_id');
    await log.close();
    expect(rows).toEqual([
      { request_id: 'old-1', offload_reason: null },
      { request_id: 'r-7', offload_reason: 'queue_wait' },
    ]);
  });
});
