import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { EngineEvent, EngineRequest } from '../../../simulator/engine/engine-model.ts';
import { type BatchShape, type StepTimeModel, loadStepTimeProfile } from '../../../simulator/engine/step-time.ts';
import { DEFAULT_KV_BLOCKS_LLAMA2_70B_TP4_H100, VllmReplica } from '../../../simulator/engine/vllm-replica.ts';
import { type Arrival, drive, runAlone } from './drive.ts';

const { model } = loadStepTimeProfile('llama2-70b-h100-tp4');

/** Wraps a step model and records every batch it is asked to time. */
function recording(inner: StepTimeModel): StepTimeModel & { shapes: BatchShape[] } {
  const shapes: BatchShape[] = [];
  return { shapes, stepMs: (b) => (shapes.push({ ...b }), inner.stepMs(b)) };
}

const req = (attemptId: number, inputTokens: number, outputTokens: number, hashIds: number[] | null = null): EngineRequest => ({
  attemptId,
  inputTokens,
  outputTokens,
  hashIds,
});

const prefill = (tokens: number, before = 0): BatchShape => ({
  prefillTokens: tokens,
  prefillSeqs: 1,
  prefillAttnPairs: tokens * (before + tokens / 2),
  decodeSeqs: 0,
  decodeContextTokens: 0,
});
const decode = (ctx: number): BatchShape => ({ prefillTokens: 0, prefillSeqs: 0, prefillAttnPairs: 0, decodeSeqs: 1, decodeContextTokens: ctx });

function times(ev: EngineEvent[], id: number): { ttft: number; e2e: number; cached: number } {
  const ft = ev.find((e) => e.kind === 'first_token' && e.attemptId === id);
  const fin = ev.find((e) => e.kind === 'finished' && e.attemptId === id);
  if (ft?.kind !== 'first_token' || !fin) throw new Error(`request ${id} incomplete`);
  return { ttft: ft.atMs, e2e: fin.atMs, cached: ft.cachedTokens };
}

describe('VllmReplica, one request', () => {
  it('TTFT = its prefill step; E2E = TTFT + (outputTokens − 1) decode steps', () => {
    const rec = recording(model);
    const r = new VllmReplica({ stepTime: rec });
    const ev = runAlone(r, req(1, 3000, 20), 100);
    const { ttft, e2e, cached } = times(ev, 1);
    expect(cached).toBe(0);
    expect(ttft).toBeCloseTo(100 + model.stepMs(prefill(3000)), 9);
    let t = ttft;
    for (let k = 1; k < 20; k++) t += model.stepMs(decode(3000 + k));
    expect(e2e).toBeCloseTo(t, 9);
    expect(rec.shapes.length).toBe(20);
    expect(ev.map((e) => e.kind)).toEqual(['first_token', 'finished']);
    expect(r.load()).toMatchObject({ running: 0, waiting: 0, kvUsage: 0, prefillBacklogTokens: 0, batchTokens: 0 });
  });

  it('chunked prefill splits a 20k prompt into ceil(20000/8192) = 3 steps', () => {
    const rec = recording(model);
    const ev = runAlone(new VllmReplica({ stepTime: rec }), req(1, 20_000, 2));
    expect(rec.shapes.slice(0, 3)).toEqual([prefill(8192), prefill(8192, 8192), prefill(20_000 - 16_384, 16_384)]);
    expect(rec.shapes.length).toBe(4);
    const expectedTtft = rec.shapes.slice(0, 3).reduce((s, b) => s + model.stepMs(b), 0);
    expect(times(ev, 1).ttft).toBeCloseTo(expectedTtft, 9);
  });

  it('outputTokens 0 or 1: first_token then finished at the same step', () => {
    for (const out of [0, 1]) {
      const ev = runAlone(new VllmReplica({ stepTime: model }), req(7, 100, out));
      expect(ev.map((e) => e.kind)).toEqual(['first_token', 'finished']);
      expect(ev[0]!.atMs).toBe(ev[1]!.atMs);
    }
  });

  it('rejects a request that can never fit, at enqueue time, starting no step', () => {
    const r = new VllmReplica({ stepTime: model, kvBlocks: 100 }); // 1,600 tokens
    const ev: EngineEvent[] = [];
    expect(r.enqueue(req(1, 1600, 2), 42, (e) => ev.push(e))).toBeNull();
    expect(ev).toEqual([{ kind: 'rejected', attemptId: 1, atMs: 42, reason: 'context_too_long' }]);
    // prompt + outputs − 1 = 1,600 tokens fits exactly.
    expect(runAlone(r, req(2, 1599, 2)).map((e) => e.kind)).toEqual(['first_token', 'finished']);
    r.invariants();
  });

  it('completeStep throws when idle or called at the wrong time', () => {
    const r = new VllmReplica({ stepTime: model });
    expect(() => r.completeStep(0, () => {})).toThrow(/no step/);
    const end = r.enqueue(req(1, 10, 3), 0, () => {})!;
    expect(() => r.completeStep(end + 1, () => {})).toThrow(/ends at/);
  });
});

describe('VllmReplica prefix cache', () => {
  it('a second request with the same hashIds hits the cache and gets a shorter TTFT', () => {
    const r = new VllmReplica({ stepTime: model });
    const ids = [11, 12, 13, 14, 15, 16, 17, 18, 19]; // 9 blocks: 8 full for 4,500 tokens
    const a = times(runAlone(r, req(1, 4500, 3, ids), 0), 1);
    expect(a.cached).toBe(0);
    const start = 10_000;
    const b = times(runAlone(r, req(2, 4500, 3, ids), start), 2);
    expect(b.cached).toBe(8 * 512);
    expect(b.ttft - start).toBeLessThan(a.ttft);
    expect(b.ttft - start).toBeCloseTo(model.stepMs(prefill(4500 - 4096, 4096)), 9);
    expect(r.prefixCacheStats()).toEqual({ lookupTokens: 9000, hitTokens: 4096 });
    // A prompt that is fully cached still computes one token.
    const c = times(runAlone(r, req(3, 4096, 1, ids.slice(0, 8)), 20_000), 3);
    expect(c.cached).toBe(4095);
    r.invariants();
  });

  it('only a matching prefix counts; prefixCacheBlocks 0 disables caching', () => {
    const r = new VllmReplica({ stepTime: model });
    runAlone(r, req(1, 2048, 1, [1, 2, 3, 4]));
    expect(times(runAlone(r, req(2, 2048, 1, [1, 2, 9, 4])), 2).cached).toBe(1024);
    expect(times(runAlone(r, req(3, 2048, 1, [77, 1, 2, 3])), 3).cached).toBe(0);
    const off = new VllmReplica({ stepTime: model, prefixCacheBlocks: 0 });
    runAlone(off, req(1, 2048, 1, [1, 2, 3, 4]));
    expect(times(runAlone(off, req(2, 2048, 1, [1, 2, 3, 4])), 2).cached).toBe(0);
    expect(off.cachedHashBlocks()).toBe(0);
  });

  it('evicts LRU unreferenced entries under memory pressure and respects the capacity', () => {
    // 256 blocks = 4,096 tokens = 8 hash blocks.
    const r = new VllmReplica({ stepTime: model, kvBlocks: 256 });
    runAlone(r, req(1, 2048, 1, [1, 2, 3, 4]));
    runAlone(r, req(2, 2048, 1, [5, 6, 7, 8]));
    expect(r.cachedHashBlocks()).toBe(8);
    expect(r.freeBlocks()).toBe(0);
    runAlone(r, req(3, 1024, 1, [9, 10])); // needs 64 blocks: evicts the 2 LRU entries (tail of request 1 first)
    r.invariants();
    expect(times(runAlone(r, req(4, 2048, 1, [1, 2, 3, 4])), 4).cached).toBe(1024);
    const capped = new VllmReplica({ stepTime: model, prefixCacheBlocks: 3 });
    runAlone(capped, req(1, 2048, 1, [1, 2, 3, 4]));
    expect(capped.cachedHashBlocks()).toBe(3);
    capped.invariants();
  });
});

describe('VllmReplica batching and preemption', () => {
  it('decodes of running requests and a new prefill share a step (continuous batching)', () => {
    const rec = recording(model);
    const r = new VllmReplica({ stepTime: rec });
    const arrivals: Arrival[] = [
      { atMs: 0, req: req(1, 100, 50) },
      { atMs: 200, req: req(2, 300, 5) },
    ];
    const log = drive([r], arrivals, (x) => x.invariants());
    expect(log.filter((e) => e.kind === 'finished').length).toBe(2);
    expect(rec.shapes.some((s) => s.decodeSeqs === 1 && s.prefillTokens === 300)).toBe(true);
  });

  it('preempts under a tiny KV budget and every request still finishes exactly once', () => {
    const r = new VllmReplica({ stepTime: model, kvBlocks: 64, maxNumSeqs: 8 }); // 1,024 tokens
    const arrivals: Arrival[] = Array.from({ length: 8 }, (_, i) => ({ atMs: i, req: req(i, 200, 150) }));
    const log = drive([r], arrivals, (x) => x.invariants());
    expect(r.preemptions).toBeGreaterThan(0);
    for (let i = 0; i < 8; i++) {
      expect(log.filter((e) => e.attemptId === i).map((e) => e.kind)).toEqual(['first_token', 'finished']);
    }
    expect(r.load()).toMatchObject({ running: 0, waiting: 0, kvUsage: 0, prefillBacklogTokens: 0, batchTokens: 0 });
  });

  it('with prefix caching on, a preempted request readmits on what is left of its cached blocks', () => {
    // 1,536-token KV; 4 requests of 512 + 300 tokens outgrow it: the newest are preempted.
    const run = (prefixCacheBlocks?: number) => {
      const rec = recording(model);
      const r = new VllmReplica({ stepTime: rec, kvBlocks: 96, maxNumSeqs: 4, hashBlockTokens: 64, ...(prefixCacheBlocks !== undefined && { prefixCacheBlocks }) });
      const log = drive([r], Array.from({ length: 4 }, (_, i) => ({ atMs: i, req: req(i, 512, 300) })), (x) => x.invariants());
      expect(log.filter((e) => e.kind === 'finished').length).toBe(4);
      const prefilled = rec.shapes.reduce((s, b) => s + b.prefillTokens, 0);
      return { preemptions: r.preemptions, prefilled, cached: r.cachedHashBlocks(), stats: r.prefixCacheStats() };
    };
    const on = run();
    const off = run(0);
    expect(on.preemptions).toBeGreaterThan(0);
    expect(off.preemptions).toBeGreaterThan(0);
    // Without the cache every readmission recomputes prompt + outputs; with it, only the evicted tail.
    expect(on.prefilled / on.preemptions).toBeLessThan(off.prefilled / off.preemptions);
    expect(off.cached).toBe(0);
    // Prompt statistics count prompt tokens only: a readmission's hits on its outputs are not prompt reuse.
    expect(on.stats.hitTokens).toBeLessThanOrEqual(on.stats.lookupTokens);
  });

  it('cancel removes a request from the queue or the batch without events', () => {
    const r = new VllmReplica({ stepTime: model, maxNumSeqs: 1 });
    const ev: EngineEvent[] = [];
    const emit = (e: EngineEvent): void => void ev.push(e);
    let t: number | null = r.enqueue(req(1, 1000, 10, [1]), 0, emit);
    r.enqueue(req(2, 1000, 10), 0, emit);
    r.enqueue(req(3, 1000, 10), 0, emit);
    expect(r.load()).toMatchObject({ running: 1, waiting: 2, prefillBacklogTokens: 3000 });
    r.cancel(2);
    r.invariants();
    t = r.completeStep(t!, emit);
    r.cancel(1); // running, step in flight
    r.invariants();
    expect(r.load().kvUsage).toBe(0);
    while (t !== null) t = r.completeStep(t, emit);
    r.invariants();
    expect(ev.filter((e) => e.attemptId !== 1).map((e) => [e.kind, e.attemptId])).toEqual([
      ['first_token', 3],
      ['finished', 3],
    ]);
    expect(ev.filter((e) => e.attemptId === 1).map((e) => e.kind)).toEqual(['first_token']);
  });
});

describe('VllmReplica property: random request mixes', () => {
  const arbReq = fc.record({
    gap: fc.integer({ min: 0, max: 300 }),
    input: fc.integer({ min: 0, max: 3000 }),
    output: fc.integer({ min: 0, max: 40 }),
    prefix: fc.integer({ min: -1, max: 3 }),
    cancelAfter: fc.option(fc.integer({ min: 0, max: 30 }), { freq: 8 }),
  });
  const arbCfg = fc.record({
    kvBlocks: fc.integer({ min: 8, max: 400 }),
    maxNumSeqs: fc.integer({ min: 1, max: 8 }),
    maxNumBatchedTokens: fc.integer({ min: 8, max: 2048 }),
    prefixCacheBlocks: fc.constantFrom(undefined, 0, 1, 3),
  });

  it('invariants hold after every step; each request ends once; first_token once, before finished', () => {
    fc.assert(
      fc.property(arbCfg, fc.array(arbReq, { minLength: 1, maxLength: 25 }), (cfg, reqs) => {
        const r = new VllmReplica({ stepTime: model, blockTokens: 16, hashBlockTokens: 64, ...cfg });
        const ev: EngineEvent[] = [];
        const emit = (e: EngineEvent): void => {
          ev.push(e);
        };
        const check = (): void => {
          r.invariants();
          const l = r.load();
          expect(l.kvUsage).toBeGreaterThanOrEqual(0);
          expect(l.kvUsage).toBeLessThanOrEqual(1);
          expect(r.freeBlocks()).toBeGreaterThanOrEqual(0);
        };
        // Arrivals; prefix groups share leading hash ids (group g: ids g*1000 + k).
        let at = 0;
        const arrivals = reqs.map((q, i) => {
          at += q.gap;
          const nb = Math.ceil(Math.max(1, q.input) / 64);
          const ids = q.prefix < 0 ? null : Array.from({ length: nb }, (_, k) => (k < 6 ? q.prefix * 1000 + k : i * 1000 + 100 + k));
          return { atMs: at, req: req(i, q.input, q.output, ids), cancelAfter: q.cancelAfter };
        });
        const cancelled = new Set<number>();
        const cancelAt: { step: number; id: number }[] = [];
        let t: number | null = null;
        let ai = 0;
        let steps = 0;
        while (ai < arrivals.length || t !== null) {
          const a = arrivals[ai];
          if (a && (t === null || a.atMs <= t)) {
            const end = r.enqueue(a.req, a.atMs, emit);
            if (end !== null) t = end;
            if (a.cancelAfter !== null) cancelAt.push({ step: steps + a.cancelAfter, id: a.req.attemptId });
            ai++;
            check();
            continue;
          }
          t = r.completeStep(t!, emit);
          steps++;
          for (const c of cancelAt.filter((c) => c.step === steps)) {
            const ended = ev.some((e) => e.attemptId === c.id && e.kind !== 'first_token');
            if (!ended) cancelled.add(c.id);
            r.cancel(c.id);
          }
          check();
          expect(steps).toBeLessThan(200_000);
        }
        expect(r.load()).toMatchObject({ running: 0, waiting: 0, kvUsage: 0, prefillBacklogTokens: 0, batchTokens: 0 });
        for (const a of arrivals) {
          const id = a.req.attemptId;
          const kinds = ev.filter((e) => e.attemptId === id).map((e) => e.kind);
          if (cancelled.has(id)) {
            expect(kinds.filter((k) => k !== 'first_token')).toEqual([]);
            expect(kinds.filter((k) => k === 'first_token').length).toBeLessThanOrEqual(1);
          } else if (kinds[0] === 'rejected') {
            expect(kinds).toEqual(['rejected']);
          } else {
            expect(kinds).toEqual(['first_token', 'finished']);
          }
        }
        const stats = r.prefixCacheStats();
        expect(stats.hitTokens).toBeLessThanOrEqual(stats.lookupTokens);
      }),
      { numRuns: 300 },
    );
  });
});

describe('VllmReplica defaults', () => {
  it('KV default for Llama-2-70B on 4×H100-80GB: (4·80 GiB·0.9 − 140 GB) / (320 KiB/token · 16)', () => {
    expect(DEFAULT_KV_BLOCKS_LLAMA2_70B_TP4_H100).toBe(32_279);
    const r = new VllmReplica({ stepTime: model });
    expect([r.maxNumSeqs, r.maxNumBatchedTokens, r.kvBlocks, r.blockTokens, r.hashBlockTokens]).toEqual([256, 8192, 32_279, 16, 512]);
  });
  it('validates options', () => {
    expect(() => new VllmReplica({ stepTime: model, maxNumSeqs: 0 })).toThrow(/maxNumSeqs/);
    expect(() => new VllmReplica({ stepTime: model, hashBlockTokens: 100 })).toThrow(/multiple/);
    expect(() => new VllmReplica({ stepTime: model, prefixCacheBlocks: -1 })).toThrow(/prefixCacheBlocks/);
  });
});

describe('VllmReplica speed and determinism (synthetic 3,000 × 12k/340 load)', () => {
  it('replays on 4 replicas identically twice (speed is measured in bench/)', async () => {
    const { syntheticLoad, replay } = await import('../../../bench/vllm-replica.bench.ts');
    const load = syntheticLoad(3000, 300);
    const a = replay(load, 4);
    const b = replay(load, 4);
    expect(a.finished).toBe(3000);
    expect({ ...a, wallMs: 0 }).toEqual({ ...b, wallMs: 0 });
  });
});
