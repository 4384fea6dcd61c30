// The contract every planner must pass, plus the fixed router's pipeline behaviours
// (seed 000: how FixedRouter picks an endpoint, fallback, endpoint health, admission).
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { BUILTIN_STRATEGIES, type Outcome } from '../../core/index.ts';
import { dispatchOf, doneOf, errorOf, fail503, makeCore, ok, req, runOne, seeded } from './harness.ts';

for (const strategy of BUILTIN_STRATEGIES.map((s) => s.name)) {
  describe(`planner contract: ${strategy}`, () => {
    it('never picks a weight-0 route and respects admission (open breakers)', () => {
      const core = makeCore([{ name: 'a' }, { name: 'b', weight: 0 }, { name: 'c' }], strategy);
      // Open c's breaker: three consecutive failures.
      for (let i = 0; i < 3; i++) core.health.endDispatch(core.health.beginDispatch('m:c', 0)!, fail503, 0);
      const rng = seeded(1);
      for (let i = 0; i < 200; i++) {
        const { done } = runOne(core, 1, rng, () => ok);
        expect(done.metadata.endpointId).toBe('m:a');
      }
    });

    it('ends every claim and prefill lease exactly once, whatever the outcomes', () => {
      fc.assert(
        fc.property(fc.array(fc.boolean(), { minLength: 1, maxLength: 60 }), fc.integer(), (fails, seed) => {
          const core = makeCore([{ name: 'a' }, { name: 'b', weight: 2 }, { name: 'c' }], strategy, {}, { cooldownMs: 1_000 });
          const rng = seeded(seed);
          fails.forEach((f, i) => runOne(core, i * 10, rng, () => (f ? fail503 : ok)));
          for (const s of core.health.snapshot(1e9)) expect(s.claimsInFlight).toBe(0);
          expect(core.prefill.leasesInFlight).toBe(0);
          core.invariants();
        }),
        { numRuns: 50 },
      );
    });

    it('routing metadata is complete on success and on failure', () => {
      const core = makeCore([{ name: 'a', provider: 'prov-a' }], strategy);
      const good = runOne(core, 0, seeded(2), () => ok).done.metadata;
      expect(good).toMatchObject({ modelId: 'm', strategy, endpointId: 'm:a', provider: 'prov-a', baseUrl: 'sim://a', status: 'ok', fallback: false });
      expect(good.attempts).toHaveLength(1);
      const bad = runOne(core, 0, seeded(2), () => fail503);
      expect(bad.done.metadata.status).toBe('upstream_server_error');
      expect(bad.error?.status).toBe(502);
    });

    it('same seed ⇒ same decisions', () => {
      const decide = (seed: number) => {
        const core = makeCore([{ name: 'a' }, { name: 'b', weight: 3 }, { name: 'c', weight: 0.5 }], strategy);
        const rng = seeded(seed);
        return Array.from({ length: 100 }, (_, i) => runOne(core, i, rng, () => ok).done.metadata.endpointId);
      };
      expect(decide(7)).toEqual(decide(7));
    });
  });
}

describe('fixed: weighted draw', () => {
  // Plain draw: P2C and affinity off (these lives never finish, so leases pile up and every
  // request shares the anonymous pin). test/core/prefill/p2c-shares.test.ts covers them on.
  it('route shares match normalised weights (fast-check over weights, 4σ bounds)', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 10 }), { minLength: 1, maxLength: 5 }).filter((w) => w.some((x) => x > 0)), fc.integer(), (weights, seed) => {
        const core = makeCore(weights.map((w, i) => ({ name: `r${i}`, weight: w })), 'fixed', { prefill_aware: false, affinity: false });
        const rng = seeded(seed);
        const n = 2_000;
        const counts = new Map<string, number>();
        for (let i = 0; i < n; i++) {
          const { actions } = core.start(req(), 0, rng);
          const id = dispatchOf(actions)!.endpointId;
          counts.set(id, (counts.get(id) ?? 0) + 1);
        }
        const total = weights.reduce((a, b) => a + b, 0);
        weights.forEach((w, i) => {
          const p = w / total;
          const got = (counts.get(`m:r${i}`) ?? 0) / n;
          if (w === 0) expect(got).toBe(0);
          else expect(Math.abs(got - p)).toBeLessThanOrEqual(4 * Math.sqrt((p * (1 - p)) / n) + 1e-9);
        });
      }),
      { numRuns: 25 },
    );
  });
});

describe('round_robin: smooth weighted round robin', () => {
  it('weights 5,1,1 give the nginx sequence a a b a c a a', () => {
    const core = makeCore([{ name: 'a', weight: 5 }, { name: 'b' }, { name: 'c' }], 'round_robin');
    const seq = Array.from({ length: 7 }, () => dispatchOf(core.start(req(), 0, seeded(0)).actions)!.endpointId.slice(2));
    expect(seq.join(' ')).toBe('a a b a c a a');
  });
  it('over any Σw picks each route is chosen exactly w times', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 1, max: 6 }), { minLength: 1, maxLength: 5 }), (weights) => {
        const core = makeCore(weights.map((w, i) => ({ name: `r${i}`, weight: w })), 'round_robin');
        const total = weights.reduce((a, b) => a + b, 0);
        const counts = new Map<string, number>();
        for (let i = 0; i < total; i++) {
          const id = dispatchOf(core.start(req(), 0, seeded(0)).actions)!.endpointId;
          counts.set(id, (counts.get(id) ?? 0) + 1);
        }
        weights.forEach((w, i) => expect(counts.get(`m:r${i}`)).toBe(w));
      }),
    );
  });
});

describe('fixed pipeline (seed 000)', () => {
  it('unknown or unpublished model ⇒ 404 model_not_found; aliases share the model', () => {
    const core = makeCore([{ name: 'a' }]);
    const r = runOne(core, 0, seeded(1), () => ok, req({ model: 'nope' }));
    expect(r.error).toMatchObject({ status: 404, code: 'model_not_found' });
    expect(runOne(core, 0, seeded(1), () => ok, req({ model: 'm-alias' })).done.metadata.endpointId).toBe('m:a');
  });

  it('modality filter: none left ⇒ 400 modality_not_supported naming the modality', () => {
    const core = makeCore([{ name: 'a' }, { name: 'v', modalities: ['text', 'image'] }]);
    expect(runOne(core, 0, seeded(1), () => ok, req({ modalities: ['image'] })).done.metadata.endpointId).toBe('m:v');
    const r = runOne(core, 0, seeded(1), () => ok, req({ modalities: ['audio'] }));
    expect(r.error).toMatchObject({ status: 400, code: 'modality_not_supported' });
    expect(r.error!.message).toContain('audio');
  });

  it('explicit pin selects the route, bypasses admission and never falls back; no match ⇒ pin error', () => {
    const core = makeCore([{ name: 'a' }, { name: 'b' }]);
    const pinned = runOne(core, 0, seeded(1), (id) => (id === 'm:b' ? fail503 : ok), req({ pin: 'm:b' }));
    expect(pinned.done.metadata.attempts.map((a) => a.endpointId)).toEqual(['m:b']);
    expect(pinned.error?.status).toBe(502);
    expect(runOne(core, 0, seeded(1), () => ok, req({ pin: 'zzz' })).error).toMatchObject({ status: 400, code: 'route_pin_not_found' });
  });

  it('no admitted route ⇒ 503 all_circuits_open listing the endpoints considered', () => {
    const core = makeCore([{ name: 'a' }, { name: 'b' }]);
    for (const id of ['m:a', 'm:b']) for (let i = 0; i < 3; i++) core.health.endDispatch(core.health.beginDispatch(id, 0)!, fail503, 0);
    const r = runOne(core, 1, seeded(1), () => ok);
    expect(r.error).toMatchObject({ status: 503, code: 'all_circuits_open', retryAfterSec: 30 }); // the 30 s cooldown, opened at 0
    expect(r.error!.message).toContain('m:a');
    expect(r.error!.message).toContain('m:b');
    expect(runOne(core, 20_500, seeded(1), () => ok).error).toMatchObject({ retryAfterSec: 10 }); // 9.5 s left, rounded up
  });

  it('fallback: remaining routes in declaration order, skipping weight 0 and modality mismatch; first success wins', () => {
    const core = makeCore([{ name: 'a', weight: 1 }, { name: 'z', weight: 0 }, { name: 'img', modalities: ['image'] }, { name: 'b' }, { name: 'c' }]);
    // Force the primary to be c by failing everything but b; with fallback order a, b (z and img skipped).
    const rng = seeded(3);
    for (let i = 0; i < 30; i++) {
      const r = runOne(makeCore([{ name: 'a' }, { name: 'z', weight: 0 }, { name: 'img', modalities: ['image'] }, { name: 'b' }, { name: 'c' }]), 0, rng, (id) => (id === 'm:b' ? ok : fail503));
      const tried = r.done.metadata.attempts.map((a) => a.endpointId);
      expect(tried).not.toContain('m:z');
      expect(tried).not.toContain('m:img');
      expect(tried[tried.length - 1]).toBe('m:b');
      const rest = tried.slice(1);
      expect(rest).toEqual(['m:a', 'm:b', 'm:c'].filter((id) => id !== tried[0]).slice(0, rest.length));
      expect(r.done.metadata.fallback).toBe(tried.length > 1);
    }
    void core;
  });

  it('all fail ⇒ the primary error with every attempt listed', () => {
    const core = makeCore([{ name: 'a' }, { name: 'b' }]);
    const outcomes: Record<string, Outcome> = { 'm:a': { kind: 'http_status', status: 429, errorClass: 'rate_limited', retryAfterMs: 7000 }, 'm:b': fail503 };
    const r = runOne(core, 0, seeded(5), (id) => outcomes[id]!, req());
    const first = r.done.metadata.attempts[0]!.endpointId;
    expect(r.done.metadata.attempts).toHaveLength(2);
    if (first === 'm:a') expect(r.error).toMatchObject({ status: 429, retryAfterSec: 7 });
    else expect(r.error).toMatchObject({ status: 502 });
    expect(r.error!.message).toContain('m:a');
    expect(r.error!.message).toContain('m:b');
  });

  it('a committed stream never falls back', () => {
    const core = makeCore([{ name: 'a' }, { name: 'b' }]);
    const { life, actions } = core.start(req({ stream: true }), 0, seeded(1));
    const d = dispatchOf(actions)!;
    expect(life.step({ kind: 'first_token', attemptId: d.attemptId }, 1)).toEqual([{ kind: 'commit', attemptId: d.attemptId }]);
    const after = life.step({ kind: 'failed', attemptId: d.attemptId, outcome: { kind: 'transport', cause: 'reset' } }, 2);
    expect(dispatchOf(after)).toBeUndefined();
    expect(errorOf(after)?.status).toBe(502);
    expect(doneOf(after)?.metadata.attempts).toHaveLength(1);
    expect(life.isDone).toBe(true);
  });

  it('client gone cancels the live attempt and ends its claim', () => {
    const core = makeCore([{ name: 'a' }]);
    const { life, actions } = core.start(req(), 0, seeded(1));
    const d = dispatchOf(actions)!;
    const out = life.step({ kind: 'client_gone' }, 5);
    expect(out[0]).toEqual({ kind: 'cancel', attemptId: d.attemptId });
    expect(doneOf(out)?.metadata.status).toBe('client_gone');
    expect(core.health.snapshot(5).every((s) => s.claimsInFlight === 0)).toBe(true);
  });

  it('probe in flight + a second request with nowhere else to go ⇒ 503', () => {
    const core = makeCore([{ name: 'a' }]);
    for (let i = 0; i < 3; i++) core.health.endDispatch(core.health.beginDispatch('m:a', 0)!, fail503, 0);
    const probe = core.start(req(), 30_000, seeded(1));
    expect(dispatchOf(probe.actions)?.endpointId).toBe('m:a');
    const second = runOne(core, 30_001, seeded(1), () => ok);
    expect(second.error).toMatchObject({ status: 503, code: 'all_circuits_open' });
    // The probe succeeds ⇒ closed again.
    const d = dispatchOf(probe.actions)!;
    probe.life.step({ kind: 'finished', attemptId: d.attemptId, usage: { inputTokens: 1, outputTokens: 1, cachedTokens: 0 } }, 30_002);
    expect(runOne(core, 30_003, seeded(1), () => ok).done.metadata.status).toBe('ok');
  });

  it('a pinned request does not settle a half-open probe', () => {
    const core = makeCore([{ name: 'a' }]);
    for (let i = 0; i < 3; i++) core.health.endDispatch(core.health.beginDispatch('m:a', 0)!, fail503, 0);
    const probe = core.start(req(), 30_000, seeded(1));
    runOne(core, 30_001, seeded(1), () => ok, req({ pin: 'm:a' }));
    expect(core.health.snapshot(30_002)[0]).toMatchObject({ state: 'half_open', probeInFlight: true });
    void probe;
  });

  it('unknown strategy and unknown router_params keys fail at start, naming them', () => {
    expect(() => makeCore([{ name: 'a' }], 'nope')).toThrow(/unknown router 'nope'; known routers: consistent_hash, dynamo_kv, failover, fixed, least_busy, least_cost, least_latency, llm_d, round_robin, routewise, sglang_cache_aware/);
    expect(() => makeCore([{ name: 'a' }], 'fixed', { typo_key: 1 })).toThrow(/typo_key/);
  });
});
