// The cache-aware strategies replayed on a slice of the Mooncake conversation trace (which
// carries prefix block hashes): every request ends, invariants hold after every event (the
// planners that read engine load get the replicas' reports before each decision).
// How much cache each reuses is a study (experiments/cache-aware.yaml), not a test.
import { beforeAll, describe, expect, it } from 'vitest';
import { readTrace } from '../../traces/arrow-trace.ts';
import { replicaFactory } from '../../simulator/engine/replica-config.ts';
import { replayRun, type RunResult } from '../../simulator/replay.ts';
import { selectRows } from '../../simulator/sim-command.ts';
import type { TraceRow } from '../../traces/trace-row.ts';
import { mooncakeConversation, smallExperiment } from './fixtures.ts';

let allRows: TraceRow[];
beforeAll(async () => {
  allRows = (await readTrace(mooncakeConversation)).rows;
});

function run(strategy: string): RunResult {
  const exp = smallExperiment({ limit: 100 });
  return replayRun({ experiment: exp, rows: selectRows(allRows, exp), run: { strategy, params: {}, label: strategy }, runId: 'r', seed: 7, makeReplica: replicaFactory(exp.replicas, 512), checkInvariants: true });
}

const hitRate = (r: RunResult) => r.requests.reduce((a, x) => a + x.cachedTokens, 0) / r.requests.reduce((a, x) => a + x.inputTokens, 0);

describe('cache-aware strategies on the Mooncake trace', () => {
  it('llm_d, sglang_cache_aware and dynamo_kv serve every request with some prefix reuse', () => {
    for (const s of ['llm_d', 'sglang_cache_aware', 'dynamo_kv']) {
      const res = run(s);
      expect(res.requests).toHaveLength(100);
      expect(res.requests.every((r) => r.status === 'ok')).toBe(true);
      expect(hitRate(res)).toBeGreaterThan(0);
    }
  });
});
