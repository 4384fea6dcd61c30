/**
 * Speed of the calibrated engine models (operator-table step times) on the committed Mooncake
 * conversation trace (12,031 requests over ~59 minutes), per-step simulation:
 *
 *   npx tsx bench/engine.bench.ts [--quick]
 *
 * 1. `replay`: the full discrete-event loop with the routing core (`replayRun`, round_robin) over
 *    8 replicas; simulated requests/s, engine steps/s, loop events/s, peak RSS, and the speed-up
 *    over real time = simulated span (until the last request ends) ÷ wall time, and ÷ CPU time
 *    (the fair figure on a shared machine). The trace spans 3,550 s at rate_scale 1.
 * 2. `engines`: the same replicas driven directly (round-robin, no core), to separate engine cost
 *    from loop cost.
 * 3. `steady-state`: 200,000 decode steps of a 64-request batch on one replica, counting garbage
 *    collections and heap growth (0 GCs ⇒ the step allocates nothing).
 * Prints one JSON line per case.
 */
import { join } from 'node:path';
import { PerformanceObserver } from 'node:perf_hooks';
import type { EngineEvent, EngineModel } from '../simulator/engine/engine-model.ts';
import { buildReplica, replicaFactory, ReplicasSchema, resolveReplicas } from '../simulator/engine/replica-config.ts';
import { ExperimentSchema } from '../simulator/experiment.ts';
import { replayRun } from '../simulator/replay.ts';
import { selectRows } from '../simulator/sim-command.ts';
import { readTrace } from '../traces/arrow-trace.ts';

const quick = process.argv.includes('--quick');
const trace = join(import.meta.dirname, '..', 'traces', 'mooncake', 'conversation.arrow');
const { rows: all } = await readTrace(trace);

interface Case {
  name: string;
  rateScale: number;
  replicas: Record<string, unknown>;
}

const CASES: Case[] = [
  { name: '8 × vLLM Llama-3.1-8B TP1 H100', rateScale: 1, replicas: { count: 8, engine: 'vllm', gpu: 'h100_sxm', model: 'llama-3.1-8b', tp: 1 } },
  { name: '8 × vLLM Llama-3.1-70B TP4 H100', rateScale: 0.5, replicas: { count: 8, engine: 'vllm', gpu: 'h100_sxm', model: 'llama-3.1-70b', tp: 4 } },
  { name: '8 × SGLang Llama-3.1-8B TP1 H100', rateScale: 1, replicas: { count: 8, engine: 'sglang', gpu: 'h100_sxm', model: 'llama-3.1-8b', tp: 1 } },
];

const steps = (r: EngineModel): number => (r as unknown as { steps: number }).steps;
const pct = (xs: number[], q: number) => {
  const s = xs.filter(Number.isFinite).sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor(q * s.length))]! : NaN;
};

for (const c of quick ? CASES.slice(0, 1) : CASES) {
  const exp = {
    ...ExperimentSchema.parse({ name: 'bench', trace, seed: 1, rate_scale: c.rateScale, replicas: c.replicas, runs: [{ strategy: 'round_robin' }], output: 'unused' }),
    tracePath: trace,
    file: 'bench',
  };
  const rows = selectRows(all, exp);
  const made: EngineModel[] = [];
  const factory = replicaFactory(exp.replicas, 512);
  const cpuR = process.cpuUsage();
  const t0 = performance.now();
  const res = replayRun({
    experiment: exp,
    rows,
    run: { strategy: 'round_robin', params: {}, label: 'round_robin' },
    runId: 'bench',
    seed: 1,
    makeReplica: (i) => {
      const r = factory(i);
      made.push(r);
      return r;
    },
  });
  const wallS = (performance.now() - t0) / 1000;
  const cpuU = process.cpuUsage(cpuR);
  const cpuS = (cpuU.user + cpuU.system) / 1e6;
  const nSteps = made.reduce((s, r) => s + steps(r), 0);
  // Simulated span: until the last request ended (the loop's last event may be a later sample tick).
  const spanMs = res.requests.reduce((m, r) => Math.max(m, r.arrivalMs + (r.e2eMs ?? 0)), 0);
  const ttft = res.requests.map((r) => r.ttftMs ?? NaN);
  console.log(
    JSON.stringify({
      bench: 'engine/replay',
      case: c.name,
      rateScale: c.rateScale,
      requests: rows.length,
      ok: res.requests.filter((r) => r.status === 'ok').length,
      wallS: Number(wallS.toFixed(2)),
      cpuS: Number(cpuS.toFixed(2)),
      simulatedS: Math.round(spanMs / 1000),
      speedupOverRealTime: Math.round(spanMs / 1000 / wallS),
      speedupOverRealTimeCpu: Math.round(spanMs / 1000 / cpuS),
      simulatedRequestsPerS: Math.round(rows.length / wallS),
      stepsPerS: Math.round(nSteps / wallS),
      steps: nSteps,
      eventsPerS: Math.round(res.eventsProcessed / wallS),
      ttftP50Ms: Math.round(pct(ttft, 0.5)),
      ttftP99Ms: Math.round(pct(ttft, 0.99)),
      peakRssMiB: Math.round(process.resourceUsage().maxRSS / 1024),
    }),
  );

  // Engines alone: the same arrivals, round-robin, no routing core; per step and coalesced.
  const per = enginesOnly(c, rows, false);
  const coa = enginesOnly(c, rows, true);
  for (const [mode, x] of [['per-step', per], ['coalesced', coa]] as const) {
    console.log(
      JSON.stringify({
        bench: 'engine/engines-only',
        case: c.name,
        mode,
        requests: rows.length,
        wallS: Number(x.wallS.toFixed(2)),
        cpuS: Number(x.cpuS.toFixed(2)),
        simulatedS: Math.round(x.lastMs / 1000),
        speedupOverRealTime: Math.round(x.lastMs / 1000 / x.wallS),
        speedupOverRealTimeCpu: Math.round(x.lastMs / 1000 / x.cpuS),
        stepsPerS: Math.round(x.steps / x.wallS),
        steps: x.steps,
        events: x.events,
        ttftP50Ms: Number(pct(x.ttft, 0.5).toFixed(3)),
        ttftP99Ms: Number(pct(x.ttft, 0.99).toFixed(3)),
        tpotP50Ms: Number(pct(x.tpot, 0.5).toFixed(4)),
        tpotP99Ms: Number(pct(x.tpot, 0.99).toFixed(4)),
      }),
    );
  }
  const rel = (a: number, b: number) => Math.abs(a - b) / Math.max(Math.abs(b), 1e-12);
  const worst = Math.max(...[0.5, 0.9, 0.99].flatMap((q) => [rel(pct(coa.ttft, q), pct(per.ttft, q)), rel(pct(coa.tpot, q), pct(per.tpot, q))]));
  console.log(JSON.stringify({ bench: 'engine/coalescing-check', case: c.name, worstPercentileRelDiff: worst, within0_5pct: worst <= 0.005 }));
}

/** Drive 8 fresh replicas round-robin over the trace rows (no routing core). */
function enginesOnly(c: Case, rows: readonly { arrivalMs: number; inputTokens: number; outputTokens: number; hashIds: readonly number[] | null }[], coalesce: boolean) {
  const r = resolveReplicas(ReplicasSchema.parse(c.replicas));
  const reps = Array.from({ length: 8 }, () => buildReplica(r, 512, { coalesceDecodeSteps: coalesce }));
  const next: (number | null)[] = reps.map(() => null);
  const arrival = new Float64Array(rows.length);
  const first = new Float64Array(rows.length);
  const ttft: number[] = [];
  const tpot: number[] = [];
  const emit = (e: EngineEvent): void => {
    if (e.kind === 'first_token') {
      first[e.attemptId] = e.atMs;
      ttft.push(e.atMs - arrival[e.attemptId]!);
    } else if (e.kind === 'finished') {
      const out = rows[e.attemptId]!.outputTokens;
      if (out > 1) tpot.push((e.atMs - first[e.attemptId]!) / (out - 1));
    }
  };
  const cpu0 = process.cpuUsage();
  const t1 = performance.now();
  let ai = 0;
  let lastMs = 0;
  let events = 0;
  for (;;) {
    let best = -1;
    for (let i = 0; i < reps.length; i++) if (next[i] !== null && (best < 0 || next[i]! < next[best]!)) best = i;
    const row = rows[ai];
    const at = row ? row.arrivalMs / c.rateScale : Infinity;
    if (row && (best < 0 || at <= next[best]!)) {
      const i = ai % reps.length;
      arrival[ai] = at;
      const cut = reps[i]!.interrupt?.(at) ?? null;
      if (cut !== null) next[i] = cut;
      const end = reps[i]!.enqueue({ attemptId: ai, inputTokens: row.inputTokens, outputTokens: row.outputTokens, hashIds: row.hashIds }, at, emit);
      if (end !== null) next[i] = end;
      ai++;
      continue;
    }
    if (best < 0) break;
    lastMs = next[best]!;
    next[best] = reps[best]!.completeStep(lastMs, emit);
    events++;
  }
  const wallS = (performance.now() - t1) / 1000;
  const cu = process.cpuUsage(cpu0);
  return { wallS, cpuS: (cu.user + cu.system) / 1e6, lastMs, steps: reps.reduce((s, x) => s + steps(x), 0), events, ttft, tpot };
}

// Steady state: decode steps of an unchanging batch allocate nothing (heap flat, no GC).
for (const engine of ['vllm', 'sglang'] as const) {
  const n = quick ? 20_000 : 100_000;
  const reps = Array.from({ length: 4 }, () => buildReplica(resolveReplicas(ReplicasSchema.parse({ count: 1, engine, model: 'llama-3.1-8b', tp: 1 })), 512));
  const ends: number[] = [];
  const emit = (): void => {};
  for (const rep of reps) {
    let t: number | null = null;
    // 64 requests of 200 + 101,000 tokens stay in one unchanging decode batch for the whole measurement.
    for (let i = 0; i < 64; i++) t = rep.enqueue({ attemptId: i, inputTokens: 200, outputTokens: n + 1000, hashIds: null }, 0, emit) ?? t;
    for (let i = 0; i < 500; i++) t = rep.completeStep(t!, emit);
    ends.push(t!);
  }
  let gcs = 0;
  const obs = new PerformanceObserver((list) => void (gcs += list.getEntries().length));
  obs.observe({ entryTypes: ['gc'] });
  const heap0 = process.memoryUsage().heapUsed;
  const t2 = performance.now();
  for (let k = 0; k < reps.length; k++) {
    const rep = reps[k]!;
    let t = ends[k]!;
    for (let i = 0; i < n / reps.length; i++) t = rep.completeStep(t, emit)!;
  }
  const wall = (performance.now() - t2) / 1000;
  const heap1 = process.memoryUsage().heapUsed;
  await new Promise((res) => setTimeout(res, 50));
  obs.disconnect();
  console.log(
    JSON.stringify({
      bench: 'engine/steady-state',
      engine,
      batch: 64,
      steps: n,
      stepsPerS: Math.round(n / wall),
      nsPerStep: Math.round((wall * 1e9) / n),
      gcDuringSteps: gcs,
      heapGrowthBytesPerStep: Number(((heap1 - heap0) / n).toFixed(3)),
    }),
  );
}
