// The engine counters each replica reports in load() (and so in endpoint_timeseries): tokens of
// the step in flight, cumulative steps and preemptions/retractions.
import { describe, expect, it } from 'vitest';
import type { EngineModel } from '../../../simulator/engine/engine-model.ts';
import { SglangReplica } from '../../../simulator/engine/sglang-replica.ts';
import type { StepTimeModel } from '../../../simulator/engine/step-time.ts';
import { VllmReplica } from '../../../simulator/engine/vllm-replica.ts';
import { drive } from './drive.ts';

const flat: StepTimeModel = { stepMs: (b) => (b.prefillTokens === 0 && b.decodeSeqs === 0 ? 0 : 10 + 0.01 * b.prefillTokens) };
const req = (id: number, input: number, output: number) => ({ attemptId: id, inputTokens: input, outputTokens: output, hashIds: null });

describe('engine counters in load()', () => {
  const engines: [string, () => EngineModel][] = [
    ['vLLM', () => new VllmReplica({ stepTime: flat, kvBlocks: 40, blockTokens: 16, maxNumBatchedTokens: 512 })],
    ['SGLang', () => new SglangReplica({ stepTime: flat, kvTokens: 1500, chunkedPrefillSize: 512, maxPrefillTokens: 1024 })],
  ];
  for (const [name, mk] of engines) {
    it(`${name}: batch tokens of the step in flight, steps and preemptions count up`, () => {
      const r = mk();
      expect(r.load()).toMatchObject({ batchTokens: 0, steps: 0, preemptions: 0 });
      r.enqueue(req(0, 300, 5), 0, () => {});
      expect(r.load().batchTokens).toBe(300);
      expect(r.load().steps).toBe(1);
      // Requests whose KV outgrows the pool while decoding (SGLang's reservation ratio decays
      // between arrivals, so it over-admits): the engine must preempt or retract.
      const r2 = mk();
      drive([r2], Array.from({ length: 20 }, (_, i) => ({ atMs: 100 * i, req: req(i, 100, 500) })));
      const l = r2.load();
      expect(l.batchTokens).toBe(0);
      expect(l.steps).toBeGreaterThan(200);
      expect(l.preemptions).toBeGreaterThan(0);
    });
  }
});
