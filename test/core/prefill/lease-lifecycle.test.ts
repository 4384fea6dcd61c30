// The lifecycle owns every prefill lease it takes: one per dispatched attempt, released exactly
// once — at the attempt's first token, or when it ends first (finished, failed, cancelled,
// client gone). Random interleavings of many lives return every lease (seed 000: the lease is
// released at the first token; decode is not prefill pressure).
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import type { LifecycleAction, Outcome, RequestLife } from '../../../core/index.ts';
import { dispatchOf, fail503, makeCore, req, seeded } from '../harness.ts';

const usage = { inputTokens: 1, outputTokens: 1, cachedTokens: 0 };

describe('prefill leases through the seam', () => {
  it('taken at dispatch, released at the first token (the claim stays until the end)', () => {
    const core = makeCore([{ name: 'a' }]);
    const { life, actions } = core.start(req({ inputTokens: 30_000 }), 0, seeded(1));
    const d = dispatchOf(actions)!;
    expect(core.prefill.backlogTokens('m:a')).toBe(30_000);
    life.invariants();
    life.step({ kind: 'first_token', attemptId: d.attemptId }, 10);
    expect(core.prefill.backlogTokens('m:a')).toBe(0);
    expect(core.health.snapshotOf('m:a', 10).claimsInFlight).toBe(1);
    life.invariants();
    life.step({ kind: 'finished', attemptId: d.attemptId, usage }, 20);
    expect(core.prefill.leasesInFlight).toBe(0);
    expect(core.health.snapshotOf('m:a', 20).claimsInFlight).toBe(0);
    life.invariants();
    core.invariants();
  });

  it('released when the attempt fails before its first token; the fallback takes its own lease', () => {
    const core = makeCore([{ name: 'a' }, { name: 'b' }], 'fixed', { affinity: false });
    const { life, actions } = core.start(req({ inputTokens: 8_000 }), 0, seeded(2));
    const d = dispatchOf(actions)!;
    const other = d.endpointId === 'm:a' ? 'm:b' : 'm:a';
    const next = life.step({ kind: 'failed', attemptId: d.attemptId, outcome: fail503 }, 5);
    expect(core.prefill.backlogTokens(d.endpointId)).toBe(0);
    expect(dispatchOf(next)?.endpointId).toBe(other);
    expect(core.prefill.backlogTokens(other)).toBe(8_000);
    life.invariants();
    life.step({ kind: 'failed', attemptId: dispatchOf(next)!.attemptId, outcome: fail503 }, 6);
    expect(life.isDone).toBe(true);
    expect(core.prefill.leasesInFlight).toBe(0);
    life.invariants();
    core.invariants();
  });

  it('released when the client goes away, and for an explicit pin (which takes one too)', () => {
    const core = makeCore([{ name: 'a' }, { name: 'b' }]);
    const { life } = core.start(req({ inputTokens: 5_000, pin: 'm:b' }), 0, seeded(3));
    expect(core.prefill.backlogTokens('m:b')).toBe(5_000);
    life.step({ kind: 'client_gone' }, 1);
    expect(core.prefill.leasesInFlight).toBe(0);
    life.invariants();
  });

  it('a successful finish records the prompt size, so the caller\'s next, longer prompt leases only its delta', () => {
    const core = makeCore([{ name: 'a' }]);
    const first = core.start(req({ callerId: 'u', inputTokens: 40_000 }), 0, seeded(4));
    const d = dispatchOf(first.actions)!;
    first.life.step({ kind: 'finished', attemptId: d.attemptId, usage }, 100); // no first_token: released at the end
    core.start(req({ callerId: 'u', inputTokens: 43_000 }), 200, seeded(4));
    expect(core.prefill.backlogTokens('m:a')).toBe(3_000);
    // A failed request records nothing.
    const failed = core.start(req({ callerId: 'v', inputTokens: 40_000 }), 300, seeded(4));
    failed.life.step({ kind: 'failed', attemptId: dispatchOf(failed.actions)!.attemptId, outcome: fail503 }, 301);
    core.start(req({ callerId: 'v', inputTokens: 43_000 }), 400, seeded(4));
    expect(core.prefill.backlogTokens('m:a')).toBe(3_000 + 43_000);
  });
});

const outcomes: Outcome[] = [
  fail503,
  { kind: 'http_status', status: 429, errorClass: 'rate_limited', retryAfterMs: 1000 },
  { kind: 'http_status', status: 400, errorClass: 'context_length', retryAfterMs: null },
  { kind: 'transport', cause: 'reset' },
  { kind: 'first_token_timeout' },
  { kind: 'cancelled' },
];

type Op =
  | { kind: 'start'; caller: number; tokens: number; pin: boolean }
  | { kind: 'event'; life: number; what: number; outcome: number }
  | { kind: 'tick'; ms: number };

const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant('start' as const), caller: fc.nat(4), tokens: fc.nat(300_000), pin: fc.boolean() }),
  fc.record({ kind: fc.constant('event' as const), life: fc.nat(40), what: fc.nat(4), outcome: fc.nat(outcomes.length - 1) }),
  fc.record({ kind: fc.constant('tick' as const), ms: fc.integer({ min: 1, max: 120_000 }) }),
);

describe('leases under random interleavings', () => {
  for (const strategy of ['fixed', 'round_robin']) {
    it(`${strategy}: every lease is released exactly once; loads return to zero; invariants hold at every step`, () => {
      fc.assert(
        fc.property(fc.array(op, { maxLength: 160 }), fc.integer(), (ops, seed) => {
          const core = makeCore([{ name: 'a' }, { name: 'b', weight: 3 }, { name: 'c' }], strategy, {}, { cooldownMs: 5_000 }, { affinity_sweep_threshold: 4, prefill_intervene_tokens: 10_000 });
          const rng = seeded(seed);
          const lives: Array<{ life: RequestLife; live: number[] }> = [];
          let now = 0;
          const absorb = (l: { live: number[] }, actions: LifecycleAction[]) => {
            for (const a of actions) {
              if (a.kind === 'dispatch') l.live.push(a.attemptId);
              if (a.kind === 'cancel') l.live = l.live.filter((x) => x !== a.attemptId);
            }
          };
          for (const o of ops) {
            if (o.kind === 'tick') now += o.ms;
            else if (o.kind === 'start') {
              const r = req({ callerId: o.caller === 0 ? null : `c${o.caller}`, inputTokens: o.tokens, pin: o.pin ? 'm:b' : null });
              const { life, actions } = core.start(r, now, rng);
              const l = { life, live: [] as number[] };
              lives.push(l);
              absorb(l, actions);
            } else if (lives.length > 0) {
              const l = lives[o.life % lives.length]!;
              const attemptId = l.live[0];
              if (o.what === 4) absorb(l, l.life.step({ kind: 'client_gone' }, now));
              else if (attemptId !== undefined) {
                if (o.what === 0) absorb(l, l.life.step({ kind: 'first_token', attemptId }, now));
                else {
                  l.live.shift();
                  absorb(l, o.what === 1 ? l.life.step({ kind: 'finished', attemptId, usage }, now) : l.life.step({ kind: 'failed', attemptId, outcome: outcomes[o.outcome]! }, now));
                }
              }
            }
            core.invariants();
            for (const l of lives) l.life.invariants();
          }
          for (const l of lives) {
            let guard = 0;
            while (!l.life.isDone && guard++ < 10) {
              const attemptId = l.live.shift();
              absorb(l, attemptId === undefined ? l.life.step({ kind: 'client_gone' }, now) : l.life.step({ kind: 'finished', attemptId, usage }, now));
            }
            expect(l.life.isDone).toBe(true);
            l.life.invariants();
          }
          core.invariants();
          expect(core.prefill.leasesInFlight).toBe(0);
          for (const s of core.prefill.snapshot()) expect([s.backlogTokens, s.elephantsInFlight, s.leasesInFlight]).toEqual([0, 0, 0]);
          for (const s of core.health.snapshot(now)) expect(s.claimsInFlight).toBe(0);
        }),
        { numRuns: 150 },
      );
    });
  }
});
