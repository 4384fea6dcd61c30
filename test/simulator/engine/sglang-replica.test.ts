import { describe, expect, it } from 'vitest';
import type { EngineEvent, EngineRequest } from '../../../simulator/engine/engine-model.ts';
import { SglangReplica } from '../../../simulator/engine/sglang-replica.ts';
import { EngineSignals } from '../../../core/index.ts';
import type { BatchShape, StepTimeModel } from '../../../simulator/engine/step-time.ts';
import { type Arrival, drive, runAlone } from './drive.ts';

/** 10 ms per step plus 0.01 ms per prefill token: simple enough to check by hand. */
const simple: StepTimeModel = { stepMs: (b) => (b.prefillTokens === 0 && b.decodeSeqs === 0 ? 0 : 10 + 0.01 * b.prefillTokens) };

function recording(inner: StepTimeModel): StepTimeModel & { shapes: BatchShape[] } {
  const shapes: BatchShape[] = [];
  return { shapes, stepMs: (b) => (shapes.push({ ...b }), inner.stepMs(b)) };
}

const req = (attemptId: number, inputTokens: number, outputTokens: number, hashIds: number[] | null = null): EngineRequest => ({ attemptId, inputTokens, outputTokens, hashIds });

describe('SglangReplica', () => {
  it('one request: a prefill batch, then one decode batch per further token', () => {
    const rec = recording(simple);
    const r = new SglangReplica({ stepTime: rec, kvTokens: 100_000 });
    const ev = runAlone(r, req(1, 1000, 5), 0);
    expect(ev.map((e) => e.kind)).toEqual(['first_token', 'finished']);
    expect(ev[0]!.atMs).toBeCloseTo(20, 9); // 10 + 0.01 × 1000
    expect(ev[1]!.atMs).toBeCloseTo(60, 9); // + 4 decode steps
    expect(rec.shapes[0]).toMatchObject({ prefillTokens: 1000, prefillSeqs: 1, decodeSeqs: 0 });
    expect(rec.shapes.slice(1).every((s) => s.prefillTokens === 0 && s.decodeSeqs === 1)).toBe(true);
    r.invariants();
  });

  it('default mode: decodes do not advance during a prefill batch; mixed chunking runs them together', () => {
    const arrivals: Arrival[] = [
      { atMs: 0, req: req(1, 500, 50) },
      { atMs: 51, req: req(2, 3000, 5) },
      { atMs: 52, req: req(3, 3000, 5) },
    ];
    const rec = recording(simple);
    drive([new SglangReplica({ stepTime: rec, kvTokens: 100_000, chunkedPrefillSize: 4096 })], arrivals, (x) => x.invariants());
    expect(rec.shapes.some((s) => s.prefillTokens > 0)).toBe(true);
    expect(rec.shapes.every((s) => s.prefillTokens === 0 || s.decodeSeqs === 0)).toBe(true);
    // The 6,000 prompt tokens need two prefill batches (4,096 + 1,904) in a row, while request 1 waits.
    const i = rec.shapes.findIndex((s) => s.prefillTokens === 4096);
    expect(rec.shapes[i + 1]).toMatchObject({ prefillTokens: 1904, decodeSeqs: 0 });
    const mixed = recording(simple);
    drive([new SglangReplica({ stepTime: mixed, kvTokens: 100_000, chunkedPrefillSize: 4096, enableMixedChunk: true })], arrivals, (x) => x.invariants());
    expect(mixed.shapes.some((s) => s.prefillTokens > 0 && s.decodeSeqs > 0)).toBe(true);
  });

  it('chunked prefill: a prompt longer than chunked_prefill_size is cut, and the chunk continues first', () => {
    const rec = recording(simple);
    const r = new SglangReplica({ stepTime: rec, kvTokens: 100_000, chunkedPrefillSize: 2048 });
    const ev = runAlone(r, req(1, 5000, 2));
    expect(rec.shapes.slice(0, 3).map((s) => s.prefillTokens)).toEqual([2048, 2048, 904]);
    expect(rec.shapes[1]!.prefillAttnPairs).toBe(2048 * (2048 + 1024));
    expect(ev[0]!.atMs).toBeCloseTo(30 + 0.01 * 5000, 9);
  });

  it('reserves KV for future output: a request that would not fit with its reservation waits', () => {
    // Pool 10,000 tokens; request 1 (1,000 + 5,000 reserved) runs; request 2 (1,000 + 5,000) must wait.
    const rec = recording(simple);
    const r = new SglangReplica({ stepTime: rec, kvTokens: 10_000 });
    const log = drive([r], [{ atMs: 0, req: req(1, 1000, 5000) }, { atMs: 1, req: req(2, 1000, 5000) }], (x) => x.invariants());
    const first2 = log.find((e) => e.kind === 'first_token' && e.attemptId === 2)!;
    const fin1 = log.find((e) => e.kind === 'finished' && e.attemptId === 1)!;
    // With the ratio decaying from 0.7, request 1's reservation shrinks (5,000 − generated) × ratio until 2 fits.
    expect(first2.atMs).toBeGreaterThan(20);
    expect(first2.atMs).toBeLessThan(fin1.atMs);
  });

  it('retracts under KV pressure and retracted requests finish', () => {
    const r = new SglangReplica({ stepTime: simple, kvTokens: 3000, initNewTokenRatio: 0.05, minNewTokenRatio: 0.01 });
    const arrivals: Arrival[] = Array.from({ length: 6 }, (_, i) => ({ atMs: i, req: req(i, 300, 700) }));
    const log = drive([r], arrivals, (x) => x.invariants());
    expect(r.retractions).toBeGreaterThan(0);
    for (let i = 0; i < 6; i++) expect(log.filter((e) => e.kind === 'finished' && e.attemptId === i)).toHaveLength(1);
    expect(r.freeTokens()).toBe(3000);
  });

  it('radix cache: a repeated prompt prefix is served from the tree (never more than the shared prefix)', () => {
    const r = new SglangReplica({ stepTime: simple, kvTokens: 100_000, hashBlockTokens: 512 });
    const ids = [1, 2, 3, 4, 5];
    runAlone(r, req(1, 2600, 2, ids));
    const ev: EngineEvent[] = runAlone(r, req(2, 2600, 2, [1, 2, 3, 9, 9]), 1000);
    expect(ev[0]).toMatchObject({ kind: 'first_token', cachedTokens: 3 * 512 });
    expect(r.prefixCacheStats()).toEqual({ lookupTokens: 5200, hitTokens: 1536 });
    const off = new SglangReplica({ stepTime: simple, kvTokens: 100_000, radixCache: false });
    runAlone(off, req(1, 2600, 2, ids));
    expect(runAlone(off, req(2, 2600, 2, ids), 1000)[0]).toMatchObject({ cachedTokens: 0 });
  });

  it('lpm orders the waiting queue by longest cached prefix; fcfs by arrival', () => {
    const order = (policy: 'lpm' | 'fcfs') => {
      const r = new SglangReplica({ stepTime: simple, kvTokens: 100_000, schedulePolicy: policy, maxPrefillTokens: 1100, chunkedPrefillSize: 1100 });
      runAlone(r, req(100, 2100, 1, [7, 8, 9, 10]));
      // While a long request prefills, two wait: one without and one with a cached prefix.
      const log = drive([r], [
        { atMs: 0, req: req(1, 4000, 2) },
        { atMs: 1, req: req(2, 1100, 2, [20, 21]) },
        { atMs: 2, req: req(3, 2100, 2, [7, 8, 9, 10]) },
      ]);
      return log.filter((e) => e.kind === 'first_token').map((e) => e.attemptId);
    };
    expect(order('fcfs')).toEqual([1, 2, 3]);
    expect(order('lpm')).toEqual([1, 3, 2]);
  });

  it('regression (fast-check seed -1787916421): prompt + output = the whole pool is rejected, not left waiting forever', () => {
    // engine-properties counterexample [[{input 1479, output 169}, {input 1, output 1}], kv 103 blocks]:
    // 1,479 + 169 = 1,648 = kvTokens passed the old "prompt + output − 1 > pool" check, but admission
    // needs prompt + output reservation < free + evictable, so it waited forever on an idle replica
    // ("work pending but nothing schedulable").
    const model: StepTimeModel = { stepMs: (b) => (b.prefillTokens === 0 && b.decodeSeqs === 0 ? 0 : 5 + 0.004 * b.prefillTokens + 0.05 * b.decodeSeqs) };
    const mk = () => new SglangReplica({ stepTime: model, kvTokens: 103 * 16, hashBlockTokens: 64, chunkedPrefillSize: 1024, maxPrefillTokens: 2048, maxRunningRequests: 16 });
    const r = mk();
    const ids = (n: number, base: number) => Array.from({ length: n }, (_, j) => base + j);
    const log = drive([r], [
      { atMs: 0, req: req(0, 1479, 169, ids(24, 1_000_000)) },
      { atMs: 0, req: req(1, 1, 1, ids(1, 1_000_100)) },
    ], (x) => x.invariants());
    expect(log.map((e) => [e.kind, e.attemptId])).toEqual([['rejected', 0], ['first_token', 1], ['finished', 1]]);
    expect(r.load()).toMatchObject({ running: 0, waiting: 0, kvUsage: 0 });
    // One token less fits: admitted and finished.
    const ok = drive([mk()], [{ atMs: 0, req: req(0, 1479, 168, ids(24, 1_000_000)) }], (x) => x.invariants());
    expect(ok.map((e) => e.kind)).toEqual(['first_token', 'finished']);
  });

  it('mixed chunking: when the last running request cannot decode, the chunked prefill is retracted (no KV-exhausted crash)', () => {
    // Tiny reservation ratio: request 0 (906 + 6) decodes while request 2 (7 tokens) is prefilled
    // 2 tokens a step next to it, until the pool (916) has no token left for request 0's decode.
    const r = new SglangReplica({ stepTime: simple, kvTokens: 916, chunkedPrefillSize: 3, maxPrefillTokens: 2, maxRunningRequests: 2, enableMixedChunk: true, radixCache: false, initNewTokenRatio: 0.01, minNewTokenRatio: 0.01 });
    const log = drive([r], [
      { atMs: 0, req: req(0, 906, 6) },
      { atMs: 0, req: req(1, 0, 0) },
      { atMs: 1, req: req(2, 7, 0) },
    ], (x) => x.invariants());
    expect(r.retractions).toBeGreaterThan(0);
    for (const id of [0, 1, 2]) expect(log.filter((e) => e.attemptId === id).map((e) => e.kind)).toEqual(['first_token', 'finished']);
    expect(r.freeTokens()).toBe(916);
  });

  it('rejects bad options and impossible requests, naming the field', () => {
    expect(() => new SglangReplica({ stepTime: simple, kvTokens: 0 })).toThrow(/kvTokens must be a positive integer/);
    expect(() => new SglangReplica({ stepTime: simple, kvTokens: 10, initNewTokenRatio: 2 })).toThrow(/initNewTokenRatio must be in \(0, 1\]/);
    const r = new SglangReplica({ stepTime: simple, kvTokens: 1000 });
    const ev: EngineEvent[] = [];
    expect(r.enqueue(req(1, 900, 200), 5, (e) => ev.push(e))).toBeNull();
    expect(ev).toEqual([{ kind: 'rejected', attemptId: 1, atMs: 5, reason: 'context_too_long' }]);
    expect(() => r.completeStep(0, () => {})).toThrow(/no step is running/);
  });
});

describe('SglangReplica KV events', () => {
  it('a mirror fed only by its KV events equals the radix tree after every step, evictions and a flush included', () => {
    // 40 sessions of 2–6 blocks of 64 tokens sharing a 2-block system prompt, on a pool that holds
    // about 8 prompts: the tree fills, leaves are evicted, and later turns hit what is left.
    const r = new SglangReplica({ stepTime: simple, kvTokens: 4000, hashBlockTokens: 64 });
    const mirror = new EngineSignals();
    const seen = new Set<number>();
    let stored = 0;
    let removed = 0;
    r.setKvEventSink((e) => {
      mirror.applyKvEvent('r', e);
      if (e.kind === 'stored') {
        stored += e.hashes.length;
        for (const h of e.hashes) seen.add(h);
      } else if (e.kind === 'removed') {
        removed += e.hashes.length;
        for (const h of e.hashes) seen.delete(h);
      } else seen.clear();
    });
    const arrivals: Arrival[] = [];
    for (let i = 0; i < 120; i++) {
      const s = i % 40;
      const blocks = 2 + (s % 5);
      const ids = [1, 2, ...Array.from({ length: blocks - 2 }, (_, k) => 1000 * (s + 1) + k)];
      arrivals.push({ atMs: i * 15, req: req(i, blocks * 64 + 10, 20, ids) });
    }
    drive([r], arrivals, (x) => {
      x.invariants();
      const tree = (x as SglangReplica).cachedHashes();
      expect(seen).toEqual(tree);
      expect(mirror.cachedBlockCount('r')).toBe(tree.size);
    });
    expect(stored).toBeGreaterThan(r.cachedTokens() / 64); // some were evicted…
    expect(removed).toBe(stored - r.cachedHashes().size); // …and each eviction was reported
    expect(mirror.cachedPrefixBlocks('r', [1, 2])).toBe(2); // the shared system prompt stays hot
    expect(r.flushCache()).toBe(true);
    expect(r.cachedTokens()).toBe(0);
    expect(mirror.cachedBlockCount('r')).toBe(0);
    expect(mirror.reportsKvEvents('r')).toBe(true);
  });

  it('flushCache refuses while a request is in the replica; no sink, no events; radix off, none either', () => {
    const r = new SglangReplica({ stepTime: simple, kvTokens: 100_000, hashBlockTokens: 512 });
    const ev: EngineEvent[] = [];
    expect(r.enqueue(req(1, 2000, 50, [1, 2, 3]), 0, (e) => ev.push(e))).not.toBeNull();
    expect(r.flushCache()).toBe(false);
    const off = new SglangReplica({ stepTime: simple, kvTokens: 100_000, radixCache: false });
    let n = 0;
    off.setKvEventSink(() => n++);
    runAlone(off, req(1, 2000, 5, [1, 2, 3]));
    expect(n).toBe(0);
  });
});
