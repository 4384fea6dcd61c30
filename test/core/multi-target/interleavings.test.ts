// Random interleavings of many concurrent multi-target lives: every life ends with exactly one
// `done`, every attempt's in-flight count is returned, backoffs never overlap an attempt, the
// fallback budget holds, and the same seed and script give byte-identical actions.
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import type { LifecycleAction, Outcome, RequestLife } from '../../../core/index.ts';
import { BUILTIN_STRATEGIES } from '../../../core/index.ts';
import { seeded } from '../harness.ts';
import { group, makeMtCore, mreq } from './mt-harness.ts';

const outcomes: Outcome[] = [
  { kind: 'http_status', status: 503, errorClass: 'server_error', retryAfterMs: null },
  { kind: 'http_status', status: 429, errorClass: 'rate_limited', retryAfterMs: 900 },
  { kind: 'http_status', status: 400, errorClass: 'client_error', retryAfterMs: null },
  { kind: 'transport', cause: 'reset' },
  { kind: 'first_token_timeout' },
];

type Op = { kind: 'start'; tags: number } | { kind: 'event'; life: number; what: number; outcome: number } | { kind: 'tick'; ms: number };

const op = fc.oneof(
  fc.record({ kind: fc.constant('start' as const), tags: fc.nat(2) }),
  fc.record({ kind: fc.constant('event' as const), life: fc.nat(30), what: fc.nat(5), outcome: fc.nat(outcomes.length - 1) }),
  fc.record({ kind: fc.constant('tick' as const), ms: fc.integer({ min: 1, max: 5_000 }) }),
);

interface Tracked {
  life: RequestLife;
  live: number[];
  waits: Array<{ id: number; at: number }>;
  dones: number;
}

function simulate(ops: Op[], seed: number, strategy: string) {
  const core = makeMtCore(
    [{ id: 'a', cooldown: { enabled: true, duration_sec: 3, consecutive_failures: 2 } }, 'b', 'c', 'd'],
    [
      group('g', [{ model: 'a', tags: ['x'], rate_limit: { requests_per_minute: 120, burst: 2 } }, { model: 'b', weight: 2, retries: 1 }, { model: 'c', priority: -1, tags: ['default', 'x'] }, { model: 'd', priority: -1 }], {
        strategy,
        max_fallbacks: 2,
        retry_on_429: true,
        stream_timeout_ms: 2_000,
        when_all_unavailable: 'try_anyway',
      }),
    ],
  );
  const rng = seeded(seed);
  const lives: Tracked[] = [];
  const log: LifecycleAction[][] = [];
  let now = 0;
  const absorb = (i: number, actions: LifecycleAction[]) => {
    const l = lives[i]!;
    for (const a of actions) {
      if (a.kind === 'dispatch') l.live.push(a.attemptId);
      if (a.kind === 'cancel') l.live = l.live.filter((x) => x !== a.attemptId);
      if (a.kind === 'wait_until') l.waits.push({ id: a.deadlineId, at: a.atMs });
      if (a.kind === 'done') l.dones++;
    }
    // One upstream attempt at a time (waits now include the overall and headers deadlines).
    expect(l.live.length).toBeLessThanOrEqual(1);
    log.push(actions);
  };
  const fire = () => {
    lives.forEach((l, i) => {
      const due = l.waits.filter((w) => w.at <= now);
      l.waits = l.waits.filter((w) => w.at > now);
      for (const w of due) absorb(i, l.life.step({ kind: 'deadline', deadlineId: w.id }, now));
    });
  };
  for (const o of ops) {
    if (o.kind === 'tick') {
      now += o.ms;
      fire();
    } else if (o.kind === 'start') {
      const { life, actions } = core.start(mreq({ requestId: `r${lives.length}`, stream: lives.length % 2 === 0, routingTags: o.tags === 0 ? null : ['x'] }), now, rng);
      lives.push({ life, live: [], waits: [], dones: 0 });
      absorb(lives.length - 1, actions);
    } else if (lives.length > 0) {
      const i = o.life % lives.length;
      const l = lives[i]!;
      const attemptId = l.live[0];
      let actions: LifecycleAction[] = [];
      if (o.what === 5) actions = l.life.step({ kind: 'client_gone' }, now);
      else if (attemptId !== undefined) {
        if (o.what === 0) actions = l.life.step({ kind: 'first_token', attemptId }, now);
        else if (o.what === 1) actions = l.life.step({ kind: 'first_output', attemptId }, now);
        else if (o.what === 2) {
          l.live = l.live.filter((x) => x !== attemptId);
          actions = l.life.step({ kind: 'finished', attemptId, usage: { inputTokens: 1, outputTokens: 1, cachedTokens: 0 } }, now);
        } else {
          l.live = l.live.filter((x) => x !== attemptId);
          actions = l.life.step({ kind: 'failed', attemptId, outcome: outcomes[o.outcome]! }, now);
        }
      }
      absorb(i, actions);
      if (l.life.isDone) l.waits = [];
    }
    core.invariants();
    for (const l of lives) l.life.invariants();
  }
  for (let i = 0; i < lives.length; i++) {
    const l = lives[i]!;
    let guard = 0;
    while (!l.life.isDone && guard++ < 60) {
      const attemptId = l.live.shift();
      const w = l.waits.shift();
      absorb(i, attemptId !== undefined ? l.life.step({ kind: 'finished', attemptId, usage: { inputTokens: 1, outputTokens: 1, cachedTokens: 0 } }, now) : w ? l.life.step({ kind: 'deadline', deadlineId: w.id }, Math.max(now, w.at)) : l.life.step({ kind: 'client_gone' }, now));
    }
  }
  return { core, lives, log };
}

describe('multi-target lives under random interleavings', () => {
  for (const strategy of BUILTIN_STRATEGIES.map((s) => s.name)) {
    it(`${strategy}: one done per life, in-flight returned, invariants hold; same seed ⇒ same actions`, () => {
      fc.assert(
        fc.property(fc.array(op, { minLength: 1, maxLength: 120 }), fc.integer(), (ops, seed) => {
          const { core, lives, log } = simulate(ops, seed, strategy);
          for (const l of lives) {
            expect(l.life.isDone).toBe(true);
            expect(l.dones).toBe(1);
          }
          for (const s of core.endpointStats.snapshot()) expect(s.inFlight).toBe(0);
          core.invariants();
          expect(JSON.stringify(simulate(ops, seed, strategy).log)).toBe(JSON.stringify(log));
        }),
        { numRuns: 40 },
      );
    });
  }
});
