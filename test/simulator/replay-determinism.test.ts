// Determinism of the whole replay: a run with every module of simulator/replay/ in play (hosted
// providers and replicas, faults of four kinds, client streams, timeouts, retries and abandonment)
// gives identical rows in every table, costs and counters when run again in the same process, and
// a different seed changes the draws. Guards refactors of the loop's modules.
import { beforeAll, describe, expect, it } from 'vitest';
import { readTrace } from '../../traces/arrow-trace.ts';
import { replicaFactory } from '../../simulator/engine/replica-config.ts';
import { replayRun, type RunResult } from '../../simulator/replay.ts';
import { selectRows } from '../../simulator/sim-command.ts';
import type { TraceRow } from '../../traces/trace-row.ts';
import { azureConv, mixedExperiment } from './fixtures.ts';

let allRows: TraceRow[];
beforeAll(async () => {
  allRows = (await readTrace(azureConv)).rows;
});

const W = { from_ms: 10_000, to_ms: 30_000 };
const busy = {
  faults: [
    { kind: 'crash', endpoint: 'replica-1', ...W },
    { kind: 'rate_limit_storm', endpoint: 'deepinfra', from_ms: 20_000, to_ms: 40_000, retry_after_ms: 2000 },
    { kind: 'stall_mid_stream', endpoint: 'minimax', ...W, stall_ms: 3000 },
    { kind: 'latency_spike', endpoint: 'minimax', from_ms: 35_000, to_ms: 50_000, factor: 2, add_ms: 100 },
  ],
  client: { stream: 0.5, timeout_ms: 60_000, retries: { max: 3, backoff_ms: 100 }, abandon: { median_ms: 8000, sigma: 1 } },
};

function run(strategy: string, seed: number): RunResult {
  const exp = mixedExperiment(busy);
  return replayRun({
    experiment: exp,
    rows: selectRows(allRows, exp),
    run: { strategy, params: {}, label: strategy },
    runId: 'r',
    seed,
    makeReplica: replicaFactory(exp.replicas, 512),
  });
}

describe('replay determinism', () => {
  it.each(['round_robin', 'fixed'])('%s: the same seed gives identical rows, costs and counters', (strategy) => {
    const a = run(strategy, 5);
    const b = run(strategy, 5);
    // The scenario reaches the fault, retry and client paths at all.
    expect(a.events.some((e) => e.kind === 'fault')).toBe(true);
    expect(a.attempts.length).toBeGreaterThan(a.requests.length);
    expect(new Set(a.requests.map((r) => r.status)).size).toBeGreaterThan(1);
    expect(b).toEqual(a);
  });

  it('a different seed changes the draws', () => {
    const a = run('round_robin', 5);
    const c = run('round_robin', 6);
    expect(c.requests.map((r) => r.callerId)).not.toEqual(a.requests.map((r) => r.callerId));
  });
});
