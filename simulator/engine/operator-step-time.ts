/**
 * Step time from measured GPU operators (the AIConfigurator / Vidur decomposition of one iteration):
 *
 *   stepMs = stepOverheadMs + perSequenceOverheadMs · sequences
 *          + layers × ( GEMM(T) + f · elementwise(T) + 2 · allReduce(T · hidden)      [TP > 1]
 *                     + contextAttention(prefill chunks) + generationAttention(decodes) )
 *          + lmHead(sampled sequences)
 *
 * with f = elementwiseScale for a step that runs as a CUDA graph and f = eagerElementwiseScale
 * (default 1) for one that runs outside a graph. The elementwise tables are eager PyTorch op times (Vidur's): at the few tokens of a
 * graph-captured step they are mostly launch gaps, which a CUDA graph and the engine's fused kernels
 * remove (hence the fitted fraction, fitted on decode TPOT); at the thousands of tokens of an eager
 * prefill step the ops are bandwidth-bound and only fusion saves time (fusing an add and a
 * quantisation into a norm saves passes over the activations, not the launches), so the eager steps
 * have their own fraction: 1 for separate eager kernels, below 1 for an engine that compiles fused
 * kernels for every token count (vLLM V1's torch.compile); a decode-fitted fraction would
 * underprice prefill.
 *
 * where T = prefill tokens + decode sequences is the step's token count, and GEMM(T) is the table's
 * per-layer GEMM time — for FP8 under its split envelope ({@link splitEnvelope}: never more per
 * token than at a smaller measured size). Every term is a lookup in
 * the committed operator tables (`operator-tables.ts`), precomputed at construction into dense
 * arrays indexed by token count and into log₂ grids with an O(1) index (the axes are half-octave
 * geometric, so the cell of x is ⌊2·log₂ x⌋), so `stepMs` does no search and allocates nothing.
 *
 * Attention over existing KV. The context-attention tables are measured from an empty KV cache
 * (b sequences of s tokens each, causal). A step's prefill chunks — some attending over KV already
 * in the cache (later chunks of a chunked prefill, tokens after a prefix-cache hit) — are priced as
 * the measured uniform batch with the same number of sequences and the same number of causal
 * query–key pairs: b = prefill sequences, P = Σ c·(p + c/2) over chunks of c new tokens after p
 * cached ones (`BatchShape.prefillAttnPairs`), s_eq = √(2P/b). For one chunk this is
 * s_eq = √(c² + 2cp): a 2,048-token chunk after 6,144 cached tokens is priced as a 5,418-token
 * prompt. Attention FLOPs are proportional to the pair count, so the approximation is exact in the
 * compute-bound regime and ignores that a short chunk over a long cache reads more KV per FLOP
 * (a memory-bound effect that matters only for chunks of a few tokens). Decodes are priced as the
 * measured decode batch with the same sequence count at the mean KV length
 * (`decodeContextTokens / decodeSeqs`), decode attention being linear in KV read.
 *
 * CUDA graphs: steps of at most `cudaGraphMaxTokens` tokens use the CUDA-graph all-reduce times,
 * larger ones the eager times (vLLM captures graphs up to 512 tokens by default; SGLang only for
 * decode batches). A decode step's token count is padded to the next capture size first.
 */
import type { Architecture, Dtype } from './architecture.ts';
import { headsPerGpu } from './architecture.ts';
import { attnKey, gemmKey, type OperatorTablesFile } from './operator-tables.ts';
import type { BatchShape, StepTimeModel } from './step-time.ts';

/** Options of {@link OperatorStepTime}. */
export interface OperatorStepTimeOptions {
  tables: OperatorTablesFile;
  arch: Architecture;
  /** Tensor-parallel degree (1, 2, 4 or 8). */
  tp: number;
  /** GEMM dtype (`fp8` needs FP8 tables: H100 only). */
  gemmDtype: Dtype;
  /** Largest step token count precomputed densely (beyond it: proportional). Default 65,536. */
  maxTokens?: number;
  /** Steps with at most this many tokens run as CUDA graphs. Default 512 (vLLM's default capture limit). */
  cudaGraphMaxTokens?: number;
  /** Only decode-only steps run as CUDA graphs (SGLang). Default false (vLLM's piecewise graphs cover mixed steps). */
  cudaGraphDecodeOnly?: boolean;
  /** Fixed cost of every non-empty step: scheduling, sampling, launch gaps (ms). Default 0. */
  stepOverheadMs?: number;
  /** Cost per sequence in the step: per-request scheduling, input preparation, output processing (ms). Default 0. */
  perSequenceOverheadMs?: number;
  /**
   * Fraction (0..1] of the tables' eager elementwise time (RMSNorm, residual adds, activation,
   * rotary, FP8 quantisation) a CUDA-graph step still pays: below 1 where the graph removes the
   * launch gaps and the engine fuses these ops into neighbouring kernels (vLLM's torch.compile
   * fusion passes, SGLang's fused norm and activation kernels). Eager steps pay the full time
   * (module doc). Default 1.
   */
  elementwiseScale?: number;
  /**
   * Fraction (0..1] of the tables' eager elementwise time a step too large for a CUDA graph (a
   * prefill step) pays. 1 where the ops run as the separate eager kernels the tables measured; below
   * 1 where the engine compiles the model for every batch size and fuses them even outside graphs
   * (vLLM V1: the model is captured once by TorchDynamo, dynamic on the number of tokens, and
   * compiled by TorchInductor for that general shape, CUDA graphs being captured separately for the
   * small sizes only — docs.vllm.ai `design/debug_vllm_compile` and `vllm/compilation/
   * cuda_piecewise_backend.py` — so residual add + RMSNorm (+ FP8 quantisation) and SiLU × mul run
   * as fused kernels at any token count). At thousands of
   * tokens these ops are bandwidth-bound, so the fraction is the share of activation passes left
   * after fusion, not the launch-gap share a graph removes. Default 1.
   */
  eagerElementwiseScale?: number;
}

/**
 * CUDA-graph capture sizes vLLM uses by default: 1, 2, 4, then multiples of 8 (up to 512).
 * A batch of n tokens runs the graph of the smallest capture size ≥ n.
 */
function captureSize(n: number): number {
  if (n <= 2) return n;
  if (n <= 4) return 4;
  return Math.ceil(n / 8) * 8;
}

/** A `StepTimeModel` built from operator tables (formula and approximations in the module doc). */
export class OperatorStepTime implements StepTimeModel {
  readonly arch: Architecture;
  readonly tp: number;
  readonly gemmDtype: Dtype;
  readonly stepOverheadMs: number;
  readonly perSequenceOverheadMs: number;
  readonly elementwiseScale: number;
  readonly eagerElementwiseScale: number;
  readonly cudaGraphMaxTokens: number;
  readonly cudaGraphDecodeOnly: boolean;
  readonly maxTokens: number;
  /** layers × (GEMM + full elementwise + all-reduce) by token count, eager (index 0..maxTokens). */
  private readonly denseEagerMs: Float64Array;
  /** Same, CUDA-graph all-reduce and `elementwiseScale` × elementwise, with decode padding to capture sizes (index 0..cudaGraphMaxTokens). */
  private readonly denseGraphMs: Float64Array;
  /** LM head by sampled sequences (index 0..maxTokens). */
  private readonly lmHeadMs: Float64Array;
  /** log₂(layers × context-attention ms), [batchIdx × nLen + lenIdx]. */
  private readonly ctxLog2: Float64Array;
  /** log₂(layers × generation-attention ms), [batchIdx × nLen + lenIdx]. */
  private readonly genLog2: Float64Array;
  private readonly nLen: number;
  private readonly nCtxB: number;
  private readonly nGenB: number;

  /**
   * @throws Error when the tables have no GEMM entry for (model, tp, dtype), no attention layout
   *   for the model's heads per GPU, or no all-reduce table for tp GPUs (the message names what exists).
   */
  constructor(opts: OperatorStepTimeOptions) {
    const { tables, arch, tp, gemmDtype } = opts;
    this.arch = arch;
    this.tp = tp;
    this.gemmDtype = gemmDtype;
    this.stepOverheadMs = opts.stepOverheadMs ?? 0;
    this.perSequenceOverheadMs = opts.perSequenceOverheadMs ?? 0;
    if (!(this.perSequenceOverheadMs >= 0)) throw new Error(`perSequenceOverheadMs must be ≥ 0, got ${this.perSequenceOverheadMs}`);
    this.elementwiseScale = opts.elementwiseScale ?? 1;
    if (!(this.elementwiseScale > 0 && this.elementwiseScale <= 1)) throw new Error(`elementwiseScale must be in (0, 1], got ${this.elementwiseScale}`);
    this.eagerElementwiseScale = opts.eagerElementwiseScale ?? 1;
    if (!(this.eagerElementwiseScale > 0 && this.eagerElementwiseScale <= 1)) throw new Error(`eagerElementwiseScale must be in (0, 1], got ${this.eagerElementwiseScale}`);
    this.cudaGraphMaxTokens = opts.cudaGraphMaxTokens ?? 512;
    this.cudaGraphDecodeOnly = opts.cudaGraphDecodeOnly ?? false;
    this.maxTokens = opts.maxTokens ?? 65_536;
    if (!(this.stepOverheadMs >= 0)) throw new Error(`stepOverheadMs must be ≥ 0, got ${this.stepOverheadMs}`);
    const key = gemmKey(arch.name, tp, gemmDtype);
    const g = tables.gemm[key];
    if (!g) {
      throw new Error(`operator tables ${tables.name} have no GEMM entry ${key}; available: ${Object.keys(tables.gemm).join(', ')}`);
    }
    const { heads, kvHeads } = headsPerGpu(arch, tp);
    const ak = attnKey(heads, kvHeads);
    const ctx = tables.contextAttention.tables[ak];
    const gen = tables.generationAttention.tables[ak];
    if (!ctx || !gen) throw new Error(`operator tables ${tables.name} have no attention table for ${ak} (heads x KV heads per GPU)`);
    const ar = tp > 1 ? tables.allReduce[String(tp)] : undefined;
    if (tp > 1 && !ar) throw new Error(`operator tables ${tables.name} have no all-reduce table for ${tp} GPUs`);

    const L = arch.layers;
    const toks = tables.tokens;
    const at = (ys: readonly number[], m: number) => lerpProportional(toks, ys, m);
    const layerGemmMs = gemmDtype === 'fp8' ? splitEnvelope(toks, g.layerGemmMs) : g.layerGemmMs;
    const arMs = (m: number, graph: boolean) =>
      ar ? 2 * logLogInterp(ar.elements, graph ? ar.graphMs : ar.eagerMs, m * arch.hiddenSize) : 0;
    const ew = this.elementwiseScale;
    const eew = this.eagerElementwiseScale;
    const N = this.maxTokens;
    this.denseEagerMs = new Float64Array(N + 1);
    this.lmHeadMs = new Float64Array(N + 1);
    for (let m = 1; m <= N; m++) {
      this.denseEagerMs[m] = L * (at(layerGemmMs, m) + eew * at(g.layerElementwiseMs, m) + arMs(m, false));
      this.lmHeadMs[m] = at(g.lmHeadMs, m);
    }
    const G = Math.min(this.cudaGraphMaxTokens, N);
    this.denseGraphMs = new Float64Array(G + 1);
    for (let m = 1; m <= G; m++) {
      const p = Math.min(captureSize(m), G);
      this.denseGraphMs[m] = L * (at(layerGemmMs, p) + ew * at(g.layerElementwiseMs, p) + arMs(p, true));
    }
    this.nLen = tables.contextAttention.lenHalfOctaves.length;
    this.nCtxB = tables.contextAttention.batchHalfOctaves.length;
    this.nGenB = tables.generationAttention.batchHalfOctaves.length;
    const log2Grid = (rows: number[][]) => {
      const out = new Float64Array(rows.length * this.nLen);
      rows.forEach((row, i) => row.forEach((v, j) => (out[i * this.nLen + j] = Math.log2(Math.max(v, 1e-6) * L))));
      return out;
    };
    this.ctxLog2 = log2Grid(ctx);
    this.genLog2 = log2Grid(gen);
  }

  /** Duration of one step over `b` (ms); 0 for an empty batch. Allocation-free. */
  stepMs(b: BatchShape): number {
    const decodes = b.decodeSeqs;
    const prefills = b.prefillSeqs;
    if (b.prefillTokens === 0 && decodes === 0) return 0;
    const T = b.prefillTokens + decodes;
    let ms = this.stepOverheadMs;
    if (T <= this.cudaGraphMaxTokens && (prefills === 0 || !this.cudaGraphDecodeOnly)) ms += this.denseGraphMs[T]!;
    else if (T <= this.maxTokens) ms += this.denseEagerMs[T]!;
    else ms += (this.denseEagerMs[this.maxTokens]! * T) / this.maxTokens;
    const seqs = prefills + decodes;
    ms += this.perSequenceOverheadMs * seqs;
    ms += seqs <= this.maxTokens ? this.lmHeadMs[seqs]! : (this.lmHeadMs[this.maxTokens]! * seqs) / this.maxTokens;
    if (prefills > 0) ms += lookup(this.ctxLog2, this.nCtxB, this.nLen, prefills, Math.sqrt((2 * b.prefillAttnPairs) / prefills), 2);
    if (decodes > 0) ms += lookup(this.genLog2, this.nGenB, this.nLen, decodes, b.decodeContextTokens / decodes, 1);
    return ms;
  }

  /**
   * End times of the steps of a decode run (`StepTimeModel.decodeRunEnds`): the terms that do not
   * change within the run (dense operators, LM head, the batch axis of the attention lookup) are
   * computed once; every step adds them in the same order as `stepMs`, so each end is bit-identical
   * to summing `stepMs` step by step.
   */
  decodeRunEnds(b: BatchShape, startMs: number, steps: number, ends: Float64Array): void {
    const decodes = b.decodeSeqs;
    if (b.prefillTokens !== 0 || b.prefillSeqs !== 0 || decodes === 0) {
      // Not a pure decode batch: the generic walk (never taken by the replicas' coalesced runs).
      const base = b.decodeContextTokens;
      let endMs = startMs;
      for (let j = 0; j < steps; j++) {
        b.decodeContextTokens = base + j * decodes;
        endMs += this.stepMs(b);
        ends[j] = endMs;
      }
      b.decodeContextTokens = base;
      return;
    }
    const T = decodes;
    let c = this.stepOverheadMs;
    if (T <= this.cudaGraphMaxTokens) c += this.denseGraphMs[T]!;
    else if (T <= this.maxTokens) c += this.denseEagerMs[T]!;
    else c += (this.denseEagerMs[this.maxTokens]! * T) / this.maxTokens;
    c += this.perSequenceOverheadMs * decodes;
    c += decodes <= this.maxTokens ? this.lmHeadMs[decodes]! : (this.lmHeadMs[this.maxTokens]! * decodes) / this.maxTokens;
    // `lookup(genLog2, nGenB, nLen, decodes, kv / decodes, 1)` with its batch axis hoisted.
    const grid = this.genLog2;
    const nB = this.nGenB;
    const nL = this.nLen;
    let extraB = 0;
    let ub = 2 * Math.log2(decodes);
    if (ub < 0) ub = 0;
    else if (ub > nB - 1) {
      extraB += (ub - (nB - 1)) / 2;
      ub = nB - 1;
    }
    const i = ub === nB - 1 ? nB - 2 : Math.floor(ub);
    const f = ub - i;
    const base = b.decodeContextTokens;
    let endMs = startMs;
    for (let s = 0; s < steps; s++) {
      const len = (base + s * decodes) / decodes;
      let extra = extraB;
      let ul = len > 1 ? 2 * Math.log2(len) : 0;
      if (ul > nL - 1) {
        extra += (ul - (nL - 1)) / 2;
        ul = nL - 1;
      }
      const j = ul === nL - 1 ? nL - 2 : Math.floor(ul);
      const g = ul - j;
      const r0 = i * nL + j;
      const r1 = r0 + nL;
      const v = (1 - f) * ((1 - g) * grid[r0]! + g * grid[r0 + 1]!) + f * ((1 - g) * grid[r1]! + g * grid[r1 + 1]!);
      endMs += c + 2 ** (v + extra);
      ends[s] = endMs;
    }
  }

  /** Context-attention ms (all layers) of `seqs` sequences of `len` tokens each from an empty cache. */
  contextAttentionMs(seqs: number, len: number): number {
    return lookup(this.ctxLog2, this.nCtxB, this.nLen, seqs, len, 2);
  }

  /** Generation-attention ms (all layers) of `seqs` decoding sequences at mean KV length `kvLen`. */
  generationAttentionMs(seqs: number, kvLen: number): number {
    return lookup(this.genLog2, this.nGenB, this.nLen, seqs, kvLen, 1);
  }
}

/**
 * Bilinear interpolation in (log₂ batch, log₂ length) on a half-octave log₂ grid, in O(1).
 * Beyond the last batch the time scales linearly in batch; beyond the last length as length^lenExp.
 */
function lookup(grid: Float64Array, nB: number, nL: number, batch: number, len: number, lenExp: number): number {
  let extra = 0;
  let ub = 2 * Math.log2(batch);
  if (ub < 0) ub = 0;
  else if (ub > nB - 1) {
    extra += (ub - (nB - 1)) / 2;
    ub = nB - 1;
  }
  let ul = len > 1 ? 2 * Math.log2(len) : 0;
  if (ul > nL - 1) {
    extra += (lenExp * (ul - (nL - 1))) / 2;
    ul = nL - 1;
  }
  const i = ub === nB - 1 ? nB - 2 : Math.floor(ub);
  const j = ul === nL - 1 ? nL - 2 : Math.floor(ul);
  const f = ub - i;
  const g = ul - j;
  const r0 = i * nL + j;
  const r1 = r0 + nL;
  const v =
    (1 - f) * ((1 - g) * grid[r0]! + g * grid[r0 + 1]!) +
    f * ((1 - g) * grid[r1]! + g * grid[r1 + 1]!);
  return 2 ** (v + extra);
}

/**
 * The split envelope of a GEMM time table: y'(m) = min over table points m₀ ≤ m of y(m₀) · m / m₀.
 * A GEMM over m tokens can always run as m / m₀ GEMMs of m₀ tokens, so its time per token never
 * needs to exceed the best per-token time measured at a smaller size; a deployment's kernel
 * dispatch (cuBLASLt heuristics, vLLM's and SGLang's M-bucketed FP8 kernel configs) picks tiles
 * that keep it there. The committed H100 FP8 GEMMs (SGLang 0.5.9's kernels, borrowed for vLLM,
 * see the tables' notes) rise by 30–45 % per token from 1,024 to 8,192 tokens, which priced a lone
 * 8,192-token Llama-3.1-70B FP8 prefill at TP 2 20 % above the measured TTFT; under the envelope it
 * is within 3 %. The bf16 tables rise by at most ~8 % there, within what power-limited clocks under
 * sustained large GEMMs explain (a limit that splitting does not escape), so they are used as
 * measured. Sizes at which per-token time still falls are unchanged.
 */
export function splitEnvelope(xs: readonly number[], ys: readonly number[]): number[] {
  let bestPerX = Infinity;
  return ys.map((y, i) => {
    const x = xs[i]!;
    const v = Math.min(y, bestPerX * x);
    bestPerX = Math.min(bestPerX, y / x);
    return v;
  });
}

/** Piecewise-linear on sorted xs; below the first point the first value; beyond the last, proportional. */
function lerpProportional(xs: readonly number[], ys: readonly number[], x: number): number {
  const n = xs.length;
  if (x <= xs[0]!) return ys[0]!;
  if (x >= xs[n - 1]!) return (ys[n - 1]! * x) / xs[n - 1]!;
  let i = 1;
  while (xs[i]! < x) i++;
  const f = (x - xs[i - 1]!) / (xs[i]! - xs[i - 1]!);
  return ys[i - 1]! + f * (ys[i]! - ys[i - 1]!);
}

/** Power-law interpolation on sorted xs > 0; clamps below, proportional above. */
function logLogInterp(xs: readonly number[], ys: readonly number[], x: number): number {
  const n = xs.length;
  if (x <= xs[0]!) return ys[0]!;
  if (x >= xs[n - 1]!) return (ys[n - 1]! * x) / xs[n - 1]!;
  let i = 1;
  while (xs[i]! < x) i++;
  const f = Math.log(x / xs[i - 1]!) / Math.log(xs[i]! / xs[i - 1]!);
  return ys[i - 1]! * (ys[i]! / ys[i - 1]!) ** f;
}
