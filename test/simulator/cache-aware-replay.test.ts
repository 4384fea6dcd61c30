// The cache-aware strategies replayed on a slice of the Mooncake conversation trace (which
// carries prefix block hashes): every request ends, invariants hold after every event (the
// planners that read engine load get the replicas' reports before each decision).
// The vLLM block pool and the SGLang radix cache publish stored / removed KV events (dynamo_kv's
// source); on SGLang replicas dynamo_kv is checked to route by them rather than by the prefixes it sent.
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
import type { EngineModel } from '../../simulator/engine/engine-model.ts';
import type { SglangReplica } from '../../simulator/engine/sglang-replica.ts';

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

/** `e` without `setKvEventSink`: a replica whose driver hears no KV events (the routed-prefix fallback). */
function withoutKvEvents(e: EngineModel): EngineModel {
  return {
    enqueue: e.enqueue.bind(e),
    completeStep: e.completeStep.bind(e),
    cancel: e.cancel.bind(e),
    load: e.load.bind(e),
    prefixCacheStats: e.prefixCacheStats.bind(e),
    invariants: e.invariants.bind(e),
    ...(e.interrupt && { interrupt: e.interrupt.bind(e) }),
  };
}

describe('dynamo_kv on SGLang replicas', () => {
  it('routes by the radix caches\' KV events: the mirror ends equal to every tree, and reuse beats the routed-prefix fallback', () => {
    const exp = smallExperiment({ limit: 200, replicas: { count: 4, engine: 'sglang', gpu: 'h100_sxm', model: 'llama-3.1-8b', tp: 1 } });
    const rows = selectRows(allRows, exp);
    const factory = replicaFactory(exp.replicas, 512);
    const replicas: SglangReplica[] = [];
    const mirror = new EngineSignals();
    let events = 0;
    const withEvents = replayRun({
      experiment: exp,
      rows,
      run: { strategy: 'dynamo_kv', params: {}, label: 'events' },
      runId: 'events',
      seed: 7,
      makeReplica: (i) => {
        const r = factory(i) as SglangReplica;
        replicas[i] = r;
        // Tap the stream the replay subscribes the core to.
        const subscribe = r.setKvEventSink.bind(r);
        r.setKvEventSink = (sink) =>
          subscribe(
            sink &&
              ((e) => {
                events++;
                mirror.applyKvEvent(`r${i}`, e);
                sink(e);
              }),
          );
        return r;
      },
    });
    const fallback = replayRun({ experiment: exp, rows, run: { strategy: 'dynamo_kv', params: {}, label: 'routed' }, runId: 'routed', seed: 7, makeReplica: (i) => withoutKvEvents(factory(i)) });
    expect(withEvents.requests.every((r) => r.status === 'ok')).toBe(true);
    expect(events).toBeGreaterThan(200);
    for (const [i, r] of replicas.entries()) {
      const tree = r.cachedHashes();
      expect(mirror.cachedBlockCount(`r${i}`)).toBe(tree.size);
      for (const h of tree) expect(mirror.cachedPrefixBlocks(`r${i}`, [h])).toBe(1);
    }
    // Seed 7, first 200 requests: 5.1 % of prompt tokens reused with events, 3.6 % without.
    expect(hitRate(withEvents)).toBeGreaterThan(hitRate(fallback));
  });
});
