// The affinity table: sliding TTL (300 s), max age from creation (86,400 s; 0 = no cap), lazy
// sweep past 1,000 pins (seed 000, session affinity).
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { AffinityTable, DEFAULT_ROUTING_SETTINGS } from '../../../core/index.ts';

const table = (over: Partial<typeof DEFAULT_ROUTING_SETTINGS> = {}) => new AffinityTable({ ...DEFAULT_ROUTING_SETTINGS, ...over });
const DAY_MS = 86_400_000;

describe('AffinityTable', () => {
  it('a pin lives 300 s after its last use (sliding)', () => {
    const t = table();
    t.pin('c', 'm', 'e1', 0);
    expect(t.lookup('c', 'm', 299_999)?.endpointId).toBe('e1');
    t.refresh('c', 'm', 200_000);
    expect(t.lookup('c', 'm', 499_999)?.endpointId).toBe('e1');
    expect(t.lookup('c', 'm', 500_000)).toBeNull();
    expect(t.size).toBe(0); // an expired pin is removed when looked up
  });

  it('refreshing never extends a pin past its max age (one day from creation)', () => {
    const t = table();
    t.pin('c', 'm', 'e1', 0);
    for (let now = 200_000; now < DAY_MS; now += 200_000) {
      expect(t.lookup('c', 'm', now)).not.toBeNull();
      t.refresh('c', 'm', now);
      expect(t.lookup('c', 'm', now)!.expiresAtMs).toBeLessThanOrEqual(DAY_MS);
    }
    expect(t.lookup('c', 'm', DAY_MS - 1)).not.toBeNull();
    expect(t.lookup('c', 'm', DAY_MS)).toBeNull(); // the first request after a day re-draws
    t.invariants();
  });

  it('max age 0 means no cap', () => {
    const t = table({ affinityMaxAgeSec: 0 });
    t.pin('c', 'm', 'e1', 0);
    for (let now = 200_000; now <= 2 * DAY_MS; now += 200_000) t.refresh('c', 'm', now);
    expect(t.lookup('c', 'm', 2 * DAY_MS + 299_999)?.endpointId).toBe('e1');
  });

  it('re-pinning starts a new max age; pins are per (caller, model)', () => {
    const t = table({ affinityMaxAgeSec: 1_000 });
    t.pin('c', 'm', 'e1', 0);
    t.pin('c', 'm', 'e2', 900_000);
    expect(t.lookup('c', 'm', 1_100_000)?.endpointId).toBe('e2');
    expect(t.lookup('c', 'm', 1_100_000)?.createdAtMs).toBe(900_000);
    expect(t.lookup('c', 'other-model', 1_000)).toBeNull();
    expect(t.lookup('d', 'm', 1_000)).toBeNull();
  });

  it('dropIfPinnedTo drops only a pin to that endpoint', () => {
    const t = table();
    t.pin('c', 'm', 'e1', 0);
    expect(t.dropIfPinnedTo('c', 'm', 'e2')).toBe(false);
    expect(t.dropIfPinnedTo('c', 'm', 'e1')).toBe(true);
    expect(t.lookup('c', 'm', 1)).toBeNull();
    expect(t.dropIfPinnedTo('c', 'm', 'e1')).toBe(false);
  });

  it('sweeps expired pins lazily once it holds more than 1,000', () => {
    const t = table();
    for (let i = 0; i < 1_000; i++) t.pin(`c${i}`, 'm', 'e', 0);
    expect(t.size).toBe(1_000);
    t.pin('late', 'm', 'e', 400_000); // 1,001 > 1,000: sweep; the first 1,000 expired at 300,000
    expect(t.size).toBe(1);
    t.invariants();
    // A large live table is not rescanned on every insert: the bound doubles with the live size.
    for (let i = 0; i < 5_000; i++) t.pin(`d${i}`, 'm', 'e', 400_000);
    expect(t.size).toBe(5_001);
    t.invariants();
  });

  it('property: random pins, refreshes, drops and lookups keep the invariants', () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ op: fc.nat(3), caller: fc.nat(30), model: fc.constantFrom('m', 'n'), ep: fc.constantFrom('a', 'b'), dt: fc.nat(200_000) }), { maxLength: 300 }),
        fc.constantFrom(0, 600, 86_400),
        (ops, maxAge) => {
          const t = table({ affinitySweepThreshold: 8, affinityMaxAgeSec: maxAge });
          let now = 0;
          for (const o of ops) {
            now += o.dt;
            const k = `c${o.caller}`;
            if (o.op === 0) t.pin(k, o.model, o.ep, now);
            else if (o.op === 1) {
              if (t.lookup(k, o.model, now)) t.refresh(k, o.model, now);
            } else if (o.op === 2) t.dropIfPinnedTo(k, o.model, o.ep);
            else {
              const p = t.lookup(k, o.model, now);
              if (p) expect(now).toBeLessThan(p.expiresAtMs);
            }
            t.invariants();
          }
        },
      ),
      { numRuns: 200 },
    );
  });
});
