// The simulator loop end to end on a slice of the real Mooncake trace: conservation,
// invariants after every event, determinism by seed, and breaker transitions from a fault window.
import { beforeAll, describe, expect, it } from 'vitest';
import { readTrace } from '../../traces/arrow-trace.ts';
import { buildReplica, replicaFactory, resolveReplicas } from '../../simulator/engine/replica-config.ts';
import { replayRun, type RunResult } from '../../simulator/replay.ts';
import { selectRows } from '../../simulator/sim-command.ts';
import type { TraceRow } from '../../traces/trace-row.ts';
import { mooncakeConversation, smallExperiment } from './fixtures.ts';

let allRows: TraceRow[];
beforeAll(async () => {
  allRows = (await readTrace(mooncakeConversation)).rows;
});

function run(over: Record<string, unknown> = {}, seed = 7, strategy = 'fixed', checkInvariants = true): RunResult {
  const exp = smallExperiment(over);
  return replayRun({
    experiment: exp,
    rows: selectRows(allRows, exp),
    run: { strategy, params: {}, label: strategy },
    runId: 'r',
    seed,
    makeReplica: replicaFactory(exp.replicas, 512),
    checkInvariants,
  });
}

describe('replayRun', () => {
  it('coalesced decode runs under KV pressure (waiting requests, evictions) give exactly the per-step rows and samples', () => {
    // The default experiment's replicas at a rate where KV fills: decodes evict cache entries and
    // requests wait for room, the case coalesced runs settle at their cuts.
    const exp = smallExperiment({ limit: 1500, rate_scale: 0.4, replicas: { count: 2, engine: 'vllm', gpu: 'h100_sxm', model: 'llama-3.1-70b', tp: 4 } });
    const rows = selectRows(allRows, exp);
    const resolved = resolveReplicas(exp.replicas);
    const go = (coalesceDecodeSteps: boolean) =>
      replayRun({ experiment: exp, rows, run: { strategy: 'round_robin', params: {}, label: 'rr' }, runId: 'r', seed: 3, makeReplica: () => buildReplica(resolved, 512, { coalesceDecodeSteps }) });
    const perStep = go(false);
    const coalesced = go(true);
    expect(perStep.samples.some((s) => s.waiting > 0)).toBe(true);
    expect(coalesced.eventsProcessed).toBeLessThan(perStep.eventsProcessed);
    expect(coalesced.requests).toEqual(perStep.requests);
    expect(coalesced.attempts).toEqual(perStep.attempts);
    expect(coalesced.samples).toEqual(perStep.samples);
    expect(coalesced.prefixCache).toEqual(perStep.prefixCache);
  });

  it('every trace request ends exactly once, with invariants checked after every event', () => {
    const res = run({ limit: 200 });
    expect(res.requests).toHaveLength(200);
    expect(new Set(res.requests.map((r) => r.requestId)).size).toBe(200);
    expect(res.requests.every((r) => r.status === 'ok')).toBe(true);
    for (const r of res.requests) {
      expect(r.ttftMs!).toBeGreaterThan(0);
      expect(r.e2eMs!).toBeGreaterThanOrEqual(r.ttftMs!);
      expect(r.cachedTokens).toBeLessThanOrEqual(r.inputTokens);
    }
    for (const s of res.samples) {
      expect(s.running).toBeGreaterThanOrEqual(0);
      expect(s.waiting).toBeGreaterThanOrEqual(0);
      expect(s.kvUsage).toBeGreaterThanOrEqual(0);
      expect(s.kvUsage).toBeLessThanOrEqual(1);
    }
  });

  it('same seed ⇒ identical requests; different seed ⇒ different draws', () => {
    const a = run({}, 11, 'fixed', false).requests;
    const b = run({}, 11, 'fixed', false).requests;
    const c = run({}, 12, 'fixed', false).requests;
    expect(b).toEqual(a);
    expect(c.map((r) => r.endpointId)).not.toEqual(a.map((r) => r.endpointId));
    expect(c.map((r) => r.callerId)).not.toEqual(a.map((r) => r.callerId));
  });

  it('round_robin spreads requests evenly across replicas', () => {
    const res = run({}, 7, 'round_robin', false);
    const counts = new Map<string, number>();
    for (const r of res.requests) counts.set(r.endpointId!, (counts.get(r.endpointId!) ?? 0) + 1);
    expect([...counts.values()]).toEqual([100, 100, 100, 100]);
  });

  it('a fault window opens the failing replica’s breaker, fallback keeps requests ok, and it recovers', () => {
    const res = run({ faults: [{ endpoint: 'replica-1', from_ms: 10_000, to_ms: 60_000, status: 503 }], limit: 600 }, 7, 'fixed', false);
    const breaker = res.events.filter((e) => e.kind === 'breaker' && e.endpointId === 'kimi:replica-1').map((e) => JSON.parse(e.detailJson) as { from: string; to: string });
    expect(breaker[0]).toMatchObject({ from: 'closed', to: 'open' });
    expect(breaker.some((t) => t.from === 'half_open' && t.to === 'closed')).toBe(true);
    expect(res.events.filter((e) => e.kind === 'fault')).toHaveLength(2);
    expect(res.requests.every((r) => r.status === 'ok')).toBe(true);
    expect(res.requests.some((r) => r.fallbacks > 0)).toBe(true);
    const failed = res.attempts.filter((a) => a.status === 503);
    expect(failed.length).toBeGreaterThanOrEqual(3);
    expect(failed.every((a) => a.endpointId === 'kimi:replica-1')).toBe(true);
  });
});
