import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { describe, expect, it } from 'vitest';
import { loadCalibration } from '../../../simulator/engine/calibration.ts';
import { meanOf, runClosedLoop } from '../../../simulator/engine/closed-loop.ts';
import { loadCrossCheck } from '../../../simulator/engine/operator-tables.ts';
import { buildReplica, ReplicasSchema, resolveReplicas } from '../../../simulator/engine/replica-config.ts';
import type { EngineEvent } from '../../../simulator/engine/engine-model.ts';
import type { StepTimeModel } from '../../../simulator/engine/step-time.ts';
import { VllmReplica } from '../../../simulator/engine/vllm-replica.ts';
import { committedConstants, median, pointSetup, quantile, readSiliconRows, simulatePoint, summarize, VALIDATION_FAMILIES, vllmBenchmarkServer } from '../../../simulator/engine/validation.ts';
import { crossCheckRows, renderValidationMarkdown, writeValidationDuckDb } from '../../../simulator/engine/validation-report.ts';

const flat: StepTimeModel = { stepMs: (b) => (b.prefillTokens === 0 && b.decodeSeqs === 0 ? 0 : 10 + 0.01 * b.prefillTokens) };

describe('closed-loop client', () => {
  it('one client: TTFT is the prefill step, TPOT the decode step', () => {
    const res = runClosedLoop(new VllmReplica({ stepTime: flat, kvBlocks: 10_000 }), { concurrency: 1, inputTokens: 1000, outputTokens: 11, warmupRequests: 1, measuredRequests: 3 });
    expect([...res.ttftMs]).toEqual([20, 20, 20]);
    expect([...res.tpotMs]).toEqual([10, 10, 10]);
  });

  it('a drained warm-up makes the measured phase open with a burst; arrival delays are seeded', () => {
    const spec = { concurrency: 4, inputTokens: 3000, outputTokens: 20, warmupRequests: 8, measuredRequests: 8 };
    const mk = () => new VllmReplica({ stepTime: flat, kvBlocks: 10_000, maxNumBatchedTokens: 4096 });
    const cont = runClosedLoop(mk(), spec);
    const drained = runClosedLoop(mk(), { ...spec, drainWarmup: true });
    // The burst of 4 × 3,000-token prompts queues behind a 4,096-token budget.
    expect(Math.max(...drained.ttftMs)).toBeGreaterThan(Math.max(...cont.ttftMs) - 1e-9);
    const a = runClosedLoop(mk(), { ...spec, maxArrivalDelayMs: 5, seed: 3 });
    const b = runClosedLoop(mk(), { ...spec, maxArrivalDelayMs: 5, seed: 3 });
    expect([...a.ttftMs]).toEqual([...b.ttftMs]);
    expect(() => runClosedLoop(mk(), { ...spec, concurrency: 0 })).toThrow(/concurrency must be a positive integer/);
  });

  it('perf_analyzer prompt order: after a drained warm-up each client resends its warm-up prompts first', () => {
    const spec = { concurrency: 2, inputTokens: 1024, outputTokens: 4, warmupRequests: 4, measuredRequests: 6, drainWarmup: true };
    const mk = () => new VllmReplica({ stepTime: flat, kvBlocks: 10_000, maxNumBatchedTokens: 8192, hashBlockTokens: 512 });
    const cached: number[] = [];
    const spy = (r: VllmReplica): VllmReplica => {
      const enqueue = r.enqueue.bind(r);
      const completeStep = r.completeStep.bind(r);
      const wrap = (emit: (e: EngineEvent) => void) => (e: EngineEvent) => {
        if (e.kind === 'first_token' && e.attemptId >= 4) cached.push(e.cachedTokens);
        emit(e);
      };
      r.enqueue = (req, t, emit) => enqueue(req, t, wrap(emit));
      r.completeStep = (t, emit) => completeStep(t, wrap(emit));
      return r;
    };
    const replay = runClosedLoop(spy(mk()), { ...spec, prompts: { blockTokens: 512, reuse: 'per-client-phase' } });
    // Measured rounds 1–2 hit the warm-up's prompts (all but the last token cached), rounds 3 on are new.
    expect(cached.slice(0, 4)).toEqual([1023, 1023, 1023, 1023]);
    expect(cached.slice(4)).toEqual([0, 0]);
    const none = runClosedLoop(mk(), { ...spec, prompts: { blockTokens: 512, reuse: 'none' } });
    const plain = runClosedLoop(mk(), spec);
    expect([...none.ttftMs]).toEqual([...plain.ttftMs]);
    expect(meanOf(replay.ttftMs)).toBeLessThan(meanOf(plain.ttftMs));
    expect(() => runClosedLoop(mk(), { ...spec, prompts: { blockTokens: 0, reuse: 'none' } })).toThrow(/blockTokens must be a positive integer/);
  });

  it('client cohorts start together: G cohorts over the spread, G ≥ C is the per-client ramp', () => {
    const spec = { concurrency: 8, inputTokens: 1000, outputTokens: 11, warmupRequests: 0, measuredRequests: 8, startSpreadMs: 400 };
    const mk = () => new VllmReplica({ stepTime: flat, kvBlocks: 10_000, maxNumBatchedTokens: 8192 });
    // 8 clients ramped 50 ms apart: each prefill (20 ms) runs alone, the later ones after the 10 ms decode step in flight.
    expect([...runClosedLoop(mk(), spec).ttftMs]).toEqual([20, 30, 30, 30, 30, 30, 30, 30]);
    expect([...runClosedLoop(mk(), { ...spec, startCohorts: 8 }).ttftMs]).toEqual([...runClosedLoop(mk(), spec).ttftMs]);
    // 2 cohorts of 4 at t = 0 and 200 ms: the first of a cohort starts a step alone (20 ms), the other
    // three share the next one (10 + 30 ms).
    expect([...runClosedLoop(mk(), { ...spec, startCohorts: 2 }).ttftMs]).toEqual([20, 60, 60, 60, 20, 60, 60, 60]);
    expect(() => runClosedLoop(mk(), { ...spec, startCohorts: 0 })).toThrow(/startCohorts must be an integer ≥ 1/);
  });

  it('coalesced decode runs give the per-step TTFT/TPOT (validated within 0.5 %, exact in practice)', () => {
    for (const engine of ['vllm', 'sglang'] as const) {
      const r = resolveReplicas(ReplicasSchema.parse({ count: 1, engine, model: 'qwen3-32b', tp: 4 }));
      const spec = { concurrency: 24, inputTokens: 2048, outputTokens: 300, warmupRequests: 24, measuredRequests: 120, maxArrivalDelayMs: 7 };
      const per = runClosedLoop(buildReplica(r, 512), spec);
      const coa = runClosedLoop(buildReplica(r, 512, { coalesceDecodeSteps: true }), spec);
      for (const q of [0.5, 0.9, 0.99]) {
        for (const k of ['ttftMs', 'tpotMs'] as const) {
          const x = quantile([...per[k]], q);
          expect(Math.abs(quantile([...coa[k]], q) - x) / x).toBeLessThanOrEqual(0.005);
        }
      }
      expect(coa.steps).toBeLessThan(per.steps / 5); // far fewer loop events
      expect(meanOf(coa.tpotMs)).toBe(meanOf(per.tpotMs));
    }
  });
});

describe('validation against measured serving points', () => {
  const rows = readSiliconRows();

  it('the committed silicon rows are the 213 covered points (90 vLLM Qwen3-32B, 78 SGLang, 45 Llama-3.1-70B FP8)', () => {
    const n = (k: string) => rows.filter(VALIDATION_FAMILIES.find((f) => f.key === k)!.matches).length;
    expect(rows).toHaveLength(213);
    expect([n('vllm-qwen3-32b'), n('sglang-qwen3-32b'), n('vllm-llama-3.1-70b-fp8')]).toEqual([90, 78, 45]);
  });

  it('vLLM points run with AIConfigurator\'s benchmark rule: max_num_seqs C, budget C + isl + 1,500, max_model_len isl + osl + 1,500', () => {
    expect(vllmBenchmarkServer({ concurrency: 16, isl: 4096, osl: 512 })).toEqual({ max_num_seqs: 16, max_num_batched_tokens: 5612, max_model_len: 6108 });
    for (const key of ['vllm-qwen3-32b', 'vllm-llama-3.1-70b-fp8']) {
      const fam = VALIDATION_FAMILIES.find((f) => f.key === key)!;
      const r = rows.find((x) => fam.matches(x) && x.concurrency === 32)!;
      const { replicas } = pointSetup(fam, r);
      expect([replicas.max_num_seqs, replicas.max_num_batched_tokens, replicas.max_model_len]).toEqual([32, 32 + r.isl + 1500, r.isl + r.osl + 1500]);
    }
    // genai-perf points: vLLM's default prefix cache and perf_analyzer's prompt order.
    const q = VALIDATION_FAMILIES.find((f) => f.key === 'vllm-qwen3-32b')!;
    const { replicas, client } = pointSetup(q, rows.find((x) => q.matches(x))!);
    expect(replicas.enable_prefix_caching).toBe(true);
    expect(client.prompts).toEqual({ blockTokens: 512, reuse: 'per-client-phase' });
  });

  it('the staggered client takes its cohort count from the constants (committed: the fitted client calibration)', () => {
    const fam = VALIDATION_FAMILIES.find((f) => f.key === 'vllm-llama-3.1-70b-fp8')!;
    const r = rows.find((x) => fam.matches(x) && x.tp === 8 && x.concurrency === 32)!;
    const k = committedConstants(fam, 8);
    expect(k.startCohorts).toBe(loadCalibration().clients[fam.key]?.startCohorts);
    expect(pointSetup(fam, r, { ...k, startCohorts: 4 }).client.startCohorts).toBe(4);
    const sg = VALIDATION_FAMILIES.find((f) => f.key === 'sglang-qwen3-32b')!;
    expect(pointSetup(sg, rows.find((x) => sg.matches(x))!).client.startCohorts).toBeUndefined();
  });

  it('simulates a few points close to the measurement, deterministically', () => {
    const fam = VALIDATION_FAMILIES.find((f) => f.key === 'sglang-qwen3-32b')!;
    const r = rows.find((x) => fam.matches(x) && x.tp === 4 && x.isl === 2048 && x.osl === 256 && x.concurrency === 16)!;
    const a = simulatePoint(fam, r);
    const b = simulatePoint(fam, r);
    expect(b.simTtftMs).toBe(a.simTtftMs);
    expect(b.simTpotMs).toBe(a.simTpotMs);
    expect(Math.abs(a.tpotErrPct)).toBeLessThan(15);
    expect(Math.abs(a.ttftErrPct)).toBeLessThan(25);
    const vfam = VALIDATION_FAMILIES.find((f) => f.key === 'vllm-qwen3-32b')!;
    const v = rows.find((x) => vfam.matches(x) && x.tp === 4 && x.isl === 4096 && x.osl === 1024 && x.concurrency === 32)!;
    expect(Math.abs(simulatePoint(vfam, v).tpotErrPct)).toBeLessThan(10);
  });

  it('renders the report and writes the same numbers to DuckDB', async () => {
    const fam = VALIDATION_FAMILIES.find((f) => f.key === 'sglang-qwen3-32b')!;
    const points = rows.filter((x) => fam.matches(x) && x.osl === 128 && x.concurrency === 16).map((x) => simulatePoint(fam, x));
    const groups = summarize(points);
    expect(groups.map((g) => g.tp)).toEqual([2, 4, 8]);
    expect(groups[0]!.ttftMedianAbsPct).toBeCloseTo(median(points.filter((p) => p.row.tp === 2).map((p) => Math.abs(p.ttftErrPct))), 9);
    const cal = loadCalibration();
    const cross = crossCheckRows(loadCrossCheck(), cal);
    expect(cross.some((c) => c.source === 'splitwise-token')).toBe(true);
    const md = renderValidationMarkdown({ points, groups, crossCheck: cross, calibration: cal, steps: 100 });
    expect(md).toMatch(/^# Engine-model validation/);
    // Nothing machine-dependent: the same inputs give the same tracked file on any machine.
    expect(md).not.toMatch(/wall time of|steps\/s,|\d s of wall/);
    expect(renderValidationMarkdown({ points, groups, crossCheck: cross, calibration: cal, steps: 100 })).toBe(md);
    expect(md).toContain('| H100 SGLang Qwen3-32B TP 4 |');
    const dir = mkdtempSync(join(tmpdir(), 'validate-sim-'));
    const db = join(dir, 'v.duckdb');
    await writeValidationDuckDb(db, points, groups, cross);
    const con = await (await DuckDBInstance.create(db)).connect();
    const got = (await con.runAndReadAll('SELECT count(*)::INTEGER n, round(avg(abs(tpot_err_pct)), 6) m FROM validation_points')).getRowObjectsJson()[0]!;
    expect(got.n).toBe(points.length);
    expect(Number(got.m)).toBeCloseTo(points.reduce((s, p) => s + Math.abs(p.tpotErrPct), 0) / points.length, 4);
    con.closeSync();
  });

  it('the committed VALIDATION.md was generated by validate-sim', () => {
    const path = join(import.meta.dirname, '..', '..', '..', 'simulator', 'VALIDATION.md');
    expect(existsSync(path)).toBe(true);
    expect(readFileSync(path, 'utf8')).toMatch(/Generated by `switchyard validate-sim`/);
  });
});
