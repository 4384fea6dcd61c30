// Prefill load: lease accounting, prompt-size hints and their TTL (seed 000, prefill-aware selection).
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { DEFAULT_ROUTING_SETTINGS, PROMPT_HINT_SWEEP_THRESHOLD, PrefillLoad, estimateUncachedTokens } from '../../../core/index.ts';

const load = (over: Partial<typeof DEFAULT_ROUTING_SETTINGS> = {}) => new PrefillLoad({ ...DEFAULT_ROUTING_SETTINGS, ...over });

describe('estimateUncachedTokens', () => {
  it('a continuation costs what it adds; no hint or a shorter prompt costs everything', () => {
    expect(estimateUncachedTokens(12_000, 10_000)).toBe(2_000);
    expect(estimateUncachedTokens(10_000, 10_000)).toBe(0);
    expect(estimateUncachedTokens(9_999, 10_000)).toBe(9_999);
    expect(estimateUncachedTokens(5_000, null)).toBe(5_000);
  });
});

describe('PrefillLoad', () => {
  it('a lease adds its uncached tokens (and an elephant at ≥ 200,000) until released', () => {
    const p = load();
    const small = p.acquire('e', 'c1', 199_999, 0);
    const big = p.acquire('e', 'c2', 200_000, 0);
    expect(small.elephant).toBe(false);
    expect(big.elephant).toBe(true);
    expect(p.backlogTokens('e')).toBe(399_999);
    expect(p.elephantsInFlight('e')).toBe(1);
    p.invariants();
    p.release(big);
    expect(p.backlogTokens('e')).toBe(199_999);
    expect(p.elephantsInFlight('e')).toBe(0);
    p.release(small);
    expect(p.snapshot()).toEqual([{ endpointId: 'e', backlogTokens: 0, elephantsInFlight: 0, leasesInFlight: 0, hints: 0 }]);
    expect(p.backlogTokens('unknown')).toBe(0);
    p.invariants();
  });

  it('releasing twice or a foreign lease throws', () => {
    const p = load();
    const l = p.acquire('e', null, 10, 0);
    p.release(l);
    expect(() => p.release(l)).toThrow(/released twice or foreign/);
    expect(() => load().release(p.acquire('e', null, 1, 0))).toThrow(/released twice or foreign/);
  });

  it('hint TTL: a warm continuation counts its delta until 1,200 s after the last completed prompt, then in full', () => {
    const p = load();
    p.recordCompletedPrompt('e', 'caller', 100_000, 0);
    expect(p.uncachedTokens('e', 'caller', 250_000, 1_199_999)).toBe(150_000);
    expect(p.uncachedTokens('e', 'caller', 250_000, 1_200_000)).toBe(250_000);
    // Keyed by (caller, endpoint): another endpoint or caller has no hint.
    expect(p.uncachedTokens('f', 'caller', 250_000, 0)).toBe(250_000);
    expect(p.uncachedTokens('e', 'other', 250_000, 0)).toBe(250_000);
    // So a warm 250k continuation is no elephant, a cold one is.
    expect(p.acquire('e', 'caller', 250_000, 10).elephant).toBe(false);
    expect(p.acquire('e', 'caller', 250_000, 1_200_000).elephant).toBe(true);
  });

  it('a newer completed prompt replaces the hint; a null caller never records or uses one; TTL 0 disables hints', () => {
    const p = load();
    p.recordCompletedPrompt('e', 'c', 1_000, 0);
    p.recordCompletedPrompt('e', 'c', 5_000, 10);
    expect(p.uncachedTokens('e', 'c', 6_000, 20)).toBe(1_000);
    p.recordCompletedPrompt('e', null, 5_000, 10);
    expect(p.uncachedTokens('e', null, 6_000, 20)).toBe(6_000);
    expect(p.hints).toBe(1);
    const off = load({ prefillHintTtlSec: 0 });
    off.recordCompletedPrompt('e', 'c', 1_000, 0);
    expect(off.uncachedTokens('e', 'c', 2_000, 0)).toBe(2_000);
    expect(off.hints).toBe(0);
  });

  it('expired hints are swept lazily past the threshold, and the table stays within its bound', () => {
    const p = load({ prefillHintTtlSec: 1 });
    for (let i = 0; i <= PROMPT_HINT_SWEEP_THRESHOLD; i++) p.recordCompletedPrompt('e', `c${i}`, 10, 0);
    expect(p.hints).toBe(PROMPT_HINT_SWEEP_THRESHOLD + 1); // all live at t=0: nothing to drop
    p.invariants();
    p.recordCompletedPrompt('f', 'late', 10, 5_000); // the next insert past the bound sweeps
    for (let i = 0; i < PROMPT_HINT_SWEEP_THRESHOLD * 2; i++) p.recordCompletedPrompt('f', `d${i}`, 10, 5_000);
    expect(p.hints).toBeLessThan(PROMPT_HINT_SWEEP_THRESHOLD * 2 + 2);
    p.invariants();
  });

  it('property: any acquire/release/hint sequence keeps the invariants and returns to zero', () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ ep: fc.constantFrom('a', 'b', 'c'), caller: fc.option(fc.constantFrom('x', 'y'), { nil: null }), tokens: fc.nat(400_000), release: fc.boolean(), hint: fc.boolean() }), { maxLength: 200 }),
        (ops) => {
          const p = load();
          const held = [];
          let now = 0;
          for (const o of ops) {
            now += 1_000;
            if (o.hint) p.recordCompletedPrompt(o.ep, o.caller, o.tokens, now);
            if (o.release && held.length > 0) p.release(held.shift()!);
            else held.push(p.acquire(o.ep, o.caller, o.tokens, now));
            p.invariants();
          }
          for (const l of held) p.release(l);
          p.invariants();
          expect(p.leasesInFlight).toBe(0);
          for (const s of p.snapshot()) expect([s.backlogTokens, s.elephantsInFlight, s.leasesInFlight]).toEqual([0, 0, 0]);
        },
      ),
      { numRuns: 200 },
    );
  });
});
