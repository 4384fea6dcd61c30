/**
 * Named engine version profiles: the scheduler and memory defaults each vLLM / SGLang release
 * applies when the operator leaves a setting unset, so a simulated replica starts from what the
 * measured server ran. A profile sets defaults only; the step-time tables stay those of
 * `engine_version` (`operator-tables/`), and any explicit `replicas:` setting wins.
 *
 * Sources (read in the engines' repositories; no code taken):
 *  - vLLM `vllm/engine/arg_utils.py` (V1 defaults for the OpenAI server: `_set_default_args_v1`
 *    in 0.8–0.9, `get_batch_defaults` later): on GPUs with ≥ 70 GiB `max_num_seqs` 1024 and
 *    `max_num_batched_tokens` 8192, else 256 and 2048. From vLLM PR #17885 (May 2025, first in
 *    0.9.0) GPUs whose name contains "a100" take the small defaults too ("a large token budget
 *    lowers A100 throughput"). `gpu_memory_utilization` 0.9 and `block_size` 16 (`CacheConfig`),
 *    chunked prefill always on and prefix caching on by default in the V1 engine (default since
 *    0.8.0), recompute preemption only (V1 `Scheduler`). `max_model_len` defaults to the model's
 *    `max_position_embeddings`.
 *  - SGLang `python/sglang/srt/server_args.py`: `max_prefill_tokens` 16,384, `schedule_policy`
 *    fcfs, mixed chunking off, radix cache on, retraction when decode runs out of KV.
 *    0.4.x–0.5.2: `chunked_prefill_size` 8,192 on GPUs of ≥ 25 GB (2,048 below) and
 *    `mem_fraction_static` by TP size (0.88, 0.87 at TP 2, 0.85 at TP 4, 0.81 at TP 8).
 *    From SGLang PR #10975 (September 2025, 0.5.3): buckets by GPU memory (< 90 GiB, H100/A100:
 *    chunk 8,192 and `cuda_graph_max_bs` 256 below TP 4, else 512) and
 *    `mem_fraction_static` = (memory − reserved) / memory, reserved = 512 MiB + 1.5 MiB per chunk
 *    token (≥ 2,048) + 2 MiB per CUDA-graph batch slot + TP/8 GiB, at least 10 GiB above 60 GiB.
 */
import { z } from 'zod';
import { GPUS, type GpuName } from './gpu-memory.ts';

/** The profile names. */
export const ENGINE_PROFILE_NAMES = ['vllm-0.8', 'vllm-0.10', 'vllm-0.14', 'sglang-0.4', 'sglang-0.5'] as const;

/** `replicas.engine_profile`. */
export const EngineProfileNameSchema = z.enum(ENGINE_PROFILE_NAMES);

/** A profile name. */
export type EngineProfileName = (typeof ENGINE_PROFILE_NAMES)[number];

/** The default profile of each engine: its newest. */
export const DEFAULT_ENGINE_PROFILE = { vllm: 'vllm-0.14', sglang: 'sglang-0.5' } as const satisfies Record<'vllm' | 'sglang', EngineProfileName>;

/** vLLM defaults a profile resolves to on one GPU. */
export interface VllmProfileDefaults {
  maxNumSeqs: number;
  maxNumBatchedTokens: number;
  gpuMemoryUtilization: number;
  blockTokens: number;
  prefixCaching: boolean;
  /** V1 always chunks prefills and preempts by recomputation. */
  chunkedPrefill: true;
  preemption: 'recompute';
}

/** SGLang defaults a profile resolves to on one GPU at one TP size. */
export interface SglangProfileDefaults {
  chunkedPrefillSize: number;
  maxPrefillTokens: number;
  memFractionStatic: number;
  schedulePolicy: 'fcfs';
  enableMixedChunk: false;
  radixCache: true;
  preemption: 'retract';
}

/** One profile: engine, the release range it covers, and its citations. */
export interface EngineProfile {
  name: EngineProfileName;
  engine: 'vllm' | 'sglang';
  /** Releases the defaults hold for, e.g. `0.8.0–0.8.5`. */
  releases: string;
  /** Where each default comes from. */
  sources: readonly string[];
}

const GIB = 2 ** 30;
const MIB = 2 ** 20;

const VLLM_SOURCES = [
  'vllm/engine/arg_utils.py: V1 OpenAI-server defaults by device memory (>= 70 GiB: max_num_seqs 1024, max_num_batched_tokens 8192; else 256, 2048)',
  'vllm/config CacheConfig: gpu_memory_utilization 0.9, block_size 16',
  'V1 engine: chunked prefill always on, prefix caching on by default, recompute preemption',
];

/** Every profile with its release range and sources. */
export const ENGINE_PROFILES: Readonly<Record<EngineProfileName, EngineProfile>> = {
  'vllm-0.8': { name: 'vllm-0.8', engine: 'vllm', releases: '0.8.0–0.8.5', sources: VLLM_SOURCES },
  'vllm-0.10': { name: 'vllm-0.10', engine: 'vllm', releases: '0.9.0–0.10.x', sources: [...VLLM_SOURCES, 'vLLM PR #17885 (first in 0.9.0): A100 keeps the small defaults'] },
  'vllm-0.14': { name: 'vllm-0.14', engine: 'vllm', releases: '0.11.0–0.14.x', sources: [...VLLM_SOURCES, 'vLLM PR #17885: A100 keeps the small defaults (EngineArgs.get_batch_defaults)'] },
  'sglang-0.4': {
    name: 'sglang-0.4',
    engine: 'sglang',
    releases: '0.4.0–0.5.2',
    sources: ['python/sglang/srt/server_args.py: chunked_prefill_size 8192 (>= 25 GB GPU), max_prefill_tokens 16384, mem_fraction_static by TP (0.88/0.87/0.85/0.81), schedule_policy fcfs'],
  },
  'sglang-0.5': {
    name: 'sglang-0.5',
    engine: 'sglang',
    releases: '0.5.3 and later',
    sources: ['sgl-project/sglang PR #10975, server_args.py _handle_gpu_memory_settings: chunk and cuda_graph_max_bs by GPU memory, mem_fraction_static from reserved memory'],
  },
};

/**
 * The profile of a `replicas:` block: `engine_profile` when given, else the engine's default.
 * @throws Error when the named profile is for the other engine (names both).
 */
export function engineProfile(engine: 'vllm' | 'sglang', name?: EngineProfileName): EngineProfile {
  const p = ENGINE_PROFILES[name ?? DEFAULT_ENGINE_PROFILE[engine]];
  if (p.engine !== engine) throw new Error(`engine_profile ${p.name} is a ${p.engine} profile; this block has engine ${engine} (use one of ${ENGINE_PROFILE_NAMES.filter((n) => ENGINE_PROFILES[n].engine === engine).join(', ')})`);
  return p;
}

/** Whether vLLM's "large GPU" branch applies: ≥ 70 GiB, and (from 0.9.0) not an A100. */
function vllmLargeGpu(profile: EngineProfileName, gpu: GpuName): boolean {
  if (GPUS[gpu].memoryBytes < 70 * GIB) return false;
  return profile === 'vllm-0.8' || gpu !== 'a100_sxm';
}

/** vLLM defaults of `profile` on `gpu` (see the module doc for sources). */
export function vllmProfileDefaults(profile: EngineProfileName, gpu: GpuName): VllmProfileDefaults {
  const large = vllmLargeGpu(profile, gpu);
  return {
    maxNumSeqs: large ? 1024 : 256,
    maxNumBatchedTokens: large ? 8192 : 2048,
    gpuMemoryUtilization: 0.9,
    blockTokens: 16,
    prefixCaching: true,
    chunkedPrefill: true,
    preemption: 'recompute',
  };
}

/** SGLang's CUDA-graph max batch on a < 90 GiB GPU (0.5.3+): 256 below TP 4, else 512. */
function sglangCudaGraphMaxBs(tp: number): number {
  return tp < 4 ? 256 : 512;
}

/** SGLang defaults of `profile` on `gpu` at TP `tp` (see the module doc for sources). */
export function sglangProfileDefaults(profile: EngineProfileName, gpu: GpuName, tp: number): SglangProfileDefaults {
  const memMib = GPUS[gpu].memoryBytes / MIB;
  const common = { maxPrefillTokens: 16384, schedulePolicy: 'fcfs', enableMixedChunk: false, radixCache: true, preemption: 'retract' } as const;
  if (profile === 'sglang-0.4') {
    const chunk = memMib * MIB >= 25e9 ? 8192 : 2048;
    return { ...common, chunkedPrefillSize: chunk, memFractionStatic: tp >= 8 ? 0.81 : tp >= 4 ? 0.85 : tp >= 2 ? 0.87 : 0.88 };
  }
  // 0.5.3+: both H100 and A100 80 GB fall in the < 90 GiB bucket.
  const chunk = memMib < 90 * 1024 ? 8192 : memMib < 160 * 1024 ? 8192 : 16384;
  let reserved = 512 + Math.max(chunk, 2048) * 1.5 + sglangCudaGraphMaxBs(tp) * 2 + (tp / 8) * 1024;
  if (memMib > 60 * 1024) reserved = Math.max(reserved, 10 * 1024);
  return { ...common, chunkedPrefillSize: chunk, memFractionStatic: Math.round(((memMib - reserved) / memMib) * 1000) / 1000 };
}
