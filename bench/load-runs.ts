/**
 * Load runs of the gateway benchmark (`bench/gateway-overhead.ts`): an open-loop paced load on
 * undici (`measurePaced`), a closed-loop autocannon run with the CPU time of the serving process
 * (`measure`), and a one-request probe of a path (`probe`). Loopback URLs only.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { Pool } from 'undici';

interface CannonResult {
  requests: { average: number; total: number };
  non2xx: number;
  errors: number;
  timeouts: number;
}
interface CannonInstance extends Promise<CannonResult> {
  on(ev: 'response', f: (client: unknown, status: number, bytes: number, responseTimeMs: number) => void): void;
}
type Cannon = (opts: Record<string, unknown>) => CannonInstance;
const autocannon = createRequire(import.meta.url)('autocannon') as Cannon;

/** One measured run of one path. */
export interface PathRun {
  /** Achieved requests per second (autocannon's average). */
  rps: number;
  p50Ms: number;
  p90Ms: number;
  p99Ms: number;
  p999Ms: number;
  /** Errors + non-2xx + timeouts. */
  bad: number;
  /** 200 responses timed. */
  n: number;
  /**
   * CPU time (user + system, all threads, from /proc) of the path's gateway process per request
   * sent in the run, µs; null for `direct`. Ticks are 10 ms, so a 5 s run of a few thousand
   * req/s resolves it to about 1 µs (a 5 s step at 300 req/s to about 7 µs). At a fixed rate
   * below saturation it does not depend on how many requests one event-loop turn batches, which
   * makes it the steadier number on a shared machine.
   */
  cpuUsPerRequest: number | null;
}

/** Percentile (nearest rank) of sorted values. */
export function pct(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

/**
 * Open-loop paced load: `rateRps × seconds` requests, each sent at its own time (evenly spaced,
 * checked every ~1 ms) over a pool of `connections` keep-alive connections, whatever the
 * responses do; latency is from the send call to the last body byte (so it includes waiting for
 * a free connection). autocannon's `overallRate` is not used for these steps: it lets each
 * connection send its per-second quota back to back at the start of every second, so a
 * "100 req/s" step is a burst of ~100 concurrent requests once a second and the latency measured
 * is the time to drain that burst — which grows with the per-request cost and made a slower peer
 * look far worse than its overhead. At most `4 × connections` requests are outstanding; one due
 * beyond that is not sent and counts as bad (so a saturated path cannot queue without bound).
 */
export async function measurePaced(url: string, headers: Record<string, string>, body: string, opts: { rateRps: number; connections: number; seconds: number; pid?: number | null }): Promise<PathRun> {
  const u = new URL(url);
  const pool = new Pool(u.origin, { connections: opts.connections, pipelining: 1, headersTimeout: 10_000, bodyTimeout: 10_000 });
  const total = Math.max(1, Math.round(opts.rateRps * opts.seconds));
  const maxInFlight = 4 * opts.connections;
  const times: number[] = [];
  let bad = 0;
  let inFlight = 0;
  let lastDoneMs = 0;
  const one = async (timed: boolean): Promise<void> => {
    inFlight++;
    const t = performance.now();
    try {
      const r = await pool.request({ path: u.pathname, method: 'POST', headers, body });
      await r.body.text();
      lastDoneMs = performance.now();
      if (!timed) return;
      if (r.statusCode === 200) times.push(lastDoneMs - t);
      else bad++;
    } catch {
      if (timed) bad++;
    } finally {
      inFlight--;
    }
  };
  try {
    // Open the connections first (not timed), then let that settle.
    await Promise.all(Array.from({ length: opts.connections }, () => one(false)));
    await new Promise((r) => setTimeout(r, 200));
    const pending: Array<Promise<void>> = [];
    const cpu0 = opts.pid ? cpuSecOf(opts.pid) : 0;
    const t0 = performance.now();
    let sent = 0;
    await new Promise<void>((resolve) => {
      const tick = () => {
        const due = Math.min(total, Math.floor(((performance.now() - t0) / 1000) * opts.rateRps) + 1);
        for (; sent < due; sent++) {
          if (inFlight >= maxInFlight) bad++;
          else pending.push(one(true));
        }
        if (sent >= total) resolve();
        else setTimeout(tick, 1);
      };
      tick();
    });
    await Promise.all(pending);
    times.sort((a, b) => a - b);
    const elapsedS = Math.max(opts.seconds, (lastDoneMs - t0) / 1000);
    const cpuUsPerRequest = opts.pid ? ((cpuSecOf(opts.pid) - cpu0) * 1e6) / total : null;
    return { rps: times.length / elapsedS, p50Ms: pct(times, 50), p90Ms: pct(times, 90), p99Ms: pct(times, 99), p999Ms: pct(times, 99.9), bad, n: times.length, cpuUsPerRequest };
  } finally {
    await pool.close();
  }
}

/** CPU seconds (user + system, all threads) of process `pid` so far, from /proc (Linux clock ticks of 10 ms). */
export function cpuSecOf(pid: number): number {
  // The fields after the command name, which is in parentheses and may hold spaces.
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(f[11]) + Number(f[12])) / 100;
}

/**
 * Closed-loop load with autocannon: `connections` connections, each sending its next request when
 * the last one ends. With `pid` (the path's gateway process), its CPU per request is measured too.
 */
export async function measure(url: string, headers: Record<string, string>, body: string, opts: { connections: number; seconds: number; pid?: number | null }): Promise<PathRun> {
  const times: number[] = [];
  const cpu0 = opts.pid ? cpuSecOf(opts.pid) : 0;
  const inst = autocannon({
    url,
    method: 'POST',
    connections: opts.connections,
    duration: opts.seconds,
    timeout: 10,
    headers,
    body,
  });
  inst.on('response', (_c, status, _b, ms) => {
    if (status === 200) times.push(ms);
  });
  const r = await inst;
  const cpuUsPerRequest = opts.pid && r.requests.total > 0 ? ((cpuSecOf(opts.pid) - cpu0) * 1e6) / r.requests.total : null;
  times.sort((a, b) => a - b);
  return { rps: r.requests.average, p50Ms: pct(times, 50), p90Ms: pct(times, 90), p99Ms: pct(times, 99), p999Ms: pct(times, 99.9), bad: r.errors + r.non2xx + r.timeouts, n: times.length, cpuUsPerRequest };
}

/** One request by hand: 200 and the echo body ("ok"; a stream ends with [DONE]). @throws Error otherwise. */
export async function probe(name: string, url: string, headers: Record<string, string>, body: string, stream: boolean): Promise<void> {
  const res = await fetch(url, { method: 'POST', headers, body, signal: AbortSignal.timeout(10_000) });
  const text = await res.text();
  const ok = res.status === 200 && text.includes('"content":"ok"') && (!stream || (res.headers.get('content-type')?.startsWith('text/event-stream') && text.trimEnd().endsWith('data: [DONE]')));
  if (!ok) throw new Error(`${name} probe (${stream ? 'stream' : 'non-stream'}) failed: ${res.status} ${text.slice(0, 500)}`);
}
