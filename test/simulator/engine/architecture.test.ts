import { describe, expect, it } from 'vitest';
import { ARCHITECTURE_NAMES, headsPerGpu, kvBytesPerTokenPerGpu, layerGemms, loadArchitecture, parameterCount, weightBytesPerGpu } from '../../../simulator/engine/architecture.ts';
import { sglangKvTokens, vllmKvBlocks } from '../../../simulator/engine/gpu-memory.ts';

describe('architectures', () => {
  it('parameter counts match the published model sizes', () => {
    const b = (n: string) => parameterCount(loadArchitecture(n)) / 1e9;
    expect(b('llama-3.1-8b')).toBeCloseTo(8.03, 1);
    expect(b('llama-3.1-70b')).toBeCloseTo(70.55, 0);
    expect(b('qwen3-32b')).toBeCloseTo(32.8, 0);
    expect(b('llama-2-70b')).toBeCloseTo(68.98, 0);
    for (const n of ARCHITECTURE_NAMES) expect(loadArchitecture(n).name).toBe(n);
  });

  it('shards GEMMs and heads Megatron-style; KV heads are replicated past their count', () => {
    const q = loadArchitecture('qwen3-32b');
    expect(layerGemms(q, 2)).toEqual([
      { op: 'qkv', n: (32 + 8) * 128, k: 5120 },
      { op: 'o', n: 5120, k: 32 * 128 },
      { op: 'gate_up', n: 25_600, k: 5120 },
      { op: 'down', n: 5120, k: 12_800 },
    ]);
    expect(headsPerGpu(q, 8)).toEqual({ heads: 8, kvHeads: 1 });
    expect(() => headsPerGpu(q, 3)).toThrow(/tensor parallelism 3 must divide qwen3-32b's 64 attention heads/);
    // Llama-3.1-70B: 2 × 80 layers × 8 KV heads × 128 × 2 bytes = 327,680 B per token, split over TP.
    expect(kvBytesPerTokenPerGpu(loadArchitecture('llama-3.1-70b'), 4, 'bfloat16')).toBe(327_680 / 4);
    expect(weightBytesPerGpu(loadArchitecture('llama-3.1-70b'), 2, 'fp8')).toBeLessThan(weightBytesPerGpu(loadArchitecture('llama-3.1-70b'), 2, 'bfloat16') * 0.55);
  });

  it('KV capacity follows memory: more TP or utilisation gives more blocks; a model too big for its GPUs is an error', () => {
    const a = loadArchitecture('llama-3.1-70b');
    const base = { gpu: 'h100_sxm', arch: a, gemmDtype: 'bfloat16', kvDtype: 'bfloat16', gpuMemoryUtilization: 0.9, maxNumBatchedTokens: 8192, maxNumSeqs: 256, blockTokens: 16 } as const;
    const tp4 = vllmKvBlocks({ ...base, tp: 4 });
    // (4 × 71.3 GiB − 141 GB weights − activations) / 320 KiB per token ≈ 420k tokens ≈ 26k blocks.
    expect(tp4).toBeGreaterThan(20_000);
    expect(tp4).toBeLessThan(32_000);
    expect(vllmKvBlocks({ ...base, tp: 8 })).toBeGreaterThan(tp4);
    expect(vllmKvBlocks({ ...base, tp: 4, gpuMemoryUtilization: 0.95 })).toBeGreaterThan(tp4);
    expect(() => vllmKvBlocks({ ...base, tp: 1 })).toThrow(/llama-3.1-70b at TP 1 \(bfloat16\) does not fit H100 SXM 80GB: .* raise tp or gpu_memory_utilization/);
    expect(sglangKvTokens({ gpu: 'h100_sxm', arch: loadArchitecture('qwen3-32b'), tp: 2, gemmDtype: 'bfloat16', kvDtype: 'bfloat16', memFractionStatic: 0.87 })).toBeGreaterThan(250_000);
  });

  it('a missing architecture names the ones that exist', () => {
    expect(() => loadArchitecture('gpt-5')).toThrow(/unknown model "gpt-5".*llama-3.1-8b, llama-3.1-70b, qwen3-32b/);
  });
});
