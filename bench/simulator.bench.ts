/**
 * Simulator speed: simulated requests and events per wall-clock second, and peak RSS.
 * - `mooncake`: the committed Mooncake conversation trace (12,031 requests) on 4 and 8 replicas
 *   under each built-in strategy (engine-bound: ~100 events per request), per-step and with
 *   coalesced decode runs (what `switchyard sim` uses; identical requests, fewer events).
 * - `mixed`: the Azure conversation trace (19,366 requests) on 2 replicas + 3 hosted providers,
 *   with a provider crash, a 429 storm, client retries and abandonment (the fault/provider paths).
 * - `sweep`: experiments/providers.yaml (10 cells) end to end through `switchyard sim`, with
 *   --jobs 1 and --jobs 2 (worker threads), DuckDB writes included.
 * - `default` and `sweep-16`: the default experiment (`npm start`) and a 16-run sweep of it
 *   (bench/sweep-16.yaml) in-loop cold (each cell's replay timed once in a fresh process), in-loop
 *   warm (timed in this process on optimised code) and end to end (`switchyard sim` as a child
 *   process with its default --jobs: start-up, bundle, trace, DuckDB tables and all, split into
 *   start-up, replay and tail), side by side, with end to end over each in-loop rate and the
 *   real-time factor (simulated duration / wall time) of each (bench/end-to-end.bench.ts);
 *   SWITCHYARD_BENCH_REPS=N repeats each N times, alternating.
 * Prints one JSON line per case; run with `npm run bench:sim`.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readTrace } from '../traces/arrow-trace.ts';
import { buildReplica, replicaFactory, resolveReplicas } from '../simulator/engine/replica-config.ts';
import { ExperimentSchema, type Experiment } from '../simulator/experiment.ts';
import { replayRun } from '../simulator/replay.ts';
import { runExperiment, selectRows } from '../simulator/sim-command.ts';

const root = join(import.meta.dirname, '..');
const mooncake = join(root, 'traces', 'mooncake', 'conversation.arrow');
const azure = join(root, 'traces', 'azure-2023', 'conv.arrow');

function experiment(trace: string, raw: Record<string, unknown>): Experiment {
  return { ...ExperimentSchema.parse({ name: 'bench', trace, seed: 1, runs: [{ strategy: 'fixed' }], output: 'unused', ...raw }), tracePath: trace, file: 'bench' };
}

function bench(name: string, trace: string, exp: Experiment, rowsAll: Parameters<typeof selectRows>[0], strategy: string, extra: Record<string, unknown>, coalesced = false) {
  const rows = selectRows(rowsAll, exp);
  const resolved = resolveReplicas(exp.replicas);
  const makeReplica = coalesced ? () => buildReplica(resolved, 512, { coalesceDecodeSteps: true }) : replicaFactory(exp.replicas, 512);
  const t0 = performance.now();
  const res = replayRun({ experiment: exp, rows, run: { strategy, params: {}, label: strategy }, runId: 'bench', seed: 1, makeReplica });
  const wallS = (performance.now() - t0) / 1000;
  console.log(
    JSON.stringify({
      bench: `simulator/${name}`,
      trace,
      strategy,
      coalesced,
      ...extra,
      requests: rows.length,
      events: res.eventsProcessed,
      wallS: Number(wallS.toFixed(3)),
      simulatedRequestsPerS: Math.round(rows.length / wallS),
      eventsPerS: Math.round(res.eventsProcessed / wallS),
      peakRssMiB: Math.round(process.resourceUsage().maxRSS / 1024),
    }),
  );
}

const { rows: moon } = await readTrace(mooncake);
for (const replicas of [4, 8]) {
  for (const strategy of ['fixed', 'round_robin']) {
    const exp = experiment(mooncake, { rate_scale: 0.2 * (replicas / 4), replicas: { count: replicas, profile: 'llama2-70b-h100-tp4' } });
    for (const coalesced of [false, true]) bench('mooncake', 'mooncake/conversation', exp, moon, strategy, { replicas, rateScale: exp.rate_scale }, coalesced);
  }
}

const { rows: az } = await readTrace(azure);
for (const strategy of ['fixed', 'round_robin']) {
  const exp = experiment(azure, {
    model: 'm',
    replicas: { count: 2, profile: 'llama2-70b-h100-tp4' },
    providers: [
      { name: 'deepinfra', profile: 'minimax-m2.5-openrouter/deepinfra' },
      { name: 'minimax', profile: 'minimax-m2.5-openrouter/minimax', limits: { rpm: 600 } },
      { name: 'chutes', profile: 'minimax-m2.5-subscriptions/chutes', type: 'quota', limits: { quota: [{ window_ms: 3_600_000, requests: 2000 }] } },
    ],
    client: { stream: 0.8, timeout_ms: 120_000, abandon: { median_ms: 30_000, sigma: 1 }, retries: { max: 2 } },
    faults: [
      { kind: 'crash', endpoint: 'deepinfra', from_ms: 600_000, to_ms: 900_000 },
      { kind: 'rate_limit_storm', endpoint: 'minimax', from_ms: 1_200_000, to_ms: 1_500_000, retry_after_ms: 5000 },
      { kind: 'slow', endpoint: 'replica-0', from_ms: 1_800_000, to_ms: 2_400_000, factor: 3 },
    ],
  });
  bench('mixed', 'azure-2023/conv', exp, az, strategy, { replicas: 2, providers: 3, faults: 3 }, true);
}

const out = mkdtempSync(join(tmpdir(), 'switchyard-bench-'));
for (const jobs of [1, 2]) {
  const t0 = performance.now();
  const report = await runExperiment(join(root, 'experiments', 'providers.yaml'), { jobs, progress: false, print: () => {}, output: join(out, `sweep-${jobs}.duckdb`) });
  const wallS = (performance.now() - t0) / 1000;
  const requests = report.summaries.reduce((s, r) => s + r.requests, 0);
  console.log(
    JSON.stringify({
      bench: 'simulator/sweep',
      experiment: 'experiments/providers.yaml',
      jobs,
      cells: report.summaries.length,
      requests,
      wallS: Number(wallS.toFixed(3)),
      cellsPerMin: Number(((report.summaries.length / wallS) * 60).toFixed(1)),
      simulatedRequestsPerS: Math.round(requests / wallS),
      peakRssMiB: Math.round(process.resourceUsage().maxRSS / 1024),
    }),
  );
}

// The default experiment and a 16-run sweep, in-loop and end to end (bench/end-to-end.bench.ts).
const { runEndToEnd } = await import('./end-to-end.bench.ts');
await runEndToEnd(Number(process.env.SWITCHYARD_BENCH_REPS ?? 1));
