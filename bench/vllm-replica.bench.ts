/**
 * Wall-time benchmark of `VllmReplica` on a synthetic load (no trace files needed):
 *
 *   npx tsx bench/vllm-replica.bench.ts [requests=3000] [gapMs=300]
 *
 * Requests: input uniform in [6k, 18k] tokens (mean 12k), output uniform in [1, 679] (mean 340),
 * one arrival every `gapMs`; half share a 4-hash-block (2,048-token) system prompt. Replayed
 * round-robin over 1 and over 4 replicas with the llama2-70b-h100-tp4 profile and default options.
 * Prints wall ms, steps, preemptions, prefix-hit rate and mean simulated TTFT/E2E.
 */
import { resolve } from 'node:path';
import { deriveRng } from '../core/rng.ts';
import { pathToFileURL } from 'node:url';
import type { EngineEvent, EngineRequest } from '../simulator/engine/engine-model.ts';
import { loadStepTimeProfile } from '../simulator/engine/step-time.ts';
import { VllmReplica } from '../simulator/engine/vllm-replica.ts';

/** The synthetic arrivals described in the module doc. */
export function syntheticLoad(n: number, gapMs: number, seed = 1): { atMs: number; req: EngineRequest }[] {
  const g = deriveRng(seed, 'bench/synthetic-load');
  const r = () => g.float();
  return Array.from({ length: n }, (_, i) => {
    const input = 6000 + Math.floor(r() * 12_001);
    const output = 1 + Math.floor(r() * 679);
    const blocks = Math.ceil(input / 512);
    const shared = r() < 0.5;
    const hashIds = Array.from({ length: blocks }, (_, k) => (shared && k < 4 ? k : 1_000_000 + i * 64 + k));
    return { atMs: i * gapMs, req: { attemptId: i, inputTokens: input, outputTokens: output, hashIds } };
  });
}

/** Replay `arrivals` round-robin over `nReplicas` fresh replicas; returns wall time and simulated stats. */
export function replay(arrivals: { atMs: number; req: EngineRequest }[], nReplicas: number) {
  const { model } = loadStepTimeProfile('llama2-70b-h100-tp4');
  const reps = Array.from({ length: nReplicas }, () => new VllmReplica({ stepTime: model }));
  const next: (number | null)[] = reps.map(() => null);
  const arrival = new Map<number, number>();
  let ttftSum = 0;
  let e2eSum = 0;
  let finished = 0;
  const emit = (e: EngineEvent): void => {
    if (e.kind === 'first_token') ttftSum += e.atMs - arrival.get(e.attemptId)!;
    else if (e.kind === 'finished') {
      e2eSum += e.atMs - arrival.get(e.attemptId)!;
      finished++;
    }
  };
  const t0 = performance.now();
  let ai = 0;
  let lastMs = 0;
  for (;;) {
    let best = -1;
    for (let i = 0; i < reps.length; i++) if (next[i] != null && (best < 0 || next[i]! < next[best]!)) best = i;
    const a = arrivals[ai];
    if (a && (best < 0 || a.atMs <= next[best]!)) {
      arrival.set(a.req.attemptId, a.atMs);
      const i = ai % reps.length;
      const end = reps[i]!.enqueue(a.req, a.atMs, emit);
      if (end !== null) next[i] = end;
      ai++;
      continue;
    }
    if (best < 0) break;
    lastMs = next[best]!;
    next[best] = reps[best]!.completeStep(lastMs, emit);
  }
  const wallMs = performance.now() - t0;
  const stats = reps.map((r) => r.prefixCacheStats());
  const lookup = stats.reduce((s, x) => s + x.lookupTokens, 0);
  const hit = stats.reduce((s, x) => s + x.hitTokens, 0);
  return {
    replicas: nReplicas,
    requests: arrivals.length,
    finished,
    wallMs: Math.round(wallMs),
    steps: reps.reduce((s, r) => s + r.steps, 0),
    preemptions: reps.reduce((s, r) => s + r.preemptions, 0),
    prefixHitPct: Number(((100 * hit) / lookup).toFixed(1)),
    meanTtftS: Number((ttftSum / finished / 1000).toFixed(2)),
    meanE2eS: Number((e2eSum / finished / 1000).toFixed(2)),
    simulatedS: Math.round(lastMs / 1000),
  };
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  const load = syntheticLoad(Number(process.argv[2] ?? 3000), Number(process.argv[3] ?? 300));
  for (const k of [1, 4]) console.log(JSON.stringify(replay(load, k)));
}
