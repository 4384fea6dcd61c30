// A unit of a limit shared across gateway replicas refused by the driver (`shared_unit_refused`,
// no upstream call): the RouteWise life falls to its next route as the local quota would have
// made it, the breaker hears nothing, every reservation is settled; with no route left the client
// gets 429 with the wait. And a shared "spent until" fact keeps the next requests off the route.
import { describe, expect, it } from 'vitest';
import { RoutingCore, deriveRng, parseModelsConfig, type LifecycleAction } from '../../../core/index.ts';
import type { RouteWisePlanner } from '../../../core/strategies/routewise/routewise.ts';
import { rreq } from './rw-harness.ts';

const usage = { inputTokens: 1000, outputTokens: 200, cachedTokens: 0 };
const DEAR = { input_usd_per_1m: 10, output_usd_per_1m: 20 };

function core(withApi = true): { core: RoutingCore; planner: RouteWisePlanner } {
  const route: Array<Record<string, unknown>> = [{ base_url: 'sim://plan', provider_type: 'quota', quota: { limit: 100, window_sec: 3600 }, pricing: DEAR }];
  if (withApi) route.push({ base_url: 'sim://api', pricing: DEAR });
  const c = new RoutingCore(
    parseModelsConfig({ models: [{ id: 'm', router: 'routewise', router_params: { budget_alpha: 0, envelope_min_samples: 1, min_samples: 1000, cold_start_lease_sec: 0 }, route }] }),
    { settings: { prefill_aware_enabled: false, affinity_enabled: false } },
  );
  return { core: c, planner: c.model('m')!.planner as RouteWisePlanner };
}

const dispatch = (actions: LifecycleAction[]) => actions.find((a): a is Extract<LifecycleAction, { kind: 'dispatch' }> => a.kind === 'dispatch');

/** One answered request pinned to `pin`: calibrates the cost envelope. */
function warm(c: RoutingCore, pin: string, now: number): void {
  const { life, actions } = c.start(rreq({ pin }), now, deriveRng(1, 'warm'));
  const d = dispatch(actions)!;
  life.step({ kind: 'first_token', attemptId: d.attemptId }, now + 100);
  life.step({ kind: 'finished', attemptId: d.attemptId, usage }, now + 200);
}

describe('shared_unit_refused in a RouteWise life', () => {
  it('falls to the next route without an upstream failure, and the shared fact keeps later requests off it', () => {
    const { core: c, planner } = core();
    warm(c, 'm:api', 0);
    const rng = deriveRng(2, 'refuse');
    const { life, actions } = c.start(rreq(), 1_000, rng);
    const first = dispatch(actions)!;
    expect(first.endpointId).toBe('m:plan'); // the quota is the cheapest
    // The driver could not take the unit replica-wide; it feeds back what Redis said, then reports the attempt.
    planner.ledger.applySharedQuota('m:plan', { usedPerWindow: [100], untilMs: 2_000, fullUntilMs: 60_000 });
    const next = life.step({ kind: 'failed', attemptId: first.attemptId, outcome: { kind: 'shared_unit_refused', unit: 'quota', retryAfterMs: 59_000 } }, 1_001);
    expect(dispatch(next)?.endpointId).toBe('m:api');
    const d = dispatch(next)!;
    life.step({ kind: 'first_token', attemptId: d.attemptId }, 1_100);
    const end = life.step({ kind: 'finished', attemptId: d.attemptId, usage }, 1_200);
    const done = end.find((a) => a.kind === 'done') as Extract<LifecycleAction, { kind: 'done' }>;
    expect(done.metadata.status).toBe('ok');
    expect(done.metadata.attempts.map((a) => [a.endpointId, a.outcome.kind])).toEqual([['m:plan', 'shared_unit_refused'], ['m:api', 'ok']]);
    expect(c.health.snapshotOf('m:plan', 1_200).state).toBe('closed');
    planner.invariants();
    // Spent until 60 s (the fact): the next request goes on demand at once.
    const later = c.start(rreq(), 3_000, rng);
    expect(dispatch(later.actions)?.endpointId).toBe('m:api');
    // After it, the quota plans from the local count again.
    const after = c.start(rreq(), 60_000, rng);
    expect(dispatch(after.actions)?.endpointId).toBe('m:plan');
  });

  it('with no other route the client gets 429 with the wait', () => {
    const { core: c } = core(false);
    warm(c, 'm:plan', 0);
    const { life, actions } = c.start(rreq(), 1_000, deriveRng(3, 'only'));
    const d = dispatch(actions)!;
    const out = life.step({ kind: 'failed', attemptId: d.attemptId, outcome: { kind: 'shared_unit_refused', unit: 'quota', retryAfterMs: 4_200 } }, 1_001);
    expect(out.find((a) => a.kind === 'respond_error')).toMatchObject({ status: 429, code: 'upstream_rate_limited', retryAfterSec: 5 });
  });
});
