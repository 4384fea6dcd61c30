// The `routewise` planner through the seam (issue #13): cold start and leases, the LP decision
// and its α behaviour, quota routes masked until the envelope calibrates then priced by ψ(z),
// concurrency slots, reservations settled on every path, the 429 fallback order, per-request α,
// hedge plans, start-up errors, and parameter validation naming keys.
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { deriveRng, parseModelsConfig, RoutingCore, type Candidate } from '../../../core/index.ts';
import { parseRouteWiseParams } from '../../../core/strategies/routewise/params.ts';
import { RouteWisePlanner } from '../../../core/strategies/routewise/routewise.ts';
import { routeWiseRoute } from '../../../core/strategies/routewise/route-spec.ts';
import { makeCore } from '../harness.ts';
import { MiniSim, dispatches, rreq, rwCore, startTapped, type Answer, type RwRoute } from './rw-harness.ts';

const pricing = (input: number, output: number) => ({ pricing: { input_usd_per_1m: input, output_usd_per_1m: output } });
// 1,000 input + 200 output tokens: cheap 3e-4, mid 5.4e-4, fast 1.6e-3 USD.
const THREE: RwRoute[] = [
  { name: 'cheap', ...pricing(0.1, 1.0) },
  { name: 'mid', ...pricing(0.3, 1.2) },
  { name: 'fast', ...pricing(1.0, 3.0) },
];
const TTFT: Record<string, number> = { 'm:cheap': 3000, 'm:mid': 1500, 'm:fast': 500 };
const fixed = (id: string): Answer => ({ ttftMs: TTFT[id] ?? 1000 });

/** Warms every route of THREE with `n` sequential requests each (cold start walks them in price order). */
function warmed(params: Record<string, unknown> = {}, n = 40) {
  const { core, planner } = rwCore(THREE, { budget_alpha: 1, ...params });
  const sim = new MiniSim(core, deriveRng(1, 'strategy/routewise'), fixed);
  for (let i = 0; i < n; i++) sim.arrive(i * 5_000, rreq());
  sim.run();
  return { core, planner, sim, now: sim.now };
}

describe('cold start', () => {
  it('with nothing measured the cheapest route is tried; a lease spreads a burst over the others', () => {
    const { core, planner } = rwCore(THREE, { budget_alpha: 1 });
    const rng = deriveRng(1, 'x');
    const first = dispatches(startTapped(core, rreq(), 0, rng).actions)[0]!;
    expect(first.endpointId).toBe('m:cheap');
    expect(planner.lastDecision.reason).toBe('cold_start');
    // Same instant, cheap is leased: the next cheapest unmeasured route.
    expect(dispatches(startTapped(core, rreq(), 0, rng).actions)[0]!.endpointId).toBe('m:mid');
    expect(dispatches(startTapped(core, rreq(), 0, rng).actions)[0]!.endpointId).toBe('m:fast');
    // Everything leased: the cheapest again.
    expect(dispatches(startTapped(core, rreq(), 0, rng).actions)[0]!.endpointId).toBe('m:cheap');
    planner.invariants();
  });

  it('after warm-up every route is profiled and the LP decides', () => {
    const { planner, now } = warmed();
    for (const id of ['m:cheap', 'm:mid', 'm:fast']) expect(planner.profile(id)!.successes(now)).toBeGreaterThanOrEqual(5);
    expect(planner.profile('m:fast')!.meanMs(now)).toBe(500);
  });

  it('require_observations never explores: unmeasured routes only when nothing is measured', () => {
    const { core, planner } = rwCore(THREE, { budget_alpha: 1, cold_start: 'require_observations' });
    const sim = new MiniSim(core, deriveRng(2, 'x'), fixed);
    for (let i = 0; i < 30; i++) sim.arrive(i * 5_000, rreq());
    sim.run();
    expect(new Set(sim.results.map((r) => r.endpointId))).toEqual(new Set(['m:cheap']));
    expect(planner.profile('m:mid')!.observations(sim.now)).toBe(0);
  });

  it('α = 0 explores only routes as cheap as the cheapest (q = 0)', () => {
    const { core } = rwCore(THREE, { budget_alpha: 0 });
    const sim = new MiniSim(core, deriveRng(3, 'x'), fixed);
    for (let i = 0; i < 50; i++) sim.arrive(i * 5_000, rreq());
    sim.run();
    expect(sim.results.every((r) => r.endpointId === 'm:cheap')).toBe(true);
  });
});

describe('the LP decision', () => {
  it('α = 1 ⇒ fastest; α = 0 ⇒ cheapest; in between a two-route mix drawn with the given weights', () => {
    const { core, planner, now } = warmed();
    const rng = deriveRng(4, 'x');
    const pick = (alpha: number) => {
      const r = rreq({ headers: { 'x-switchyard-budget-alpha': String(alpha) } });
      const d = dispatches(startTapped(core, r, now, rng).actions)[0]!;
      return { id: d.endpointId, decision: { ...planner.lastDecision } };
    };
    expect(pick(1).id).toBe('m:fast');
    expect(pick(0).id).toBe('m:cheap');
    const { decision } = pick(0.5);
    // B = 3e-4 + 0.5·1.3e-3 = 9.5e-4: mix mid (5.4e-4) and fast (1.6e-3): π_fast = 4.1e-4/1.06e-3.
    expect(decision.reason).toBe('routewise_mix');
    expect(decision.mix.map((m) => m.endpointId)).toEqual(['m:mid', 'm:fast']);
    expect(decision.mix[1]!.weight).toBeCloseTo(4.1e-4 / 1.06e-3, 9);
    expect(decision.budget!.budgetUsd).toBeCloseTo(9.5e-4, 12);
    let fast = 0;
    const n = 4000;
    for (let i = 0; i < n; i++) if (pick(0.5).id === 'm:fast') fast++;
    const p = 4.1e-4 / 1.06e-3;
    expect(Math.abs(fast / n - p)).toBeLessThanOrEqual(4 * Math.sqrt((p * (1 - p)) / n));
  });

  it('order(): the drawn primary, the mix partner, then the rest by (over budget, latency, cost, id)', () => {
    const { planner, now } = warmed();
    const cands: Candidate[] = ['m:cheap', 'm:mid', 'm:fast'].map((endpointId, routeIndex) => ({ endpointId, weight: 1, routeIndex }));
    const r = rreq({ headers: { 'x-switchyard-budget-alpha': '0.5' } });
    const o = planner.order(cands, r, now, { float: () => 0.99, int: () => 0 }); // u ≥ π_mid ⇒ fast
    expect(o.order.map((i) => cands[i]!.endpointId)).toEqual(['m:fast', 'm:mid', 'm:cheap']);
    const o2 = planner.order(cands, r, now, { float: () => 0, int: () => 0 });
    expect(o2.order.map((i) => cands[i]!.endpointId)).toEqual(['m:mid', 'm:fast', 'm:cheap']);
    // α = 0.1 ⇒ B = 4.3e-4: cheap + mid mix (T̄ 2,187.5 ms beats cheap + fast); fast is over budget and last.
    const o3 = planner.order(cands, rreq({ headers: { 'x-switchyard-budget-alpha': '0.1' } }), now, { float: () => 0, int: () => 0 });
    expect(o3.order.map((i) => cands[i]!.endpointId)).toEqual(['m:cheap', 'm:mid', 'm:fast']);
    planner.settlePending(now);
  });

  it('a bad per-request α header is ignored (the model value applies)', () => {
    const { core, planner, now } = warmed({ budget_alpha: 1 });
    startTapped(core, rreq({ headers: { 'x-switchyard-budget-alpha': 'lots' } }), now, deriveRng(1, 'x'));
    expect(planner.lastDecision.alpha).toBe(1);
    startTapped(core, rreq({ headers: { 'x-switchyard-budget-alpha': '1.5' } }), now, deriveRng(1, 'x'));
    expect(planner.lastDecision.alpha).toBe(1);
  });

  it('failures before the first token are charged 60 s in T̄ and steer the LP away', () => {
    const { core, planner, now } = warmed();
    const sim = new MiniSim(core, deriveRng(5, 'x'), (id) => (id === 'm:fast' ? { fail: { kind: 'http_status', status: 503, errorClass: 'server_error', retryAfterMs: null }, afterMs: 10 } : fixed(id)));
    for (let i = 0; i < 20; i++) sim.arrive(now + i * 2_000, rreq());
    sim.run();
    expect(planner.profile('m:fast')!.counts(sim.now).failures).toBeGreaterThan(0);
    expect(planner.profile('m:fast')!.meanMs(sim.now)!).toBeGreaterThan(1500);
    // The failing route is no longer the primary once its mean passes mid's.
    const last = sim.results.slice(-5).map((r) => r.endpointId);
    expect(last.every((id) => id === 'm:mid')).toBe(true);
  });

  it('a client leaving before the first token is a censored observation, not a sample or a failure', () => {
    const { core, planner, now } = warmed();
    const { life, actions } = startTapped(core, rreq(), now, deriveRng(1, 'x'));
    const id = dispatches(actions)[0]!.endpointId;
    const before = planner.profile(id)!.counts(now);
    life.step({ kind: 'client_gone' }, now + 200);
    expect(planner.profile(id)!.counts(now + 200)).toEqual({ ...before, censored: before.censored + 1 });
    life.invariants();
  });
});

describe('quota and concurrency routes', () => {
  const SUBS: RwRoute[] = [
    { name: 'api', ...pricing(0.3, 1.2) },
    { name: 'plan', provider_type: 'quota', quota: { limit: 3, window_sec: 3600 } },
    { name: 'slots', provider_type: 'concurrency', concurrency: { limit: 2 } },
  ];

  it('quota routes are masked until the envelope is calibrated, then priced by ψ(z) and excluded when spent', () => {
    const { core, planner } = rwCore(SUBS, { budget_alpha: 0, envelope_min_samples: 3, cold_start: 'require_observations' }, 'm');
    const rng = deriveRng(6, 'x');
    const sim = new MiniSim(core, rng, (id) => ({ ttftMs: id === 'm:api' ? 800 : 600 }));
    // Occupy both slots for a long time so only api and the plan compete.
    for (let i = 0; i < 2; i++) planner.ledger.commit(planner.ledger.reserve('m:slots', 0, 0)!, 0);
    for (let i = 0; i < 3; i++) sim.arrive(i * 1_000, rreq());
    sim.run();
    expect(sim.results.map((r) => r.endpointId)).toEqual(['m:api', 'm:api', 'm:api']); // plan masked
    expect(planner.envelope.envelope(sim.now)).not.toBeNull();
    // Calibrated: ψ(0) = L ≈ 1e-3 × the API cost < API cost, so α = 0 takes the plan — 3 times, then it is spent.
    for (let i = 0; i < 5; i++) sim.arrive(10_000 + i * 1_000, rreq({ headers: { 'x-switchyard-budget-alpha': '0' } }));
    sim.run();
    expect(sim.results.slice(3).map((r) => r.endpointId)).toEqual(['m:plan', 'm:plan', 'm:plan', 'm:api', 'm:api']);
    expect(planner.ledger.quotaUsedFraction('m:plan', sim.now)).toBe(1);
  });

  it('ψ rises with use: with a quota half spent the plan costs √(L·U)', () => {
    const { planner } = rwCore(SUBS, { envelope_min_samples: 1 });
    planner.envelope.observe(1e-4, 0);
    planner.envelope.observe(1e-2, 0);
    const env = planner.envelope.envelope(0)!;
    planner.ledger.commit(planner.ledger.reserve('m:plan', 0, 0)!, 0);
    const cands: Candidate[] = ['m:api', 'm:plan', 'm:slots'].map((endpointId, routeIndex) => ({ endpointId, weight: 1, routeIndex }));
    planner.pick(cands, rreq(), 0, deriveRng(1, 'x'));
    expect(planner.ledger.quotaUsedFraction('m:plan', 0)).toBeCloseTo(1 / 3 + (planner.lastDecision.endpointId === 'm:plan' ? 1 / 3 : 0), 12);
    // The price ψ(1/3) as the LP saw it: between L and U.
    const z = 1 / 3;
    const psi = env.lowUsd * Math.pow(env.highUsd / env.lowUsd, z);
    expect(psi).toBeGreaterThan(env.lowUsd);
    expect(psi).toBeLessThan(env.highUsd);
  });

  it('a free concurrency slot costs 0; two in flight exclude it; slots free at the attempt end', () => {
    const { core, planner } = rwCore(SUBS, { budget_alpha: 0 });
    const rng = deriveRng(7, 'x');
    const lives = [0, 1, 2].map(() => startTapped(core, rreq(), 0, rng));
    const ids = lives.map((l) => dispatches(l.actions)[0]!.endpointId);
    // Cold start: slots (0 USD) first, leased ⇒ the next request goes elsewhere (cheapest unleased or api).
    expect(ids[0]).toBe('m:slots');
    expect(planner.ledger.slotsHeld('m:slots')).toBe(ids.filter((i) => i === 'm:slots').length);
    for (const l of lives) {
      const d = dispatches(l.actions)[0]!;
      l.life.step({ kind: 'first_token', attemptId: d.attemptId }, 10);
      l.life.step({ kind: 'finished', attemptId: d.attemptId, usage: { inputTokens: 1000, outputTokens: 200, cachedTokens: 0 } }, 20);
    }
    expect(planner.ledger.slotsHeld('m:slots')).toBe(0);
    expect(planner.ledger.liveReservations).toBe(0);
    planner.invariants();
  });

  it('when both slots are taken the slot route is excluded', () => {
    const { planner } = rwCore(SUBS, { budget_alpha: 0 });
    for (let i = 0; i < 2; i++) planner.ledger.commit(planner.ledger.reserve('m:slots', 0, 0)!, 0);
    const cands: Candidate[] = ['m:api', 'm:slots'].map((endpointId, routeIndex) => ({ endpointId, weight: 1, routeIndex }));
    expect(cands[planner.pick(cands, rreq(), 0, deriveRng(1, 'x')).candidate]!.endpointId).toBe('m:api');
  });

  it('a 429 from a subscription blocks it for the Retry-After', () => {
    const { core, planner } = rwCore(SUBS, { budget_alpha: 0 });
    const { life, actions } = startTapped(core, rreq(), 0, deriveRng(1, 'x'));
    const d = dispatches(actions)[0]!;
    expect(d.endpointId).toBe('m:slots');
    const next = life.step({ kind: 'failed', attemptId: d.attemptId, outcome: { kind: 'http_status', status: 429, errorClass: 'rate_limited', retryAfterMs: 5_000 } }, 100);
    expect(planner.ledger.slotFree('m:slots', 4_000)).toBe(false);
    expect(planner.ledger.slotFree('m:slots', 5_100)).toBe(true);
    // The lifecycle fell back; the fallback's resources are tracked by the tap too.
    const f = dispatches(next)[0]!;
    life.step({ kind: 'first_token', attemptId: f.attemptId }, 200);
    life.step({ kind: 'finished', attemptId: f.attemptId, usage: { inputTokens: 1, outputTokens: 1, cachedTokens: 0 } }, 300);
    expect(planner.ledger.liveReservations).toBe(0);
    planner.invariants();
  });

  it('reservations are settled on every path (fast-check over outcomes)', () => {
    fc.assert(
      fc.property(fc.array(fc.constantFrom('ok', '503', '429', 'gone', 'reset'), { minLength: 1, maxLength: 40 }), fc.integer(), (script, seed) => {
        const { core, planner } = rwCore(SUBS, { budget_alpha: 0.5, envelope_min_samples: 2, hedge: 'probability' });
        const rng = deriveRng(seed, 'x');
        let t = 0;
        for (const s of script) {
          t += 700;
          const { life, actions } = startTapped(core, rreq(), t, rng);
          let d = dispatches(actions)[0];
          let guard = 0;
          while (d && !life.isDone && guard++ < 10) {
            let out;
            if (s === 'ok') {
              life.step({ kind: 'first_token', attemptId: d.attemptId }, t + 100);
              out = life.step({ kind: 'finished', attemptId: d.attemptId, usage: { inputTokens: 1000, outputTokens: 200, cachedTokens: 0 } }, t + 200);
            } else if (s === 'gone') out = life.step({ kind: 'client_gone' }, t + 50);
            else if (s === 'reset') out = life.step({ kind: 'failed', attemptId: d.attemptId, outcome: { kind: 'transport', cause: 'reset' } }, t + 50);
            else out = life.step({ kind: 'failed', attemptId: d.attemptId, outcome: { kind: 'http_status', status: Number(s), errorClass: s === '429' ? 'rate_limited' : 'server_error', retryAfterMs: null } }, t + 50);
            d = dispatches(out)[0];
          }
          expect(life.isDone).toBe(true);
          life.invariants();
          expect(planner.ledger.liveReservations).toBe(0);
          planner.invariants();
          core.invariants();
        }
      }),
      { numRuns: 40 },
    );
  });
});

describe('hedging plan (hedge: probability)', () => {
  it('a slow-tailed primary gets the cheapest backup that makes the SLO at the latest safe checkpoint', () => {
    const routes: RwRoute[] = [
      { name: 'tail', ...pricing(0.1, 1.0) },
      { name: 'steady', ...pricing(0.3, 1.2) },
    ];
    const { core, planner } = rwCore(routes, { hedge: 'probability', budget_alpha: 0 });
    let k = 0;
    // tail: 80 % at 400 ms, 20 % at 8 s; steady: always 600 ms.
    const sim = new MiniSim(core, deriveRng(8, 'x'), (id) => ({ ttftMs: id === 'm:steady' ? 600 : k++ % 5 === 0 ? 8000 : 400 }));
    for (let i = 0; i < 60; i++) sim.arrive(i * 10_000, rreq({ headers: { 'x-switchyard-budget-alpha': i % 2 === 0 ? '1' : '0' } }));
    sim.run();
    // Now the primary at α = 0 is tail; its plan: steady fits while S − t − 5 ≥ 600 ⇒ t ≤ 2,395 ⇒ 2,325 ms.
    startTapped(core, rreq({ headers: { 'x-switchyard-budget-alpha': '0' } }), sim.now + 1, deriveRng(9, 'x'));
    expect(planner.lastDecision.endpointId).toBe('m:tail');
    expect(planner.lastDecision.hedge).toMatchObject({ kind: 'hedge', endpointId: 'm:steady', atMs: 2325 });
    const cands: Candidate[] = ['m:tail', 'm:steady'].map((endpointId, routeIndex) => ({ endpointId, weight: 1, routeIndex }));
    expect(planner.planHedgeFor('m:tail', cands, rreq(), sim.now + 2)).toMatchObject({ kind: 'hedge', endpointId: 'm:steady', atMs: 2325 });
    // steady always answers by 600 ms: F_p(t) = 1 at every checkpoint, so P = F_b(S − t − δ) = 0.8 < ρ for tail.
    expect(planner.planHedgeFor('m:steady', cands, rreq(), sim.now + 2)).toEqual({ kind: 'none', reason: 'no_feasible_backup' });
    planner.settlePending(sim.now + 2);
  });
});

describe('α sweep on a toy workload', () => {
  it('mean cost rises and mean TTFT falls with α', () => {
    const price: Record<string, number> = { 'm:cheap': 3e-4, 'm:mid': 5.4e-4, 'm:fast': 1.6e-3 };
    const rows = [0, 0.25, 0.5, 0.75, 1].map((alpha) => {
      const { core } = rwCore(THREE, { budget_alpha: alpha });
      const draw = deriveRng(10, 'workload');
      const sim = new MiniSim(core, deriveRng(10, 'strategy/routewise'), (id) => ({ ttftMs: TTFT[id]! * (0.5 + draw.float()) }));
      for (let i = 0; i < 1500; i++) sim.arrive(i * 400, rreq());
      sim.run();
      const ok = sim.results.slice(300);
      return { alpha, cost: ok.reduce((a, r) => a + price[r.endpointId!]!, 0) / ok.length, ttft: ok.reduce((a, r) => a + r.ttftMs!, 0) / ok.length };
    });
    for (let i = 1; i < rows.length; i++) {
      expect(rows[i]!.cost).toBeGreaterThan(rows[i - 1]!.cost);
      expect(rows[i]!.ttft).toBeLessThan(rows[i - 1]!.ttft);
    }
  });
});

describe('configuration', () => {
  it('defaults; unknown keys and resource keys under router_params are rejected, naming them', () => {
    const p = parseRouteWiseParams({});
    expect(p).toMatchObject({ budget_alpha: 0.75, hedge: 'off', slo_ms: 3000, hedge_target_probability: 0.99, hedge_delta_ms: 5, latency_window_sec: 900, min_samples: 5, cold_start: 'explore', cold_start_lease_sec: 60, output_length_default_tokens: 500 });
    expect(() => makeCore([{ name: 'a' }], 'routewise', { budget_alfa: 0.5 })).toThrow(/unknown key\(s\) 'budget_alfa'/);
    expect(() => makeCore([{ name: 'a' }], 'routewise', { quota_limit: 100 })).toThrow(/quota_limit: .*route\[\]\.quota: \{limit, window_sec\}/);
    expect(() => makeCore([{ name: 'a' }], 'routewise', { max_concurrency: 2 })).toThrow(/route\[\]\.concurrency: \{limit\}/);
    expect(() => makeCore([{ name: 'a' }], 'routewise', { budget_alpha: 2 })).toThrow(/budget_alpha/);
    expect(() => parseRouteWiseParams({ envelope_low_quantile: 0.9, envelope_high_quantile: 0.5 })).toThrow(/envelope_low_quantile/);
  });

  it('route entries: quota / concurrency fields need the matching provider_type', () => {
    const bad = (route: Record<string, unknown>) => () => parseModelsConfig({ models: [{ id: 'm', route: [{ base_url: 'sim://a', ...route }] }] });
    expect(bad({ provider_type: 'quota' })).toThrow(/quota: a provider_type: quota route needs quota/);
    expect(bad({ provider_type: 'concurrency' })).toThrow(/needs concurrency: \{limit\}/);
    expect(bad({ quota: { limit: 5, window_sec: 60 } })).toThrow(/applies to provider_type: quota routes; this route is on_demand/);
    expect(bad({ provider_type: 'quota', quota: { limit: 5, window_sec: 60 }, concurrency_pool: 'x' })).toThrow(/concurrency_pool/);
    const ok = parseModelsConfig({ models: [{ id: 'm', route: [{ base_url: 'sim://a', provider_type: 'quota', quota: [{ limit: 5, window_sec: 60 }, { limit: 100, window_sec: 86400, unit: 'tokens' }], quota_pool: 'p' }] }] });
    expect(routeWiseRoute('m:a', ok.models[0]!.route[0]!).resources.quota).toEqual({
      poolId: 'p',
      windows: [
        { limit: 5, windowMs: 60_000, unit: 'requests' },
        { limit: 100, windowMs: 86_400_000, unit: 'tokens' },
      ],
    });
  });

  it('a model with only quota routes fails at start with EnvelopeNotCalibratedError naming the model', () => {
    expect(() => rwCore([{ name: 'plan', provider_type: 'quota', quota: { limit: 5, window_sec: 60 } }], {}, 'kimi')).toThrow(/models\[0\] \(id 'kimi'\): routewise: the cost envelope of quota route\(s\) kimi:plan cannot be calibrated/);
    try {
      rwCore([{ name: 'plan', provider_type: 'quota', quota: { limit: 5, window_sec: 60 } }], {}, 'kimi');
    } catch (err) {
      expect((err as Error).name).toBe('EnvelopeNotCalibratedError');
    }
  });

  it('stateful routes refuse more than one worker unless allowed', () => {
    const { planner } = rwCore([{ name: 'api', ...pricing(1, 1) }, { name: 'slots', provider_type: 'concurrency', concurrency: { limit: 2 } }]);
    expect(() => planner.assertWorkerScope(1)).not.toThrow();
    expect(() => planner.assertWorkerScope(4)).toThrow(/m:slots .* 4 workers/);
    const lenient = new RouteWisePlanner(parseRouteWiseParams({ stateful_providers_single_worker_only: false }), [routeWiseRoute('m:s', { provider_type: 'concurrency', concurrency: { limit: 1 } })]);
    expect(() => lenient.assertWorkerScope(4)).not.toThrow();
  });

  it('registered: `router: routewise` builds through RoutingCore (plain wiring: route list prices only)', () => {
    const core = new RoutingCore(parseModelsConfig({ models: [{ id: 'm', router: 'routewise', route: [{ base_url: 'sim://a', ...pricing(1, 2) }, { base_url: 'sim://b' }] }] }));
    expect(core.model('m')!.strategy).toBe('routewise');
    expect(core.model('m')!.planner).toBeInstanceOf(RouteWisePlanner);
  });
});
