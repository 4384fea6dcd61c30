// The CI slice of the HTTP fuzzer (`bench/fuzz.ts` runs the large counts): seeded raw requests
// against a real gateway over an echo emulator, each checked by `fuzz-cases.ts` (one response to
// a well-framed request, documented statuses, error shapes with stable codes), no uncaught
// exception, nothing in flight at the end. Then the cases the fuzzer found, as regressions.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeCase, runCases, sampleCases, sendRaw, splitResponses } from './fuzz-cases.ts';
import { KEYS, startStack, type Stack } from './harness.ts';

let stack: Stack;
let port: number;
const crashes: unknown[] = [];
const onCrash = (e: unknown): void => void crashes.push(e);
beforeAll(async () => {
  process.on('uncaughtException', onCrash);
  stack = await startStack([{ mode: 'echo' }], { server: { body_limit_mb: 1 } });
  port = Number(new URL(stack.gw.url).port);
});
afterAll(async () => {
  process.off('uncaughtException', onCrash);
  await stack?.close();
});

const raw = (head: string, body = ''): Buffer => Buffer.from(`${head}\r\nhost: 127.0.0.1\r\nconnection: close\r\nauthorization: Bearer ${KEYS.user}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`, 'latin1');

describe('HTTP fuzzing', () => {
  it('300 seeded cases: each well-framed request gets one proper response; no crash; nothing left in flight', async () => {
    const failures = await runCases(port, sampleCases(20_261_203, 300), 16);
    expect(failures.map((f) => describeCase(f.case, f.why))).toEqual([]);
    expect(crashes).toEqual([]);
    const until = Date.now() + 5_000;
    while (stack.gw.inFlight() > 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
    expect(stack.gw.inFlight()).toBe(0);
  }, 60_000);

  it('a malformed %-escape in GET /v1/responses/{id} is a 404, and the gateway stays up', async () => {
    const got = await sendRaw(port, raw('GET /v1/responses/%E0%A4%A HTTP/1.1'), false, 5_000);
    const [r] = splitResponses(got.data).responses;
    expect(r!.status).toBe(404);
    expect(JSON.parse(r!.body.toString())).toMatchObject({ error: { code: 'not_found', param: 'response_id' } });
    expect((await fetch(`${stack.gw.url}/health`)).status).toBe(200);
  });

  it('a body nested deeper than 128 levels is a 400 invalid_request, wherever the nesting is', async () => {
    const deep = '['.repeat(20_000) + ']'.repeat(20_000);
    for (const body of [`{"model":"demo","prompt":${deep}}`, `{"model":"demo","prompt":"x","max_tokens":${deep}}`, `{"model":"demo","prompt":"x","extra":${deep}}`]) {
      const res = await stack.post('/v1/completions', body);
      expect(res.status).toBe(400);
      expect(await res.json()).toMatchObject({ error: { code: 'invalid_request' } });
    }
    // 128 levels (the body is level 1) still pass the depth check.
    const ok = `{"model":"demo","prompt":"x","max_tokens":2,"extra":${'['.repeat(127)}${']'.repeat(127)}}`;
    expect((await stack.post('/v1/completions', ok)).status).toBe(200);
    expect(crashes).toEqual([]);
  });

  it('HEAD to an unknown URL gets a 404 without a body', async () => {
    const got = await sendRaw(port, raw('HEAD /nope HTTP/1.1'), false, 5_000);
    const text = got.data.toString('latin1');
    expect(text.startsWith('HTTP/1.1 404')).toBe(true);
    expect(text.slice(text.indexOf('\r\n\r\n') + 4)).toBe('');
  });

  it('HEAD under /admin/ gets status and headers only: 404 to a non-admin, 401 without a key, 405 to an admin', async () => {
    const head = (key: string | null): Buffer => Buffer.from(`HEAD /admin/routes HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n${key ? `authorization: Bearer ${key}\r\n` : ''}\r\n`, 'latin1');
    for (const [key, status] of [[KEYS.user, 404], [null, 401], [KEYS.admin, 405]] as const) {
      const text = (await sendRaw(port, head(key), false, 5_000)).data.toString('latin1');
      expect(text.startsWith(`HTTP/1.1 ${status}`)).toBe(true);
      expect(text.slice(text.indexOf('\r\n\r\n') + 4)).toBe('');
    }
    expect((await fetch(`${stack.gw.url}/health`)).status).toBe(200);
  });
});
