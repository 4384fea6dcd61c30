// Client behaviour: stream ratio, per-try timeouts, abandonment, retries — and the accounting that
// shows whether anything was lost — plus per-request and per-run costs.
import { beforeAll, describe, expect, it } from 'vitest';
import { readTrace } from '../../traces/arrow-trace.ts';
import type { TraceRow } from '../../traces/trace-row.ts';
import { replicaFactory } from '../../simulator/engine/replica-config.ts';
import { replayRun, type RunResult } from '../../simulator/replay.ts';
import { selectRows } from '../../simulator/sim-command.ts';
import { ClientSchema, planClients, retryDelayMs } from '../../simulator/client-behaviour.ts';
import { azureConv, mixedExperiment } from './fixtures.ts';

let allRows: TraceRow[];
beforeAll(async () => {
  allRows = (await readTrace(azureConv)).rows;
});

function run(over: Record<string, unknown> = {}, checkInvariants = false): RunResult {
  const exp = mixedExperiment(over);
  return replayRun({
    experiment: exp,
    rows: selectRows(allRows, exp),
    run: { strategy: 'round_robin', params: {}, label: 'round_robin' },
    runId: 'r',
    seed: 5,
    makeReplica: replicaFactory(exp.replicas, 512),
    checkInvariants,
  });
}

const W = { from_ms: 10_000, to_ms: 30_000 };

describe('client behaviour', () => {
  it('streams the configured fraction of requests, the same ones for every strategy', () => {
    const plan = planClients(new Array(2000).fill(true), ClientSchema.parse({ stream: 0.3 }), 1);
    const share = plan.stream.reduce((s, v) => s + v, 0) / 2000;
    expect(share).toBeGreaterThan(0.26);
    expect(share).toBeLessThan(0.34);
    expect(planClients(new Array(2000).fill(true), ClientSchema.parse({ stream: 0.3 }), 1).stream).toEqual(plan.stream);
    expect([...planClients([true, false], ClientSchema.parse({}), 1).stream]).toEqual([1, 0]);
  });

  it('backs off exponentially with jitter, capped, and never sooner than Retry-After', () => {
    const c = ClientSchema.parse({ retries: { max: 5, backoff_ms: 500, max_backoff_ms: 4000, jitter: 0.25 } });
    const plan = planClients([true], c, 1);
    const d = [0, 1, 2, 3, 4].map((t) => retryDelayMs(c, plan, 0, t, null));
    [500, 1000, 2000, 4000, 4000].forEach((cap, i) => {
      expect(d[i]!).toBeLessThanOrEqual(cap);
      expect(d[i]!).toBeGreaterThanOrEqual(cap * 0.75);
    });
    expect(retryDelayMs(c, plan, 0, 0, 7000)).toBe(7000);
  });

  it('a per-try timeout disconnects the client; a retry after the stall succeeds, and nothing is lost', () => {
    // The timeout bounds the whole response (an SDK timeout), so it must exceed normal E2E times.
    const stall = ['replica-0', 'replica-1', 'deepinfra', 'minimax'].map((endpoint) => ({ kind: 'stall_first_token', endpoint, ...W, stall_ms: 200_000 }));
    const noRetry = run({ faults: stall, client: { timeout_ms: 60_000 } }, true);
    const timedOut = noRetry.requests.filter((r) => r.status === 'client_timeout');
    expect(timedOut.length).toBeGreaterThan(10);
    expect(timedOut.every((r) => r.arrivalMs >= W.from_ms && r.arrivalMs < W.to_ms)).toBe(true);
    expect(noRetry.requests.filter((r) => r.arrivalMs >= W.from_ms && r.arrivalMs < W.to_ms).every((r) => r.status === 'client_timeout')).toBe(true);
    // The timed-out attempts were cancelled upstream, not left running.
    const cancelled = noRetry.attempts.filter((a) => timedOut.some((r) => r.requestId === a.requestId));
    expect(cancelled.every((a) => a.outcome === 'client_gone' || a.outcome === 'cancelled')).toBe(true);

    const withRetry = run({ faults: stall, client: { timeout_ms: 60_000, retries: { max: 1 } } });
    expect(withRetry.requests.every((r) => r.status === 'ok')).toBe(true);
    expect(withRetry.requests.filter((r) => r.tries === 2).map((r) => r.requestId).sort()).toEqual(timedOut.map((r) => r.requestId).sort());
  });

  it('an impatient client abandons before its first visible output, and never after it', () => {
    const res = run({ client: { stream: 0.5, abandon: { median_ms: 400, sigma: 0 } } }, true);
    const abandoned = res.requests.filter((r) => r.status === 'client_abandoned');
    expect(abandoned.length).toBeGreaterThan(10);
    for (const r of res.requests.filter((x) => x.status === 'ok')) {
      // Visible output: the first token when streaming, the whole answer otherwise.
      expect(r.stream ? r.ttftMs! : r.e2eMs!).toBeLessThanOrEqual(400 + 1e-6);
    }
    expect(abandoned.every((r) => r.tries === 1)).toBe(true);
  });

  it('attempts queued by the core for an outbound slot are woken, dispatched, and their wait recorded', () => {
    const res = run({ routing: { upstream_concurrency_initial_limit: 1, upstream_concurrency_max_limit: 1 } }, true);
    const queued = res.requests.filter((r) => r.queueWaitMs !== null);
    expect(queued.length).toBeGreaterThan(5);
    expect(queued.every((r) => r.queueWaitMs! > 0)).toBe(true);
    // Woken well before the 30 s give-up: a slot frees when the request ahead finishes.
    expect(queued.some((r) => r.queueWaitMs! < 10_000)).toBe(true);
    expect(res.requests.filter((r) => r.endpointId?.startsWith('m:replica')).every((r) => r.queueWaitMs === null)).toBe(true);
  });

  it('prices hosted tokens per request and GPU-hours per run', () => {
    const res = run({ costs: { gpu_usd_per_hour: 2, gpus_per_replica: 4 } });
    const byDeepinfra = res.requests.filter((r) => r.endpointId === 'm:deepinfra' && r.status === 'ok' && r.fallbacks === 0 && r.tries === 1);
    expect(byDeepinfra.length).toBeGreaterThan(10);
    for (const r of byDeepinfra) {
      expect(r.costUsd).toBeCloseTo(((r.inputTokens - r.cachedTokens) * 0.15 + r.cachedTokens * 0.03 + r.outputTokens * 1.15) / 1e6, 12);
    }
    const local = res.requests.filter((r) => r.endpointId?.startsWith('m:replica') && r.fallbacks === 0 && r.tries === 1);
    expect(local.every((r) => r.costUsd === 0)).toBe(true);
    expect(res.costs.tokenUsd).toBeCloseTo(res.requests.reduce((s, r) => s + r.costUsd, 0), 12);
    expect(res.costs.gpuHours).toBeCloseTo((2 * 4 * res.durationMs) / 3_600_000, 12);
    expect(res.costs.gpuUsd).toBeCloseTo(res.costs.gpuHours * 2, 12);
  });
});
