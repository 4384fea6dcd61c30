/**
 * The RouteWise simulation study of issue #13: an α sweep (0, 0.25, 0.5, 0.75, 1) with and
 * without hedging, against greedy-cost (cheapest route for each request, defined below),
 * `least_cost` (list price), greedy-latency (`least_latency`) and weighted-random (`fixed`,
 * uniform weights, P2C off) baselines, over several seeds.
 *
 * Workload: the first `--requests` arrivals of the Azure LLM inference 2023 conversation trace
 * (CC-BY-4.0; traces/azure-2023/conv.arrow), every request streamed, SLO 3 s on TTFT.
 * Routes: 8 OpenRouter MiniMax-M2.5 hosts (TTFT distributions fitted by simulator/providers/ to
 * RouteWise's published per-provider summaries, OpenRouter prices), a Chutes quota plan
 * (assumed 300 requests per 10-minute window — the plan size is not in the source data) and a
 * 2-slot Featherless concurrency subscription. Provider draws are keyed by (request, try), so
 * every policy sees the same latency for the same request on the same provider.
 *
 * Why a driver here and not `switchyard sim`: `RoutingCore` does not yet hand RouteWise its route
 * entries nor wrap lives with its tap, and the lifecycle has no hedge hook (see the issue #13
 * report). This driver does both the way the proposed wiring would, and emulates the hedge hook
 * at the driver: at the planned checkpoint, if the primary has no first token, it starts a second
 * life pinned to the planned backup; the first token wins and the loser's life gets
 * `client_gone` (its attempt is cancelled and recorded as censored). Both attempts are billed
 * (a loser cancelled before its first token is billed its prompt).
 *
 * Output: one row per policy with the mean over seeds (± half-width of the 95 % t-interval for
 * cost and mean TTFT): billed cost per 1k requests, mean / p50 / p99 TTFT, SLO violations
 * (TTFT > 3 s or failed), hedge rate, 429s seen, and the share served by API / quota /
 * concurrency routes. The first `--warmup` requests of each run are excluded (cold start).
 * Usage: `npx tsx bench/routewise-study.ts [--requests 6000] [--seeds 5] [--warmup 500] [--markdown]`
 */
import { parseArgs } from 'node:util';
import { z } from 'zod';
import {
  BUILTIN_STRATEGIES,
  RoutingCore,
  StrategyRegistry,
  deriveRng,
  endpointId,
  parseModelsConfig,
  type LifecycleAction,
  type Outcome,
  type RequestLife,
  type RouteRequest,
  type StrategyDefinition,
} from '../core/index.ts';
import type { RouteConfig } from '../core/config/models-config.ts';
import { routerLife } from '../core/request/request-life.ts';
import type { LifecycleDeps } from '../core/request/router-deps.ts';
import { RouteWisePlanner, routeWiseStrategy } from '../core/strategies/routewise/routewise.ts';
import { routeWiseRoute } from '../core/strategies/routewise/route-spec.ts';
import { readTrace } from '../traces/arrow-trace.ts';
import { ProviderEntrySchema, resolveProvider } from '../simulator/providers/provider-config.ts';
import { HostedProvider } from '../simulator/providers/hosted-provider.ts';

const { values } = parseArgs({
  options: {
    requests: { type: 'string', default: '6000' },
    seeds: { type: 'string', default: '5' },
    warmup: { type: 'string', default: '500' },
    only: { type: 'string' },
    markdown: { type: 'boolean' },
  },
});
const N = Number(values.requests);
const SEEDS = Number(values.seeds);
const WARMUP = Number(values.warmup);
const SLO_MS = 3000;
const MODEL = 'minimax-m2.5';

/** The routes: 8 OpenRouter hosts, a quota plan, a concurrency subscription. */
const PROVIDERS = [
  { name: 'deepinfra', profile: 'minimax-m2.5-openrouter/deepinfra' },
  { name: 'chutes-api', profile: 'minimax-m2.5-openrouter/chutes' },
  { name: 'akashml', profile: 'minimax-m2.5-openrouter/akashml' },
  { name: 'inceptron', profile: 'minimax-m2.5-openrouter/inceptron' },
  { name: 'atlascloud', profile: 'minimax-m2.5-openrouter/atlascloud' },
  { name: 'novita', profile: 'minimax-m2.5-openrouter/novita' },
  { name: 'parasail', profile: 'minimax-m2.5-openrouter/parasail' },
  { name: 'friendli', profile: 'minimax-m2.5-openrouter/friendli' },
  { name: 'chutes-plan', profile: 'minimax-m2.5-subscriptions/chutes', type: 'quota', limits: { quota: [{ window_ms: 600_000, requests: 300 }] } },
  { name: 'featherless', profile: 'minimax-m2.5-subscriptions/featherless', type: 'concurrency', limits: { concurrency: 2 } },
] as const;

const resolved = PROVIDERS.map((p, i) => resolveProvider(ProviderEntrySchema.parse(p), `providers[${i}] (${p.name})`));
const tierOf = new Map(resolved.map((p) => [`${MODEL}:${p.name}`, p.type === 'on_demand' ? 'api' : p.type]));

/** The models config: route-level resource fields for RouteWise (other routers ignore them). */
function modelsConfig(router: string, params: Record<string, unknown>) {
  return parseModelsConfig({
    models: [
      {
        id: MODEL,
        router,
        router_params: params,
        route: resolved.map((p) => ({
          base_url: `sim://${p.name}`,
          provider: p.name,
          pricing: { input_usd_per_1m: p.pricing.inputUsdPer1M, output_usd_per_1m: p.pricing.outputUsdPer1M, cached_input_usd_per_1m: p.pricing.cachedInputUsdPer1M },
          ...(p.type === 'quota' && { provider_type: 'quota', quota: p.limits.quota.map((w) => ({ limit: w.requests!, window_sec: w.windowMs / 1000 })) }),
          ...(p.type === 'concurrency' && { provider_type: 'concurrency', concurrency: { limit: p.limits.concurrency! } }),
        })),
      },
    ],
  });
}

/**
 * Greedy-cost baseline: every request to the route that is cheapest for *it* (token prices times
 * its prompt and the mean output length of the trace so far; subscriptions cost nothing), with no
 * latency knowledge and no quota or slot bookkeeping — a full subscription answers 429 and the
 * lifecycle falls back. (`least_cost` ranks by list price instead; it is reported too.)
 */
const greedyCost: StrategyDefinition<Record<string, never>> = {
  name: 'greedy_cost',
  description: 'cheapest route for the request (study baseline)',
  paramsSchema: z.object({}).strict() as unknown as z.ZodType<Record<string, never>>,
  create(_params, routes) {
    const price = new Map(resolved.map((p) => [`${MODEL}:${p.name}`, p]));
    return {
      pick(candidates, request) {
        let best = 0;
        let bestCost = Number.POSITIVE_INFINITY;
        candidates.forEach((c, i) => {
          const p = price.get(c.endpointId)!;
          const cost = p.type === 'on_demand' ? (p.pricing.inputUsdPer1M * request.inputTokens + p.pricing.outputUsdPer1M * MEAN_OUTPUT) / 1e6 : 0;
          if (cost < bestCost) {
            best = i;
            bestCost = cost;
          }
        });
        void routes;
        return { candidate: best, reason: 'greedy_cost' };
      },
    };
  },
};
let MEAN_OUTPUT = 200;

/** A core whose `routewise` planner sees the full route entries (the proposed RoutingCore wiring). */
function makeCore(router: string, params: Record<string, unknown>): RoutingCore {
  const config = modelsConfig(router, params);
  const byId = new Map<string, RouteConfig>(config.models[0]!.route.map((r) => [endpointId(MODEL, r.kind, r.base_url), r]));
  const def = { ...routeWiseStrategy, create: (p: Parameters<typeof routeWiseStrategy.create>[0], rs: Parameters<typeof routeWiseStrategy.create>[1]) => new RouteWisePlanner(p, rs.map((r) => routeWiseRoute(r.endpointId, byId.get(r.endpointId)!))) };
  const defs = [...BUILTIN_STRATEGIES.map((d) => (d.name === 'routewise' ? def : d)), greedyCost];
  return new RoutingCore(config, { registry: new StrategyRegistry(defs), settings: { prefill_aware_enabled: false, affinity_enabled: false, upstream_concurrency_enabled: false } });
}

/** `RoutingCore.start`, with the RouteWise tap wired in for RouteWise models. */
function start(core: RoutingCore, request: RouteRequest, nowMs: number, rng: ReturnType<typeof deriveRng>): { life: RequestLife; actions: LifecycleAction[] } {
  const model = core.model(request.model)!;
  if (!(model.planner instanceof RouteWisePlanner)) return core.start(request, nowMs, rng);
  const inner = routerLife(model, request, (core as unknown as { deps: LifecycleDeps }).deps, rng); // the core's own (private) deps
  const tap = model.planner.tapLife(inner, request, nowMs);
  return { life: tap, actions: tap.absorb(inner.begin(nowMs), nowMs) };
}

/** A binary min-heap of events by (time, sequence). */
class Queue {
  private t: number[] = [];
  private s: number[] = [];
  private f: Array<() => void> = [];
  private seq = 0;
  get size(): number {
    return this.t.length;
  }
  push(at: number, fn: () => void): void {
    this.t.push(at);
    this.s.push(this.seq++);
    this.f.push(fn);
    let i = this.t.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!this.less(i, p)) break;
      this.swap(i, p);
      i = p;
    }
  }
  pop(): { at: number; fn: () => void } {
    const at = this.t[0]!;
    const fn = this.f[0]!;
    const last = this.t.length - 1;
    this.swap(0, last);
    this.t.pop();
    this.s.pop();
    this.f.pop();
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < this.t.length && this.less(l, m)) m = l;
      if (r < this.t.length && this.less(r, m)) m = r;
      if (m === i) break;
      this.swap(i, m);
      i = m;
    }
    return { at, fn };
  }
  private less(a: number, b: number): boolean {
    return this.t[a]! < this.t[b]! || (this.t[a] === this.t[b] && this.s[a]! < this.s[b]!);
  }
  private swap(a: number, b: number): void {
    [this.t[a], this.t[b]] = [this.t[b]!, this.t[a]!];
    [this.s[a], this.s[b]] = [this.s[b]!, this.s[a]!];
    [this.f[a], this.f[b]] = [this.f[b]!, this.f[a]!];
  }
}

interface Policy {
  label: string;
  router: string;
  params: Record<string, unknown>;
}

const POLICIES: Policy[] = [
  ...[0, 0.25, 0.5, 0.75, 1].flatMap((a) => [
    { label: `routewise α=${a}`, router: 'routewise', params: { budget_alpha: a } },
    { label: `routewise α=${a} + hedge`, router: 'routewise', params: { budget_alpha: a, hedge: 'probability' } },
  ]),
  { label: 'greedy-cost', router: 'greedy_cost', params: {} },
  { label: 'least_cost (list price)', router: 'least_cost', params: {} },
  { label: 'greedy-latency', router: 'least_latency', params: {} },
  { label: 'weighted-random', router: 'fixed', params: {} },
];

interface RunStats {
  costPer1k: number;
  ttftMean: number;
  ttftP50: number;
  ttftP99: number;
  slo: number;
  hedgeRate: number;
  rateLimited: number;
  api: number;
  quota: number;
  concurrency: number;
}

const RATE_LIMITED = (retryAfterMs: number): Outcome => ({ kind: 'http_status', status: 429, errorClass: 'rate_limited', retryAfterMs });

function runOnce(policy: Policy, rows: Awaited<ReturnType<typeof readTrace>>['rows'], seed: number): RunStats {
  const core = makeCore(policy.router, policy.params);
  const planner = core.model(MODEL)!.planner;
  const rw = planner instanceof RouteWisePlanner ? planner : null;
  const providers = new Map(resolved.map((p) => [`${MODEL}:${p.name}`, new HostedProvider(p, seed, 512)]));
  const rng = deriveRng(seed, `strategy/${policy.router}`);
  const q = new Queue();
  let now = 0;
  let gid = 0;
  let rateLimited = 0;

  interface Req {
    index: number;
    arrivalMs: number;
    firstTokenMs: number | null;
    costUsd: number;
    servedBy: string | null;
    lives: number;
    livesDone: number;
    hedged: boolean;
    failed: boolean;
    lifeList: RequestLife[];
  }
  const reqs: Req[] = [];

  const handlers = new Map<RequestLife, (acts: LifecycleAction[]) => void>();
  const runLife = (r: Req, request: RouteRequest, isBackup: boolean) => {
    const { life, actions } = start(core, request, now, rng);
    r.lives++;
    r.lifeList.push(life);
    // The hedge plan of this request's own decision (the planner keeps only the last one).
    const first = actions.find((a) => a.kind === 'dispatch');
    const plan = rw && !isBackup && first?.kind === 'dispatch' && first.endpointId === rw.lastDecision.endpointId ? rw.lastDecision.hedge : null;
    const live = new Map<number, { gid: number; provider: HostedProvider; endpointId: string; input: number; gotToken: boolean }>();
    const apply = (acts: LifecycleAction[]) => {
      for (const a of acts) {
        if (a.kind === 'dispatch') {
          const p = providers.get(a.endpointId)!;
          const g = gid++;
          const row = rows[r.index]!;
          const adm = p.admit({ gid: g, reqIndex: r.index, tryNo: isBackup ? 1 : 0, inputTokens: row.inputTokens, outputTokens: row.outputTokens, hashIds: row.hashIds }, now);
          if (!adm.ok) {
            rateLimited++;
            q.push(now + p.spec.rejectLatencyMs, () => apply(life.step({ kind: 'failed', attemptId: a.attemptId, outcome: RATE_LIMITED(adm.retryAfterMs) }, now)));
            continue;
          }
          const att = { gid: g, provider: p, endpointId: a.endpointId, input: row.inputTokens - adm.cachedTokens, gotToken: false };
          live.set(a.attemptId, att);
          q.push(adm.firstTokenAtMs, () => {
            if (!live.has(a.attemptId)) return;
            att.gotToken = true;
            if (r.firstTokenMs === null) {
              r.firstTokenMs = now;
              r.servedBy = a.endpointId;
              // First token wins: the other life (hedge race) is cancelled.
              for (const other of r.lifeList) if (other !== life && !other.isDone) otherGone(other);
            }
            apply(life.step({ kind: 'first_token', attemptId: a.attemptId }, now));
          });
          q.push(adm.finishedAtMs, () => {
            if (!live.has(a.attemptId)) return;
            live.delete(a.attemptId);
            p.release(g);
            r.costUsd += p.costUsd(row.inputTokens, adm.cachedTokens, row.outputTokens);
            apply(life.step({ kind: 'finished', attemptId: a.attemptId, usage: { inputTokens: row.inputTokens, outputTokens: row.outputTokens, cachedTokens: adm.cachedTokens } }, now));
          });
        } else if (a.kind === 'cancel') {
          const att = live.get(a.attemptId);
          if (att) {
            live.delete(a.attemptId);
            att.provider.release(att.gid);
            // Billed what it consumed: the prompt (a loser cancelled before its first token).
            r.costUsd += att.provider.costUsd(att.input, 0, 0);
          }
        } else if (a.kind === 'wait_until') {
          q.push(a.atMs, () => apply(life.step({ kind: 'deadline', deadlineId: a.deadlineId }, now)));
        } else if (a.kind === 'done') {
          r.livesDone++;
          if (a.metadata.status !== 'ok' && r.livesDone === r.lives && r.firstTokenMs === null) r.failed = true;
        }
      }
    };
    const otherGone = (other: RequestLife) => {
      // Deferred to keep one life's step from running inside another's.
      q.push(now, () => {
        if (!other.isDone) handlers.get(other)?.(other.step({ kind: 'client_gone' }, now));
      });
    };
    handlers.set(life, apply);
    apply(actions);
    if (plan && plan.kind === 'hedge') {
      const startMs = now;
      q.push(startMs + plan.atMs, () => {
        if (r.firstTokenMs !== null || life.isDone) return;
        r.hedged = true;
        runLife(r, { ...request, requestId: `${request.requestId}#hedge`, pin: plan.endpointId }, true);
      });
    }
  };

  rows.forEach((row, index) => {
    q.push(row.arrivalMs, () => {
      const r: Req = { index, arrivalMs: now, firstTokenMs: null, costUsd: 0, servedBy: null, lives: 0, livesDone: 0, hedged: false, failed: false, lifeList: [] };
      reqs.push(r);
      const request: RouteRequest = {
        requestId: `r${index}`,
        model: MODEL,
        sessionId: row.sessionId,
        callerId: null,
        inputTokens: row.inputTokens,
        outputTokensHint: null,
        stream: true,
        modalities: [],
        pin: null,
        prefixHashes: row.hashIds,
      };
      runLife(r, request, false);
    });
  });
  while (q.size > 0) {
    const e = q.pop();
    now = e.at;
    e.fn();
  }
  for (const p of providers.values()) p.invariants();
  core.invariants();
  rw?.invariants();

  const kept = reqs.filter((r) => r.index >= WARMUP);
  const ttfts = kept.filter((r) => r.firstTokenMs !== null).map((r) => r.firstTokenMs! - r.arrivalMs).sort((a, b) => a - b);
  const pct = (p: number) => ttfts[Math.min(ttfts.length - 1, Math.floor(p * ttfts.length))]!;
  const share = (tier: string) => kept.filter((r) => r.servedBy !== null && tierOf.get(r.servedBy) === tier).length / kept.length;
  return {
    costPer1k: (kept.reduce((a, r) => a + r.costUsd, 0) / kept.length) * 1000,
    ttftMean: ttfts.reduce((a, b) => a + b, 0) / ttfts.length,
    ttftP50: pct(0.5),
    ttftP99: pct(0.99),
    slo: kept.filter((r) => r.firstTokenMs === null || r.firstTokenMs - r.arrivalMs > SLO_MS).length / kept.length,
    hedgeRate: kept.filter((r) => r.hedged).length / kept.length,
    rateLimited,
    api: share('api'),
    quota: share('quota'),
    concurrency: share('concurrency'),
  };
}

/** Two-sided 97.5 % quantiles of Student's t for df = 1..30. */
const T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.16, 2.145, 2.131, 2.12, 2.11, 2.101, 2.093, 2.086, 2.08, 2.074, 2.069, 2.064, 2.06, 2.056, 2.052, 2.048, 2.045, 2.042];
function mean(xs: number[]): number {
  return xs.reduce((a, b) => a + b, 0) / xs.length;
}
function half(xs: number[]): number {
  if (xs.length < 2) return Number.NaN;
  const m = mean(xs);
  return (T975[xs.length - 2] ?? 1.96) * Math.sqrt(xs.reduce((a, x) => a + (x - m) ** 2, 0) / (xs.length - 1) / xs.length);
}

const { rows: all } = await readTrace(new URL('../traces/azure-2023/conv.arrow', import.meta.url).pathname);
const rows = all.slice(0, N);
MEAN_OUTPUT = rows.reduce((a, r) => a + r.outputTokens, 0) / rows.length;
console.log(`RouteWise study: ${rows.length} Azure conv requests (${((rows[rows.length - 1]!.arrivalMs - rows[0]!.arrivalMs) / 60_000).toFixed(1)} min), ${SEEDS} seeds (1..${SEEDS}), warm-up ${WARMUP}, SLO ${SLO_MS} ms`);
const table: Array<Record<string, string>> = [];
for (const policy of POLICIES) {
  if (values.only && !policy.label.includes(values.only)) continue;
  const runs: RunStats[] = [];
  for (let seed = 1; seed <= SEEDS; seed++) runs.push(runOnce(policy, rows, seed));
  const col = (k: keyof RunStats) => runs.map((r) => r[k]);
  const pm = (k: keyof RunStats, digits: number) => `${mean(col(k)).toFixed(digits)} ± ${half(col(k)).toFixed(digits)}`;
  table.push({
    policy: policy.label,
    '$ / 1k req': pm('costPer1k', 4),
    'TTFT mean ms': pm('ttftMean', 0),
    'p50 ms': mean(col('ttftP50')).toFixed(0),
    'p99 ms': mean(col('ttftP99')).toFixed(0),
    'SLO viol %': (mean(col('slo')) * 100).toFixed(2),
    'hedge %': (mean(col('hedgeRate')) * 100).toFixed(2),
    '429s': mean(col('rateLimited')).toFixed(0),
    'api/quota/conc %': `${(mean(col('api')) * 100).toFixed(0)}/${(mean(col('quota')) * 100).toFixed(0)}/${(mean(col('concurrency')) * 100).toFixed(0)}`,
  });
  console.error(`done: ${policy.label}`);
}
if (values.markdown) {
  const keys = Object.keys(table[0]!);
  console.log(`| ${keys.join(' | ')} |\n| ${keys.map(() => '---').join(' | ')} |`);
  for (const r of table) console.log(`| ${keys.map((k) => r[k]).join(' | ')} |`);
} else console.table(table);
