// Faults as data, end to end through the loop, on engines and providers alike. Runs with and
// without a fault share every draw (common random numbers), so most effects are checked exactly
// against the fault-free twin run.
import { beforeAll, describe, expect, it } from 'vitest';
import { readTrace } from '../../traces/arrow-trace.ts';
import type { TraceRow } from '../../traces/trace-row.ts';
import { buildReplica, replicaFactory, resolveReplicas } from '../../simulator/engine/replica-config.ts';
import { replayRun, type RunResult } from '../../simulator/replay.ts';
import { selectRows } from '../../simulator/sim-command.ts';
import type { AttemptRow, RequestRow } from '../../simulator/results/result-rows.ts';
import { EngineEndpoint } from '../../simulator/engine-endpoint.ts';
import { SglangReplica } from '../../simulator/engine/sglang-replica.ts';
import { EngineSignals, type KvEvent } from '../../core/index.ts';
import type { EngineEvent, EngineModel, EngineRequest } from '../../simulator/engine/engine-model.ts';
import { FaultSchema } from '../../simulator/faults/fault-config.ts';
import { FaultPlan } from '../../simulator/faults/fault-plan.ts';
import { azureConv, mixedExperiment } from './fixtures.ts';

let allRows: TraceRow[];
beforeAll(async () => {
  allRows = (await readTrace(azureConv)).rows;
});

function run(over: Record<string, unknown> = {}, strategy = 'round_robin', checkInvariants = false, seed = 5, coalesce = false): RunResult {
  const exp = mixedExperiment(over);
  const resolved = resolveReplicas(exp.replicas);
  return replayRun({
    experiment: exp,
    rows: selectRows(allRows, exp),
    run: { strategy, params: {}, label: strategy },
    runId: 'r',
    seed,
    makeReplica: coalesce ? () => buildReplica(resolved, 512, { coalesceDecodeSteps: true }) : replicaFactory(exp.replicas, 512),
    checkInvariants,
  });
}

const W = { from_ms: 10_000, to_ms: 30_000 };
const inWindow = (t: number) => t >= W.from_ms && t < W.to_ms;
const byId = (rs: readonly RequestRow[]) => new Map(rs.map((r) => [r.requestId, r]));
/**
 * Requests served by `endpoint` on the first attempt of their first try, dispatched on arrival
 * (the core may hold a request back, e.g. behind a provider's outbound concurrency limit).
 */
function servedFirstBy(res: RunResult, endpoint: string): Set<string> {
  const arrival = new Map(res.requests.map((r) => [r.requestId, r.arrivalMs]));
  const firsts = res.attempts.filter((a) => a.attemptId === 1 && a.clientTry === 0 && a.endpointId === endpoint && a.outcome === 'ok' && a.startMs === arrival.get(a.requestId));
  return new Set(firsts.map((a) => a.requestId));
}
const startedIn = (res: RunResult, endpoint: string, pred: (t: number) => boolean): AttemptRow[] =>
  res.attempts.filter((a) => a.endpointId === endpoint && pred(a.startMs));

describe('fault windows', () => {
  it('a 429 storm answers every attempt sent in the window with 429 and Retry-After, and the clients honour it', () => {
    const storm = { kind: 'rate_limit_storm', endpoint: 'deepinfra', ...W, retry_after_ms: 2000 };
    const res = run({ faults: [storm] });
    const inside = startedIn(res, 'm:deepinfra', inWindow);
    expect(inside.length).toBeGreaterThan(0);
    for (const a of inside) expect(a).toMatchObject({ outcome: 'http_status', status: 429, retryAfterMs: 2000, cause: 'rate_limited' });
    expect(startedIn(res, 'm:deepinfra', (t) => !inWindow(t)).every((a) => a.status !== 429)).toBe(true);
    // Fallback rescues them; nothing is lost.
    expect(res.requests.every((r) => r.status === 'ok')).toBe(true);

    // Every endpoint storming: the client gets 429 with Retry-After and retries no earlier.
    const everywhere = ['replica-0', 'replica-1', 'deepinfra', 'minimax'].map((endpoint) => ({ ...storm, endpoint, from_ms: 0, to_ms: 5000 }));
    const res2 = run({ faults: everywhere, client: { retries: { max: 3, backoff_ms: 100, jitter: 0 } } });
    const retried = res2.requests.filter((r) => r.tries > 1);
    expect(retried.length).toBeGreaterThan(0);
    let checked = 0;
    for (const r of retried) {
      const atts = res2.attempts.filter((a) => a.requestId === r.requestId);
      for (let t = 0; t + 1 < r.tries; t++) {
        // Tries refused by open breakers have no attempts; check the pairs that reached endpoints.
        const tryAtts = atts.filter((a) => a.clientTry === t);
        const next = atts.find((a) => a.clientTry === t + 1);
        if (tryAtts.length === 0 || !next || !tryAtts.every((a) => a.status === 429)) continue;
        expect(tryAtts.every((a) => a.retryAfterMs === 2000)).toBe(true);
        expect(next.startMs).toBeGreaterThanOrEqual(Math.max(...tryAtts.map((a) => a.endMs)) + 2000);
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(0);
    const noRetry = run({ faults: everywhere });
    expect(noRetry.requests.some((r) => r.status === 'upstream_rate_limited')).toBe(true);
  });

  it('a crash fails in-flight attempts with transport resets, refuses new ones, and the replica recovers on time', () => {
    const res = run({ faults: [{ kind: 'crash', endpoint: 'replica-1', ...W }] }, 'round_robin', true);
    const ep = 'm:replica-1';
    const killed = res.attempts.filter((a) => a.endpointId === ep && a.startMs < W.from_ms && a.endMs === W.from_ms);
    expect(killed.length).toBeGreaterThan(0);
    for (const a of killed) expect(a).toMatchObject({ outcome: 'transport', cause: 'reset' });
    const refused = startedIn(res, ep, inWindow);
    for (const a of refused) expect(a).toMatchObject({ outcome: 'transport', cause: 'refused' });
    expect(refused.every((a) => a.endMs - a.startMs === 1)).toBe(true);
    const after = startedIn(res, ep, (t) => t >= W.to_ms);
    expect(after.some((a) => a.outcome === 'ok')).toBe(true);
    expect(startedIn(res, ep, (t) => t < W.to_ms && t >= W.from_ms).some((a) => a.outcome === 'ok')).toBe(false);
    const faults = res.events.filter((e) => e.kind === 'fault');
    expect(faults.map((e) => [e.atMs, e.endpointId, JSON.parse(e.detailJson).phase, JSON.parse(e.detailJson).fault])).toEqual([
      [W.from_ms, ep, 'start', 'crash'],
      [W.to_ms, ep, 'end', 'crash'],
    ]);
    // A stream cut after its first token cannot fall back: those requests fail, the rest fall back.
    for (const a of killed) expect(['ok', 'upstream_unavailable']).toContain(res.requests.find((r) => r.requestId === a.requestId)!.status);
  });

  it('a provider outage resets its in-flight requests too', () => {
    const res = run({ faults: [{ kind: 'crash', endpoint: 'deepinfra', ...W }] }, 'round_robin', true);
    const killed = res.attempts.filter((a) => a.endpointId === 'm:deepinfra' && a.startMs < W.from_ms && a.endMs === W.from_ms);
    expect(killed.length).toBeGreaterThan(0);
    expect(killed.every((a) => a.cause === 'reset')).toBe(true);
  });

  it('a stall before the first token delays exactly the attempts sent in the window', () => {
    const base = run();
    const res = run({ faults: [{ kind: 'stall_first_token', endpoint: 'deepinfra', ...W, stall_ms: 5000 }] });
    const b = byId(base.requests);
    const both = [...servedFirstBy(res, 'm:deepinfra')].filter((id) => servedFirstBy(base, 'm:deepinfra').has(id));
    let checked = 0;
    for (const r of res.requests) {
      if (!both.includes(r.requestId)) continue;
      const twin = b.get(r.requestId)!;
      const shift = inWindow(r.arrivalMs) ? 5000 : 0;
      expect(r.ttftMs!).toBeCloseTo(twin.ttftMs! + shift, 6);
      expect(r.e2eMs!).toBeCloseTo(twin.e2eMs! + shift, 6);
      if (shift) checked++;
    }
    expect(checked).toBeGreaterThan(5);
  });

  it('a stall mid-stream delays the last token, not the first; a latency spike scales TTFT', () => {
    const baseRun = run();
    const base = byId(baseRun.requests);
    const mid = run({ faults: [{ kind: 'stall_mid_stream', endpoint: 'minimax', ...W, stall_ms: 3000 }] });
    const spike = run({ faults: [{ kind: 'latency_spike', endpoint: 'minimax', ...W, factor: 2, add_ms: 100 }] });
    const direct = (res: RunResult) => servedFirstBy(res, 'm:minimax');
    let n = 0;
    for (const r of mid.requests) {
      const twin = base.get(r.requestId)!;
      if (!direct(baseRun).has(r.requestId) || !direct(mid).has(r.requestId) || !inWindow(r.arrivalMs) || r.outputTokens < 2) continue;
      expect(r.ttftMs!).toBeCloseTo(twin.ttftMs!, 6);
      expect(r.e2eMs!).toBeCloseTo(twin.e2eMs! + 3000, 6);
      n++;
    }
    expect(n).toBeGreaterThan(5);
    for (const r of spike.requests) {
      const twin = base.get(r.requestId)!;
      if (!direct(baseRun).has(r.requestId) || !direct(spike).has(r.requestId) || !inWindow(r.arrivalMs)) continue;
      expect(r.ttftMs!).toBeCloseTo(2 * twin.ttftMs! + 100, 6);
    }
  });

  it('a disconnect mid-stream fails committed streams and lets unstreamed requests fall back', () => {
    const res = run({ client: { stream: 0.5 }, faults: [{ kind: 'disconnect_mid_stream', endpoint: 'deepinfra', ...W, after_ms: 50 }] });
    const cut = startedIn(res, 'm:deepinfra', inWindow).filter((a) => a.cause === 'reset');
    expect(cut.length).toBeGreaterThan(3);
    const reqs = byId(res.requests);
    const statuses = cut.map((a) => reqs.get(a.requestId)!);
    expect(statuses.filter((r) => r.stream).every((r) => r.status === 'upstream_unavailable')).toBe(true);
    expect(statuses.filter((r) => !r.stream).every((r) => r.status === 'ok' && r.fallbacks > 0)).toBe(true);
    expect(statuses.some((r) => r.stream) && statuses.some((r) => !r.stream)).toBe(true);
  });

  it('an error burst fails attempts in its window only, with its status', () => {
    const res = run({ faults: [{ kind: 'error_burst', endpoint: 'minimax', ...W, status: 500, rate: 0.5, retry_after_ms: 3000 }] });
    const inside = startedIn(res, 'm:minimax', inWindow).filter((a) => a.status === 500);
    expect(inside.length).toBeGreaterThan(0);
    expect(inside.every((a) => a.cause === 'server_error' && a.retryAfterMs === 3000)).toBe(true);
    expect(startedIn(res, 'm:minimax', (t) => !inWindow(t)).some((a) => a.status === 500)).toBe(false);
  });

  it('a burst with rate r hits a fraction r of (request, try) pairs, the same ones in any order', () => {
    const burst = FaultSchema.parse({ kind: 'error_burst', endpoint: 'e', from_ms: 0, to_ms: 1, rate: 0.3 });
    const plan = () => {
      const p = new FaultPlan([burst], new Map([['e', 0]]), 1, 9);
      p.applyEdge(0, true);
      return p;
    };
    const a = plan();
    const hits = Array.from({ length: 4000 }, (_, i) => a.onDispatch(0, i, 0) !== null);
    const rate = hits.filter(Boolean).length / hits.length;
    expect(rate).toBeGreaterThan(0.27);
    expect(rate).toBeLessThan(0.33);
    const b = plan();
    const reversed = Array.from({ length: 4000 }, (_, k) => 3999 - k).map((i) => b.onDispatch(0, i, 0) !== null).reverse();
    expect(reversed).toEqual(hits);
    expect(Array.from({ length: 4000 }, (_, i) => a.onDispatch(0, i, 1) !== null)).not.toEqual(hits);
  });

  it('a slow replica takes longer for the requests it serves in the window', () => {
    const base = byId(run({}, 'round_robin').requests);
    const res = run({ faults: [{ kind: 'slow', endpoint: 'replica-0', ...W, factor: 4 }] }, 'round_robin', true);
    const pairs = res.requests.filter((r) => r.endpointId === 'm:replica-0' && inWindow(r.arrivalMs) && r.arrivalMs < W.to_ms - 5000);
    expect(pairs.length).toBeGreaterThan(5);
    const ratio = pairs.reduce((s, r) => s + r.e2eMs!, 0) / pairs.reduce((s, r) => s + base.get(r.requestId)!.e2eMs!, 0);
    expect(ratio).toBeGreaterThan(2);
  });

  it('coalesced decode runs give the same requests as per-step simulation, through slow, crash and cancel', () => {
    const over = {
      client: { stream: 0.5, timeout_ms: 8000, retries: { max: 1 } },
      faults: [
        { kind: 'slow', endpoint: 'replica-0', ...W, factor: 3 },
        { kind: 'crash', endpoint: 'replica-1', from_ms: 20_000, to_ms: 25_000 },
      ],
    };
    const perStep = run(over, 'round_robin', false);
    const coalesced = run(over, 'round_robin', true, 5, true);
    expect(coalesced.requests).toEqual(perStep.requests);
    expect(coalesced.attempts).toEqual(perStep.attempts);
    expect(coalesced.eventsProcessed).toBeLessThan(perStep.eventsProcessed);
    expect(perStep.requests.some((r) => r.status === 'client_timeout' || r.tries > 1)).toBe(true);
  });

  it('writes a start and an end event for every fault window', () => {
    const kinds = ['error_burst', 'rate_limit_storm', 'stall_first_token', 'stall_mid_stream', 'disconnect_mid_stream', 'latency_spike', 'crash', 'slow'];
    const params: Record<string, object> = { stall_first_token: { stall_ms: 100 }, stall_mid_stream: { stall_ms: 100 }, slow: { factor: 2 } };
    const faults = kinds.map((kind, i) => ({ kind, endpoint: i % 2 ? 'minimax' : 'replica-0', from_ms: 1000 * (i + 1), to_ms: 1000 * (i + 2), ...params[kind] }));
    const res = run({ faults, limit: 150 }, 'round_robin', true);
    const ev = res.events.filter((e) => e.kind === 'fault').map((e) => ({ at: e.atMs, ...(JSON.parse(e.detailJson) as { fault: string; phase: string }) }));
    for (const [i, kind] of kinds.entries()) {
      expect(ev).toContainEqual(expect.objectContaining({ at: 1000 * (i + 1), fault: kind, phase: 'start' }));
      expect(ev).toContainEqual(expect.objectContaining({ at: 1000 * (i + 2), fault: kind, phase: 'end' }));
    }
  });
});

/** A fake engine: every step lasts 10 ms and finishes every queued request. */
class TenMsEngine implements EngineModel {
  queue: number[] = [];
  stepEnd: number | null = null;
  enqueue(req: EngineRequest, nowMs: number): number | null {
    this.queue.push(req.attemptId);
    if (this.stepEnd !== null) return null;
    return (this.stepEnd = nowMs + 10);
  }
  completeStep(nowMs: number, emit: (e: EngineEvent) => void): number | null {
    if (nowMs !== this.stepEnd) throw new Error(`step ends at ${this.stepEnd}, called at ${nowMs}`);
    for (const id of this.queue) emit({ kind: 'finished', attemptId: id, atMs: nowMs });
    this.queue = [];
    this.stepEnd = null;
    return null;
  }
  cancel(): void {}
  load() {
    return { running: this.queue.length, waiting: 0, kvUsage: 0, prefillBacklogTokens: 0, batchTokens: 0, steps: 0, preemptions: 0 };
  }
  prefixCacheStats() {
    return { lookupTokens: 0, hitTokens: 0 };
  }
  invariants(): void {}
}

describe('EngineEndpoint', () => {
  const req = (id: number): EngineRequest => ({ attemptId: id, inputTokens: 1, outputTokens: 1, hashIds: null });

  it('stretches steps by the slow factor and moves a step in flight when the factor changes', () => {
    const ep = new EngineEndpoint(new TenMsEngine(), () => new TenMsEngine());
    expect(ep.enqueue(req(1), 0, () => {})).toBe(10);
    expect(ep.completeStep(10, () => {})).toBeNull();
    expect(ep.setSlowFactor(3, 20)).toBeNull(); // idle: nothing to move
    expect(ep.enqueue(req(2), 20, () => {})).toBeCloseTo(50, 9); // 10 ms of engine time at 1/3 speed
    const gen = ep.generation;
    const moved = ep.setSlowFactor(1, 35); // half the step done: 5 ms of engine time left
    expect(moved).toBeCloseTo(40, 9);
    expect(ep.generation).toBe(gen + 1);
    const seen: EngineEvent[] = [];
    expect(ep.completeStep(moved!, (e) => seen.push(e))).toBeNull();
    expect(seen.map((e) => e.attemptId)).toEqual([2]);
  });

  it('a crash replaces the engine and makes the scheduled step stale', () => {
    let made = 0;
    const ep = new EngineEndpoint(new TenMsEngine(), () => (made++, new TenMsEngine()));
    ep.enqueue(req(1), 0, () => {});
    const gen = ep.generation;
    ep.crash(5);
    expect(made).toBe(1);
    expect(ep.generation).toBe(gen + 1);
    expect(ep.load(0).running).toBe(0);
    expect(() => ep.completeStep(10, () => {})).toThrow(/no step in flight/);
    expect(ep.enqueue(req(2), 6, () => {})).toBe(16);
  });

  it('a crashed SGLang replica reports cleared, and its fresh engine reports its own radix tree', () => {
    const stepTime = { stepMs: () => 10 };
    const engines: SglangReplica[] = [];
    const make = () => (engines.push(new SglangReplica({ stepTime, kvTokens: 100_000, hashBlockTokens: 16 })), engines.at(-1)!);
    const ep = new EngineEndpoint(make(), make);
    const events: KvEvent[] = [];
    const mirror = new EngineSignals();
    expect(
      ep.setKvEventSink((e) => {
        events.push(e);
        mirror.applyKvEvent('r', e);
      }),
    ).toBe(true);
    const serve = (id: number, hashIds: number[], t: number) => {
      let end = ep.enqueue({ attemptId: id, inputTokens: 16 * hashIds.length + 1, outputTokens: 2, hashIds }, t, () => {});
      while (end !== null) end = ep.completeStep(end, () => {});
    };
    serve(1, [1, 2, 3], 0);
    expect(events).toEqual([{ kind: 'stored', hashes: [1, 2, 3] }]);
    ep.crash(100);
    expect(events.at(-1)).toEqual({ kind: 'cleared' });
    serve(2, [1, 4], 200);
    expect(events.at(-1)).toEqual({ kind: 'stored', hashes: [1, 4] });
    expect(mirror.cachedBlockCount('r')).toBe(engines.at(-1)!.cachedHashes().size);
    expect(mirror.cachedPrefixBlocks('r', [1, 2, 3])).toBe(1);
  });
});
