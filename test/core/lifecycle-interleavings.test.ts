// Random interleavings of many concurrent request lives through the seam: every claim is ended
// exactly once, at most one half-open probe per endpoint, every life ends with exactly one `done`,
// and the same seed and event script give byte-identical actions.
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import type { LifecycleAction, Outcome, RequestLife } from '../../core/index.ts';
import { makeCore, req, seeded } from './harness.ts';

const outcomes: Outcome[] = [
  { kind: 'http_status', status: 500, errorClass: 'server_error', retryAfterMs: null },
  { kind: 'http_status', status: 429, errorClass: 'rate_limited', retryAfterMs: 2000 },
  { kind: 'http_status', status: 400, errorClass: 'context_length', retryAfterMs: null },
  { kind: 'transport', cause: 'reset' },
  { kind: 'first_token_timeout' },
];

type Op = { kind: 'start' } | { kind: 'event'; life: number; what: number; outcome: number } | { kind: 'tick'; ms: number };

const op = fc.oneof(
  fc.constant<Op>({ kind: 'start' }),
  fc.record({ kind: fc.constant('event' as const), life: fc.nat(30), what: fc.nat(4), outcome: fc.nat(outcomes.length - 1) }),
  fc.record({ kind: fc.constant('tick' as const), ms: fc.integer({ min: 1, max: 20_000 }) }),
);

function simulate(ops: Op[], seed: number) {
  const core = makeCore([{ name: 'a' }, { name: 'b', weight: 2 }, { name: 'c' }], 'fixed', {}, { cooldownMs: 5_000 });
  const rng = seeded(seed);
  const lives: Array<{ life: RequestLife; live: number[]; dones: number }> = [];
  const log: LifecycleAction[][] = [];
  let now = 0;
  const absorb = (i: number, actions: LifecycleAction[]) => {
    const l = lives[i]!;
    for (const a of actions) {
      if (a.kind === 'dispatch') l.live.push(a.attemptId);
      if (a.kind === 'cancel') l.live = l.live.filter((x) => x !== a.attemptId);
      if (a.kind === 'done') l.dones++;
    }
    log.push(actions);
  };
  for (const o of ops) {
    if (o.kind === 'tick') now += o.ms;
    else if (o.kind === 'start') {
      const { life, actions } = core.start(req({ requestId: `r${lives.length}` }), now, rng);
      lives.push({ life, live: [], dones: 0 });
      absorb(lives.length - 1, actions);
    } else if (lives.length > 0) {
      const i = o.life % lives.length;
      const l = lives[i]!;
      const attemptId = l.live[0];
      let actions: LifecycleAction[] = [];
      if (o.what === 4) actions = l.life.step({ kind: 'client_gone' }, now);
      else if (attemptId !== undefined) {
        if (o.what === 0) actions = l.life.step({ kind: 'first_token', attemptId }, now);
        else if (o.what === 1) {
          actions = l.life.step({ kind: 'finished', attemptId, usage: { inputTokens: 1, outputTokens: 1, cachedTokens: 0 } }, now);
          l.live = l.live.filter((x) => x !== attemptId);
        } else {
          actions = l.life.step({ kind: 'failed', attemptId, outcome: outcomes[o.outcome]! }, now);
          l.live = l.live.filter((x) => x !== attemptId);
        }
      }
      absorb(i, actions);
    }
    core.health.invariants();
    for (const l of lives) l.life.invariants();
    for (const s of core.health.snapshot(now)) expect(s.claimsInFlight).toBeGreaterThanOrEqual(0);
  }
  // Drain: end every live attempt so every life finishes.
  for (let i = 0; i < lives.length; i++) {
    const l = lives[i]!;
    let guard = 0;
    while (!l.life.isDone && guard++ < 10) {
      const attemptId = l.live.shift();
      absorb(i, attemptId === undefined ? l.life.step({ kind: 'client_gone' }, now) : l.life.step({ kind: 'finished', attemptId, usage: { inputTokens: 1, outputTokens: 1, cachedTokens: 0 } }, now));
    }
  }
  return { core, lives, log, now };
}

describe('lifecycle under random interleavings', () => {
  it('every claim ends exactly once; every life emits exactly one done; never two probes', () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 150 }), fc.integer(), (ops, seed) => {
        const { core, lives, now } = simulate(ops, seed);
        for (const l of lives) {
          expect(l.life.isDone).toBe(true);
          expect(l.dones).toBe(1);
        }
        for (const s of core.health.snapshot(now)) expect(s.claimsInFlight).toBe(0);
        core.health.invariants();
      }),
      { numRuns: 150 },
    );
  });

  it('same seed and script ⇒ identical actions', () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 80 }), fc.integer(), (ops, seed) => {
        expect(JSON.stringify(simulate(ops, seed).log)).toBe(JSON.stringify(simulate(ops, seed).log));
      }),
      { numRuns: 50 },
    );
  });
});
