/**
 * Model architectures as data: the few numbers of a decoder-only transformer that decide its
 * per-step cost on a GPU and its KV-cache footprint (layers, hidden size, attention heads, KV heads,
 * head dim, MLP intermediate size, vocabulary). One JSON file per model under
 * `simulator/engine/architectures/`, copied from the model's Hugging Face `config.json`.
 *
 * From an architecture and a tensor-parallel degree this module derives the GEMM shapes of one
 * layer on one GPU (Megatron-style sharding, as vLLM and SGLang do it: QKV and gate/up column-parallel,
 * O and down row-parallel, vocabulary-parallel embedding and LM head — Shoeybi et al., "Megatron-LM",
 * 2019, §3), the weight bytes and the KV bytes per token held by each GPU.
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';

/** Element types the operator tables were measured with. */
export const DtypeSchema = z.enum(['bfloat16', 'fp8']);
/** `bfloat16` (2 bytes) or `fp8` (1 byte, E4M3 with per-tensor scales). */
export type Dtype = z.infer<typeof DtypeSchema>;

/** Bytes per element of a dtype. */
export function dtypeBytes(d: Dtype): number {
  return d === 'fp8' ? 1 : 2;
}

/** Zod schema of an architecture file. Counts are positive integers. */
export const ArchitectureSchema = z
  .object({
    name: z.string().regex(/^[a-z0-9.-]+$/, 'lower-case kebab name, e.g. llama-3.1-8b'),
    huggingFaceId: z.string().min(1),
    layers: z.number().int().positive(),
    hiddenSize: z.number().int().positive(),
    attentionHeads: z.number().int().positive(),
    kvHeads: z.number().int().positive(),
    headDim: z.number().int().positive(),
    intermediateSize: z.number().int().positive(),
    vocabSize: z.number().int().positive(),
    tiedEmbeddings: z.boolean(),
    maxContextTokens: z.number().int().positive(),
    /** Dtype of the released checkpoint (what `dtype: auto` loads). */
    weightDtype: DtypeSchema,
    /** Where the numbers come from. */
    source: z.string().min(1),
  })
  .strict()
  .refine((a) => a.attentionHeads % a.kvHeads === 0, { message: 'attentionHeads must be a multiple of kvHeads (grouped-query attention)' });

/** A validated architecture. */
export type Architecture = z.infer<typeof ArchitectureSchema>;

/** Directory of the committed architecture files. */
export const ARCHITECTURES_DIR = join(dirname(fileURLToPath(import.meta.url)), 'architectures');

/** Names of the committed architectures (file names without `.json`). */
export const ARCHITECTURE_NAMES = ['llama-3.1-8b', 'llama-3.1-70b', 'qwen3-32b', 'llama-2-70b'] as const;

const cache = new Map<string, Architecture>();

/**
 * Load `simulator/engine/architectures/<name>.json` (cached).
 * @throws Error when the name is not a plain file name, the file is missing, or a field is invalid
 *   (the message names the file and the field).
 */
export function loadArchitecture(name: string, dir: string = ARCHITECTURES_DIR): Architecture {
  const key = `${dir}/${name}`;
  const hit = cache.get(key);
  if (hit) return hit;
  if (!/^[a-z0-9.-]+$/.test(name) || name.startsWith('.')) {
    throw new Error(`unknown model ${JSON.stringify(name)}: expected one of ${ARCHITECTURE_NAMES.join(', ')}`);
  }
  const path = join(dir, `${name}.json`);
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, 'utf8'));
  } catch (e) {
    throw new Error(`unknown model ${JSON.stringify(name)} (cannot read ${path}: ${(e as Error).message}); expected one of ${ARCHITECTURE_NAMES.join(', ')}`);
  }
  const r = ArchitectureSchema.safeParse(raw);
  if (!r.success) {
    throw new Error(`${path}: ${r.error.issues.map((i) => `field ${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')}`);
  }
  if (r.data.name !== name) throw new Error(`${path}: field name is '${r.data.name}', expected '${name}' (the file name)`);
  cache.set(key, r.data);
  return r.data;
}

/** One GEMM of a layer on one GPU: out[m × n] = in[m × k] · W[k × n]; m is the token count. */
export interface GemmShape {
  /** Operator name: `qkv`, `o`, `gate_up`, `down`, `lm_head`. */
  readonly op: string;
  /** Output columns on this GPU. */
  readonly n: number;
  /** Reduction dimension on this GPU. */
  readonly k: number;
}

/**
 * Attention heads and KV heads held by one GPU under tensor parallelism `tp`. KV heads are split
 * across GPUs, and replicated when tp exceeds their number (vLLM/SGLang do this).
 * @throws Error when tp does not divide the attention heads.
 */
export function headsPerGpu(arch: Architecture, tp: number): { heads: number; kvHeads: number } {
  if (!Number.isInteger(tp) || tp < 1 || arch.attentionHeads % tp !== 0) {
    throw new Error(`tensor parallelism ${tp} must divide ${arch.name}'s ${arch.attentionHeads} attention heads`);
  }
  return { heads: arch.attentionHeads / tp, kvHeads: Math.max(1, arch.kvHeads / tp) };
}

/**
 * The four GEMMs of one transformer layer on one GPU at tensor parallelism `tp` (Megatron sharding):
 * QKV (column-parallel, n = (heads + 2·kvHeads)·headDim per GPU), O (row-parallel, k = heads·headDim / tp),
 * gate+up fused (column-parallel, n = 2·intermediate / tp), down (row-parallel, k = intermediate / tp).
 * @throws Error when tp does not divide the heads or the intermediate size.
 */
export function layerGemms(arch: Architecture, tp: number): GemmShape[] {
  const { heads, kvHeads } = headsPerGpu(arch, tp);
  if (arch.intermediateSize % tp !== 0) throw new Error(`tensor parallelism ${tp} must divide ${arch.name}'s intermediate size ${arch.intermediateSize}`);
  const d = arch.headDim;
  return [
    { op: 'qkv', n: (heads + 2 * kvHeads) * d, k: arch.hiddenSize },
    { op: 'o', n: arch.hiddenSize, k: heads * d },
    { op: 'gate_up', n: (2 * arch.intermediateSize) / tp, k: arch.hiddenSize },
    { op: 'down', n: arch.hiddenSize, k: arch.intermediateSize / tp },
  ];
}

/** The LM-head GEMM on one GPU (vocabulary-parallel): n = ceil(vocab / tp), k = hidden. */
export function lmHeadGemm(arch: Architecture, tp: number): GemmShape {
  return { op: 'lm_head', n: Math.ceil(arch.vocabSize / tp), k: arch.hiddenSize };
}

/** Parameters of the model, total (embeddings included; the LM head counted once when tied). */
export function parameterCount(arch: Architecture): number {
  const d = arch.headDim;
  const perLayer =
    arch.hiddenSize * (arch.attentionHeads + 2 * arch.kvHeads) * d +
    arch.attentionHeads * d * arch.hiddenSize +
    3 * arch.hiddenSize * arch.intermediateSize +
    2 * arch.hiddenSize;
  const emb = arch.vocabSize * arch.hiddenSize;
  return arch.layers * perLayer + emb * (arch.tiedEmbeddings ? 1 : 2) + arch.hiddenSize;
}

/**
 * Weight bytes resident on one GPU: the layers' linear weights in `gemmDtype`, sharded by tp;
 * embedding and LM head in bfloat16, vocabulary-sharded (FP8 checkpoints keep them in 16 bit).
 */
export function weightBytesPerGpu(arch: Architecture, tp: number, gemmDtype: Dtype): number {
  const linear = layerGemms(arch, tp).reduce((s, g) => s + g.n * g.k, 0) * arch.layers;
  const emb = Math.ceil(arch.vocabSize / tp) * arch.hiddenSize * (arch.tiedEmbeddings ? 1 : 2);
  return linear * dtypeBytes(gemmDtype) + emb * 2 + arch.layers * 2 * arch.hiddenSize * 2;
}

/** KV-cache bytes per token on one GPU: 2 (K and V) × layers × kvHeads per GPU × headDim × dtype bytes. */
export function kvBytesPerTokenPerGpu(arch: Architecture, tp: number, kvDtype: Dtype): number {
  return 2 * arch.layers * headsPerGpu(arch, tp).kvHeads * arch.headDim * dtypeBytes(kvDtype);
}
