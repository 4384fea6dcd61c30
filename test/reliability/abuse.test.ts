// Abusive clients against a real gateway: idle keep-alive connections, slow-header and
// slow-body clients, header floods. The slow bodies are answered 408 `request_timeout` at
// `server.body_read_timeout_ms` and counted (`switchyard_requests_total{status="408"}`); the
// header floods (more lines than uWS takes) get no answer and no request; meanwhile well-behaved
// clients get every answer; at the end nothing is in flight, no body is being read, and once the
// abusers are gone the process's descriptors are back near where they started.
// (Latency side by side with and without abusers is a ratio in `bench/abuse.ts`.)
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bodiesWatched } from '../../gateway/server/body-read-watch.ts';
import { openDescriptors } from '../../gateway/metrics.ts';
import { KEYS, startStack, type Stack } from '../gateway/harness.ts';

let stack: Stack;
let port: number;
const sockets: Socket[] = [];
beforeAll(async () => {
  stack = await startStack([{ mode: 'echo' }], { server: { body_read_timeout_ms: 300 } });
  port = Number(new URL(stack.gw.url).port);
});
afterAll(async () => {
  for (const s of sockets) s.destroy();
  await stack?.close();
});

/** Opens a connection, writes `first`, and resolves with it once connected; collects what comes back. */
function open(first: string): Promise<{ sock: Socket; got: () => string; closed: Promise<void> }> {
  return new Promise((resolve, reject) => {
    let data = '';
    const sock = connect(port, '127.0.0.1');
    sockets.push(sock);
    const closed = new Promise<void>((r) => sock.once('close', () => r()));
    sock.on('data', (d: Buffer) => (data += d.toString('latin1')));
    sock.once('error', () => undefined);
    sock.once('connect', () => {
      if (first.length > 0) sock.write(first);
      resolve({ sock, got: () => data, closed });
    });
    sock.once('error', reject);
  });
}

const CHAT = JSON.stringify({ model: 'demo', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 });
const request = (extra = ''): string => `POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${KEYS.user}\r\ncontent-type: application/json\r\n${extra}content-length: ${CHAT.length}\r\n\r\n${CHAT}`;

describe('abusive clients', () => {
  it('idle keep-alive, slow headers, slow bodies and header floods: slow bodies get 408, well-behaved clients get every answer, nothing is left', async () => {
    const fdsBefore = openDescriptors();
    // 300 idle keep-alive connections, each after one answered request.
    const idle = await Promise.all(Array.from({ length: 300 }, () => open(request())));
    // 20 slow-header clients: a request line and half a header, then nothing.
    const slowHeaders = await Promise.all(Array.from({ length: 20 }, () => open(`POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\nauthori`)));
    // 20 slow-body clients: headers promising 100,000 bytes, then 10.
    const slowBodies = await Promise.all(Array.from({ length: 20 }, () => open(`POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${KEYS.user}\r\ncontent-type: application/json\r\ncontent-length: 100000\r\n\r\n{"model":"`)));
    // 20 header floods: 60 header lines (uWS takes 48).
    const flood = Array.from({ length: 60 }, (_, i) => `x-f${i}: ${'v'.repeat(1_000)}\r\n`).join('');
    const floods = await Promise.all(Array.from({ length: 20 }, () => open(request(flood))));

    // Well-behaved clients meanwhile: 200 requests, 8 at a time.
    const statuses: number[] = [];
    let next = 0;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (next++ < 200) statuses.push((await stack.post('/v1/chat/completions', CHAT)).status);
      }),
    );
    expect(statuses.filter((s) => s !== 200)).toEqual([]);

    // Every slow body ends with a 408 and its connection closed by the gateway.
    await Promise.all(slowBodies.map((c) => c.closed));
    for (const c of slowBodies) {
      expect(c.got()).toMatch(/^HTTP\/1\.1 408 /);
      expect(JSON.parse(c.got().slice(c.got().indexOf('\r\n\r\n') + 4))).toMatchObject({ error: { code: 'request_timeout' } });
    }
    // Idle connections got their one answer; floods got none (uWS refuses them unanswered).
    for (const c of idle) expect(c.got()).toMatch(/^HTTP\/1\.1 200 /);
    for (const c of floods) expect(c.got()).toBe('');
    for (const c of slowHeaders) expect(c.got()).toBe('');

    const metrics = await (await fetch(`${stack.gw.url}/metrics`, { headers: { authorization: `Bearer ${KEYS.admin}` } })).text();
    expect(metrics).toMatch(/switchyard_requests_total\{[^}]*status="408"[^}]*\} 20\b/);
    expect(metrics).toMatch(/switchyard_bodies_being_read 0\b/);
    expect(stack.gw.inFlight()).toBe(0);
    expect(bodiesWatched()).toBe(0);

    // The abusers go; the descriptors they held are released.
    for (const c of [...idle, ...slowHeaders, ...floods]) c.sock.destroy();
    await Promise.all([...idle, ...slowHeaders, ...floods].map((c) => c.closed));
    if (fdsBefore !== null) {
      const until = Date.now() + 5_000;
      while (openDescriptors()! > fdsBefore + 20 && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
      expect(openDescriptors()!).toBeLessThanOrEqual(fdsBefore + 20);
    }
    expect((await fetch(`${stack.gw.url}/health`)).status).toBe(200);
  }, 60_000);
});
