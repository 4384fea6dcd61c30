// Issue #6 "nothing leaks": random interleavings of many lives over a model with a local engine
// under an engine hold, a limited hosted route and an offload route. Every slot, hold place,
// claim and lease is released on every path; every life emits exactly one `done`; a driver that
// never drains wakeups still sees every life end (granted waiters go at their give-up time).
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import type { LifecycleAction, Outcome, RequestLife } from '../../../core/index.ts';
import { lcCore, rq, rng, usage } from './lc-harness.ts';

const outcomes: Outcome[] = [
  { kind: 'http_status', status: 500, errorClass: 'server_error', retryAfterMs: null },
  { kind: 'http_status', status: 429, errorClass: 'rate_limited', retryAfterMs: 3_000 },
  { kind: 'http_status', status: 503, errorClass: 'server_error', retryAfterMs: 1_000 },
  { kind: 'http_status', status: 400, errorClass: 'context_length', retryAfterMs: null },
  { kind: 'transport', cause: 'reset' },
];

type Op =
  | { kind: 'start'; stream: boolean; pin: boolean; big: boolean }
  | { kind: 'event'; life: number; what: number; outcome: number }
  | { kind: 'tick'; ms: number };

const op = fc.oneof(
  fc.record({ kind: fc.constant('start' as const), stream: fc.boolean(), pin: fc.boolean(), big: fc.boolean() }),
  fc.record({ kind: fc.constant('event' as const), life: fc.nat(40), what: fc.nat(6), outcome: fc.nat(outcomes.length - 1) }),
  fc.record({ kind: fc.constant('tick' as const), ms: fc.integer({ min: 1, max: 40_000 }) }),
);

interface L {
  life: RequestLife;
  live: number[];
  dones: number;
}

function run(ops: Op[], drain: boolean) {
  const core = lcCore({
    routes: { engine2: {} },
    offload: { route: 'm:offload-api', wait_sec: 2, engine_queue_limit: 1, max_input_tokens: 5_000 },
    settings: { upstream_concurrency_initial_limit: 2, timeout_overall_sec: 600, timeout_headers_sec: 60 },
  });
  const lives: L[] = [];
  const timers: Array<{ l: L; id: number; at: number }> = [];
  let now = 0;
  const byLife = new Map<RequestLife, L>();
  const absorb = (l: L, actions: LifecycleAction[]) => {
    for (const a of actions) {
      if (a.kind === 'dispatch') l.live.push(a.attemptId);
      else if (a.kind === 'cancel') l.live = l.live.filter((x) => x !== a.attemptId);
      else if (a.kind === 'wait_until') timers.push({ l, id: a.deadlineId, at: a.atMs });
      else if (a.kind === 'done') {
        l.dones++;
        l.live = [];
      }
    }
    if (!drain) return;
    for (let w = core.drainWakeups(); w.length > 0; w = core.drainWakeups()) {
      for (const x of w) absorb(byLife.get(x.life)!, x.life.step(x.event, now));
    }
  };
  const advance = (to: number) => {
    for (;;) {
      timers.sort((a, b) => a.at - b.at || a.id - b.id);
      const t = timers[0];
      if (!t || t.at > to) break;
      timers.shift();
      now = Math.max(now, t.at);
      absorb(t.l, t.l.life.step({ kind: 'deadline', deadlineId: t.id }, now));
    }
    now = Math.max(now, to);
  };
  for (const o of ops) {
    if (o.kind === 'tick') advance(now + o.ms);
    else if (o.kind === 'start') {
      const { life, actions } = core.start(rq({ stream: o.stream, pin: o.pin ? 'm:engine' : null, inputTokens: o.big ? 9_000 : 100 }), now, rng());
      const l: L = { life, live: [], dones: 0 };
      lives.push(l);
      byLife.set(life, l);
      absorb(l, actions);
    } else if (lives.length > 0) {
      const l = lives[o.life % lives.length]!;
      const id = l.live[0];
      if (o.what === 6) absorb(l, l.life.step({ kind: 'client_gone' }, now));
      else if (id !== undefined) {
        const e =
          o.what === 0 ? ({ kind: 'first_output', attemptId: id } as const)
          : o.what === 1 ? ({ kind: 'first_token', attemptId: id } as const)
          : o.what === 2 ? ({ kind: 'chunk', attemptId: id } as const)
          : o.what === 3 ? ({ kind: 'finished', attemptId: id, usage } as const)
          : ({ kind: 'failed', attemptId: id, outcome: outcomes[o.outcome]! } as const);
        if (e.kind === 'finished' || e.kind === 'failed') l.live = l.live.filter((x) => x !== id);
        absorb(l, l.life.step(e, now));
      }
    }
    core.invariants();
    for (const l of lives) l.life.invariants();
  }
  advance(now + 10_000_000); // past every overall deadline: every life must end by itself
  return { core, lives, now };
}

describe('the full lifecycle leaks nothing', () => {
  for (const drain of [true, false]) {
    it(`every slot, hold place, claim and lease is released; one done per life (drain wakeups: ${drain})`, () => {
      fc.assert(
        fc.property(fc.array(op, { maxLength: 120 }), (ops) => {
          const { core, lives, now } = run(ops, drain);
          for (const l of lives) {
            expect(l.life.isDone).toBe(true);
            expect(l.dones).toBe(1);
            l.life.invariants();
          }
          expect(core.limiter.totalHeld()).toBe(0);
          expect(core.hold.totalHeld()).toBe(0);
          for (const s of core.health.snapshot(now)) expect(s.claimsInFlight).toBe(0);
          for (const s of core.prefill.snapshot()) expect(s.leasesInFlight).toBe(0);
          core.invariants();
        }),
        { numRuns: 400 },
      );
    });
  }
});
