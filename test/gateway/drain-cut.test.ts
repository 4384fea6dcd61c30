// Requests still running when the drain's grace runs out are ended by the gateway: a committed
// stream gets an in-band `draining` error event and a terminated chunked body (no [DONE]); an
// unanswered request gets 503 `draining` with Retry-After. The request log and the per-request
// log line call them cut (`draining`), not `client_gone`.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { hello, sseData, startStack, type Stack } from './harness.ts';

let stack: Stack | null = null;
afterEach(async () => {
  await stack?.close();
  stack = null;
});

const dir = mkdtempSync(join(tmpdir(), 'switchyard-drain-cut-'));

async function rows(path: string): Promise<Array<Record<string, unknown>>> {
  const inst = await DuckDBInstance.create(path, { access_mode: 'READ_ONLY' });
  const conn = await inst.connect();
  try {
    return (await conn.runAndReadAll('select status, http_status from requests order by arrival_unix_ms')).getRowObjectsJS() as Array<Record<string, unknown>>;
  } finally {
    conn.closeSync();
    inst.closeSync();
  }
}

describe('drain cut', () => {
  it('a committed stream ends with an in-band draining error and a terminated body; logged as cut', async () => {
    const logPath = join(dir, 'stream.duckdb');
    const lines: Array<Record<string, unknown>> = [];
    const logger = pino({ level: 'info' }, { write: (l: string) => void lines.push(JSON.parse(l) as Record<string, unknown>) });
    // Two tokens, then a 5 s stall: the stream is committed and open when the grace runs out.
    stack = await startStack([{ faults: { stall_after_tokens: 2, stall_ms: 5_000 } }], { request_log: { path: logPath } }, { logger });
    const res = await stack.post('/v1/chat/completions', { model: 'demo', messages: hello, max_tokens: 8, stream: true });
    expect(res.status).toBe(200);
    const body = res.text(); // rejects ("terminated") if the chunked body is not ended properly
    while (!stack.emus[0]!.log.all().length) await new Promise((r) => setTimeout(r, 10));
    await new Promise((r) => setTimeout(r, 100));
    expect(await stack.gw.drain(50)).toEqual({ cut: 1 });
    const events = sseData(await body);
    expect(events).not.toContain('[DONE]');
    const last = JSON.parse(events.at(-1)!) as { error: { code: string; message: string } };
    expect(last.error.code).toBe('draining');
    expect(last.error.message).toMatch(/shutting down/);
    expect(events.slice(0, -1).some((e) => e.includes('"content"'))).toBe(true);
    expect(await rows(logPath)).toEqual([{ status: 'draining', http_status: 200 }]);
    const line = lines.find((l) => l.msg === 'request')!;
    expect(line).toMatchObject({ status: 'draining', cut: true });
  });

  it('an unanswered request gets 503 draining with Retry-After', async () => {
    const logPath = join(dir, 'unanswered.duckdb');
    stack = await startStack([{ faults: { first_token_stall_ms: 5_000 } }], { request_log: { path: logPath } });
    const pending = stack.post('/v1/chat/completions', { model: 'demo', messages: hello, max_tokens: 2 });
    while (stack.gw.inFlight() < 1) await new Promise((r) => setTimeout(r, 10));
    expect(await stack.gw.drain(50)).toEqual({ cut: 1 });
    const res = await pending;
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('1');
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('draining');
    expect(await rows(logPath)).toEqual([{ status: 'draining', http_status: 503 }]);
  });
});
