import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { loadArchitecture } from '../../../simulator/engine/architecture.ts';
import { OperatorStepTime, splitEnvelope } from '../../../simulator/engine/operator-step-time.ts';
import { loadOperatorTables, OPERATOR_TABLE_NAMES } from '../../../simulator/engine/operator-tables.ts';
import type { BatchShape } from '../../../simulator/engine/step-time.ts';
import { cutDecodeRun, fillDecodeRunEnds, walkDecodeRun } from '../../../simulator/engine/decode-run.ts';

const vllmH100 = loadOperatorTables('h100_sxm', 'vllm', '0.14.0');
const qwenTp2 = new OperatorStepTime({ tables: vllmH100, arch: loadArchitecture('qwen3-32b'), tp: 2, gemmDtype: 'bfloat16', maxTokens: 16_384 });
const llama8b = new OperatorStepTime({ tables: vllmH100, arch: loadArchitecture('llama-3.1-8b'), tp: 1, gemmDtype: 'bfloat16', maxTokens: 16_384, stepOverheadMs: 0.3, perSequenceOverheadMs: 0.04 });

/** One prefill chunk of `c` tokens after `p` cached ones, plus `d` decodes at context `ctx` each. */
const shape = (c: number, p: number, d: number, ctx: number): BatchShape => ({
  prefillTokens: c,
  prefillSeqs: c > 0 ? 1 : 0,
  prefillAttnPairs: c * (p + c / 2),
  decodeSeqs: d,
  decodeContextTokens: d * ctx,
});

describe('OperatorStepTime', () => {
  it('decode-run ends are bit-identical to walking stepMs step by step, and a cut matches the walk (fast-check)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 600 }),
        fc.integer({ min: 1, max: 200_000 }),
        fc.integer({ min: 1, max: 300 }),
        fc.double({ min: 0, max: 1e7, noNaN: true }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.boolean(),
        (d, ctx, steps, startMs, cutAt, small) => {
          const m = small ? llama8b : qwenTp2;
          const b = shape(0, 0, d, ctx);
          const ends = new Float64Array(steps);
          fillDecodeRunEnds(m, b, startMs, steps, ends);
          expect(b).toEqual(shape(0, 0, d, ctx));
          const generic = new Float64Array(steps);
          fillDecodeRunEnds({ stepMs: (x) => m.stepMs(x) }, b, startMs, steps, generic);
          expect(Array.from(ends)).toEqual(Array.from(generic));
          const until = startMs + (ends[steps - 1]! - startMs) * cutAt;
          const walked = walkDecodeRun(m, b, startMs, steps, until);
          const n = cutDecodeRun(ends, steps, until);
          expect(n).toBe(walked.steps);
          expect(ends[n - 1]).toBe(walked.endMs);
        },
      ),
    );
  });

  it('every committed tables file loads and builds a model for its configurations', () => {
    for (const name of OPERATOR_TABLE_NAMES) {
      const [gpu, engine, version] = name.split('-') as [string, string, string];
      const t = loadOperatorTables(gpu, engine, version);
      expect(Object.keys(t.gemm).length).toBeGreaterThan(10);
      const m = new OperatorStepTime({ tables: t, arch: loadArchitecture('llama-3.1-70b'), tp: 4, gemmDtype: 'bfloat16', maxTokens: 4096 });
      expect(m.stepMs(shape(512, 0, 8, 1000))).toBeGreaterThan(0);
    }
  });

  it('elementwiseScale discounts CUDA-graph steps only; eager steps pay the full elementwise time', () => {
    const fused = new OperatorStepTime({ tables: vllmH100, arch: loadArchitecture('qwen3-32b'), tp: 2, gemmDtype: 'bfloat16', maxTokens: 16_384, elementwiseScale: 0.2 });
    // A 64-sequence decode step (≤ 512 tokens: CUDA graph) gets cheaper with the fraction.
    expect(fused.stepMs(shape(0, 0, 64, 2000))).toBeLessThan(qwenTp2.stepMs(shape(0, 0, 64, 2000)));
    // A 4,096-token prefill step (eager) costs the same with or without it.
    expect(fused.stepMs(shape(4096, 0, 8, 2000))).toBe(qwenTp2.stepMs(shape(4096, 0, 8, 2000)));
    const sglangLike = new OperatorStepTime({ tables: vllmH100, arch: loadArchitecture('qwen3-32b'), tp: 2, gemmDtype: 'bfloat16', maxTokens: 16_384, elementwiseScale: 0.2, cudaGraphDecodeOnly: true });
    const sglangFull = new OperatorStepTime({ tables: vllmH100, arch: loadArchitecture('qwen3-32b'), tp: 2, gemmDtype: 'bfloat16', maxTokens: 16_384, cudaGraphDecodeOnly: true });
    // SGLang graphs decode-only batches: a small prefill batch runs eagerly and pays in full.
    expect(sglangLike.stepMs(shape(256, 0, 0, 0))).toBe(sglangFull.stepMs(shape(256, 0, 0, 0)));
  });

  it('eagerElementwiseScale discounts eager steps only, by the share of the elementwise time removed', () => {
    const mk = (eagerElementwiseScale: number) =>
      new OperatorStepTime({ tables: vllmH100, arch: loadArchitecture('qwen3-32b'), tp: 2, gemmDtype: 'bfloat16', maxTokens: 16_384, eagerElementwiseScale });
    const half = mk(0.5);
    const none = mk(1e-9);
    // CUDA-graph steps (≤ 512 tokens) are unchanged.
    expect(half.stepMs(shape(0, 0, 64, 2000))).toBe(qwenTp2.stepMs(shape(0, 0, 64, 2000)));
    // An eager 4,096-token prefill gets cheaper, linearly in the fraction: half the fraction saves half of what dropping it all saves.
    const full = qwenTp2.stepMs(shape(4096, 0, 8, 2000));
    const saved = full - none.stepMs(shape(4096, 0, 8, 2000));
    expect(saved).toBeGreaterThan(0);
    expect(full - half.stepMs(shape(4096, 0, 8, 2000))).toBeCloseTo(saved / 2, 6);
    expect(() => mk(0)).toThrow(/eagerElementwiseScale/);
    expect(() => mk(1.5)).toThrow(/eagerElementwiseScale/);
  });

  it('an empty batch costs 0 ms; a 1-token decode costs about a weight read of the model', () => {
    expect(qwenTp2.stepMs(shape(0, 0, 0, 0))).toBe(0);
    // Qwen3-32B at TP 2: ~32.8 GB of bf16 weights over 2 GPUs at ~3 TB/s ≈ 11 ms, plus attention and elementwise.
    const d = qwenTp2.stepMs(shape(0, 0, 1, 1000));
    expect(d).toBeGreaterThan(10);
    expect(d).toBeLessThan(25);
  });

  it('is monotone in prefill tokens, cached context, decode sequences and decode context (fast-check)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 8000 }),
        fc.integer({ min: 0, max: 60_000 }),
        fc.integer({ min: 0, max: 300 }),
        fc.integer({ min: 1, max: 60_000 }),
        fc.integer({ min: 1, max: 500 }),
        (c, p, d, ctx, delta) => {
          for (const m of [qwenTp2, llama8b]) {
            const base = m.stepMs(shape(c, p, d, ctx));
            expect(m.stepMs(shape(c + delta, p, d, ctx))).toBeGreaterThanOrEqual(base);
            expect(m.stepMs(shape(c, p + delta, d, ctx))).toBeGreaterThanOrEqual(base);
            expect(m.stepMs(shape(c, p, d + 1, ctx))).toBeGreaterThanOrEqual(base);
            expect(m.stepMs(shape(c, p, d, ctx + delta))).toBeGreaterThanOrEqual(base);
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('prices a chunk over cached KV as the empty-cache prompt with the same causal pairs: s_eq = √(c² + 2cp)', () => {
    // A 2,048-token chunk after 6,144 cached tokens costs the attention of a √(2048² + 2·2048·6144) ≈ 5,418-token prompt.
    const c = 2048;
    const p = 6144;
    const sEq = Math.sqrt(c * c + 2 * c * p);
    expect(sEq).toBeCloseTo(5418.2, 0);
    const withCache = qwenTp2.stepMs(shape(c, p, 0, 0)) - qwenTp2.stepMs(shape(c, 0, 0, 0));
    const expected = qwenTp2.contextAttentionMs(1, sEq) - qwenTp2.contextAttentionMs(1, c);
    expect(withCache).toBeCloseTo(expected, 9);
    // p = 0 is the measured empty-cache table.
    expect(qwenTp2.stepMs(shape(c, 0, 0, 0)) - qwenTp2.stepMs(shape(1, 0, 0, 0))).toBeGreaterThan(0);
  });

  it('chunking a prompt costs about the same attention as one pass (same pair count), more in total (fixed costs per step)', () => {
    const whole = qwenTp2.stepMs(shape(8192, 0, 0, 0));
    const chunks = [0, 2048, 4096, 6144].reduce((s, p) => s + qwenTp2.stepMs(shape(2048, p, 0, 0)), 0);
    expect(chunks).toBeGreaterThan(whole * 0.95);
    expect(chunks).toBeLessThan(whole * 1.3);
  });

  it('the context-attention grid reproduces the measured table at its grid points (empty cache)', () => {
    // Spot values from ../shared/traces/aiconfigurator-ops/h100_sxm/vllm-0.14.0/context_attention_perf.parquet,
    // 32 heads / 4 KV heads (Qwen3-32B at TP 2), bf16: batch 1 × 4,096 tokens 0.300 ms; batch 1 × 1,024: 0.043 ms (per layer).
    expect(qwenTp2.contextAttentionMs(1, 4096) / 64).toBeCloseTo(0.3001, 2);
    expect(qwenTp2.contextAttentionMs(1, 1024) / 64).toBeCloseTo(0.043, 2);
  });

  it('GEMM time per token never rises with the token count (split envelope), so long FP8 prefills cost no more per token than 1,024 tokens', () => {
    expect(splitEnvelope([1, 2, 4, 8], [1, 1.5, 4, 10])).toEqual([1, 1.5, 3, 6]);
    expect(splitEnvelope([1, 2, 4], [2, 3, 5])).toEqual([2, 3, 5]);
    const llamaFp8 = new OperatorStepTime({ tables: vllmH100, arch: loadArchitecture('llama-3.1-70b'), tp: 2, gemmDtype: 'fp8', maxTokens: 16_384 });
    const perTokenMs = (n: number) => (llamaFp8.stepMs(shape(n, 0, 0, 0)) - llamaFp8.contextAttentionMs(1, n)) / n;
    // The committed FP8 table rises by ~30 % per token from 1,024 to 8,192; the envelope holds it within a few percent (all-reduce, LM head).
    expect(perTokenMs(8192) / perTokenMs(1024)).toBeLessThan(1.05);
    fc.assert(
      fc.property(fc.array(fc.double({ min: 1e-3, max: 1e3, noNaN: true }), { minLength: 1, maxLength: 12 }), (ys) => {
        const xs = ys.map((_, i) => 2 ** i);
        const e = splitEnvelope(xs, ys);
        e.forEach((v, i) => {
          expect(v).toBeLessThanOrEqual(ys[i]!);
          if (i > 0) expect(v / xs[i]!).toBeLessThanOrEqual(e[i - 1]! / xs[i - 1]! + 1e-12);
        });
      }),
    );
  });

  it('per-step and per-sequence overheads add linearly', () => {
    const plain = new OperatorStepTime({ tables: vllmH100, arch: loadArchitecture('llama-3.1-8b'), tp: 1, gemmDtype: 'bfloat16', maxTokens: 16_384 });
    const b = shape(100, 0, 9, 500);
    expect(llama8b.stepMs(b) - plain.stepMs(b)).toBeCloseTo(0.3 + 0.04 * 10, 9);
  });

  it('rejects configurations without tables, naming what exists', () => {
    const a100 = loadOperatorTables('a100_sxm', 'vllm', '0.14.0');
    expect(() => new OperatorStepTime({ tables: a100, arch: loadArchitecture('qwen3-32b'), tp: 2, gemmDtype: 'fp8' })).toThrow(/no GEMM entry qwen3-32b\/tp2\/fp8; available: .*qwen3-32b\/tp2\/bfloat16/);
    expect(() => loadOperatorTables('h100_sxm', 'vllm', '0.99.0')).toThrow(/no operator tables for gpu h100_sxm, engine vllm 0.99.0.*available: h100_sxm-vllm-0.14.0/);
    expect(() => new OperatorStepTime({ tables: vllmH100, arch: loadArchitecture('qwen3-32b'), tp: 2, gemmDtype: 'bfloat16', stepOverheadMs: -1 })).toThrow(/stepOverheadMs must be ≥ 0/);
  });
});
