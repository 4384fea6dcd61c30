/**
 * Fault storm: `--requests` chat requests (half streaming) through an in-process gateway over
 * three engine emulators that answer 10 % of requests with a 500, 5 % with a 429 (with
 * Retry-After), reset 5 % of connections, stall 5 % of streams past the body deadline and drop
 * or end others in-band mid-stream. Counts each request's ending (success, error status,
 * in-band error), the lost ones (no ending: must be 0) and truncated successes (must be 0), and
 * the process's memory after warm-up (`--warmup`, a fraction of the requests: 0.3) and at the end — RSS, heapUsed, external,
 * arrayBuffers — so growth can be told apart (JS heap vs native buffers). RSS here covers the
 * gateway, the emulators and the client together: an upper bound on the gateway's own.
 *
 *   npx tsx --expose-gc bench/fault-storm.ts [--requests 100000] [--concurrency 32] [--seed 42] [--warmup 0.3]
 *
 * heapUsed climbs for the first ~30,000 requests (pools, JIT, tables filling) and is flat after;
 * RSS moves by ±20 MB between samples (native memory of uWS, undici and the allocator), so
 * compare heapUsed and external across runs before calling RSS growth a leak.
 *
 * Malformed SSE is not among the faults yet (the emulator has no knob for it).
 */
import { parseArgs } from 'node:util';
import { Agent, request } from 'undici';
import { KEYS, sseData, startStack } from '../test/gateway/harness.ts';

const { values } = parseArgs({ options: { requests: { type: 'string', default: '100000' }, concurrency: { type: 'string', default: '32' }, seed: { type: 'string', default: '42' }, warmup: { type: 'string', default: '0.3' } } });
const total = Number(values.requests);
const concurrency = Number(values.concurrency);
let a = Number(values.seed) >>> 0;
/** mulberry32: the per-request draws, so a run reproduces. */
const draw = (): number => {
  a = (a + 0x6d2b79f5) >>> 0;
  let t = a;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};

const faults = { latency_scale: 0.01, error_rate: 0.1, rate_limit_rate: 0.05, retry_after_sec: 0, reset_rate: 0.05, stall_after_tokens: 2, stall_ms: 2_000, midstream_rate: 0.05 };
const stack = await startStack([{ faults, seed: 1 }, { faults, seed: 2 }, { faults: { ...faults, stall_after_tokens: null, disconnect_after_tokens: 1, midstream_rate: 0.05 }, seed: 3 }], {
  upstream: { body_timeout_ms: 250, headers_timeout_ms: 5_000 },
  health: { failure_threshold: 1000, min_availability: 0.2 },
});
const agent = new Agent({ connections: concurrency, keepAliveTimeout: 2_000 });
const url = `${stack.gw.url}/v1/chat/completions`;
const endings = { ok: 0, error_status: 0, in_band_error: 0, failed_client: 0 };
let truncated = 0;
interface Mem {
  rssMb: number;
  heapUsedMb: number;
  externalMb: number;
  arrayBuffersMb: number;
}
const mem = (): Mem => {
  (globalThis as { gc?: () => void }).gc?.();
  const m = process.memoryUsage();
  return { rssMb: +(m.rss / 2 ** 20).toFixed(1), heapUsedMb: +(m.heapUsed / 2 ** 20).toFixed(1), externalMb: +(m.external / 2 ** 20).toFixed(1), arrayBuffersMb: +(m.arrayBuffers / 2 ** 20).toFixed(1) };
};

async function one(i: number): Promise<void> {
  const stream = draw() < 0.5;
  const maxTokens = 2 + Math.floor(draw() * 6);
  try {
    const res = await request(url, {
      method: 'POST',
      dispatcher: agent,
      headers: { authorization: `Bearer ${KEYS.user}`, 'content-type': 'application/json', 'x-request-id': `storm-${i}` },
      body: JSON.stringify({ model: 'demo', messages: [{ role: 'user', content: `request ${i}` }], max_tokens: maxTokens, stream }),
    });
    const text = await res.body.text();
    if (res.statusCode !== 200) {
      endings.error_status++;
      return;
    }
    if (!stream) {
      const body = JSON.parse(text) as { choices: Array<{ message: { content: string } }> };
      if (body.choices[0]!.message.content.split(' ').length !== maxTokens) truncated++;
      endings.ok++;
      return;
    }
    const frames = sseData(text);
    if (frames.at(-1) === '[DONE]') {
      const tokens = frames.slice(0, -1).filter((f) => (JSON.parse(f) as { choices: Array<{ delta: { content?: string } }> }).choices[0]?.delta.content);
      if (tokens.length !== maxTokens) truncated++;
      endings.ok++;
    } else endings.in_band_error++;
  } catch {
    endings.failed_client++;
  }
}

const started = performance.now();
let next = 0;
let warm: Mem | null = null;
const warmAt = Math.floor(total * Number(values.warmup));
await Promise.all(
  Array.from({ length: concurrency }, async () => {
    while (next < total) {
      const i = next++;
      if (i === warmAt) warm = mem();
      await one(i);
      if (i % 10_000 === 0 && i > 0) console.log(JSON.stringify({ done: i, reqPerSec: Math.round(i / ((performance.now() - started) / 1000)), ...mem() }));
    }
  }),
);
const until = Date.now() + 10_000;
while ((stack.gw.inFlight() > 0 || stack.gw.upstreamStats().some((u) => u.running + u.pending > 0)) && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
const end = mem();
const answered = endings.ok + endings.error_status + endings.in_band_error;
const lost = total - answered - endings.failed_client;
console.log(
  JSON.stringify({
    summary: true,
    requests: total,
    seconds: Math.round((performance.now() - started) / 1000),
    endings,
    lost,
    truncated,
    inFlightAtEnd: stack.gw.inFlight(),
    upstreamOpenAtEnd: stack.gw.upstreamStats().reduce((n, u) => n + u.running + u.pending, 0),
    warm,
    end,
    rssRatio: warm === null ? null : +(end.rssMb / (warm as Mem).rssMb).toFixed(3),
  }),
);
await stack.close();
await agent.close();
process.exitCode = lost === 0 && truncated === 0 && endings.failed_client === 0 ? 0 : 1;
