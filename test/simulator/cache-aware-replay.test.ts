// The cache-aware strategies replayed on a slice of the Mooncake conversation trace (which
// carries prefix block hashes): every request ends, invariants hold after every event (the
// planners that read engine load get the replicas' reports before each decision).
// The vLLM block pool publishes BlockStored / BlockRemoved as KV events (dynamo_kv's source).
// How much cache each reuses is a study (experiments/cache-aware.yaml), not a test.
import { beforeAll, describe, expect, it } from 'vitest';
import { readTrace } from '../../traces/arrow-trace.ts';
import { replicaFactory } from '../../simulator/engine/replica-config.ts';
import { replayRun, type RunResult } from '../../simulator/replay.ts';
import { selectRows } from '../../simulator/sim-command.ts';
import type { TraceRow } from '../../traces/trace-row.ts';
import { mooncakeConversation, smallExperiment } from './fixtures.ts';
import { VllmBlockPool } from '../../simulator/engine/vllm-block-pool.ts';
import { EngineSignals, type KvEvent } from '../../core/index.ts';

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

describe('vLLM block pool KV events', () => {
  it('an entry entering the cache is stored, an evicted one removed; the core mirror follows', () => {
    const pool = new VllmBlockPool(4, 1, 2);
    const events: KvEvent[] = [];
    const mirror = new EngineSignals();
    pool.kvEvents = (e) => {
      events.push(e);
      mirror.applyKvEvent('r0', e);
    };
    const pins = [pool.cacheOrTouch(1), pool.cacheOrTouch(2), pool.cacheOrTouch(1)];
    expect(events).toEqual([{ kind: 'stored', hashes: [1] }, { kind: 'stored', hashes: [2] }]);
    expect(mirror.cachedPrefixBlocks('r0', [1, 2, 3])).toBe(2);
    pool.unpinAll(pins);
    pool.unpinAll([pool.cacheOrTouch(3)]); // 3 unreferenced > cap 2 ⇒ the LRU one (1 or 2) goes
    expect(events.filter((e) => e.kind === 'removed')).toHaveLength(1);
    expect(mirror.cachedBlockCount('r0')).toBe(pool.cache.size);
  });
});
