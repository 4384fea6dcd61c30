// The fault storm's parts, shared by `bench/fault-storm.ts` (100,000 requests) and its CI slice
// (`test/reliability/storm-slice.test.ts`): chat requests (half streaming) through an in-process
// gateway over three engine emulators that answer 10 % of requests with a 500 and 5 % with a 429
// (emulator 1 with `Retry-After: 1`, the others with `Retry-After: 0`), reset 5 % of
// connections, and mid-stream: stall past the body deadline (emulator 1), send an event whose
// JSON is cut short after the first token, after a slow first token (emulator 2), or drop the
// connection (emulator 3); 3 % of clients abort at a random point (before the response head,
// or after the head while the body is being read).
import { Agent, request } from 'undici';
import { KEYS, sseData, startStack, type Stack } from './harness.ts';

/** How one storm request ended, as the client saw it. */
export interface StormEndings {
  /** A 200 with the whole answer. */
  ok: number;
  /** A non-200 status with a body. */
  error_status: number;
  /** A 200 stream that ended with an in-band error instead of `[DONE]`. */
  in_band_error: number;
  /** Aborted by the client on purpose (no ending is due). */
  aborted: number;
  /** The client failed without aborting (a reset, a body that is not JSON): must be 0. */
  failed_client: number;
}

/** Process memory, MiB. */
export interface StormMem {
  rssMb: number;
  heapUsedMb: number;
  externalMb: number;
  arrayBuffersMb: number;
}

/** The storm's result. */
export interface StormSummary {
  requests: number;
  seconds: number;
  endings: StormEndings;
  /** Requests with no ending at all: must be 0. */
  lost: number;
  /** 200s with fewer or more tokens than asked: must be 0. */
  truncated: number;
  inFlightAtEnd: number;
  /** Upstream requests running or queued in the pools at the end: must be 0. */
  upstreamOpenAtEnd: number;
  /** Memory when `warmup` of the requests had started, and at the end (after a gc when exposed). */
  warm: StormMem | null;
  end: StormMem;
  rssRatio: number | null;
  /** Attempts the emulators ended with cut JSON (the malformed-SSE fault), among the records they keep (their last 10,000 each). */
  malformedSent: number;
}

/** Options of `runStorm`. */
export interface StormOptions {
  requests: number;
  concurrency: number;
  seed: number;
  /** Fraction of the requests after which the warm memory sample is taken. */
  warmup: number;
  /** Called every 10,000 requests with a progress line. */
  progress?: (line: Record<string, unknown>) => void;
}

/** mulberry32: the per-request draws, so a run reproduces. */
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

function mem(): StormMem {
  (globalThis as { gc?: () => void }).gc?.();
  const m = process.memoryUsage();
  return { rssMb: +(m.rss / 2 ** 20).toFixed(1), heapUsedMb: +(m.heapUsed / 2 ** 20).toFixed(1), externalMb: +(m.external / 2 ** 20).toFixed(1), arrayBuffersMb: +(m.arrayBuffers / 2 ** 20).toFixed(1) };
}

/** Starts the storm's stack: three faulty emulators under one model `demo`. */
export async function startStormStack(): Promise<Stack> {
  const faults = { latency_scale: 0.01, error_rate: 0.1, rate_limit_rate: 0.05, retry_after_sec: 0, reset_rate: 0.05, midstream_rate: 0.05 };
  return startStack(
    [
      { faults: { ...faults, retry_after_sec: 1, stall_after_tokens: 2, stall_ms: 2_000 }, seed: 1 },
      { faults: { ...faults, malformed_after_tokens: 1, first_token_stall_ms: 20 }, seed: 2 },
      { faults: { ...faults, disconnect_after_tokens: 1 }, seed: 3 },
    ],
    { upstream: { body_timeout_ms: 250, headers_timeout_ms: 5_000 }, health: { failure_threshold: 1000, min_availability: 0.2 } },
  );
}

/** Runs the storm on a fresh stack and closes it; see the file comment for the faults. */
export async function runStorm(o: StormOptions): Promise<StormSummary> {
  const stack = await startStormStack();
  const agent = new Agent({ connections: o.concurrency, keepAliveTimeout: 2_000 });
  const url = `${stack.gw.url}/v1/chat/completions`;
  const draw = rng(o.seed);
  const endings: StormEndings = { ok: 0, error_status: 0, in_band_error: 0, aborted: 0, failed_client: 0 };
  let truncated = 0;

  const one = async (i: number): Promise<void> => {
    const stream = draw() < 0.5;
    const maxTokens = 2 + Math.floor(draw() * 6);
    const abort = draw() < 0.03 ? (draw() < 0.5 ? 'before_head' : 'in_body') : null;
    const ac = new AbortController();
    const timer = abort === 'before_head' ? setTimeout(() => ac.abort(), Math.floor(draw() * 5)) : null;
    try {
      const res = await request(url, {
        method: 'POST',
        dispatcher: agent,
        signal: ac.signal,
        headers: { authorization: `Bearer ${KEYS.user}`, 'content-type': 'application/json', 'x-request-id': `storm-${i}` },
        body: JSON.stringify({ model: 'demo', messages: [{ role: 'user', content: `request ${i}` }], max_tokens: maxTokens, stream }),
      });
      if (abort === 'in_body') {
        ac.abort();
        await res.body.text().catch(() => undefined);
        endings.aborted++;
        return;
      }
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
      if (abort !== null) endings.aborted++;
      else endings.failed_client++;
    } finally {
      if (timer !== null) clearTimeout(timer);
    }
  };

  const started = performance.now();
  let next = 0;
  let warm: StormMem | null = null;
  const warmAt = Math.floor(o.requests * o.warmup);
  try {
    await Promise.all(
      Array.from({ length: o.concurrency }, async () => {
        while (next < o.requests) {
          const i = next++;
          if (i === warmAt) warm = mem();
          await one(i);
          if (i % 10_000 === 0 && i > 0) o.progress?.({ done: i, reqPerSec: Math.round(i / ((performance.now() - started) / 1000)), ...mem() });
        }
      }),
    );
    const until = Date.now() + 10_000;
    while ((stack.gw.inFlight() > 0 || stack.gw.upstreamStats().some((u) => u.running + u.pending > 0)) && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
    const end = mem();
    const answered = endings.ok + endings.error_status + endings.in_band_error;
    const w = warm as StormMem | null;
    return {
      requests: o.requests,
      seconds: Math.round((performance.now() - started) / 1000),
      endings,
      lost: o.requests - answered - endings.aborted - endings.failed_client,
      truncated,
      inFlightAtEnd: stack.gw.inFlight(),
      upstreamOpenAtEnd: stack.gw.upstreamStats().reduce((n, u) => n + u.running + u.pending, 0),
      warm: w,
      end,
      rssRatio: w === null ? null : +(end.rssMb / w.rssMb).toFixed(3),
      malformedSent: stack.emus.reduce((n, e) => n + e.log.all().filter((r) => r.outcome === 'malformed').length, 0),
    };
  } finally {
    await stack.close();
    await agent.close();
  }
}
