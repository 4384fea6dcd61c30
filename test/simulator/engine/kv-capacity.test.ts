import { describe, expect, it } from 'vitest';
import { loadArchitecture } from '../../../simulator/engine/architecture.ts';
import { vllmKvBlocks } from '../../../simulator/engine/gpu-memory.ts';

const GIB = 2 ** 30;

/**
 * KV capacities that vLLM logged for known setups (public vLLM GitHub threads), and the block
 * count the simulator's profiling-run formula (`vllmKvBlocks`) gives for the same inputs.
 * Llama-3-8B and Llama-3.1-8B have the same shapes (32 layers, hidden 4,096, 8 KV heads,
 * intermediate 14,336, vocabulary 128,256), so both use the `llama-3.1-8b` architecture file.
 */
const SETUPS = [
  {
    source: 'vllm-project/vllm#10511 (youkaichao, 2024-12-14): `vllm serve meta-llama/Meta-Llama-3-8B`',
    // total_gpu_memory 79.22 GiB, u 0.90, weights 14.96 GiB, non_torch 1.79 GiB, activation peak 1.26 GiB,
    // available_kv_cache_memory 53.29 GiB → 53.29 GiB / (16 tokens × 128 KiB) blocks.
    tp: 1,
    memoryGiB: 79.22,
    maxNumBatchedTokens: 8192,
    loggedBlocks: Math.floor((53.29 * GIB) / (16 * 131_072)),
  },
  {
    source: 'vllm-project/vllm#10511 (youkaichao, 2024-12-14): `vllm serve meta-llama/Meta-Llama-3-8B -tp 2`',
    // 71.29 GiB usable − weights 7.48 − non_torch 3.58 − activation peak 1.26 = 58.97 GiB per GPU, 64 KiB per token per GPU.
    tp: 2,
    memoryGiB: 79.22,
    maxNumBatchedTokens: 8192,
    loggedBlocks: Math.floor((58.97 * GIB) / (16 * 65_536)),
  },
  {
    source: 'vllm-project/vllm#10517 (kaspersiminski, 2024-12-02): Llama-3.1-8B-Instruct on an RTX 3090, max_model_len 20,000',
    // "# GPU blocks: 1952"; total 23.58 GiB, u 0.90, non_torch 0.35 GiB (vLLM 0.6.4 profiler, before the CUDA context was counted).
    tp: 1,
    memoryGiB: 23.58,
    nonTorchGiB: 0.35,
    maxNumBatchedTokens: 20_000,
    loggedBlocks: 1952,
  },
  {
    source: 'vllm-project/vllm#10517 (kaspersiminski, 2024-12-02): the same with max_model_len 29,000',
    // "# GPU blocks: 1478".
    tp: 1,
    memoryGiB: 23.58,
    nonTorchGiB: 0.35,
    maxNumBatchedTokens: 29_000,
    loggedBlocks: 1478,
  },
] as const;

describe('vLLM KV capacity against logged block counts', () => {
  const arch = loadArchitecture('llama-3.1-8b');
  for (const s of SETUPS) {
    it(`${s.source}: within 5 %`, () => {
      const blocks = vllmKvBlocks({
        gpu: 'h100_sxm',
        memoryBytes: s.memoryGiB * GIB,
        ...('nonTorchGiB' in s && { nonTorchBytes: s.nonTorchGiB * GIB }),
        arch,
        tp: s.tp,
        gemmDtype: 'bfloat16',
        kvDtype: 'bfloat16',
        gpuMemoryUtilization: 0.9,
        maxNumBatchedTokens: s.maxNumBatchedTokens,
        maxNumSeqs: 256,
        blockTokens: 16,
      });
      expect(Math.abs(blocks / s.loggedBlocks - 1)).toBeLessThanOrEqual(0.05);
    });
  }
});
