// Auto profiles in simulated runs: trace rows naming `auto-<profile>` are routed, through the
// core's AutoRouter, as the candidate endpoint model it picks; a candidate with no admitting
// endpoint is skipped; a profile none of whose candidates can serve ends its rows with the
// core's code; other rows keep routing as the experiment's model.
import { beforeAll, describe, expect, it } from 'vitest';
import { readTrace } from '../../traces/arrow-trace.ts';
import type { TraceRow } from '../../traces/trace-row.ts';
import { replicaFactory } from '../../simulator/engine/replica-config.ts';
import { replayRun, runSpecs, simulatedModelsConfig, type RunResult } from '../../simulator/replay.ts';
import { selectRows } from '../../simulator/sim-command.ts';
import { azureConv, mixedExperiment } from './fixtures.ts';

let allRows: TraceRow[];
beforeAll(async () => {
  allRows = (await readTrace(azureConv)).rows;
});

const auto = {
  default_profile: 'hosted',
  profiles: {
    // deepinfra has no weight, so no admitting endpoint: minimax serves.
    hosted: { candidates: [{ model: 'deepinfra' }, { model: 'minimax' }] },
    dead: { candidates: [{ model: 'deepinfra' }] },
  },
};

function run(modelOf: (i: number) => string | null, over: Record<string, unknown> = {}): RunResult {
  const exp = mixedExperiment({
    limit: 60,
    providers: [
      { name: 'deepinfra', profile: 'minimax-m2.5-openrouter/deepinfra', weight: 0 },
      { name: 'minimax', profile: 'minimax-m2.5-openrouter/minimax' },
    ],
    auto,
    ...over,
  });
  const rows = selectRows(allRows, exp).map((r, i) => ({ ...r, model: modelOf(i) }));
  return replayRun({ experiment: exp, rows, run: runSpecs(exp)[0]!, runId: 'r', seed: 5, makeReplica: replicaFactory(exp.replicas, 512), checkInvariants: true });
}

describe('auto profiles in the simulator', () => {
  it('each endpoint is also a direct model, and the block travels with the config', () => {
    const exp = mixedExperiment({ auto });
    const cfg = simulatedModelsConfig(exp, runSpecs(exp)[0]!);
    expect(cfg.models.map((m) => m.id)).toEqual(['m', 'replica-0', 'replica-1', 'deepinfra', 'minimax']);
    expect(cfg.auto).toEqual(auto);
  });

  it('auto rows go to the first candidate that can serve; other rows route as the experiment model', () => {
    const res = run((i) => (i % 2 === 0 ? 'auto-hosted' : null));
    expect(res.requests).toHaveLength(60);
    const byId = new Map(res.requests.map((r) => [r.requestId, r]));
    const rows = selectRows(allRows, mixedExperiment({ limit: 60 }));
    rows.forEach((row, i) => {
      const r = byId.get(row.requestId)!;
      if (i % 2 === 0) {
        if (r.endpointId !== null) expect(r.endpointId).toBe('minimax:minimax');
      } else if (r.endpointId !== null) expect(r.endpointId.startsWith('m:')).toBe(true);
    });
    expect(res.requests.filter((r) => r.status === 'ok' && r.endpointId === 'minimax:minimax').length).toBeGreaterThan(0);
  });

  it('plain auto is the default profile', () => {
    const res = run(() => 'auto');
    expect(res.requests.some((r) => r.endpointId === 'minimax:minimax')).toBe(true);
    expect(res.requests.every((r) => r.endpointId === null || r.endpointId === 'minimax:minimax')).toBe(true);
  });

  it('a profile whose candidates have no admitting endpoint ends its rows with the 503 code', () => {
    const res = run(() => 'auto-dead');
    expect(res.requests).toHaveLength(60);
    expect(res.requests.every((r) => r.status === 'all_candidates_unavailable')).toBe(true);
  });

  it('a bad auto block is refused with its problems', () => {
    expect(() => run(() => null, { auto: { default_profile: 'nope', profiles: { p: { candidates: [{ model: 'minimax' }] } } } })).toThrow(/auto: is invalid[\s\S]*default_profile/);
  });
});
