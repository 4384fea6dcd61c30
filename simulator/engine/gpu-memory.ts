/**
 * KV-cache capacity of one replica from GPU memory, weights and the engine's memory settings.
 *
 * vLLM (V1 `gpu_worker.determine_available_memory`): the engine may use
 * `gpu_memory_utilization × total` bytes per GPU; after loading weights it runs a profiling
 * forward pass at `max_num_batched_tokens` tokens and a sampler pass at `max_num_seqs` sequences,
 * and what is left after weights, the peak activations and non-torch memory (CUDA context, cuBLAS
 * workspaces, NCCL buffers) becomes KV blocks of `block_size` tokens.
 * SGLang (`ModelRunner.profile_max_num_token`): the static pool (weights + KV) may use
 * `mem_fraction_static × total`; the KV pool gets what the weights leave of it.
 *
 * The activation and non-torch terms are estimates (stated in `vllmKvBlocks`); they move the
 * capacity by a few percent.
 */
import { type Architecture, type Dtype, headsPerGpu, kvBytesPerTokenPerGpu, weightBytesPerGpu } from './architecture.ts';

/** GPUs with operator tables, and their memory as the CUDA runtime reports it (bytes). */
export const GPUS = {
  /** H100 SXM5 80 GB HBM3: `torch.cuda.mem_get_info()` total ≈ 79.19 GiB. */
  h100_sxm: { name: 'H100 SXM 80GB', memoryBytes: Math.round(79.19 * 2 ** 30) },
  /** A100 SXM4 80 GB: ≈ 79.25 GiB. */
  a100_sxm: { name: 'A100 SXM 80GB', memoryBytes: Math.round(79.25 * 2 ** 30) },
} as const;

/** A GPU key of {@link GPUS}. */
export type GpuName = keyof typeof GPUS;

const GIB = 2 ** 30;

/** Inputs of {@link vllmKvBlocks}. */
export interface VllmMemoryInputs {
  gpu: GpuName;
  arch: Architecture;
  tp: number;
  gemmDtype: Dtype;
  kvDtype: Dtype;
  /** Fraction of GPU memory vLLM may use (0 < u ≤ 1; vLLM default 0.9). */
  gpuMemoryUtilization: number;
  maxNumBatchedTokens: number;
  maxNumSeqs: number;
  /** Tokens per KV block (vLLM default 16). */
  blockTokens: number;
}

/**
 * Peak activation bytes of vLLM's profiling pass on one GPU (estimate): the largest live tensors
 * of one layer at `maxNumBatchedTokens` tokens (gate+up output, QKV output, two hidden-size
 * residual streams; 2 bytes each) plus fp32 logits for `maxNumSeqs` sequences over the full
 * vocabulary (the sampler pass), twice (logits and probabilities).
 */
export function vllmActivationBytes(arch: Architecture, tp: number, maxNumBatchedTokens: number, maxNumSeqs: number): number {
  const { heads, kvHeads } = headsPerGpu(arch, tp);
  const perToken = (2 * arch.intermediateSize) / tp + (heads + 2 * kvHeads) * arch.headDim + 2 * arch.hiddenSize;
  return maxNumBatchedTokens * perToken * 2 + 2 * maxNumSeqs * arch.vocabSize * 4;
}

/** Non-torch memory per GPU (CUDA context, cuBLAS/NCCL buffers): 1 GiB alone, 1.5 GiB with TP > 1 (estimate). */
export function nonTorchBytes(tp: number): number {
  return tp > 1 ? 1.5 * GIB : 1 * GIB;
}

/**
 * vLLM KV-cache blocks per replica: floor((u × total − weights − activations − non-torch) /
 * (KV bytes per token per GPU × block tokens)). Every GPU of a TP group holds its shard of every
 * block, so the per-GPU count is the replica's count.
 * @throws Error when the weights and activations leave no room for a single block (names the numbers).
 */
export function vllmKvBlocks(m: VllmMemoryInputs): number {
  if (!(m.gpuMemoryUtilization > 0 && m.gpuMemoryUtilization <= 1)) {
    throw new Error(`gpu_memory_utilization must be in (0, 1], got ${m.gpuMemoryUtilization}`);
  }
  const total = GPUS[m.gpu].memoryBytes * m.gpuMemoryUtilization;
  const weights = weightBytesPerGpu(m.arch, m.tp, m.gemmDtype);
  const act = vllmActivationBytes(m.arch, m.tp, m.maxNumBatchedTokens, m.maxNumSeqs);
  const free = total - weights - act - nonTorchBytes(m.tp);
  const blocks = Math.floor(free / (kvBytesPerTokenPerGpu(m.arch, m.tp, m.kvDtype) * m.blockTokens));
  if (blocks < 1) {
    throw new Error(
      `${m.arch.name} at TP ${m.tp} (${m.gemmDtype}) does not fit ${GPUS[m.gpu].name}: ${(weights / GIB).toFixed(1)} GiB weights + ` +
        `${(act / GIB).toFixed(1)} GiB activations of ${(total / GIB).toFixed(1)} GiB usable; raise tp or gpu_memory_utilization`,
    );
  }
  return blocks;
}

/** Inputs of {@link sglangKvTokens}. */
export interface SglangMemoryInputs {
  gpu: GpuName;
  arch: Architecture;
  tp: number;
  gemmDtype: Dtype;
  kvDtype: Dtype;
  /** Fraction of GPU memory for weights + KV pool (SGLang `mem_fraction_static`; defaults by version in `engine-profiles.ts`). */
  memFractionStatic: number;
}

/**
 * SGLang KV pool size in tokens: floor((f × total − weights) / KV bytes per token per GPU).
 * @throws Error when the weights leave no room (names the numbers).
 */
export function sglangKvTokens(m: SglangMemoryInputs): number {
  if (!(m.memFractionStatic > 0 && m.memFractionStatic <= 1)) throw new Error(`mem_fraction_static must be in (0, 1], got ${m.memFractionStatic}`);
  const total = GPUS[m.gpu].memoryBytes * m.memFractionStatic;
  const weights = weightBytesPerGpu(m.arch, m.tp, m.gemmDtype);
  const tokens = Math.floor((total - weights) / kvBytesPerTokenPerGpu(m.arch, m.tp, m.kvDtype));
  if (tokens < 1) {
    throw new Error(`${m.arch.name} at TP ${m.tp} (${m.gemmDtype}) does not fit ${GPUS[m.gpu].name}: ${(weights / GIB).toFixed(1)} GiB weights of ${(total / GIB).toFixed(1)} GiB static memory; raise tp or mem_fraction_static`);
  }
  return tokens;
}
