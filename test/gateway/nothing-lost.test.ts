// Nothing lost: 2,000 requests through the gateway against three engine emulators that answer
// 10 % of requests with a 500, reset 5 % of connections, and stall 5 % of streams mid-answer
// (past the body deadline), while 5 % of clients abort mid-stream. Every request that was not
// aborted gets exactly one complete response (a success, an error status, or an in-band error
// — never a truncated success), the request log has one row per request, and no upstream
// request or connection is left behind. Bounded: 32 requests at a time, emulators 100× faster
// than the modelled engine.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { Agent, request } from 'undici';
import { afterAll, describe, expect, it } from 'vitest';
import { KEYS, sseData, startStack, type Stack } from './harness.ts';

const TOTAL = 2_000;
const CONCURRENCY = 32;
let stack: Stack | null = null;
const agent = new Agent({ connections: CONCURRENCY, keepAliveTimeout: 2_000 });
afterAll(async () => {
  await stack?.close();
  await agent.close();
});

/** Deterministic per-request draws (mulberry32), so a failure reproduces. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type Ending = 'ok' | 'error_status' | 'in_band_error' | 'aborted';

describe('nothing lost', () => {
  it('2,000 requests with 500s, resets, stalls and client aborts: responses = requests = log rows; no upstream left open', async () => {
    const logPath = join(mkdtempSync(join(tmpdir(), 'switchyard-lost-')), 'requests.duckdb');
    const faults = { latency_scale: 0.01, error_rate: 0.1, reset_rate: 0.05, stall_after_tokens: 2, stall_ms: 5_000, midstream_rate: 0.05 };
    stack = await startStack(
      [
        { faults, seed: 1 },
        { faults, seed: 2 },
        { faults, seed: 3 },
      ],
      // Every upstream fails ~15 % of attempts: below the default availability floor, which would
      // (rightly) open all three circuits; the floor is lowered so failover is what is tested.
      { upstream: { body_timeout_ms: 250, headers_timeout_ms: 5_000 }, health: { failure_threshold: 1000, min_availability: 0.3 }, request_log: { path: logPath, flush_interval_ms: 100 } },
    );
    const url = `${stack.gw.url}/v1/chat/completions`;
    const draw = rng(42);
    const plans = Array.from({ length: TOTAL }, (_, i) => ({ i, stream: draw() < 0.5, abort: draw() < 0.05, maxTokens: 2 + Math.floor(draw() * 6) }));
    const endings: Ending[] = new Array<Ending>(TOTAL);
    const truncated: number[] = [];
    const codes: Record<string, number> = {};

    const one = async (p: (typeof plans)[number]): Promise<void> => {
      const stream = p.stream || p.abort; // aborts happen mid-stream, after the commit
      const ac = new AbortController();
      const res = await request(url, {
        method: 'POST',
        dispatcher: agent,
        signal: ac.signal,
        headers: { authorization: `Bearer ${KEYS.user}`, 'content-type': 'application/json', 'x-request-id': `lost-${p.i}` },
        body: JSON.stringify({ model: 'demo', messages: [{ role: 'user', content: `request ${p.i}` }], max_tokens: p.maxTokens, stream }),
      });
      if (p.abort && res.statusCode === 200) {
        for await (const _ of res.body) {
          ac.abort();
          break;
        }
        endings[p.i] = 'aborted';
        return;
      }
      const text = await res.body.text();
      if (res.statusCode !== 200) {
        expect(JSON.parse(text)).toMatchObject({ error: { code: expect.any(String) } });
        const key = `${(JSON.parse(text) as { error: { code: string } }).error.code} ${res.statusCode}`;
        codes[key] = (codes[key] ?? 0) + 1;
        endings[p.i] = 'error_status';
        return;
      }
      if (!stream) {
        const body = JSON.parse(text) as { choices: Array<{ message: { content: string } }> };
        if (body.choices[0]!.message.content.split(' ').length !== p.maxTokens) truncated.push(p.i);
        endings[p.i] = 'ok';
        return;
      }
      const frames = sseData(text);
      if (frames.at(-1) === '[DONE]') {
        const tokens = frames.slice(0, -1).filter((f) => (JSON.parse(f) as { choices: Array<{ delta: { content?: string } }> }).choices[0]?.delta.content);
        if (tokens.length !== p.maxTokens) truncated.push(p.i);
        endings[p.i] = 'ok';
      } else {
        expect(JSON.parse(frames.at(-1)!)).toMatchObject({ error: { code: expect.any(String) } });
        endings[p.i] = 'in_band_error';
      }
    };

    let next = 0;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next < TOTAL) await one(plans[next++]!);
      }),
    );

    const count = (e: Ending) => endings.filter((x) => x === e).length;
    const summary = { ok: count('ok'), error_status: count('error_status'), in_band_error: count('in_band_error'), aborted: count('aborted') };
    // Failures are upstream errors (502/503), never the gateway's own 500.
    expect(Object.keys(codes).filter((k) => k.endsWith('500'))).toEqual([]);
    // Exactly one ending per request, and no success is short of its tokens.
    expect(summary.ok + summary.error_status + summary.in_band_error + summary.aborted).toBe(TOTAL);
    expect(truncated).toEqual([]);
    // The faults did happen, and failover absorbed most of them.
    expect(summary.aborted).toBeGreaterThan(40);
    expect(summary.ok).toBeGreaterThan(TOTAL * 0.8);
    const attempts = stack.emus.reduce((n, e) => n + e.log.all().length, 0);
    expect(attempts).toBeGreaterThan(TOTAL);

    // Everything is over: no request in flight in the gateway, no upstream request running or queued.
    const until = Date.now() + 10_000;
    while ((stack.gw.inFlight() > 0 || stack.gw.upstreamStats().some((u) => u.running + u.pending > 0)) && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
    expect(stack.gw.inFlight()).toBe(0);
    for (const u of stack.gw.upstreamStats()) expect({ origin: u.origin, running: u.running, pending: u.pending }).toEqual({ origin: u.origin, running: 0, pending: 0 });
    for (const h of stack.gw.core.health.snapshot(performance.now())) expect(h.claimsInFlight).toBe(0);
    expect(stack.gw.requestLog!.droppedRows).toBe(0);

    await stack.close(); // closes every upstream pool and the request log
    const gw = stack.gw;
    stack = null;
    expect(gw.upstreamStats()).toEqual([]);

    const inst = await DuckDBInstance.create(logPath, { access_mode: 'READ_ONLY' });
    const conn = await inst.connect();
    const rows = (await conn.runAndReadAll('select count(*)::INTEGER as n, count(distinct request_id)::INTEGER as ids, sum((http_status = 499)::INTEGER)::INTEGER as gone from requests')).getRowObjectsJS()[0] as { n: number; ids: number; gone: number };
    conn.closeSync();
    inst.closeSync();
    expect(rows.n).toBe(TOTAL);
    expect(rows.ids).toBe(TOTAL);
    // A 499 row per abort that reached the gateway before the stream ended (a short stream may
    // have been sent whole before the abort: then it is a 200 row).
    expect(rows.gone).toBeGreaterThan(0);
    expect(rows.gone).toBeLessThanOrEqual(summary.aborted);
  }, 60_000);
});
