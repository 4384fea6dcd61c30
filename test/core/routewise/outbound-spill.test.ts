// RouteWise and the gateway's outbound slots (seed 000 "出站并发"): a route whose slots are full is
// passed over for the next-best one instead of queueing behind it; with every route full the
// request queues at the first choice; and the life tap counts slot waits in the TTFT it learns.
import { describe, expect, it } from 'vitest';
import { RoutingCore, deriveRng, parseModelsConfig, type LifecycleAction, type RequestLife } from '../../../core/index.ts';
import type { RouteWisePlanner } from '../../../core/strategies/routewise/routewise.ts';
import { rreq } from './rw-harness.ts';

const usage = { inputTokens: 1000, outputTokens: 200, cachedTokens: 0 };

/** Two on-demand routes behind the outbound limiter (`local: false`), one slot each. */
function core(): { core: RoutingCore; planner: RouteWisePlanner } {
  const c = new RoutingCore(
    parseModelsConfig({
      models: [
        {
          id: 'm',
          router: 'routewise',
          router_params: { budget_alpha: 1 },
          route: [
            { base_url: 'sim://fast', local: false, provider: 'fast', pricing: { input_usd_per_1m: 1, output_usd_per_1m: 2 } },
            { base_url: 'sim://slow', local: false, provider: 'slow', pricing: { input_usd_per_1m: 1, output_usd_per_1m: 2 } },
          ],
        },
      ],
    }),
    { settings: { upstream_concurrency_initial_limit: 1, prefill_aware_enabled: false, affinity_enabled: false } },
  );
  return { core: c, planner: c.model('m')!.planner as RouteWisePlanner };
}

const kinds = (actions: LifecycleAction[]) => actions.map((a) => (a.kind === 'dispatch' || a.kind === 'acquire_slot' ? `${a.kind}:${a.endpointId}` : a.kind)).filter((k) => k.includes(':'));

/** Trains the profiles: fast answers in 300 ms, slow in 900 ms (pinned requests, one at a time). */
function train(c: RoutingCore): number {
  const rng = deriveRng(1, 'train');
  let now = 0;
  for (let i = 0; i < 20; i++) {
    const pin = i % 2 === 0 ? 'm:fast' : 'm:slow';
    const { life, actions } = c.start(rreq({ pin }), now, rng);
    const d = actions.find((a) => a.kind === 'dispatch') as Extract<LifecycleAction, { kind: 'dispatch' }>;
    life.step({ kind: 'first_token', attemptId: d.attemptId }, now + (pin === 'm:fast' ? 300 : 900));
    life.step({ kind: 'finished', attemptId: d.attemptId, usage }, now + 1000);
    now += 2000;
  }
  return now;
}

describe('RouteWise with full outbound slots', () => {
  it('spills to the next-best route while the best one is full; queues at the best once all are full', () => {
    const { core: c, planner } = core();
    let now = train(c);
    const rng = deriveRng(2, 'spill');
    const first = c.start(rreq(), now, rng);
    expect(kinds(first.actions)).toEqual(['dispatch:m:fast']);
    const second = c.start(rreq(), now, rng);
    expect(kinds(second.actions)).toEqual(['dispatch:m:slow']); // fast's one slot is taken
    expect(planner.lastDecision.endpointId).toBe('m:slow');
    const third = c.start(rreq(), now, rng);
    expect(kinds(third.actions)).toEqual(['acquire_slot:m:fast']); // every route full: wait at the best
    for (const { life } of [first, second, third]) (life as RequestLife).step({ kind: 'client_gone' }, (now += 1));
    for (let w = c.drainWakeups(); w.length > 0; w = c.drainWakeups()) for (const x of w) x.life.step({ kind: 'client_gone' }, now);
    c.invariants();
  });

  it('time queued for a slot counts in the TTFT the route is profiled with', () => {
    const { core: c, planner } = core();
    const now = train(c);
    const before = planner.profile('m:fast')!.meanMs(now)!;
    const rng = deriveRng(3, 'queue');
    const holder = c.start(rreq({ pin: 'm:fast' }), now, rng);
    const waiter = c.start(rreq({ pin: 'm:fast' }), now, rng);
    expect(kinds(waiter.actions)).toEqual(['acquire_slot:m:fast']);
    // The holder finishes 5 s later; the waiter is then sent and answers 300 ms after that.
    const h = holder.actions.find((a) => a.kind === 'dispatch') as Extract<LifecycleAction, { kind: 'dispatch' }>;
    holder.life.step({ kind: 'first_token', attemptId: h.attemptId }, now + 300);
    holder.life.step({ kind: 'finished', attemptId: h.attemptId, usage }, now + 5000);
    const woken = c.drainWakeups();
    expect(woken).toHaveLength(1);
    const sent = woken[0]!.life.step(woken[0]!.event, now + 5000);
    const d = sent.find((a) => a.kind === 'dispatch') as Extract<LifecycleAction, { kind: 'dispatch' }>;
    expect(d.endpointId).toBe('m:fast');
    waiter.life.step({ kind: 'first_token', attemptId: d.attemptId }, now + 5300);
    waiter.life.step({ kind: 'finished', attemptId: d.attemptId, usage }, now + 6000);
    // 10 samples of 300 ms, then 300 (holder) and 5,300 (waiter: queued at `now`) ⇒ mean rises.
    const after = planner.profile('m:fast')!.meanMs(now + 6000)!;
    expect(after).toBeCloseTo((before * 10 + 300 + 5300) / 12, 6);
    c.invariants();
  });
});
