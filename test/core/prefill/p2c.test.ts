// Prefill-aware power-of-two-choices in the `fixed` router (seed 000, prefill-aware selection),
// with the exact default thresholds: intervene at 50,000 queued tokens, elephants at 200,000,
// one elephant per endpoint.
import { describe, expect, it } from 'vitest';
import { chooseOfTwo, elephantAvoids, type RoutingCore } from '../../../core/index.ts';
import { dispatchOf, doneOf, finish, makeCore, req, scriptedRng } from '../harness.ts';

// Two equal routes: a uniform below 0.5 draws a, at or above draws b.
const A = 0.25;
const B = 0.75;
const twoRoutes = () => makeCore([{ name: 'a' }, { name: 'b' }], 'fixed', { affinity: false });
const backlog = (core: RoutingCore, ep: string, tokens: number) => core.prefill.acquire(`m:${ep}`, null, tokens, 0);
const pick = (core: RoutingCore, rng = scriptedRng(A, B), inputTokens = 1_000, callerId: string | null = null) => {
  const { life, actions } = core.start(req({ inputTokens, callerId }), 0, rng);
  return { endpoint: dispatchOf(actions)!.endpointId.slice(2), life, actions, reasonOf: () => doneOf(life.step({ kind: 'client_gone' }, 0))!.metadata.reason };
};

describe('chooseOfTwo (pure)', () => {
  it('keeps the first draw unless the heavier has ≥ the threshold and the second is lighter', () => {
    expect(chooseOfTwo(50_000, 0, 50_000)).toBe(1);
    expect(chooseOfTwo(49_999, 0, 50_000)).toBe(0);
    expect(chooseOfTwo(0, 50_000, 50_000)).toBe(0); // the first is already the lighter
    expect(chooseOfTwo(60_000, 60_000, 50_000)).toBe(0); // ties keep the weights' choice
    expect(chooseOfTwo(1, 0, 0)).toBe(1); // threshold 0 = classic P2C
  });
  it('elephantAvoids: an elephant avoids an endpoint at its limit', () => {
    expect(elephantAvoids(200_000, 1, 200_000, 1)).toBe(true);
    expect(elephantAvoids(199_999, 1, 200_000, 1)).toBe(false);
    expect(elephantAvoids(200_000, 0, 200_000, 1)).toBe(false);
  });
});

describe('fixed + P2C: intervention threshold (ROUTING_PREFILL_INTERVENE_TOKENS = 50,000)', () => {
  it('49,999 queued on the first draw ⇒ the weights decide (first draw kept)', () => {
    const core = twoRoutes();
    backlog(core, 'a', 49_999);
    const p = pick(core);
    expect(p.endpoint).toBe('a');
    expect(p.reasonOf()).toBe('weighted');
  });
  it('50,000 queued on the first draw ⇒ the lighter second draw wins', () => {
    const core = twoRoutes();
    backlog(core, 'a', 50_000);
    const p = pick(core);
    expect(p.endpoint).toBe('b');
    expect(p.reasonOf()).toBe('p2c');
  });
  it('both drawn the same endpoint ⇒ that endpoint, however loaded', () => {
    const core = twoRoutes();
    backlog(core, 'a', 10_000_000);
    expect(pick(core, scriptedRng(A, A)).endpoint).toBe('a');
  });
  it('P2C off (settings or router_params) ⇒ one plain draw', () => {
    for (const core of [makeCore([{ name: 'a' }, { name: 'b' }], 'fixed', { prefill_aware: false, affinity: false }), makeCore([{ name: 'a' }, { name: 'b' }], 'fixed', {}, {}, { prefill_aware_enabled: false, affinity_enabled: false })]) {
      backlog(core, 'a', 10_000_000);
      const p = pick(core, scriptedRng(A)); // a second draw would throw
      expect(p.endpoint).toBe('a');
      expect(p.reasonOf()).toBe('weighted');
    }
  });
  it('router_params prefill_aware: true overrides a global off', () => {
    const core = makeCore([{ name: 'a' }, { name: 'b' }], 'fixed', { prefill_aware: true, affinity: false }, {}, { prefill_aware_enabled: false });
    backlog(core, 'a', 50_000);
    expect(pick(core).endpoint).toBe('b');
  });
  it('never blocks or rejects: one admitted route is chosen whatever its load', () => {
    const core = makeCore([{ name: 'a' }], 'fixed', { affinity: false });
    backlog(core, 'a', 10_000_000);
    expect(pick(core, scriptedRng()).endpoint).toBe('a');
  });
});

describe('fixed + P2C: elephants (≥ 200,000 uncached tokens; limit 1 per endpoint)', () => {
  it('an elephant skips an endpoint already holding an elephant', () => {
    const core = twoRoutes();
    backlog(core, 'a', 200_000); // one elephant in flight on a
    const p = pick(core, scriptedRng(0.1, 0.2), 200_000); // both draws over the pool [b]
    expect(p.endpoint).toBe('b');
    expect(p.reasonOf()).toBe('elephant_spread');
  });
  it('a prompt below the elephant size is not steered by the elephant rule', () => {
    const core = twoRoutes();
    backlog(core, 'a', 200_000);
    // a has 200k queued ≥ intervene, so load decides for a non-elephant when b is drawn second:
    // draw a then a ⇒ a (no elephant filter applied to a 199,999-token prompt).
    expect(pick(core, scriptedRng(A, A), 199_999).endpoint).toBe('a');
  });
  it('the limit is lifted when every endpoint is at it (worst case: plain P2C, never a rejection)', () => {
    const core = twoRoutes();
    backlog(core, 'a', 200_000);
    backlog(core, 'b', 300_000);
    const p = pick(core, scriptedRng(B, A), 200_000);
    expect(p.endpoint).toBe('a'); // b drawn first, but a is lighter and b ≥ 50,000 queued
    expect(p.reasonOf()).toBe('p2c');
  });
  it('a warm continuation is not an elephant where the caller has a fresh hint', () => {
    const core = twoRoutes();
    backlog(core, 'a', 200_000);
    core.prefill.recordCompletedPrompt('m:a', 'warm', 100_000, 0);
    // 250k prompt: 150k uncached on a (no elephant there), 250k on b (an elephant, b has none).
    const p = pick(core, scriptedRng(A, A), 250_000, 'warm');
    expect(p.endpoint).toBe('a');
    // The lease taken on a is the uncached estimate, not the full prompt.
    expect(core.prefill.backlogTokens('m:a')).toBe(200_000 + 150_000);
    expect(core.prefill.elephantsInFlight('m:a')).toBe(1);
  });
});

describe('fixed + P2C: leases taken at dispatch, released at first token', () => {
  it('the chosen endpoint carries the request until its first token', () => {
    const core = twoRoutes();
    const { life, actions } = core.start(req({ inputTokens: 70_000 }), 0, scriptedRng(A, B));
    expect(core.prefill.backlogTokens('m:a')).toBe(70_000);
    // A second request now sees a at 70k ≥ 50k: drawn a then b ⇒ b.
    expect(pick(core).endpoint).toBe('b');
    finish(life, actions, 5);
    expect(core.prefill.backlogTokens('m:a')).toBe(0);
  });
});
