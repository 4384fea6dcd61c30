/**
 * The `replicas:` block of an experiment and the factory that builds one simulated replica from
 * it. Kept beside the engine models so a new engine is added here only.
 *
 * Two ways to say what a replica is:
 *  - calibrated (recommended): `engine` (vllm | sglang), `gpu`, `model`, `tp` and optionally
 *    `dtype`, `engine_version` and the engine's own settings; step times come from the measured
 *    operator tables (`operator-step-time.ts`), KV capacity from GPU memory (`gpu-memory.ts`);
 *  - legacy: `profile:` names a linear step-time fit under `profiles/` (vLLM only), as before.
 */
import { z } from 'zod';
import { ApiServerSchema, type ApiServerTerm, apiServerTerm, NO_API_SERVER } from './api-server.ts';
import { ARCHITECTURE_NAMES, type Architecture, type Dtype, DtypeSchema, loadArchitecture } from './architecture.ts';
import { calibratedApiServer, calibrationFor } from './calibration.ts';
import type { EngineModel } from './engine-model.ts';
import { engineProfile, EngineProfileNameSchema, sglangProfileDefaults, vllmProfileDefaults } from './engine-profiles.ts';
import { GPUS, type GpuName, sglangKvTokens, vllmKvBlocks } from './gpu-memory.ts';
import { OperatorStepTime } from './operator-step-time.ts';
import { loadOperatorTables } from './operator-tables.ts';
import { SglangReplica } from './sglang-replica.ts';
import { loadStepTimeProfile, type StepTimeModel } from './step-time.ts';
import { VllmReplica } from './vllm-replica.ts';

/** Engine versions with operator tables, per engine (the first is the default). */
export const ENGINE_VERSIONS = { vllm: ['0.14.0'], sglang: ['0.5.9'] } as const;

/** `replicas:` — how many replicas, which engine/GPU/model/TP (or legacy profile), and engine limits. */
export const ReplicasSchema = z
  .object({
    count: z.number().int().min(1).max(1024),
    engine: z.enum(['vllm', 'sglang']).default('vllm'),
    /** Legacy: a linear step-time profile name under simulator/engine/profiles/ (vLLM only). */
    profile: z.string().min(1).optional(),
    /** GPU of every replica (operator tables exist for h100_sxm and, for vLLM, a100_sxm). */
    gpu: z.enum(['h100_sxm', 'a100_sxm']).optional(),
    /** Model architecture: llama-3.1-8b, llama-3.1-70b, qwen3-32b, llama-2-70b. */
    model: z.enum(ARCHITECTURE_NAMES).optional(),
    /** Tensor-parallel GPUs per replica. */
    tp: z.union([z.literal(1), z.literal(2), z.literal(4), z.literal(8)]).optional(),
    /** Weight/GEMM dtype: bfloat16 (default) or fp8 (H100 only). The KV cache is bfloat16. */
    dtype: DtypeSchema.optional(),
    /** Engine version of the operator tables (vLLM 0.14.0, SGLang 0.5.9). */
    engine_version: z.string().optional(),
    /**
     * Version profile whose defaults fill unset settings (`engine-profiles.ts`): vllm-0.8,
     * vllm-0.10, vllm-0.14 (default for vLLM), sglang-0.4, sglang-0.5 (default for SGLang).
     */
    engine_profile: EngineProfileNameSchema.optional(),
    /** Per-step overheads (ms); default: the committed calibration for the engine. */
    step_overhead_ms: z.number().nonnegative().optional(),
    per_sequence_overhead_ms: z.number().nonnegative().optional(),
    /** Fraction (0..1] of the tables' eager elementwise time a CUDA-graph step pays (fusion; eager steps pay all); default: the committed calibration. */
    elementwise_scale: z.number().gt(0).max(1).optional(),
    /** Fraction (0..1] of the tables' eager elementwise time a step outside a CUDA graph (prefill) pays; default: the committed calibration. */
    eager_elementwise_scale: z.number().gt(0).max(1).optional(),
    /**
     * API-server latency outside the engine's steps (`api-server.ts`); default for calibrated
     * replicas: the committed calibration's terms for the engine × model × TP (on); `{}` turns it off.
     */
    api_server: ApiServerSchema.optional(),
    // vLLM settings
    max_num_seqs: z.number().int().positive().optional(),
    max_num_batched_tokens: z.number().int().positive().optional(),
    /** KV blocks per replica; default from GPU memory (calibrated) or 32,279 (legacy). */
    kv_blocks: z.number().int().positive().optional(),
    /** vLLM KV block size, tokens. Default 16. */
    block_size: z.number().int().positive().optional(),
    /** vLLM: fraction of GPU memory the engine may use. Default 0.9. */
    gpu_memory_utilization: z.number().gt(0).max(1).optional(),
    /** vLLM automatic prefix caching. Default true. */
    enable_prefix_caching: z.boolean().optional(),
    /** vLLM: longest prompt + output a request may have, tokens; longer ones are rejected. Default: the model's context length. */
    max_model_len: z.number().int().positive().optional(),
    // SGLang settings
    /** SGLang: fraction of GPU memory for weights + KV pool. Default by TP (0.88/0.87/0.85/0.81). */
    mem_fraction_static: z.number().gt(0).max(1).optional(),
    /** SGLang KV pool in tokens; default from GPU memory. */
    kv_tokens: z.number().int().positive().optional(),
    chunked_prefill_size: z.number().int().positive().optional(),
    max_prefill_tokens: z.number().int().positive().optional(),
    max_running_requests: z.number().int().positive().optional(),
    schedule_policy: z.enum(['fcfs', 'lpm']).optional(),
    enable_mixed_chunk: z.boolean().optional(),
    disable_radix_cache: z.boolean().optional(),
    /** Route weights, one per replica; default all 1. */
    weights: z.array(z.number().nonnegative()).optional(),
  })
  .strict()
  .superRefine((c, ctx) => {
    const issue = (path: string, message: string) => ctx.addIssue({ code: 'custom', path: [path], message });
    if (c.profile !== undefined) {
      if (c.engine !== 'vllm') issue('profile', `a linear profile models vLLM only; for engine ${c.engine} give gpu, model and tp instead`);
      for (const k of ['gpu', 'model', 'tp', 'dtype', 'engine_version'] as const) {
        if (c[k] !== undefined) issue(k, `use either profile (legacy linear model) or gpu/model/tp (calibrated), not both`);
      }
      return;
    }
    if (c.model === undefined) issue('model', `required (one of ${ARCHITECTURE_NAMES.join(', ')}), or give a legacy profile`);
    if (c.tp === undefined) issue('tp', 'required: tensor-parallel GPUs per replica (1, 2, 4 or 8)');
    const gpu = c.gpu ?? 'h100_sxm';
    if (c.engine === 'sglang' && gpu !== 'h100_sxm') issue('gpu', `SGLang operator tables exist for h100_sxm only, got ${gpu}`);
    if (c.dtype === 'fp8' && gpu !== 'h100_sxm') issue('dtype', `fp8 GEMM tables exist for h100_sxm only (A100 has no FP8 tensor cores)`);
    const versions: readonly string[] = ENGINE_VERSIONS[c.engine];
    if (c.engine_version !== undefined && !versions.includes(c.engine_version)) {
      issue('engine_version', `${c.engine} operator tables exist for ${versions.join(', ')}; got ${c.engine_version}`);
    }
    if (c.engine_profile !== undefined && !c.engine_profile.startsWith(`${c.engine}-`)) {
      issue('engine_profile', `${c.engine_profile} is not a ${c.engine} profile`);
    }
    const vllmOnly = ['max_num_seqs', 'max_num_batched_tokens', 'kv_blocks', 'block_size', 'gpu_memory_utilization', 'enable_prefix_caching', 'max_model_len'] as const;
    const sglangOnly = ['mem_fraction_static', 'kv_tokens', 'chunked_prefill_size', 'max_prefill_tokens', 'max_running_requests', 'schedule_policy', 'enable_mixed_chunk', 'disable_radix_cache'] as const;
    for (const k of c.engine === 'vllm' ? sglangOnly : vllmOnly) {
      if (c[k] !== undefined) issue(k, `is a${c.engine === 'vllm' ? 'n SGLang' : ' vLLM'} setting; this block has engine ${c.engine}`);
    }
  });

/** A validated `replicas:` block. */
export type ReplicasConfig = z.infer<typeof ReplicasSchema>;

/** Everything a replica is built from, resolved from a `replicas:` block (defaults filled in). */
export type ResolvedReplicas =
  | { kind: 'profile'; engine: 'vllm'; profile: string; stepTime: StepTimeModel; maxNumSeqs: number; maxNumBatchedTokens: number; kvBlocks: number | undefined; blockTokens: number; prefixCaching: boolean }
  | {
      kind: 'calibrated';
      engine: 'vllm';
      engineVersion: string;
      gpu: GpuName;
      arch: Architecture;
      tp: number;
      dtype: Dtype;
      /** The operator step-time model (a wrapper may add terms, e.g. calibration's overhead probe). */
      stepTime: StepTimeModel;
      maxNumSeqs: number;
      maxNumBatchedTokens: number;
      kvBlocks: number;
      blockTokens: number;
      prefixCaching: boolean;
      /** Version profile the defaults came from. */
      engineProfile: string;
      maxModelLen: number;
    }
  | {
      kind: 'calibrated';
      engine: 'sglang';
      engineVersion: string;
      gpu: GpuName;
      arch: Architecture;
      tp: number;
      dtype: Dtype;
      /** The operator step-time model (a wrapper may add terms, e.g. calibration's overhead probe). */
      stepTime: StepTimeModel;
      kvTokens: number;
      chunkedPrefillSize: number;
      maxPrefillTokens: number;
      maxRunningRequests: number;
      schedulePolicy: 'fcfs' | 'lpm';
      enableMixedChunk: boolean;
      radixCache: boolean;
      /** Version profile the defaults came from. */
      engineProfile: string;
    };

/** Defaults of legacy (profile:) vLLM replicas, which predate version profiles. */
export const VLLM_DEFAULTS = { maxNumSeqs: 256, maxNumBatchedTokens: 8192, blockTokens: 16, gpuMemoryUtilization: 0.9 } as const;
/** SGLang's `max_running_requests` cap when unset (the KV pool usually binds first). */
export const SGLANG_DEFAULTS = { maxRunningRequests: 1024 } as const;

const stepTimeCache = new Map<string, OperatorStepTime>();

/**
 * Resolve a `replicas:` block: load the step-time model and compute the KV capacity once.
 * @throws Error when the profile or tables are missing, the model does not fit the GPUs, or a
 *   combination has no operator tables (the message names the field and what exists).
 */
export function resolveReplicas(config: ReplicasConfig): ResolvedReplicas {
  if (config.profile !== undefined) {
    const { model } = loadStepTimeProfile(config.profile);
    return {
      kind: 'profile',
      engine: 'vllm',
      profile: config.profile,
      stepTime: model,
      maxNumSeqs: config.max_num_seqs ?? VLLM_DEFAULTS.maxNumSeqs,
      maxNumBatchedTokens: config.max_num_batched_tokens ?? VLLM_DEFAULTS.maxNumBatchedTokens,
      kvBlocks: config.kv_blocks,
      blockTokens: config.block_size ?? VLLM_DEFAULTS.blockTokens,
      prefixCaching: config.enable_prefix_caching ?? true,
    };
  }
  if (config.model === undefined || config.tp === undefined) throw new Error('replicas: give model and tp (or a legacy profile)');
  const gpu = config.gpu ?? 'h100_sxm';
  const engineVersion = config.engine_version ?? ENGINE_VERSIONS[config.engine][0];
  const arch = loadArchitecture(config.model);
  const tp = config.tp;
  const dtype = config.dtype ?? 'bfloat16';
  const cal = calibrationFor(config.engine, arch.name, dtype, tp);
  const stepOverheadMs = config.step_overhead_ms ?? cal.stepOverheadMs;
  const perSequenceOverheadMs = config.per_sequence_overhead_ms ?? cal.perSequenceOverheadMs;
  const elementwiseScale = config.elementwise_scale ?? cal.elementwiseScale;
  const eagerElementwiseScale = config.eager_elementwise_scale ?? cal.eagerElementwiseScale;
  const key = [gpu, config.engine, engineVersion, arch.name, tp, dtype, stepOverheadMs, perSequenceOverheadMs, elementwiseScale, eagerElementwiseScale].join('|');
  let stepTime = stepTimeCache.get(key);
  if (!stepTime) {
    const tables = loadOperatorTables(gpu, config.engine, engineVersion);
    stepTime = new OperatorStepTime({
      tables,
      arch,
      tp,
      gemmDtype: dtype,
      stepOverheadMs,
      perSequenceOverheadMs,
      elementwiseScale,
      eagerElementwiseScale,
      // vLLM captures CUDA graphs for mixed and decode steps up to 512 tokens; SGLang for decode batches only.
      cudaGraphMaxTokens: 512,
      cudaGraphDecodeOnly: config.engine === 'sglang',
      maxTokens: 32_768,
    });
    stepTimeCache.set(key, stepTime);
  }
  if (config.engine === 'vllm') {
    const profile = engineProfile('vllm', config.engine_profile);
    const d = vllmProfileDefaults(profile.name, gpu);
    const maxNumSeqs = config.max_num_seqs ?? d.maxNumSeqs;
    const maxNumBatchedTokens = config.max_num_batched_tokens ?? d.maxNumBatchedTokens;
    const blockTokens = config.block_size ?? d.blockTokens;
    const kvBlocks =
      config.kv_blocks ??
      vllmKvBlocks({ gpu, arch, tp, gemmDtype: dtype, kvDtype: 'bfloat16', gpuMemoryUtilization: config.gpu_memory_utilization ?? d.gpuMemoryUtilization, maxNumBatchedTokens, maxNumSeqs, blockTokens });
    const maxModelLen = config.max_model_len ?? arch.maxContextTokens;
    return { kind: 'calibrated', engine: 'vllm', engineVersion, gpu, arch, tp, dtype, stepTime, maxNumSeqs, maxNumBatchedTokens, kvBlocks, blockTokens, prefixCaching: config.enable_prefix_caching ?? d.prefixCaching, engineProfile: profile.name, maxModelLen };
  }
  const profile = engineProfile('sglang', config.engine_profile);
  const d = sglangProfileDefaults(profile.name, gpu, tp);
  const kvTokens = config.kv_tokens ?? sglangKvTokens({ gpu, arch, tp, gemmDtype: dtype, kvDtype: 'bfloat16', memFractionStatic: config.mem_fraction_static ?? d.memFractionStatic });
  return {
    kind: 'calibrated',
    engine: 'sglang',
    engineVersion,
    gpu,
    arch,
    tp,
    dtype,
    stepTime,
    kvTokens,
    chunkedPrefillSize: config.chunked_prefill_size ?? d.chunkedPrefillSize,
    maxPrefillTokens: config.max_prefill_tokens ?? d.maxPrefillTokens,
    maxRunningRequests: config.max_running_requests ?? SGLANG_DEFAULTS.maxRunningRequests,
    schedulePolicy: config.schedule_policy ?? d.schedulePolicy,
    enableMixedChunk: config.enable_mixed_chunk ?? d.enableMixedChunk,
    radixCache: !(config.disable_radix_cache ?? !d.radixCache),
    engineProfile: profile.name,
  };
}

/**
 * The API-server term of a `replicas:` block: its `api_server:` when given (`{}` is all zeros), else
 * for a calibrated replica the committed calibration's terms for its engine × model × dtype × TP
 * (`calibration.json`, fitted on measured TTFTs), else none (legacy profiles).
 */
export function replicaApiServer(config: ReplicasConfig): ApiServerTerm {
  if (config.api_server !== undefined) return apiServerTerm(config.api_server);
  if (config.profile !== undefined || config.model === undefined || config.tp === undefined) return NO_API_SERVER;
  return calibratedApiServer(calibrationFor(config.engine, config.model, config.dtype ?? 'bfloat16', config.tp));
}

/** Options of {@link buildReplica}. */
export interface BuildReplicaOptions {
  /**
   * Coalesce pure-decode steps into runs (exact, see `EngineModel.interrupt`). Only for loops that
   * call `interrupt` before every enqueue and cancel while a step is in flight. Default false.
   */
  coalesceDecodeSteps?: boolean;
}

/** Build one replica from a resolved block. */
export function buildReplica(r: ResolvedReplicas, hashBlockTokens: number, opts: BuildReplicaOptions = {}): EngineModel {
  const coalesceDecodeSteps = opts.coalesceDecodeSteps ?? false;
  if (r.engine === 'sglang') {
    return new SglangReplica({
      stepTime: r.stepTime,
      kvTokens: r.kvTokens,
      chunkedPrefillSize: r.chunkedPrefillSize,
      maxPrefillTokens: r.maxPrefillTokens,
      maxRunningRequests: r.maxRunningRequests,
      schedulePolicy: r.schedulePolicy,
      enableMixedChunk: r.enableMixedChunk,
      hashBlockTokens,
      radixCache: r.radixCache,
      coalesceDecodeSteps,
    });
  }
  return new VllmReplica({
    stepTime: r.stepTime,
    maxNumSeqs: r.maxNumSeqs,
    maxNumBatchedTokens: r.maxNumBatchedTokens,
    blockTokens: r.blockTokens,
    hashBlockTokens,
    ...(r.kvBlocks !== undefined && { kvBlocks: r.kvBlocks }),
    ...(!r.prefixCaching && { prefixCacheBlocks: 0 }),
    ...(r.kind === 'calibrated' && { maxModelLen: r.maxModelLen }),
    coalesceDecodeSteps,
  });
}

/**
 * Returns a factory of fresh replicas for `config`; resolves the block (tables, KV capacity) once.
 * @param hashBlockTokens tokens per trace hash block (from the trace metadata; Mooncake 512).
 * @throws Error when the profile or tables are missing or invalid (names the file and field).
 */
export function replicaFactory(config: ReplicasConfig, hashBlockTokens: number): (index: number) => EngineModel {
  const r = resolveReplicas(config);
  return () => buildReplica(r, hashBlockTokens);
}

const ENGINE_LABEL = { vllm: 'vLLM', sglang: 'SGLang' } as const;

/** One line naming what the replicas model (engine, GPU, model, TP, KV capacity), for run headers. */
export function describeReplicas(config: ReplicasConfig): string {
  if (config.profile !== undefined) return `${config.count} × ${config.engine} replicas (profile ${config.profile})`;
  const r = resolveReplicas(config);
  if (r.kind !== 'calibrated') return `${config.count} × ${config.engine} replicas`;
  const kv = r.engine === 'vllm' ? `${r.kvBlocks.toLocaleString('en-US')} KV blocks × ${r.blockTokens} tokens` : `${r.kvTokens.toLocaleString('en-US')} KV tokens`;
  return `${config.count} × ${ENGINE_LABEL[r.engine]} replicas (profile ${r.engineProfile}, ${r.engineVersion} operator tables) of ${r.arch.name} (${r.dtype}) on ${r.tp}× ${GPUS[r.gpu].name} (TP ${r.tp}), step times from measured operators, ${kv}`;
}
