/**
 * The committed operator lookup tables: per (GPU, engine, engine version), measured per-operator GPU
 * latencies reduced to what one simulated step needs (per-layer GEMM and elementwise time by token
 * count, LM-head time by sequence count, context and generation attention on half-octave grids, and
 * all-reduce by message size). Built from NVIDIA AIConfigurator's measurements by
 * `simulator/engine-build/build-operator-tables.ts` (a build script, outside the runtime folder); read here without `../shared`, so a plain clone runs.
 * See `operator-tables/SOURCE.txt` for provenance and licences.
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import type { Dtype } from './architecture.ts';

/** Directory of the committed tables. */
export const OPERATOR_TABLES_DIR = join(dirname(fileURLToPath(import.meta.url)), 'operator-tables');

/** Context-attention batch axis: batch = 2^(k/2) for these k (1 … 256 sequences). */
export const ATTN_BATCH_HALF_OCTAVES_CTX: readonly number[] = Array.from({ length: 17 }, (_, k) => k);
/** Generation-attention batch axis: batch = 2^(k/2) for these k (1 … 2,048 sequences). */
export const ATTN_BATCH_HALF_OCTAVES_GEN: readonly number[] = Array.from({ length: 23 }, (_, k) => k);
/** Length axis of both attention grids: tokens = 2^(k/2) for these k (1 … 262,144 tokens). */
export const ATTN_LEN_HALF_OCTAVES: readonly number[] = Array.from({ length: 37 }, (_, k) => k);

/** Key of a GEMM configuration: `<model>/tp<N>/<dtype>`, e.g. `qwen3-32b/tp2/bfloat16`. */
export function gemmKey(model: string, tp: number, dtype: Dtype): string {
  return `${model}/tp${tp}/${dtype}`;
}

/** Key of an attention head layout per GPU: `<heads>x<kvHeads>`, e.g. `32x4`. */
export function attnKey(heads: number, kvHeads: number): string {
  return `${heads}x${kvHeads}`;
}

// Checked in one loop: the tables hold about 10,000 numbers, which element-by-element zod
// schemas take tens of milliseconds of every start to check.
const msArray = z.custom<number[]>(
  (v) => Array.isArray(v) && v.every((x) => typeof x === 'number' && Number.isFinite(x) && x >= 0),
  'expected an array of finite, non-negative numbers (ms)',
);
const grid = z.array(msArray);

/** Zod schema of one committed tables file (`operator-tables/<gpu>-<engine>-<version>.json`). */
export const OperatorTablesFileSchema = z.object({
  schema: z.literal('switchyard-operator-tables-v1'),
  name: z.string(),
  gpu: z.enum(['h100_sxm', 'a100_sxm']),
  /** Device name as the measurement recorded it. */
  device: z.string(),
  engine: z.enum(['vllm', 'sglang']),
  engineVersion: z.string(),
  source: z.object({
    dataset: z.string(),
    repository: z.string(),
    commit: z.string(),
    paths: z.array(z.string()),
    localPath: z.string(),
    license: z.string(),
    elementwise: z.string(),
  }),
  notes: z.array(z.string()),
  /** Token counts (m) at which the GEMM/elementwise/LM-head arrays are given, ascending. */
  tokens: z.array(z.number().int().positive()).min(2),
  gemm: z.record(
    z.string(),
    z.object({
      /** Σ of the layer's four GEMMs at each `tokens` entry, ms per layer. */
      layerGemmMs: msArray,
      /** LM-head GEMM with `tokens[i]` rows (sampled sequences), ms. */
      lmHeadMs: msArray,
      /** Elementwise ops of one layer at each `tokens` entry, ms per layer. */
      layerElementwiseMs: msArray,
    }),
  ),
  contextAttention: z.object({ batchHalfOctaves: z.array(z.number().int()), lenHalfOctaves: z.array(z.number().int()), tables: z.record(z.string(), grid) }),
  generationAttention: z.object({ batchHalfOctaves: z.array(z.number().int()), lenHalfOctaves: z.array(z.number().int()), tables: z.record(z.string(), grid) }),
  /** Per GPU count: message sizes (bf16 elements) and ms per all-reduce call. */
  allReduce: z.record(z.string(), z.object({ elements: z.array(z.number().positive()), graphMs: msArray, eagerMs: msArray })),
});

/** A parsed tables file. */
export type OperatorTablesFile = z.infer<typeof OperatorTablesFileSchema>;

/** Cross-check data written beside the tables (Vidur and SplitwiseSim measurements). */
export interface CrossCheckFile {
  schema: 'switchyard-operator-crosscheck-v1';
  sources: { vidur: string; splitwise: string; aiconfigurator: string };
  /** Vidur-measured Llama-2-70B GEMMs beside AIConfigurator's for the same shape (ms). */
  vidurGemm: { gpu: string; tp: number; tokens: number; op: string; vidurMs: number; aiconfiguratorMs: number }[];
  /** Vidur-measured all-reduce beside AIConfigurator's CUDA-graph all-reduce (ms). */
  vidurAllReduce: { gpu: string; gpus: number; elements: number; vidurMs: number; aiconfiguratorMs: number }[];
  /** SplitwiseSim Llama-2-70B medians: whole-batch prefill time and mean decode-iteration time (ms). */
  splitwise: { hardware: string; tp: number; promptTokens: number; batch: number; outputTokens: number; promptMs: number; tokenMs: number }[];
}

/** Names of the committed tables files. */
export const OPERATOR_TABLE_NAMES = ['h100_sxm-vllm-0.14.0', 'a100_sxm-vllm-0.14.0', 'h100_sxm-sglang-0.5.9'] as const;

const cache = new Map<string, OperatorTablesFile>();

/**
 * Load and validate `operator-tables/<gpu>-<engine>-<version>.json` (cached per path).
 * @throws Error when no table exists for that combination (naming the ones that do) or the file is invalid.
 */
export function loadOperatorTables(gpu: string, engine: string, engineVersion: string, dir: string = OPERATOR_TABLES_DIR): OperatorTablesFile {
  const name = `${gpu}-${engine}-${engineVersion}`;
  const path = join(dir, `${name}.json`);
  const hit = cache.get(path);
  if (hit) return hit;
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, 'utf8'));
  } catch (e) {
    throw new Error(`no operator tables for gpu ${gpu}, engine ${engine} ${engineVersion} (${(e as Error).message}); available: ${OPERATOR_TABLE_NAMES.join(', ')}`);
  }
  const r = OperatorTablesFileSchema.safeParse(raw);
  if (!r.success) throw new Error(`${path}: ${r.error.issues.map((i) => `field ${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')}`);
  cache.set(path, r.data);
  return r.data;
}

/**
 * Load `operator-tables/cross-check.json`.
 * @throws Error when the file is missing or not JSON.
 */
export function loadCrossCheck(dir: string = OPERATOR_TABLES_DIR): CrossCheckFile {
  return JSON.parse(readFileSync(join(dir, 'cross-check.json'), 'utf8')) as CrossCheckFile;
}
