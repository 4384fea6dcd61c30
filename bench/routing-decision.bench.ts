/**
 * Cost of one `fixed` routing decision over 8 routes, with prefill-aware power-of-two-choices
 * and session affinity on (issue 4; target ≤ 1 µs median on the development machine), next to
 * the plain weighted draw. Three views per case:
 * - "decision only (start)": `RoutingCore.start` — admission, affinity lookup and slide or
 *   re-pin, P2C draws, dispatch claim and prefill lease, the dispatch action. Timed in windows of
 *   `WINDOW` starts whose lives are then finished outside the timed region (a whole batch of
 *   unfinished lives would be measuring the garbage collector's promotion of them instead); its
 *   "cpu ns" column is this thread's CPU time per start over the same windows (getrusage), which
 *   a busy shared machine inflates far less than wall time;
 * - "full life": that plus `first_token` and `finished` (lease and claim released, prompt hint
 *   recorded, routing metadata built);
 * - "pick only": the planner's P2C choice over 8 candidates, no lifecycle.
 *
 * Standing prefill backlogs (200k and 60k tokens on two routes) keep the P2C comparison live.
 * Each task runs `BATCH` decisions per sample so sub-microsecond work sits above the timer's
 * resolution. Prints ns per decision (median and p99 over samples) and the median's ratio to a
 * Map lookup measured in the same run (absolute times on a shared machine drift; ratios hold).
 * Run: `npx tsx bench/routing-decision.bench.ts`.
 */
import { Bench } from 'tinybench';
import {
  RoutingCore,
  deriveRng,
  parseModelsConfig,
  type Candidate,
  type LifecycleAction,
  type RequestLife,
  type RouteRequest,
} from '../core/index.ts';

const BATCH = 1_000;
const ROUTES = 8;
/** Starts per timed window in the decision-only view. */
const WINDOW = 16;

function core(params: Record<string, unknown>): RoutingCore {
  const c = new RoutingCore(
    parseModelsConfig({
      models: [{ id: 'm', router: 'fixed', router_params: params, route: Array.from({ length: ROUTES }, (_, i) => ({ base_url: `sim://r${i}`, weight: 1 + (i % 3) })) }],
    }),
  );
  // Standing backlogs: r0 above the intervention threshold, r3 just above it.
  c.prefill.acquire('m:r0', null, 200_000, 0);
  c.prefill.acquire('m:r3', null, 60_000, 0);
  return c;
}

const request = (callerId: string, inputTokens: number): RouteRequest => ({
  requestId: 'x',
  model: 'm',
  sessionId: null,
  callerId,
  inputTokens,
  outputTokensHint: 100,
  stream: true,
  modalities: [],
  pin: null,
  prefixHashes: null,
});

const usage = { inputTokens: 1, outputTokens: 1, cachedTokens: 0 };
let sink = 0;

/** One full life: start, first token, finished. */
function life(c: RoutingCore, r: RouteRequest, nowMs: number, rng: ReturnType<typeof deriveRng>): void {
  const { life, actions } = c.start(r, nowMs, rng);
  const d = actions[0] as Extract<LifecycleAction, { kind: 'dispatch' }>;
  (life as RequestLife).step({ kind: 'first_token', attemptId: d.attemptId }, nowMs);
  sink += life.step({ kind: 'finished', attemptId: d.attemptId, usage }, nowMs).length;
}

const bench = new Bench({ time: Number(process.env.BENCH_TIME_MS ?? 1_000), warmup: true });

// Callers: 1,000 returning callers (affinity hits after the first round) …
const returning = Array.from({ length: 1_000 }, (_, i) => request(`caller-${i}`, 2_000 + (i % 7) * 1_000));
// … and a fresh caller every decision (affinity misses: P2C draw, new pin, lazy sweeps).
const fresh = Array.from({ length: 1 << 16 }, (_, i) => request(`new-${i}`, 2_000 + (i % 7) * 1_000));
const elephants = Array.from({ length: 1_000 }, (_, i) => request(`big-${i}`, 250_000));

{
  // Reference op measured in the same run (as bench/micro.ts does): a Map lookup. Ratios to it
  // hold across noisy or shared machines where absolute times do not.
  const map = new Map<string, number>(Array.from({ length: 64 }, (_, i) => [`k${i}`, i]));
  const keys = Array.from({ length: 64 }, (_, i) => `k${i}`);
  bench.add('reference: Map.get', () => {
    for (let b = 0; b < BATCH; b++) sink += map.get(keys[b & 63]!)!;
  });
}

const cases: Array<{ name: string; params: Record<string, unknown>; reqs: RouteRequest[]; stepMs: number }> = [
  { name: 'fixed plain (P2C off, affinity off)', params: { prefill_aware: false, affinity: false }, reqs: returning, stepMs: 1 },
  { name: 'fixed + P2C', params: { affinity: false }, reqs: returning, stepMs: 1 },
  { name: 'fixed + P2C + affinity, returning callers (hits)', params: {}, reqs: returning, stepMs: 1 },
  { name: 'fixed + P2C + affinity, new caller each time (misses)', params: {}, reqs: fresh, stepMs: 10 },
  { name: 'fixed + P2C + affinity, elephant prompts (misses)', params: {}, reqs: elephants, stepMs: 400_000 },
];

/**
 * ns per `start` (median and p99 over samples of ~BATCH decisions): each sample times WINDOW
 * starts at a time and finishes those lives untimed, so loads and pins evolve as in the
 * full-life view.
 */
function decisionOnly(k: (typeof cases)[number], timeMs: number): { medianNs: number; p99Ns: number; cpuNs: number } {
  const c = core(k.params);
  const rng = deriveRng(1, `bench/start/${k.name}`);
  const started: Array<{ life: RequestLife; actions: LifecycleAction[] }> = new Array(WINDOW);
  let now = 0;
  let i = 0;
  const sampleNs: number[] = [];
  const windows = Math.ceil(BATCH / WINDOW);
  let cpuUs = 0;
  let cpuStarts = 0;
  const runSample = (): number => {
    let ms = 0;
    for (let w = 0; w < windows; w++) {
      const c0 = process.cpuUsage().user;
      const t0 = performance.now();
      for (let b = 0; b < WINDOW; b++) {
        started[b] = c.start(k.reqs[i]!, (now += k.stepMs), rng);
        i = (i + 1) % k.reqs.length;
      }
      ms += performance.now() - t0;
      cpuUs += process.cpuUsage().user - c0;
      cpuStarts += WINDOW;
      for (const { life, actions } of started) {
        const d = actions[0] as Extract<LifecycleAction, { kind: 'dispatch' }>;
        life.step({ kind: 'first_token', attemptId: d.attemptId }, now);
        sink += life.step({ kind: 'finished', attemptId: d.attemptId, usage }, now).length;
      }
    }
    return (ms * 1e6) / (windows * WINDOW);
  };
  const warmUntil = performance.now() + timeMs / 4;
  while (performance.now() < warmUntil) runSample();
  cpuUs = 0;
  cpuStarts = 0;
  const until = performance.now() + timeMs;
  while (performance.now() < until || sampleNs.length < 10) sampleNs.push(runSample());
  sampleNs.sort((a, b) => a - b);
  return { medianNs: sampleNs[Math.floor(sampleNs.length / 2)]!, p99Ns: sampleNs[Math.min(sampleNs.length - 1, Math.floor(sampleNs.length * 0.99))]!, cpuNs: (cpuUs * 1000) / cpuStarts };
}

for (const k of cases) {
  const c = core(k.params);
  const rng = deriveRng(1, `bench/${k.name}`);
  let now = 0;
  let i = 0;
  bench.add(`full life: ${k.name}`, () => {
    for (let b = 0; b < BATCH; b++) {
      life(c, k.reqs[i]!, (now += k.stepMs), rng);
      i = (i + 1) % k.reqs.length;
    }
  });
}

{
  // The planner's P2C choice alone over 8 admitted candidates.
  const c = core({ affinity: false });
  const planner = c.model('m')!.planner;
  const candidates: Candidate[] = c.model('m')!.routes.map((r) => ({ endpointId: r.endpointId, weight: r.effectiveWeight, routeIndex: r.routeIndex }));
  const rng = deriveRng(2, 'bench/pick');
  const r = request('caller-1', 4_000);
  bench.add('pick only: fixed + P2C over 8 candidates', () => {
    for (let b = 0; b < BATCH; b++) sink += planner.pick(candidates, r, b, rng).candidate;
  });
}

await bench.run();
const rows: Array<{ case: string; 'median ns': number; 'p99 ns': number; 'cpu ns'?: number }> = bench.tasks.map((t) => {
  const res = t.result as { latency?: { p50: number; p99: number } } | undefined;
  if (!res?.latency) throw new Error(`benchmark '${t.name}' produced no result`);
  return { case: t.name, 'median ns': (res.latency.p50 * 1e6) / BATCH, 'p99 ns': (res.latency.p99 * 1e6) / BATCH };
});
const timeMs = Number(process.env.BENCH_TIME_MS ?? 1_000);
for (const k of cases) {
  const r = decisionOnly(k, timeMs);
  rows.push({ case: `decision only (start): ${k.name}`, 'median ns': r.medianNs, 'p99 ns': r.p99Ns, 'cpu ns': r.cpuNs });
}
const ref = rows[0]!['median ns'];
const table = rows.map((r) => ({
  case: r.case,
  'median ns': Math.round(r['median ns']),
  'p99 ns': Math.round(r['p99 ns']),
  'cpu ns': r['cpu ns'] === undefined ? '' : Math.round(r['cpu ns']),
  'median / Map.get': (r['median ns'] / ref).toFixed(1),
}));
console.log(`routing decision over ${ROUTES} routes (ns per decision; ${BATCH} decisions per sample; node ${process.version})`);
console.table(table);
if (sink === -1) console.log(sink); // keep the loops observable
