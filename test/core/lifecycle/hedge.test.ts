// Hedging as a lifecycle action (issue #13, seed 000 RouteWise hedging): a planner's hedge order
// makes the life send a second attempt at the checkpoint while the first is in flight; the first
// answer wins, the other is cancelled (`hedge_lost`), and every claim and lease ends once.
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  RoutingCore,
  deriveRng,
  parseModelsConfig,
  type LifecycleAction,
  type RequestLife,
  type RoutingMetadata,
  type StrategyDefinition,
} from '../../../core/index.ts';
import { BUILTIN_STRATEGIES, StrategyRegistry } from '../../../core/strategies/registry.ts';
import { rwCore, rreq, type RwRoute } from '../routewise/rw-harness.ts';
import { all, MiniDriver, one, usage } from './lc-harness.ts';

/** Always picks route `a` and orders a hedge to `b` after 1,000 ms. */
const hedgeAtOneSecond: StrategyDefinition<Record<string, never>> = {
  name: 'hedge_test',
  description: 'test: primary a, hedge to b after 1 s',
  paramsSchema: z.object({}).strict() as unknown as z.ZodType<Record<string, never>>,
  create() {
    return {
      plansHedges: true,
      pick(candidates) {
        const i = candidates.findIndex((c) => c.endpointId === 'm:a');
        return { candidate: i < 0 ? 0 : i, reason: 'test', hedge: { afterMs: 1000, endpointId: 'm:b' } };
      },
    };
  },
};

function hedgeCore(): RoutingCore {
  return new RoutingCore(
    parseModelsConfig({ models: [{ id: 'm', router: 'hedge_test', route: ['a', 'b', 'c'].map((n) => ({ base_url: `sim://${n}`, weight: 1 })) }] }),
    { registry: new StrategyRegistry([...BUILTIN_STRATEGIES, hedgeAtOneSecond]), settings: { prefill_aware_enabled: false, affinity_enabled: false } },
  );
}

const dispatchTo = (actions: LifecycleAction[], endpointId: string) => all(actions, 'dispatch').find((d) => d.endpointId === endpointId);
const doneOf = (actions: LifecycleAction[]): RoutingMetadata | undefined => one(actions, 'done')?.metadata;

function started(d: MiniDriver, stream = true): { life: RequestLife; a: number } {
  const { life, actions } = d.start(rreq({ stream }));
  const first = dispatchTo(actions, 'm:a');
  expect(first).toBeDefined();
  return { life, a: first!.attemptId };
}

describe('hedging in the request lifecycle', () => {
  it('a silent primary gets the backup at the checkpoint; the backup answers first, the primary is cancelled as hedge_lost', () => {
    const core = hedgeCore();
    const d = new MiniDriver(core);
    const { life, a } = started(d);
    expect(d.advanceTo(999).filter((x) => x.kind === 'dispatch')).toEqual([]);
    const atCheckpoint = d.advanceTo(1000);
    const b = dispatchTo(atCheckpoint, 'm:b');
    expect(b).toBeDefined(); // two attempts in flight now
    core.invariants();
    const won = d.step(life, { kind: 'first_token', attemptId: b!.attemptId });
    expect(won).toContainEqual({ kind: 'commit', attemptId: b!.attemptId });
    expect(won).toContainEqual({ kind: 'cancel', attemptId: a, reason: 'hedge_lost' });
    // The loser's late events are ignored.
    expect(d.step(life, { kind: 'first_token', attemptId: a })).toEqual([]);
    const md = doneOf(d.step(life, { kind: 'finished', attemptId: b!.attemptId, usage }))!;
    expect(md).toMatchObject({ status: 'ok', endpointId: 'm:b', hedgeEndpointId: 'm:b', fallback: false });
    expect(md.attempts.map((x) => [x.endpointId, x.outcome.kind])).toEqual([
      ['m:a', 'cancelled'],
      ['m:b', 'ok'],
    ]);
    life.invariants();
    core.invariants();
    expect(core.prefill.leasesInFlight).toBe(0);
    expect(core.health.snapshot(d.now).every((e) => e.claimsInFlight === 0)).toBe(true);
  });

  it('a primary that answers before the checkpoint is never hedged', () => {
    const core = hedgeCore();
    const d = new MiniDriver(core);
    const { life, a } = started(d);
    d.now = 900;
    d.step(life, { kind: 'first_token', attemptId: a });
    expect(all(d.advanceTo(5000), 'dispatch')).toEqual([]);
    const md = doneOf(d.step(life, { kind: 'finished', attemptId: a, usage }))!;
    expect(md).toMatchObject({ endpointId: 'm:a', hedgeEndpointId: null, attempts: [expect.objectContaining({ endpointId: 'm:a' })] });
    core.invariants();
  });

  it('the primary can still win the race: the backup is cancelled', () => {
    const core = hedgeCore();
    const d = new MiniDriver(core);
    const { life, a } = started(d);
    const b = dispatchTo(d.advanceTo(1000), 'm:b')!;
    d.now = 1100;
    const won = d.step(life, { kind: 'first_token', attemptId: a });
    expect(won).toEqual([
      { kind: 'commit', attemptId: a },
      { kind: 'cancel', attemptId: b.attemptId, reason: 'hedge_lost' },
    ]);
    expect(doneOf(d.step(life, { kind: 'finished', attemptId: a, usage }))).toMatchObject({ endpointId: 'm:a', hedgeEndpointId: 'm:b', fallback: false });
    core.invariants();
  });

  it('one side failing waits for the other; both failing falls back to the next route', () => {
    const core = hedgeCore();
    const d = new MiniDriver(core);
    const { life, a } = started(d);
    const b = dispatchTo(d.advanceTo(1000), 'm:b')!;
    const failed = { kind: 'http_status', status: 500, retryAfterMs: null, errorClass: 'server_error' } as const;
    expect(d.step(life, { kind: 'failed', attemptId: b.attemptId, outcome: failed })).toEqual([]); // primary still racing
    const next = d.step(life, { kind: 'failed', attemptId: a, outcome: failed });
    const c = dispatchTo(next, 'm:c');
    expect(c).toBeDefined();
    const md = doneOf(d.step(life, { kind: 'finished', attemptId: c!.attemptId, usage }))!;
    expect(md).toMatchObject({ endpointId: 'm:c', fallback: true, hedgeEndpointId: 'm:b' });
    core.invariants();
  });

  it('non-streaming: the first finished answer wins', () => {
    const core = hedgeCore();
    const d = new MiniDriver(core);
    const { life, a } = started(d, false);
    const b = dispatchTo(d.advanceTo(1000), 'm:b')!;
    const out = d.step(life, { kind: 'finished', attemptId: b.attemptId, usage });
    expect(out).toContainEqual({ kind: 'commit', attemptId: b.attemptId });
    expect(out).toContainEqual({ kind: 'cancel', attemptId: a, reason: 'hedge_lost' });
    expect(doneOf(out)).toMatchObject({ endpointId: 'm:b', fallback: false });
    core.invariants();
  });

  it('no hedge to a backup whose breaker is open', () => {
    const core = hedgeCore();
    for (let i = 0; i < 3; i++) core.health.endDispatch(core.health.beginDispatch('m:b', 0)!, { kind: 'transport', cause: 'refused' }, 0);
    const d = new MiniDriver(core);
    const { life, a } = started(d);
    expect(all(d.advanceTo(1500), 'dispatch')).toEqual([]);
    d.step(life, { kind: 'first_token', attemptId: a });
    expect(doneOf(d.step(life, { kind: 'finished', attemptId: a, usage }))).toMatchObject({ endpointId: 'm:a', hedgeEndpointId: null });
    core.invariants();
  });
});

describe('RouteWise hedges through the lifecycle', () => {
  it('a hedged request: both attempts dispatched, the winner feeds its TTFT, the loser is a censored observation', () => {
    const routes: RwRoute[] = [
      { name: 'tail', pricing: { input_usd_per_1m: 0.1, output_usd_per_1m: 1.0 } },
      { name: 'steady', pricing: { input_usd_per_1m: 0.3, output_usd_per_1m: 1.2 } },
    ];
    const { core, planner } = rwCore(routes, { hedge: 'probability', budget_alpha: 0 });
    const rng = deriveRng(3, 'hedge');
    // Warm the profiles: tail 80 % at 400 ms and 20 % at 8 s, steady always 600 ms.
    let k = 0;
    const d = new MiniDriver(core);
    for (let i = 0; i < 40; i++) {
      const pin = i % 2 === 0 ? 'm:tail' : 'm:steady';
      const { life, actions } = core.start(rreq({ pin }), d.now, rng);
      const disp = one(actions, 'dispatch')!;
      const ttft = pin === 'm:steady' ? 600 : k++ % 5 === 0 ? 8000 : 400;
      life.step({ kind: 'first_token', attemptId: disp.attemptId }, d.now + ttft);
      life.step({ kind: 'finished', attemptId: disp.attemptId, usage }, d.now + ttft + 10);
      d.now += 10_000;
    }
    const start = d.now;
    const { life, actions } = d.start(rreq());
    const primary = one(actions, 'dispatch')!;
    expect(primary.endpointId).toBe('m:tail');
    expect(planner.lastDecision.hedge).toMatchObject({ kind: 'hedge', endpointId: 'm:steady', atMs: 2325 });
    const backup = dispatchTo(d.advanceTo(start + 2325), 'm:steady');
    expect(backup).toBeDefined();
    const before = planner.profile('m:tail')!.counts(d.now).censored;
    d.now = start + 2325 + 600;
    const won = d.step(life, { kind: 'first_token', attemptId: backup!.attemptId });
    expect(won).toContainEqual({ kind: 'cancel', attemptId: primary.attemptId, reason: 'hedge_lost' });
    expect(planner.profile('m:tail')!.counts(d.now).censored).toBe(before + 1);
    const md = doneOf(d.step(life, { kind: 'finished', attemptId: backup!.attemptId, usage }))!;
    expect(md).toMatchObject({ endpointId: 'm:steady', hedgeEndpointId: 'm:steady', fallback: false });
    core.invariants();
  });
});
