// Common random numbers: keyed draws are uniform and order-free, and two strategies replaying the
// same cell see identical arrivals, client draws, provider latencies and fault draws.
import { beforeAll, describe, expect, it } from 'vitest';
import { readTrace } from '../../traces/arrow-trace.ts';
import type { TraceRow } from '../../traces/trace-row.ts';
import { keyedBase, keyedUniform } from '../../simulator/crn.ts';
import { replicaFactory } from '../../simulator/engine/replica-config.ts';
import { replayRun, type RunResult } from '../../simulator/replay.ts';
import { selectRows } from '../../simulator/sim-command.ts';
import { azureConv, mixedExperiment } from './fixtures.ts';

describe('keyedUniform', () => {
  it('is a pure function of base and keys, uniform on [0, 1)', () => {
    const base = keyedBase(3, 'x');
    expect(keyedBase(3, 'x')).toBe(base);
    expect(keyedBase(3, 'y')).not.toBe(base);
    expect(keyedUniform(base, 1, 2, 3)).toBe(keyedUniform(base, 1, 2, 3));
    const bins = new Array<number>(20).fill(0);
    let sum = 0;
    const n = 200_000;
    let outside = 0;
    for (let i = 0; i < n; i++) {
      const u = keyedUniform(base, i % 1000, Math.floor(i / 1000), 7);
      if (!(u >= 0 && u < 1)) outside++;
      bins[Math.floor(u * 20)]!++;
      sum += u;
    }
    expect(outside).toBe(0);
    expect(sum / n).toBeCloseTo(0.5, 2);
    for (const b of bins) expect(Math.abs(b / (n / 20) - 1)).toBeLessThan(0.04);
    // Neighbouring keys are uncorrelated.
    let cov = 0;
    for (let i = 0; i < 50_000; i++) cov += (keyedUniform(base, i, 0, 0) - 0.5) * (keyedUniform(base, i + 1, 0, 0) - 0.5);
    expect(Math.abs(cov / 50_000)).toBeLessThan(0.003);
  });
});

describe('paired runs share their random numbers', () => {
  let rows: TraceRow[];
  beforeAll(async () => {
    rows = (await readTrace(azureConv)).rows;
  });
  const over = {
    // Breakers that never open, so both strategies keep sending to the failing endpoint.
    health: { failure_threshold: 1000, min_availability: 0 },
    client: { stream: 0.5, abandon: { median_ms: 20_000, sigma: 1 }, timeout_ms: 60_000 },
    faults: [
      { kind: 'error_burst', endpoint: 'minimax', from_ms: 5000, to_ms: 60_000, status: 503, rate: 0.5 },
      { kind: 'error_burst', endpoint: 'deepinfra', from_ms: 5000, to_ms: 60_000, status: 503, rate: 0.5 },
      { kind: 'crash', endpoint: 'replica-1', from_ms: 20_000, to_ms: 30_000 },
    ],
  };
  const run = (strategy: string): RunResult => {
    const exp = mixedExperiment({ ...over, limit: 400 });
    return replayRun({ experiment: exp, rows: selectRows(rows, exp), run: { strategy, params: {}, label: strategy }, runId: strategy, seed: 11, makeReplica: replicaFactory(exp.replicas, 512) });
  };

  it('fixed and round_robin see the same arrivals, client draws, fault windows, fault draws and provider latencies', () => {
    const a = run('fixed');
    const b = run('round_robin');
    const key = (r: { requestId: string }) => r.requestId;
    const sortBy = <T extends { requestId: string }>(xs: T[]) => [...xs].sort((x, y) => key(x).localeCompare(key(y)));
    const ra = sortBy(a.requests);
    const rb = sortBy(b.requests);
    expect(ra.map((r) => [r.requestId, r.arrivalMs, r.stream, r.callerId])).toEqual(rb.map((r) => [r.requestId, r.arrivalMs, r.stream, r.callerId]));
    // The routing differs — that is the point of comparing them.
    expect(ra.map((r) => r.endpointId)).not.toEqual(rb.map((r) => r.endpointId));
    const faultEvents = (res: RunResult) => res.events.filter((e) => e.kind === 'fault').map((e) => [e.atMs, e.endpointId, e.detailJson]);
    expect(faultEvents(a)).toEqual(faultEvents(b));

    // The bursts' draw for (endpoint, request, try) is the same in both runs.
    const burstOutcome = (res: RunResult) =>
      new Map(
        res.attempts
          .filter((x) => ['m:minimax', 'm:deepinfra'].includes(x.endpointId) && x.startMs >= 5000 && x.startMs < 60_000)
          .map((x) => [`${x.endpointId}/${x.requestId}/${x.clientTry}`, x.status === 503]),
      );
    const oa = burstOutcome(a);
    const ob = burstOutcome(b);
    const common = [...oa.keys()].filter((k) => ob.has(k));
    expect(common.length).toBeGreaterThan(15);
    for (const k of common) expect(oa.get(k)).toBe(ob.get(k));
    expect([...oa.values()].some(Boolean) && [...oa.values()].some((v) => !v)).toBe(true);

    // A request served first-try, first-attempt by the same provider has the same TTFT in both runs.
    const firstServe = (res: RunResult) => {
      const ok = new Set(res.attempts.filter((x) => x.attemptId === 1 && x.clientTry === 0 && x.outcome === 'ok').map((x) => x.requestId));
      return new Map(res.requests.filter((r) => ok.has(r.requestId) && r.fallbacks === 0 && r.tries === 1).map((r) => [r.requestId, r]));
    };
    const fa = firstServe(a);
    const fb = firstServe(b);
    let same = 0;
    for (const [id, r] of fa) {
      const twin = fb.get(id);
      if (!twin || twin.endpointId !== r.endpointId || !['m:deepinfra', 'm:minimax'].includes(r.endpointId!)) continue;
      expect(twin.ttftMs).toBe(r.ttftMs);
      expect(twin.e2eMs).toBe(r.e2eMs);
      same++;
    }
    expect(same).toBeGreaterThan(5);
  });
});
