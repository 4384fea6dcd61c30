// Output-length cascade (issue #13 item 6), cost envelope with its L = U·1e-3 floor (item 7),
// quota / concurrency reserve → commit → release (item 8), and cold start (item 9).
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { OutputLengthPredictor, lengthBucket } from '../../../core/strategies/routewise/output-length.ts';
import { CostEnvelope, floorEnvelope } from '../../../core/strategies/routewise/cost-envelope.ts';
import { ResourceLedger } from '../../../core/strategies/routewise/resources.ts';
import { ExplorationLeases, ProbeGate, ProbeScheduler, explorationProbability } from '../../../core/strategies/routewise/cold-start.ts';

describe('output-length predictor', () => {
  it('buckets are ⌊log2(input tokens)⌋', () => {
    expect([0, 1, 2, 3, 4, 1023, 1024, 1025, 2 ** 40].map(lengthBucket)).toEqual([0, 0, 1, 1, 2, 9, 10, 10, 40]);
  });

  it('cascade: default 500 → global mean at 20 samples → bucket mean at 5; a caller estimate overrides', () => {
    const p = new OutputLengthPredictor();
    expect(p.predict(1000)).toBe(500);
    // 19 samples in bucket 5 (32–63 input tokens), output 100 each.
    for (let i = 0; i < 19; i++) p.observe(40, 100);
    expect(p.predict(1000)).toBe(500); // global needs 20, bucket 9 has none
    expect(p.predict(40)).toBe(100); // bucket 5 has ≥ 5
    p.observe(40, 300); // 20th sample: global mean (19·100 + 300)/20 = 110
    expect(p.predict(1000)).toBe(110);
    for (let i = 0; i < 4; i++) p.observe(1000, 1000);
    expect(p.predict(1000)).toBe((19 * 100 + 300 + 4000) / 24); // bucket 9 has 4 < 5: still global
    p.observe(1000, 1000);
    expect(p.predict(1000)).toBe(1000); // bucket 9 has 5
    expect(p.predict(1000, 42)).toBe(42);
    expect(p.predict(1000, 0)).toBe(0);
    expect(p.predict(1000, null)).toBe(1000);
    p.invariants();
  });
});

describe('cost envelope', () => {
  const env = (minSamples = 5, windowMs = 86_400_000) => new CostEnvelope({ windowMs, lowQuantile: 0.1, highQuantile: 0.9, minSamples });

  it('P10 / P90 of the window (nearest rank) within the bucket resolution', () => {
    const e = env();
    for (let i = 1; i <= 100; i++) e.observe(i * 1e-5, i);
    const { lowUsd, highUsd } = e.envelope(100)!;
    expect(lowUsd / 10e-5).toBeCloseTo(1, 2); // rank 10 ⇒ 1e-4
    expect(highUsd / 90e-5).toBeCloseTo(1, 2); // rank 90 ⇒ 9e-4
    e.invariants();
  });

  it('not calibrated below the minimum sample count; samples leave the window', () => {
    const e = env(3, 1000);
    e.observe(1e-3, 0);
    e.observe(2e-3, 10);
    expect(e.envelope(10)).toBeNull();
    e.observe(3e-3, 20);
    expect(e.envelope(20)).not.toBeNull();
    expect(e.envelope(1000)).toBeNull(); // the first sample left
    expect(e.samples(1000)).toBe(2);
  });

  it('fallback L = U·1e-3 when L ≥ U or L ≤ 0', () => {
    expect(floorEnvelope(5e-4, 5e-4)).toEqual({ lowUsd: 5e-7, highUsd: 5e-4 });
    expect(floorEnvelope(0, 2e-3)).toEqual({ lowUsd: 2e-6, highUsd: 2e-3 });
    expect(floorEnvelope(1e-4, 2e-3)).toEqual({ lowUsd: 1e-4, highUsd: 2e-3 });
    const e = env();
    for (let i = 0; i < 10; i++) e.observe(4e-4, i); // every request costs the same ⇒ L = U
    const got = e.envelope(10)!;
    expect(got.highUsd / 4e-4).toBeCloseTo(1, 2);
    expect(got.lowUsd).toBe(got.highUsd * 1e-3);
    const zeros = env();
    for (let i = 0; i < 10; i++) zeros.observe(0, i);
    expect(zeros.envelope(10)).toEqual({ lowUsd: 0, highUsd: 0 });
  });
});

describe('resource ledger', () => {
  const quota = (limit: number, windowSec: number, unit: 'requests' | 'tokens' = 'requests') => ({ limit, windowMs: windowSec * 1000, unit });

  it('concurrency: reserve → commit → release; a full pool refuses; forced holds are counted', () => {
    const l = new ResourceLedger();
    l.defineRoute('c', { quota: null, concurrency: { poolId: 'c', limit: 2 } });
    const a = l.reserve('c', 10, 0)!;
    const b = l.reserve('c', 10, 0)!;
    expect(l.reserve('c', 10, 0)).toBeNull();
    expect(l.slotFree('c', 0)).toBe(false);
    l.commit(a, 1);
    l.release(b, 1); // never dispatched
    expect(l.slotFree('c', 1)).toBe(true);
    const forced = l.reserve('c', 10, 1, true)!;
    expect(l.reserve('c', 10, 1, true)).not.toBeNull();
    expect(l.slotsHeld('c')).toBe(3);
    l.release(a, 2);
    l.release(a, 2); // idempotent
    l.release(forced, 2);
    l.invariants();
  });

  it('quota: z is the tightest window, reservations included; windows roll; exhausted ⇒ refused', () => {
    const l = new ResourceLedger();
    l.defineRoute('q', { quota: { poolId: 'q', windows: [quota(4, 10), quota(10, 100)] }, concurrency: null });
    const rs = [0, 1, 2].map((t) => l.reserve('q', 0, t)!);
    expect(l.quotaUsedFraction('q', 2)).toBe(0.75); // 3/4 > 3/10
    rs.forEach((r, i) => l.commit(r, i));
    rs.forEach((r) => l.release(r, 3)); // committed uses stay in the windows
    expect(l.quotaUsedFraction('q', 3)).toBe(0.75);
    l.commit(l.reserve('q', 0, 4)!, 4);
    expect(l.quotaUsedFraction('q', 4)).toBe(1);
    expect(l.reserve('q', 0, 4)).toBeNull();
    // At 10 s the first use leaves the 10 s window: 3/4 there, 4/10 in the long one.
    expect(l.quotaUsedFraction('q', 10_000)).toBe(0.75);
    expect(l.quotaUsedFraction('q', 20_000)).toBe(0.4); // the short window is empty
    expect(l.quotaUsedFraction('q', 200_000)).toBe(0);
    l.invariants();
  });

  it('token quotas count the estimate and learn the real count at release', () => {
    const l = new ResourceLedger();
    l.defineRoute('q', { quota: { poolId: 'q', windows: [quota(1000, 60, 'tokens')] }, concurrency: null });
    const r = l.reserve('q', 300, 0)!;
    expect(l.quotaUsedFraction('q', 0)).toBe(0.3);
    l.commit(r, 0);
    l.release(r, 5, 800);
    expect(l.quotaUsedFraction('q', 5)).toBe(0.8);
  });

  it('pools are shared by id; conflicting declarations are rejected naming the pool', () => {
    const l = new ResourceLedger();
    l.defineRoute('a', { quota: null, concurrency: { poolId: 'sub', limit: 1 } });
    l.defineRoute('b', { quota: null, concurrency: { poolId: 'sub', limit: 1 } });
    const r = l.reserve('a', 0, 0)!;
    expect(l.slotFree('b', 0)).toBe(false);
    l.release(r, 1);
    expect(() => l.defineRoute('c', { quota: null, concurrency: { poolId: 'sub', limit: 2 } })).toThrow(/concurrency_pool 'sub'/);
    expect(() => l.defineRoute('d', { quota: { poolId: 'qp', windows: [] }, concurrency: null })).toThrow(/no window/);
  });

  it('a 429 blocks the pool until its Retry-After', () => {
    const l = new ResourceLedger();
    l.defineRoute('q', { quota: { poolId: 'q', windows: [quota(100, 60)] }, concurrency: null });
    l.block('q', 5_000);
    expect(l.available('q', 4_999)).toBe(false);
    expect(l.available('q', 5_000)).toBe(true);
  });

  it('random reserve/commit/release sequences keep the invariants and never exceed limits unforced (fast-check)', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.integer({ min: 0, max: 3 }), fc.integer({ min: 0, max: 9 }), fc.integer({ min: 0, max: 2000 })), { maxLength: 150 }), (ops) => {
        const l = new ResourceLedger();
        l.defineRoute('c', { quota: null, concurrency: { poolId: 'c', limit: 3 } });
        l.defineRoute('q', { quota: { poolId: 'q', windows: [quota(5, 2)] }, concurrency: null });
        const live: ReturnType<ResourceLedger['reserve']>[] = [];
        let now = 0;
        for (const [op, k, dt] of ops) {
          now += dt;
          const route = k % 2 === 0 ? 'c' : 'q';
          if (op === 0) {
            const r = l.reserve(route, 1, now);
            if (r) live.push(r);
          } else if (op === 1 && live.length > 0) l.commit(live[k % live.length]!, now);
          else if (op === 2 && live.length > 0) l.release(live.splice(k % live.length, 1)[0]!, now);
          expect(l.slotsHeld('c')).toBeLessThanOrEqual(3);
          l.invariants();
        }
      }),
      { numRuns: 150 },
    );
  });
});

describe('cold start', () => {
  it('q = 1 within budget; clamp((B − c_min)/(c_target − c_min), 0, 1) otherwise', () => {
    expect(explorationProbability(2, 1, 2)).toBe(1);
    expect(explorationProbability(1.5, 1, 3)).toBe(0.25);
    expect(explorationProbability(1, 1, 3)).toBe(0);
    expect(explorationProbability(1, 1, 1)).toBe(1);
  });

  it('leases keep an explored route off the list for their length or until it answers', () => {
    const l = new ExplorationLeases(60_000);
    l.take('a', 0);
    expect(l.leased('a', 59_999)).toBe(true);
    expect(l.leased('a', 60_000)).toBe(false);
    l.take('b', 0);
    l.end('b');
    expect(l.leased('b', 1)).toBe(false);
  });

  it('prober: idle ≥ 900 s, one round per 300 s, one probe per process at a time', () => {
    const gate = new ProbeGate(1);
    const a = new ProbeScheduler(900_000, 300_000);
    const b = new ProbeScheduler(900_000, 300_000);
    const last: Record<string, number> = { x: 0, y: 50_000, z: Number.NEGATIVE_INFINITY };
    const seen = (id: string) => last[id]!;
    expect(a.due(899_999, ['x', 'y'], seen, gate)).toBeNull(); // nobody idle for 900 s yet
    expect(a.due(950_000, ['x', 'y'], seen, gate)).toBe('x'); // idle longest
    expect(b.due(950_000, ['z'], seen, gate)).toBeNull(); // the process's one probe is out
    a.finished('x', gate);
    expect(b.due(950_001, ['z'], seen, gate)).toBe('z');
    b.finished('z', gate);
    expect(a.due(1_000_000, ['x', 'y'], seen, gate)).toBeNull(); // a's next round is due at 1,250 s
    expect(a.due(1_250_000, ['x', 'y'], seen, gate)).toBe('x');
    expect(() => new ProbeGate(0)).toThrow(RangeError);
  });
});
