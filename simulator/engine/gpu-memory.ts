/**
 * KV-cache capacity of one replica from GPU memory, weights and the engine's memory settings.
 *
 * vLLM (V1 `gpu_worker.determine_available_memory`): the engine may use
 * `gpu_memory_utilization × total` bytes per GPU; after loading weights it runs a profiling
 * forward pass at `max_num_batched_tokens` tokens and a sampler pass at `max_num_seqs` sequences,
 * and what is left after weights, the peak activations and non-torch memory (CUDA context, cuBLAS
 * workspaces, NCCL buffers) becomes KV blocks of `block_size` tokens. CUDA graphs are captured
 * after the KV cache is allocated (`gpu_model_runner.capture_model` runs after
 * `initialize_kv_cache`), so their pool is not part of this budget.
 * SGLang (`ModelRunner.profile_max_num_token`): the static pool (weights + KV) may use
 * `mem_fraction_static × total`; the KV pool gets what the weights leave of it.
 *
 * The activation and non-torch terms are modelled from what vLLM logs (`Memory profiling results`
 * lines quoted in public vLLM issues; `test/simulator/engine/kv-capacity.test.ts` pins the
 * resulting block counts of those setups within 5 %).
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
  /** GPU memory as `torch.cuda.mem_get_info` reports it, bytes: for a GPU outside {@link GPUS}. Default the table's. */
  memoryBytes?: number;
  /** Non-torch memory per GPU, bytes, when known (a log's `non_torch_memory`). Default {@link nonTorchBytes}. */
  nonTorchBytes?: number;
}

/**
 * Peak activation bytes of vLLM's profiling pass on one GPU: the dummy forward pass at
 * `maxNumBatchedTokens` tokens peaks inside a layer's MLP, where the gate+up output (2 ×
 * intermediate / tp), the SiLU-and-multiply output (intermediate / tp) and three hidden-size
 * tensors (residual stream, layer input, normed input) are live at once, 2 bytes each; plus the fp32
 * logits of the sampler pass, `maxNumSeqs` × vocabulary × 4 bytes.
 * Checked against the logged peaks: Llama-3.1-8B at 20,000 and 29,000 tokens, 2.07 and 2.99 GiB
 * (vllm-project/vllm#10517: 110 KB per token, which is (3 × 14,336 + 3 × 4,096) × 2 bytes) and
 * 1.26 GiB at 8,192 tokens (vllm-project/vllm#10511).
 */
export function vllmActivationBytes(arch: Architecture, tp: number, maxNumBatchedTokens: number, maxNumSeqs: number): number {
  const perToken = (3 * arch.intermediateSize) / tp + 3 * arch.hiddenSize;
  return maxNumBatchedTokens * perToken * 2 + maxNumSeqs * arch.vocabSize * 4;
}

/**
 * Non-torch memory per GPU (CUDA context, cuBLAS workspaces; with TP > 1 also NCCL and custom
 * all-reduce buffers) as vLLM's profiler counts it since 0.6.5 (vllm-project/vllm#10511, which V1's
 * `gpu_worker` inherited): 1.79 GiB on one 80 GB GPU and 3.58 GiB per GPU at TP 2, the values logged
 * there for Llama-3-8B; TP 4 and 8 are assumed to need the TP-2 amount (the buffers are per GPU).
 */
export function nonTorchBytes(tp: number): number {
  return tp > 1 ? 3.58 * GIB : 1.79 * GIB;
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
  const total = (m.memoryBytes ?? GPUS[m.gpu].memoryBytes) * m.gpuMemoryUtilization;
  const weights = weightBytesPerGpu(m.arch, m.tp, m.gemmDtype);
  const act = vllmActivationBytes(m.arch, m.tp, m.maxNumBatchedTokens, m.maxNumSeqs);
  const free = total - weights - act - (m.nonTorchBytes ?? nonTorchBytes(m.tp));
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
