/**
 * Cost of one RouteWise decision over 10 routes with hedging on (issue #13: target ≤ 5 µs median
 * on the development machine). The planner is warmed first: every route has a full 15-minute
 * latency profile (≈ 400 samples each), the cost envelope is calibrated, and the model mixes 7
 * on-demand routes (OpenRouter MiniMax-M2.5 prices), 2 quota plans and a 2-slot concurrency
 * subscription, so a decision prices all three kinds, solves the LP, draws, reserves and plans a
 * hedge over 27 checkpoints.
 *
 * Cases (ns per decision, median, p99 and min over samples of `BATCH` decisions):
 * - `pick, profiles unchanged`: the decision alone; the CDF caches stay warm between decisions.
 * - `pick + one TTFT observation`: steady state — each decision is followed by one recorded first
 *   token, which invalidates one route's CDF cache, so the next hedge plan recomputes it.
 * - `full life through the seam`: `RoutingCore`-style start with the RouteWise tap, first token,
 *   finished (admission, claims, prefill leases, reservations, profile/envelope/predictor updates).
 * - `hedge off`: the same decision without hedging, for comparison.
 * Two references run first in the same process — a `Map.get` loop and the `fixed` planner's P2C
 * pick over the same 10 routes — and every row reports its ratio to `Map.get`, because absolute
 * ns on a loaded machine say little (bench/micro.ts does the same).
 * Run: `npx tsx bench/routewise.bench.ts`.
 */
import { Bench } from 'tinybench';
import { RoutingCore, deriveRng, endpointId, parseModelsConfig, StrategyRegistry, BUILTIN_STRATEGIES, type Candidate, type LifecycleAction, type RouteRequest } from '../core/index.ts';
import { routerLife } from '../core/request/request-life.ts';
import type { LifecycleDeps } from '../core/request/router-deps.ts';
import { RouteWisePlanner, routeWiseStrategy } from '../core/strategies/routewise/routewise.ts';
import { routeWiseRoute } from '../core/strategies/routewise/route-spec.ts';
import type { RouteConfig } from '../core/config/models-config.ts';

const BATCH = 1_000;

// Seven OpenRouter MiniMax-M2.5 hosts (USD per 1M tokens, from ../shared/traces/routewise), two
// quota plans and one concurrency subscription.
const ROUTES = [
  { name: 'akashml', pricing: { input_usd_per_1m: 0.2, output_usd_per_1m: 1.18 }, ttftMs: 1004 },
  { name: 'atlascloud', pricing: { input_usd_per_1m: 0.295, output_usd_per_1m: 1.2, cached_input_usd_per_1m: 0.06 }, ttftMs: 1394 },
  { name: 'chutes-or', pricing: { input_usd_per_1m: 0.15, output_usd_per_1m: 1.2 }, ttftMs: 2037 },
  { name: 'deepinfra', pricing: { input_usd_per_1m: 0.27, output_usd_per_1m: 0.95 }, ttftMs: 700 },
  { name: 'minimax', pricing: { input_usd_per_1m: 0.3, output_usd_per_1m: 1.2 }, ttftMs: 900 },
  { name: 'novita', pricing: { input_usd_per_1m: 0.3, output_usd_per_1m: 1.2 }, ttftMs: 1200 },
  { name: 'fireworks', pricing: { input_usd_per_1m: 0.3, output_usd_per_1m: 1.2 }, ttftMs: 500 },
  { name: 'chutes-plan', provider_type: 'quota', quota: { limit: 100_000, window_sec: 18_000 }, ttftMs: 1210 },
  { name: 'minimax-plan', provider_type: 'quota', quota: [{ limit: 100_000, window_sec: 18_000 }, { limit: 1_000_000, window_sec: 604_800 }], ttftMs: 2506 },
  { name: 'featherless', provider_type: 'concurrency', concurrency: { limit: 2 }, ttftMs: 8157 },
] as const;

function build(hedge: 'off' | 'probability') {
  const config = parseModelsConfig({
    models: [{ id: 'm', router: 'routewise', router_params: { hedge, budget_alpha: 0.75 }, route: ROUTES.map(({ name, ttftMs: _t, ...rest }) => ({ base_url: `sim://${name}`, ...rest })) }],
  });
  const byId = new Map<string, RouteConfig>(config.models[0]!.route.map((r) => [endpointId('m', r.kind, r.base_url), r]));
  const def = { ...routeWiseStrategy, create: (p: Parameters<typeof routeWiseStrategy.create>[0], rs: Parameters<typeof routeWiseStrategy.create>[1]) => new RouteWisePlanner(p, rs.map((r) => routeWiseRoute(r.endpointId, byId.get(r.endpointId)!))) };
  const core = new RoutingCore(config, { registry: new StrategyRegistry(BUILTIN_STRATEGIES.map((d) => (d.name === 'routewise' ? def : d))) });
  const planner = core.model('m')!.planner as RouteWisePlanner;
  const candidates: Candidate[] = core.model('m')!.routes.map((r) => ({ endpointId: r.endpointId, weight: 1, routeIndex: r.routeIndex }));
  // Warm: 15 minutes of samples, one per route every ~2 s, TTFT spread around each route's median.
  const rng = deriveRng(1, 'bench/routewise/warm');
  let now = 0;
  for (; now < 900_000; now += 200) {
    const i = (now / 200) % ROUTES.length;
    const r = ROUTES[i]!;
    planner.onFirstToken(candidates[i]!.endpointId, r.ttftMs * (0.3 + 1.4 * rng.float()) * (rng.float() < 0.05 ? 6 : 1), now);
  }
  for (let k = 0; k < 200; k++) planner.envelope.observe(1e-4 + 1e-3 * rng.float(), now);
  return { core, planner, candidates, now };
}

const request: RouteRequest = { requestId: 'x', model: 'm', sessionId: null, callerId: null, inputTokens: 3_000, outputTokensHint: null, stream: true, modalities: [], pin: null, prefixHashes: null };
const usage = { inputTokens: 3_000, outputTokens: 400, cachedTokens: 0 };
let sink = 0;

const bench = new Bench({ time: Number(process.env.BENCH_TIME_MS ?? 1_000), warmup: true });

// Same-run references, so numbers from a loaded machine compare by ratio (as in bench/micro.ts).
{
  const map = new Map<string, number>(Array.from({ length: 64 }, (_, i) => [`k${i}`, i]));
  const keys = Array.from({ length: 64 }, (_, i) => `k${i}`);
  bench.add('reference: Map.get', () => {
    for (let b = 0; b < BATCH; b++) sink += map.get(keys[b & 63]!)!;
  });
  const fixed = new RoutingCore(parseModelsConfig({ models: [{ id: 'm', router: 'fixed', route: ROUTES.map((r) => ({ base_url: `sim://${r.name}` })) }] }));
  const fixedPlanner = fixed.model('m')!.planner;
  const cands: Candidate[] = fixed.model('m')!.routes.map((r) => ({ endpointId: r.endpointId, weight: 1, routeIndex: r.routeIndex }));
  const rng = deriveRng(5, 'bench/fixed');
  bench.add('reference: fixed pick (P2C) over 10 routes', () => {
    for (let b = 0; b < BATCH; b++) sink += fixedPlanner.pick(cands, request, b, rng).candidate;
  });
}

for (const hedge of ['probability', 'off'] as const) {
  const { planner, candidates } = build(hedge);
  let { now } = build(hedge);
  planner.tapLife(null as never, request, now); // tap mode: pick reserves, settle releases
  const rng = deriveRng(2, 'bench/routewise/pick');
  bench.add(`pick, profiles unchanged (hedge ${hedge})`, () => {
    for (let b = 0; b < BATCH; b++) {
      sink += planner.pick(candidates, request, now, rng).candidate;
      planner.settlePending(now);
    }
  });
  if (hedge === 'off') continue;
  const w = build(hedge);
  const p2 = w.planner;
  p2.tapLife(null as never, request, w.now);
  let t = w.now;
  const rng2 = deriveRng(3, 'bench/routewise/pick');
  bench.add('pick + one TTFT observation (hedge probability)', () => {
    for (let b = 0; b < BATCH; b++) {
      const i = p2.pick(w.candidates, request, (t += 1), rng2).candidate;
      p2.settlePending(t);
      p2.onFirstToken(w.candidates[i]!.endpointId, 800, t);
      sink += i;
    }
  });
  const f = build(hedge);
  let tf = f.now;
  const rng3 = deriveRng(4, 'bench/routewise/life');
  const model = f.core.model('m')!;
  const deps = (f.core as unknown as { deps: LifecycleDeps }).deps; // the core's own (private) lifecycle dependencies
  bench.add('full life through the seam with the tap (hedge probability)', () => {
    for (let b = 0; b < BATCH; b++) {
      tf += 1;
      const inner = routerLife(model, request, deps, rng3);
      const life = f.planner.tapLife(inner, request, tf);
      const d = life.absorb(inner.begin(tf), tf)[0] as Extract<LifecycleAction, { kind: 'dispatch' }>;
      life.step({ kind: 'first_token', attemptId: d.attemptId }, tf);
      sink += life.step({ kind: 'finished', attemptId: d.attemptId, usage }, tf).length;
    }
  });
}

await bench.run();
const rows = bench.tasks.map((t) => {
  const res = t.result as { latency?: { p50: number; p99: number; min: number } } | undefined;
  if (!res?.latency) throw new Error(`benchmark '${t.name}' produced no result`);
  // min: the fastest sample of BATCH decisions — on a shared, loaded machine the closest to an idle one.
  return { case: t.name, 'median ns': Math.round((res.latency.p50 * 1e6) / BATCH), 'p99 ns': Math.round((res.latency.p99 * 1e6) / BATCH), 'min ns': Math.round((res.latency.min * 1e6) / BATCH) };
});
const ref = rows[0]!['median ns'];
for (const r of rows) (r as Record<string, unknown>)['median / Map.get'] = (r['median ns'] / ref).toFixed(0);
console.log(`RouteWise decision over ${ROUTES.length} routes (ns per decision; ${BATCH} decisions per sample; node ${process.version})`);
console.table(rows);
if (sink === -1) console.log(sink);
