/**
 * Routing quality on the bundled reference trace: each gated strategy replays a fixed slice
 * of the Mooncake conversation trace (first 3,000 requests, 4 replicas, rate_scale 0.2, seed 1)
 * and reports TTFT p99, goodput and cost. The simulator is deterministic, so these numbers change
 * only when routing or the engine model changes — a worse number is a routing regression.
 */
import { join } from 'node:path';
import { readTrace } from '../traces/arrow-trace.ts';
import { replicaFactory } from '../simulator/engine/replica-config.ts';
import { ExperimentSchema } from '../simulator/experiment.ts';
import { replayRun } from '../simulator/replay.ts';
import { selectRows } from '../simulator/sim-command.ts';

/**
 * Per-model strategies gated on routing quality (multi-target orderers are gated by their contract
 * suites): the default, round robin, and the cache-aware routers of llm-d, SGLang and Dynamo
 * (`experiments/cache-aware.yaml` runs the same comparison on the whole trace over 5 seeds).
 */
export const QUALITY_STRATEGIES = ['fixed', 'round_robin', 'least_busy', 'llm_d', 'sglang_cache_aware', 'dynamo_kv'] as const;

/** Quality of one strategy on the reference slice. */
export interface QualityResult {
  strategy: string;
  ttftP50Ms: number;
  ttftP99Ms: number;
  /** Σ cached prompt tokens / Σ prompt tokens over all requests, 0–1. */
  prefixHitRate: number;
  /** Fraction of requests ok within TTFT ≤ 5 s and TPOT ≤ 100 ms. */
  goodput: number;
  costUsdPer1k: number;
}

const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  const pos = (s.length - 1) * q;
  const lo = Math.floor(pos);
  return s[lo]! + (s[Math.min(lo + 1, s.length - 1)]! - s[lo]!) * (pos - lo);
};

/** Replays the reference slice once per built-in strategy. */
export async function runQuality(limit = 3_000): Promise<QualityResult[]> {
  const trace = join(import.meta.dirname, '..', 'traces', 'mooncake', 'conversation.arrow');
  const { rows: all } = await readTrace(trace);
  const out: QualityResult[] = [];
  for (const strategy of QUALITY_STRATEGIES) {
    const exp = {
      ...ExperimentSchema.parse({ name: 'quality', trace, seed: 1, rate_scale: 0.2, limit, model: 'kimi', replicas: { count: 4, profile: 'llama2-70b-h100-tp4' }, runs: [{ strategy }], output: 'unused' }),
      tracePath: trace,
      file: 'bench/quality.ts',
    };
    const res = replayRun({ experiment: exp, rows: selectRows(all, exp), run: { strategy, params: {}, label: strategy }, runId: strategy, seed: 1, makeReplica: replicaFactory(exp.replicas, 512) });
    const ok = res.requests.filter((r) => r.status === 'ok');
    const good = ok.filter((r) => r.ttftMs! <= 5_000 && (r.tpotMs === null || r.tpotMs <= 100)).length;
    out.push({
      strategy,
      ttftP50Ms: quantile(ok.map((r) => r.ttftMs!), 0.5),
      ttftP99Ms: quantile(ok.map((r) => r.ttftMs!), 0.99),
      prefixHitRate: res.requests.reduce((a, r) => a + r.cachedTokens, 0) / Math.max(1, res.requests.reduce((a, r) => a + r.inputTokens, 0)),
      goodput: good / res.requests.length,
      costUsdPer1k: (res.requests.reduce((a, r) => a + r.costUsd, 0) / res.requests.length) * 1000,
    });
  }
  return out;
}
