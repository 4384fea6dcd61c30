/**
 * Builds the committed operator lookup tables (`simulator/engine/operator-tables/*.json`) from the
 * measured per-operator GPU latencies of NVIDIA AIConfigurator (`../shared/traces/aiconfigurator-ops/`,
 * parquet, read with DuckDB), plus the elementwise-op costs and cross-check data from Vidur and
 * SplitwiseSim, and the silicon validation rows. Run it when the source data or the architectures change:
 *
 *   npx tsx simulator/engine-build/build-operator-tables.ts [--shared ../shared]
 *
 * What it writes, per (GPU, engine, engine version):
 *  - GEMM: for every architecture × TP ∈ {1,2,4,8} × GEMM dtype, the per-layer sum of the four GEMMs
 *    (QKV, O, gate+up, down — shapes from `architecture.ts`) and the LM-head GEMM, at the measured
 *    token counts m, interpolated trilinearly in (m, n, k) on AIConfigurator's measured grid
 *    (the measured n/k grid does not contain every model dimension, e.g. 25,600; GEMM time is close
 *    to affine in n and k, so linear interpolation between grid points is nearly exact). Beyond the
 *    last measured point, time is scaled proportionally (compute-bound GEMMs are linear in m, n, k).
 *  - elementwise ops per layer (2 RMSNorms, 2 residual adds, RoPE, SiLU·mul) from Vidur's measured
 *    Llama-2-70B op times on the same GPU, as a function of elements processed, rescaled to each
 *    architecture (AIConfigurator has no table for them).
 *  - context (prefill) attention per layer on a half-octave grid of (batch, sequence length) and
 *    generation (decode) attention per layer on a half-octave grid of (batch, KV length), for each
 *    (heads, KV heads) per GPU the architectures need; bf16 activations and bf16 KV cache.
 *    Missing large cells are filled by scaling from the largest measured batch (work is linear in
 *    batch), long sequences beyond the measured 16,384 tokens scale with s² (context) or s (decode);
 *    isolated outliers (more than 3× the next smaller batch's time) are dropped first; each axis is
 *    then made non-decreasing (running maximum).
 *  - all-reduce time by message size (elements) for 2, 4 and 8 GPUs, CUDA-graph and eager backends.
 * All times are milliseconds per call of one operator on one GPU (per layer where stated).
 */
import { mkdirSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import {
  ARCHITECTURE_NAMES,
  type Architecture,
  type Dtype,
  headsPerGpu,
  layerGemms,
  lmHeadGemm,
  loadArchitecture,
} from '../engine/architecture.ts';
import {
  ATTN_BATCH_HALF_OCTAVES_CTX,
  ATTN_BATCH_HALF_OCTAVES_GEN,
  ATTN_LEN_HALF_OCTAVES,
  OPERATOR_TABLES_DIR,
  type OperatorTablesFile,
  type CrossCheckFile,
  attnKey,
  gemmKey,
} from '../engine/operator-tables.ts';

const HERE = dirname(fileURLToPath(import.meta.url));

/** One operator-data source directory (relative to `<shared>/traces/aiconfigurator-ops/`). */
export interface Source {
  gpu: 'h100_sxm' | 'a100_sxm';
  engine: 'vllm' | 'sglang';
  engineVersion: string;
  dir: string;
  vidurGpu: 'h100' | 'a100';
  /**
   * Take the FP8 GEMM table from this sibling directory instead. H100 vLLM 0.14.0's FP8 GEMMs are
   * slower than its own bf16 GEMMs for m ≥ 512 (e.g. m = n = k = 4,096 … 8,192: 0.776 vs 0.640 ms at
   * m = 4,096) — impossible for a kernel with twice the tensor-core rate and half the bytes, so the
   * collected kernel is not the one a deployment runs; SGLang 0.5.9's FP8 GEMMs on the same GPU are
   * 1.6× faster than bf16, as expected.
   */
  fp8GemmFrom?: string;
}

/** The (GPU, engine, version) operator data sets the tables are built from, under ../shared/traces/aiconfigurator-ops/. */
export const SOURCES: Source[] = [
  { gpu: 'h100_sxm', engine: 'vllm', engineVersion: '0.14.0', dir: 'h100_sxm/vllm-0.14.0', vidurGpu: 'h100', fp8GemmFrom: 'h100_sxm/sglang-0.5.9' },
  { gpu: 'a100_sxm', engine: 'vllm', engineVersion: '0.14.0', dir: 'a100_sxm/vllm-0.14.0', vidurGpu: 'a100' },
  { gpu: 'h100_sxm', engine: 'sglang', engineVersion: '0.5.9', dir: 'h100_sxm/sglang-0.5.9', vidurGpu: 'h100' },
];

const TPS = [1, 2, 4, 8] as const;

/** 4 significant digits: enough for a latency table, keeps the JSON small. */
const r4 = (x: number): number => Number(x.toPrecision(4));

async function rows<T>(con: DuckDBConnection, sql: string): Promise<T[]> {
  const res = await con.runAndReadAll(sql);
  return res.getRowObjectsJson() as unknown as T[];
}

/** Piecewise-linear interpolation on sorted xs; beyond either end, proportional scaling y·x/x_end. */
export function interpLinearProportional(xs: readonly number[], ys: readonly number[], x: number): number {
  const n = xs.length;
  if (n === 0) throw new Error('interpLinearProportional: empty table');
  // Below the grid: the latency floor (scale 1); above it: the end value scaled by x / x_end.
  const [lo, hi, f, scale] = bracket(xs, x);
  if (lo === hi) return scale === 1 ? ys[lo]! : ys[lo]! * scale;
  return ys[lo]! + f * (ys[hi]! - ys[lo]!);
}

/** Dense 3-D GEMM grid of one dtype: latency[mi][ni][ki] (ms), holes filled. */
class GemmGrid {
  constructor(
    readonly ms: number[],
    readonly ns: number[],
    readonly ks: number[],
    private readonly t: Float64Array,
  ) {}

  private at(mi: number, ni: number, ki: number): number {
    return this.t[(mi * this.ns.length + ni) * this.ks.length + ki]!;
  }

  /** Trilinear interpolation; proportional extrapolation beyond the grid (see module doc). */
  latencyMs(m: number, n: number, k: number): number {
    const [mi0, mi1, mf, ms] = bracket(this.ms, m);
    const [ni0, ni1, nf, ns] = bracket(this.ns, n);
    const [ki0, ki1, kf, ks] = bracket(this.ks, k);
    const c = (mi: number, ni: number, ki: number) => this.at(mi, ni, ki);
    const lerp = (a: number, b: number, f: number) => a + f * (b - a);
    const v = lerp(
      lerp(lerp(c(mi0, ni0, ki0), c(mi0, ni0, ki1), kf), lerp(c(mi0, ni1, ki0), c(mi0, ni1, ki1), kf), nf),
      lerp(lerp(c(mi1, ni0, ki0), c(mi1, ni0, ki1), kf), lerp(c(mi1, ni1, ki0), c(mi1, ni1, ki1), kf), nf),
      mf,
    );
    return v * ms * ns * ks;
  }

  static build(raw: { m: number; n: number; k: number; latency: number }[]): GemmGrid {
    const ms = [...new Set(raw.map((r) => r.m))].sort((a, b) => a - b);
    const ns = [...new Set(raw.map((r) => r.n))].sort((a, b) => a - b);
    const ks = [...new Set(raw.map((r) => r.k))].sort((a, b) => a - b);
    const t = new Float64Array(ms.length * ns.length * ks.length).fill(NaN);
    const idx = (mi: number, ni: number, ki: number) => (mi * ns.length + ni) * ks.length + ki;
    const mIx = new Map(ms.map((v, i) => [v, i]));
    const nIx = new Map(ns.map((v, i) => [v, i]));
    const kIx = new Map(ks.map((v, i) => [v, i]));
    for (const r of raw) t[idx(mIx.get(r.m)!, nIx.get(r.n)!, kIx.get(r.k)!)] = r.latency;
    // Upward spikes: a GEMM never takes longer than the same GEMM with more rows, so each cell is
    // capped by the nearest measured cell at a larger m (e.g. H100 vLLM bf16 n=5,120 k=6,144 reads
    // 0.748 ms at m=2,048 but 0.314 ms at m=4,096).
    // A spike is replaced by linear interpolation (in m) between its nearest non-spike neighbours.
    for (let ni = 0; ni < ns.length; ni++) {
      for (let ki = 0; ki < ks.length; ki++) {
        const spike = new Array<boolean>(ms.length).fill(false);
        let cap = Infinity;
        for (let mi = ms.length - 1; mi >= 0; mi--) {
          const v = t[idx(mi, ni, ki)]!;
          if (Number.isNaN(v)) continue;
          if (v > cap) spike[mi] = true;
          else cap = v;
        }
        for (let mi = 0; mi < ms.length; mi++) {
          if (!spike[mi]) continue;
          let lo = mi - 1;
          while (lo >= 0 && (spike[lo] || Number.isNaN(t[idx(lo, ni, ki)]!))) lo--;
          let hi = mi + 1;
          while (hi < ms.length && (spike[hi] || Number.isNaN(t[idx(hi, ni, ki)]!))) hi++;
          const vh = t[idx(hi, ni, ki)]!;
          t[idx(mi, ni, ki)] = lo < 0 ? vh : t[idx(lo, ni, ki)]! + ((ms[mi]! - ms[lo]!) / (ms[hi]! - ms[lo]!)) * (vh - t[idx(lo, ni, ki)]!);
        }
      }
    }
    // Holes (a few of the largest shapes were not measured): scale from the next smaller m.
    for (let ni = 0; ni < ns.length; ni++) {
      for (let ki = 0; ki < ks.length; ki++) {
        for (let mi = 0; mi < ms.length; mi++) {
          if (!Number.isNaN(t[idx(mi, ni, ki)]!)) continue;
          let src = mi - 1;
          while (src >= 0 && Number.isNaN(t[idx(src, ni, ki)]!)) src--;
          if (src >= 0) t[idx(mi, ni, ki)] = t[idx(src, ni, ki)]! * (ms[mi]! / ms[src]!);
        }
        for (let mi = ms.length - 1; mi >= 0; mi--) {
          if (!Number.isNaN(t[idx(mi, ni, ki)]!)) continue;
          let src = mi + 1;
          while (src < ms.length && Number.isNaN(t[idx(src, ni, ki)]!)) src++;
          if (src < ms.length) t[idx(mi, ni, ki)] = t[idx(src, ni, ki)]!;
        }
      }
    }
    // Whole (n, k) columns never measured (e.g. n = k = 65,536): scale from the next smaller k, else n.
    for (let ni = 0; ni < ns.length; ni++) {
      for (let ki = 0; ki < ks.length; ki++) {
        for (let mi = 0; mi < ms.length; mi++) {
          if (!Number.isNaN(t[idx(mi, ni, ki)]!)) continue;
          if (ki > 0 && !Number.isNaN(t[idx(mi, ni, ki - 1)]!)) t[idx(mi, ni, ki)] = t[idx(mi, ni, ki - 1)]! * (ks[ki]! / ks[ki - 1]!);
          else if (ni > 0 && !Number.isNaN(t[idx(mi, ni - 1, ki)]!)) t[idx(mi, ni, ki)] = t[idx(mi, ni - 1, ki)]! * (ns[ni]! / ns[ni - 1]!);
        }
      }
    }
    for (let i = 0; i < t.length; i++) {
      if (Number.isNaN(t[i]!)) throw new Error('GemmGrid: an (n, k) column has no measurement at any m nor a smaller neighbour');
    }
    return new GemmGrid(ms, ns, ks, t);
  }
}

/**
 * Locate x in sorted xs: indices of the bracketing points, the fraction between them, and a
 * proportional scale factor (≠ 1 only outside the grid, where the end value is scaled by x/x_end).
 */
function bracket(xs: readonly number[], x: number): [number, number, number, number] {
  const n = xs.length;
  if (x <= xs[0]!) return [0, 0, 0, 1];
  if (x >= xs[n - 1]!) return [n - 1, n - 1, 0, x / xs[n - 1]!];
  let lo = 0;
  let hi = n - 1;
  while (hi - lo > 1) {
    const mid = (lo + hi) >> 1;
    if (xs[mid]! <= x) lo = mid;
    else hi = mid;
  }
  return [lo, hi, (x - xs[lo]!) / (xs[hi]! - xs[lo]!), 1];
}

/** Power-law (log–log) interpolation on sorted xs > 0; outside, extrapolates with `lowExp`/`highExp`. */
function interpLogLog(xs: readonly number[], ys: readonly number[], x: number, highExp: number): number {
  const n = xs.length;
  if (x <= xs[0]!) return ys[0]!;
  if (x >= xs[n - 1]!) return ys[n - 1]! * (x / xs[n - 1]!) ** highExp;
  let lo = 0;
  let hi = n - 1;
  while (hi - lo > 1) {
    const mid = (lo + hi) >> 1;
    if (xs[mid]! <= x) lo = mid;
    else hi = mid;
  }
  const f = Math.log(x / xs[lo]!) / Math.log(xs[hi]! / xs[lo]!);
  return Math.exp(Math.log(ys[lo]!) + f * (Math.log(ys[hi]!) - Math.log(ys[lo]!)));
}

/**
 * Resample a measured (batch × length) attention table onto the half-octave grid.
 * `lenExp`: exponent used beyond the longest measured length (2 for causal prefill, 1 for decode).
 * @returns rows indexed [batchIndex][lenIndex], ms, non-decreasing along both axes; and dropped outliers.
 */
function attentionGrid(
  measured: { b: number; s: number; ms: number }[],
  batchGrid: readonly number[],
  lenGrid: readonly number[],
  lenExp: number,
): { grid: number[][]; dropped: string[] } {
  const bs = [...new Set(measured.map((r) => r.b))].sort((a, b) => a - b);
  const byB = new Map<number, Map<number, number>>();
  for (const r of measured) {
    let m = byB.get(r.b);
    if (!m) byB.set(r.b, (m = new Map()));
    m.set(r.s, r.ms);
  }
  // Upward spikes: a cell is capped by the measured cells with a longer sequence (same batch) and
  // with a larger batch (same length) — more work never takes less time.
  const allLens = [...new Set(measured.map((r) => r.s))].sort((a, b) => a - b);
  for (const b of bs) {
    const m = byB.get(b)!;
    let cap = Infinity;
    for (let j = allLens.length - 1; j >= 0; j--) {
      const v = m.get(allLens[j]!);
      if (v === undefined) continue;
      if (v > cap) m.set(allLens[j]!, cap);
      else cap = v;
    }
  }
  for (const s of allLens) {
    let cap = Infinity;
    for (let i = bs.length - 1; i >= 0; i--) {
      const m = byB.get(bs[i]!)!;
      const v = m.get(s);
      if (v === undefined) continue;
      if (v > cap) m.set(s, cap);
      else cap = v;
    }
  }
  // Drop isolated outliers the caps cannot see (no larger measured neighbour): a cell more than
  // 3× the cell at half the batch (work at most doubles).
  const dropped: string[] = [];
  for (let i = 1; i < bs.length; i++) {
    const cur = byB.get(bs[i]!)!;
    const prev = byB.get(bs[i - 1]!)!;
    for (const [s, v] of [...cur]) {
      const p = prev.get(s);
      if (p !== undefined && v > 3 * p * (bs[i]! / bs[i - 1]!) / 2) {
        dropped.push(`batch ${bs[i]} length ${s}: ${v.toFixed(4)} ms vs ${p.toFixed(4)} ms at batch ${bs[i - 1]}`);
        cur.delete(s);
      }
    }
  }
  const allS = [...new Set(measured.map((r) => r.s))].sort((a, b) => a - b);
  // Per measured batch: curve over all measured lengths, holes filled by scaling from the largest
  // smaller batch that has that length (linear in batch).
  const curves = new Map<number, number[]>();
  for (let i = 0; i < bs.length; i++) {
    const b = bs[i]!;
    const ys = allS.map((s) => {
      const v = byB.get(b)!.get(s);
      if (v !== undefined) return v;
      for (let j = i - 1; j >= 0; j--) {
        const w = byB.get(bs[j]!)!.get(s);
        if (w !== undefined) return w * (b / bs[j]!);
      }
      for (let j = i + 1; j < bs.length; j++) {
        const w = byB.get(bs[j]!)!.get(s);
        if (w !== undefined) return w; // smaller batch is never slower than... use as floor
      }
      return NaN;
    });
    curves.set(b, ys);
  }
  const grid: number[][] = [];
  for (const b of batchGrid) {
    const row: number[] = [];
    for (const s of lenGrid) {
      // Interpolate across measured batches (log–log), each evaluated at length s.
      const atB = bs.map((bb) => interpLogLog(allS, curves.get(bb)!, s, lenExp));
      row.push(interpLogLog(bs, atB, b, 1));
    }
    grid.push(row);
  }
  // Non-decreasing along both axes.
  for (const row of grid) for (let j = 1; j < row.length; j++) row[j] = Math.max(row[j]!, row[j - 1]!);
  for (let i = 1; i < grid.length; i++) for (let j = 0; j < lenGrid.length; j++) grid[i]![j] = Math.max(grid[i]![j]!, grid[i - 1]![j]!);
  return { grid: grid.map((r) => r.map(r4)), dropped };
}

/** Vidur elementwise op curves (ms vs elements processed), from one GPU's Llama-2-70B mlp.csv at TP 1. */
interface ElementwiseCurves {
  norm: { e: number[]; ms: number[] };
  add: { e: number[]; ms: number[] };
  rope: { e: number[]; ms: number[] };
  act: { e: number[]; ms: number[] };
}

function readVidurElementwise(csvPath: string): ElementwiseCurves {
  const lines = readFileSync(csvPath, 'utf8').trim().split('\n');
  const header = lines[0]!.split(',');
  const col = (name: string) => {
    const i = header.indexOf(name);
    if (i < 0) throw new Error(`${csvPath}: missing column ${name}`);
    return i;
  };
  const iTok = col('num_tokens');
  const iTp = col('num_tensor_parallel_workers');
  const med = (op: string) => col(`time_stats.${op}.median`);
  const ops = { norm: med('input_layernorm'), norm2: med('post_attention_layernorm'), add: med('add'), rope: med('attn_rope'), act: med('mlp_act') };
  const byTok = new Map<number, { norm: number[]; add: number[]; rope: number[]; act: number[] }>();
  for (const line of lines.slice(1)) {
    const c = line.split(',');
    if (Number(c[iTp]) !== 1) continue;
    const tok = Number(c[iTok]);
    let e = byTok.get(tok);
    if (!e) byTok.set(tok, (e = { norm: [], add: [], rope: [], act: [] }));
    e.norm.push(Number(c[ops.norm]), Number(c[ops.norm2]));
    e.add.push(Number(c[ops.add]));
    e.rope.push(Number(c[ops.rope]));
    e.act.push(Number(c[ops.act]));
  }
  const median = (xs: number[]) => {
    const s = [...xs].sort((a, b) => a - b);
    return s[Math.floor(s.length / 2)]!;
  };
  const toks = [...byTok.keys()].sort((a, b) => a - b);
  // Llama-2-70B at TP 1: hidden 8192; RoPE over (64 + 8) heads × 128; SiLU·mul output 28,672 per token.
  const mk = (perTok: number, pick: (t: number) => number) => {
    const e = toks.map((t) => t * perTok);
    const ms: number[] = [];
    for (const t of toks) ms.push(Math.max(pick(t), ms.length ? ms[ms.length - 1]! : 0));
    return { e, ms };
  };
  return {
    norm: mk(8192, (t) => median(byTok.get(t)!.norm)),
    add: mk(8192, (t) => median(byTok.get(t)!.add)),
    rope: mk(72 * 128, (t) => median(byTok.get(t)!.rope)),
    act: mk(28672, (t) => median(byTok.get(t)!.act)),
  };
}

/** Elementwise ms per layer at m tokens for `arch` on `tp` GPUs (see module doc). */
function elementwiseMs(c: ElementwiseCurves, arch: Architecture, tp: number, m: number): number {
  const { heads, kvHeads } = headsPerGpu(arch, tp);
  const f = (curve: { e: number[]; ms: number[] }, e: number) => interpLinearProportional(curve.e, curve.ms, e);
  return (
    2 * f(c.norm, m * arch.hiddenSize) +
    2 * f(c.add, m * arch.hiddenSize) +
    f(c.rope, m * (heads + kvHeads) * arch.headDim) +
    f(c.act, (m * arch.intermediateSize) / tp)
  );
}

/**
 * Build the tables file of one source directory (GEMM per architecture × TP × dtype, attention
 * grids per head layout, all-reduce), reading `<shared>/traces/aiconfigurator-ops/<src.dir>` and
 * Vidur's elementwise ops with DuckDB / fs.
 * @throws Error when a table is missing or has no rows for a needed configuration (names it).
 */
export async function buildSource(con: DuckDBConnection, shared: string, src: Source): Promise<OperatorTablesFile> {
  const base = join(shared, 'traces', 'aiconfigurator-ops', src.dir);
  const pq = (name: string) => `read_parquet('${join(base, `${name}.parquet`).replaceAll("'", "''")}')`;
  const device = (await rows<{ device: string }>(con, `SELECT DISTINCT device FROM ${pq('gemm_perf')}`))[0]!.device;

  // GEMMs.
  const dtypes: Dtype[] = [];
  const grids = new Map<Dtype, GemmGrid>();
  const gemmNotes: string[] = [];
  for (const [dt, name] of [['bfloat16', 'bfloat16'], ['fp8', 'fp8']] as const) {
    const from = dt === 'fp8' && src.fp8GemmFrom ? src.fp8GemmFrom : src.dir;
    const table = `read_parquet('${join(shared, 'traces', 'aiconfigurator-ops', from, 'gemm_perf.parquet').replaceAll("'", "''")}')`;
    if (from !== src.dir) {
      gemmNotes.push(`FP8 GEMMs come from ${from}: this directory's FP8 GEMMs are slower than its bf16 GEMMs for m ≥ 512 (a kernel no deployment would pick), the sibling's are 1.6× faster than bf16 on the same GPU.`);
    }
    const raw = await rows<{ m: number; n: number; k: number; latency: number }>(
      con,
      `SELECT m::DOUBLE m, n::DOUBLE n, k::DOUBLE k, median(latency) latency FROM ${table} WHERE gemm_dtype = '${name}' GROUP BY ALL`,
    );
    if (raw.length === 0) continue;
    dtypes.push(dt);
    grids.set(dt, GemmGrid.build(raw));
  }
  const someGrid = grids.get('bfloat16')!;
  const tokens = [...someGrid.ms];
  for (let m = tokens[tokens.length - 1]! * 2; m <= 65536; m *= 2) tokens.push(m);
  const vidur = readVidurElementwise(join(shared, 'traces', 'vidur-profiling', 'compute', src.vidurGpu, 'meta-llama', 'Llama-2-70b-hf', 'mlp.csv'));

  const gemm: OperatorTablesFile['gemm'] = {};
  const attnCombos = new Set<string>();
  for (const name of ARCHITECTURE_NAMES) {
    const arch = loadArchitecture(name);
    for (const tp of TPS) {
      if (arch.attentionHeads % tp !== 0 || arch.intermediateSize % tp !== 0) continue;
      const { heads, kvHeads } = headsPerGpu(arch, tp);
      attnCombos.add(attnKey(heads, kvHeads));
      for (const dt of dtypes) {
        const g = grids.get(dt)!;
        const shapes = layerGemms(arch, tp);
        const head = lmHeadGemm(arch, tp);
        const bf16 = grids.get('bfloat16')!;
        const layer: number[] = [];
        const lm: number[] = [];
        const misc: number[] = [];
        for (const m of tokens) {
          const v = shapes.reduce((s, sh) => s + g.latencyMs(m, sh.n, sh.k), 0);
          layer.push(Math.max(v, layer.length ? layer[layer.length - 1]! : 0));
          // The LM head stays in 16 bit in FP8 checkpoints.
          const h = bf16.latencyMs(m, head.n, head.k);
          lm.push(Math.max(h, lm.length ? lm[lm.length - 1]! : 0));
          misc.push(elementwiseMs(vidur, arch, tp, m));
        }
        gemm[gemmKey(name, tp, dt)] = { layerGemmMs: layer.map(r4), lmHeadMs: lm.map(r4), layerElementwiseMs: misc.map(r4) };
      }
    }
  }

  // Attention (bf16 activations, bf16 KV cache).
  const ctxBatch = ATTN_BATCH_HALF_OCTAVES_CTX.map((k) => 2 ** (k / 2));
  const genBatch = ATTN_BATCH_HALF_OCTAVES_GEN.map((k) => 2 ** (k / 2));
  const lens = ATTN_LEN_HALF_OCTAVES.map((k) => 2 ** (k / 2));
  const contextAttention: OperatorTablesFile['contextAttention']['tables'] = {};
  const generationAttention: OperatorTablesFile['generationAttention']['tables'] = {};
  const notes: string[] = [];
  for (const key of [...attnCombos].sort()) {
    const [h, kv] = key.split('x').map(Number) as [number, number];
    const ctx = await rows<{ b: number; s: number; ms: number }>(
      con,
      `SELECT batch_size::DOUBLE b, isl::DOUBLE s, median(latency) ms FROM ${pq('context_attention_perf')}
       WHERE num_heads = ${h} AND num_key_value_heads = ${kv} AND attn_dtype = 'bfloat16' AND kv_cache_dtype = 'bfloat16' GROUP BY ALL`,
    );
    const gen = await rows<{ b: number; s: number; ms: number }>(
      con,
      `SELECT batch_size::DOUBLE b, (isl + step)::DOUBLE s, median(latency) ms FROM ${pq('generation_attention_perf')}
       WHERE num_heads = ${h} AND num_key_value_heads = ${kv} AND attn_dtype = 'bfloat16' AND kv_cache_dtype = 'bfloat16' GROUP BY ALL`,
    );
    if (ctx.length === 0 || gen.length === 0) throw new Error(`${src.dir}: no attention measurements for ${h} heads / ${kv} KV heads`);
    const c = attentionGrid(ctx, ctxBatch, lens, 2);
    const gq = attentionGrid(gen, genBatch, lens, 1);
    contextAttention[key] = c.grid;
    generationAttention[key] = gq.grid;
    for (const d of c.dropped) notes.push(`context attention ${key}: dropped outlier ${d}`);
    for (const d of gq.dropped) notes.push(`generation attention ${key}: dropped outlier ${d}`);
  }

  // All-reduce.
  const ar = await rows<{ g: number; backend: string; e: number; ms: number }>(
    con,
    `SELECT num_gpus::DOUBLE g, backend, message_size::DOUBLE e, median(latency) ms FROM ${pq('custom_allreduce_perf')}
     WHERE allreduce_dtype = 'bfloat16' GROUP BY ALL ORDER BY g, backend, e`,
  );
  const allReduce: OperatorTablesFile['allReduce'] = {};
  for (const g of [2, 4, 8]) {
    const pick = (suffix: string) => ar.filter((r) => r.g === g && r.backend.endsWith(suffix));
    const graph = pick('graph');
    const eager = pick('eager');
    if (graph.length === 0 || eager.length === 0) throw new Error(`${src.dir}: no all-reduce rows for ${g} GPUs`);
    const mono = (xs: number[]) => xs.map((v, i) => Math.max(v, ...xs.slice(0, i)));
    allReduce[String(g)] = {
      elements: graph.map((r) => r.e),
      graphMs: mono(graph.map((r) => r.ms)).map(r4),
      eagerMs: mono(eager.map((r) => r.ms)).map(r4),
    };
  }

  return {
    schema: 'switchyard-operator-tables-v1',
    name: `${src.gpu}-${src.engine}-${src.engineVersion}`,
    gpu: src.gpu,
    device,
    engine: src.engine,
    engineVersion: src.engineVersion,
    source: {
      dataset: 'NVIDIA AIConfigurator per-operator GPU latency database',
      repository: 'https://github.com/ai-dynamo/aiconfigurator',
      commit: '095f58a51c4ca8e61b66ec108d86f223f8d559ce',
      paths: [`aic-core/src/aiconfigurator_core/systems/data/${src.gpu}/{gemm,attention,comm}/${src.engine}/${src.engineVersion}/`],
      localPath: `../shared/traces/aiconfigurator-ops/${src.dir}/`,
      license: 'Apache-2.0',
      elementwise: `Vidur (microsoft/vidur @ 7d47513363ec447a741ac5e47241580b47724fbf, MIT): data/profiling/compute/${src.vidurGpu}/meta-llama/Llama-2-70b-hf/mlp.csv, TP 1, median`,
    },
    notes: [
      'Times are ms per call of one operator on one GPU; GEMM, elementwise and attention entries are per transformer layer.',
      'GEMM: per-layer sum of QKV, O, gate+up and down at token count m (trilinear interpolation on the measured (m, n, k) grid; proportional beyond it). lmHeadMs is the bf16 LM-head GEMM at m sampled sequences.',
      'Elementwise: 2 RMSNorm + 2 residual add + RoPE + SiLU·mul, Vidur-measured on the same GPU, rescaled by elements processed.',
      'Attention: bf16 activations and KV cache; grid axes are 2^(k/2) for the listed k; cells are ms per layer.',
      'All-reduce: message size in elements (bf16), per call; two calls per layer at TP > 1.',
      ...gemmNotes,
      ...notes,
    ],
    tokens,
    gemm,
    contextAttention: { batchHalfOctaves: [...ATTN_BATCH_HALF_OCTAVES_CTX], lenHalfOctaves: [...ATTN_LEN_HALF_OCTAVES], tables: contextAttention },
    generationAttention: { batchHalfOctaves: [...ATTN_BATCH_HALF_OCTAVES_GEN], lenHalfOctaves: [...ATTN_LEN_HALF_OCTAVES], tables: generationAttention },
    allReduce,
  };
}

/** Cross-check data: Vidur GEMM and all-reduce measurements beside ours, and SplitwiseSim rows. */
async function buildCrossCheck(con: DuckDBConnection, shared: string): Promise<CrossCheckFile> {
  const gemmRows: CrossCheckFile['vidurGemm'] = [];
  const arRows: CrossCheckFile['vidurAllReduce'] = [];
  const arch = loadArchitecture('llama-2-70b');
  for (const gpu of ['h100', 'a100'] as const) {
    const src = SOURCES.find((s) => s.vidurGpu === gpu && s.engine === 'vllm')!;
    const base = join(shared, 'traces', 'aiconfigurator-ops', src.dir);
    const raw = await rows<{ m: number; n: number; k: number; latency: number }>(
      con,
      `SELECT m::DOUBLE m, n::DOUBLE n, k::DOUBLE k, median(latency) latency FROM read_parquet('${join(base, 'gemm_perf.parquet')}') WHERE gemm_dtype = 'bfloat16' GROUP BY ALL`,
    );
    const grid = GemmGrid.build(raw);
    const csv = readFileSync(join(shared, 'traces', 'vidur-profiling', 'compute', gpu, 'meta-llama', 'Llama-2-70b-hf', 'mlp.csv'), 'utf8').trim().split('\n');
    const header = csv[0]!.split(',');
    const ci = (n: string) => header.indexOf(n);
    const ops: [string, string][] = [['qkv', 'attn_pre_proj'], ['o', 'attn_post_proj'], ['gate_up', 'mlp_up_proj'], ['down', 'mlp_down_proj']];
    const wanted = new Set([1, 8, 32, 128, 512, 1024, 2048, 4096]);
    const seen = new Set<string>();
    for (const line of csv.slice(1)) {
      const c = line.split(',');
      const tok = Number(c[ci('num_tokens')]);
      const tp = Number(c[ci('num_tensor_parallel_workers')]);
      if (!wanted.has(tok) || seen.has(`${tok}/${tp}`)) continue;
      seen.add(`${tok}/${tp}`);
      const shapes = layerGemms(arch, tp);
      for (const [op, col] of ops) {
        const sh = shapes.find((s) => s.op === op)!;
        gemmRows.push({ gpu, tp, tokens: tok, op, vidurMs: r4(Number(c[ci(`time_stats.${col}.median`)])), aiconfiguratorMs: r4(grid.latencyMs(tok, sh.n, sh.k)) });
      }
    }
    const arCsv = readFileSync(join(shared, 'traces', 'vidur-profiling', 'network', `${gpu}_dgx`, 'all_reduce.csv'), 'utf8').trim().split('\n');
    const ah = arCsv[0]!.split(',');
    const ai = (n: string) => ah.indexOf(n);
    const aic = await rows<{ g: number; e: number; ms: number }>(
      con,
      `SELECT num_gpus::DOUBLE g, message_size::DOUBLE e, median(latency) ms FROM read_parquet('${join(base, 'custom_allreduce_perf.parquet')}') WHERE backend LIKE '%graph' GROUP BY ALL ORDER BY g, e`,
    );
    for (const line of arCsv.slice(1)) {
      const c = line.split(',');
      // Vidur's sizes are bytes of fp16 (bus bandwidth is plausible only that way: 67 MB in 0.318 ms on
      // 4 H100s is 316 GB/s), AIConfigurator's are elements; compare at the same number of elements.
      const size = Number(c[ai('size')]) / 2;
      const g = Number(c[ai('num_workers')]);
      // One node, all workers on it (the DGX rows; A100 also has split-node rows).
      if (Number(c[ai('devices_per_node')]) !== g) continue;
      if (Math.log2(size) % 1 !== 0 || size < 2 ** 14 || size > 2 ** 28) continue;
      const pts = aic.filter((r) => r.g === g);
      if (pts.length === 0) continue;
      arRows.push({
        gpu,
        gpus: g,
        elements: size,
        vidurMs: r4(Number(c[ai('time_stats.all_reduce.median')])),
        aiconfiguratorMs: r4(interpLogLog(pts.map((p) => p.e), pts.map((p) => p.ms), size, 1)),
      });
    }
  }
  // SplitwiseSim: median of the repeated measurements per configuration, Llama-2-70B only.
  const sw = readFileSync(join(shared, 'traces', 'splitwise-perf-model', 'perf_model.csv'), 'utf8').trim().split('\n');
  const sh = sw[0]!.split(',');
  const si = (n: string) => sh.indexOf(n);
  const groups = new Map<string, { hw: string; tp: number; p: number; b: number; t: number; pt: number[]; tt: number[] }>();
  for (const line of sw.slice(1)) {
    const c = line.split(',');
    if (c[si('model')] !== 'llama2-70b' || !['h100-80gb', 'a100-80gb'].includes(c[si('hardware')]!)) continue;
    const key = [c[si('hardware')], c[si('tensor_parallel')], c[si('prompt_size')], c[si('batch_size')], c[si('token_size')]].join('/');
    let g = groups.get(key);
    if (!g) {
      g = { hw: c[si('hardware')]!, tp: Number(c[si('tensor_parallel')]), p: Number(c[si('prompt_size')]), b: Number(c[si('batch_size')]), t: Number(c[si('token_size')]), pt: [], tt: [] };
      groups.set(key, g);
    }
    g.pt.push(Number(c[si('prompt_time')]));
    g.tt.push(Number(c[si('token_time')]));
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const splitwise = [...groups.values()].map((g) => ({
    hardware: g.hw,
    tp: g.tp,
    promptTokens: g.p,
    batch: g.b,
    outputTokens: g.t,
    promptMs: r4(median(g.pt)),
    tokenMs: r4(median(g.tt)),
  }));
  return {
    schema: 'switchyard-operator-crosscheck-v1',
    sources: {
      vidur: 'microsoft/vidur @ 7d47513363ec447a741ac5e47241580b47724fbf (MIT): data/profiling/compute/{h100,a100}/meta-llama/Llama-2-70b-hf/mlp.csv, data/profiling/network/{h100,a100}_dgx/all_reduce.csv (median column)',
      splitwise: 'Mutinifni/splitwise-sim @ 8f99e7dc9b407f4ce2488d03dd44c0b8b946dab0 (MIT): data/perf_model.csv, llama2-70b on a100-80gb / h100-80gb, median of repeated rows',
      aiconfigurator: 'ai-dynamo/aiconfigurator @ 095f58a51c4ca8e61b66ec108d86f223f8d559ce (Apache-2.0): vLLM 0.14.0 bf16 GEMM and CUDA-graph all-reduce tables',
    },
    vidurGemm: gemmRows,
    vidurAllReduce: arRows,
    splitwise,
  };
}

/** Copy the closed-loop silicon rows the validation replays (dense models on H100) with their provenance. */
async function buildSiliconRows(con: DuckDBConnection, shared: string, outDir: string): Promise<number> {
  const csv = join(shared, 'traces', 'aiconfigurator-silicon', 'silicon_sample.csv');
  const out = join(outDir, 'silicon-h100-dense.csv');
  await con.run(
    `COPY (SELECT id, backend, coalesce(backend_version, '') backend_version, model_path, system, coalesce("precision", '') AS "precision",
                 coalesce(gemm_quant_mode, '') gemm_quant_mode, isl, osl, batch_size, tp_size, silicon_ttft_ms, silicon_tpot_ms
          FROM read_csv('${csv}')
          WHERE system = 'h100_sxm' AND mode = 'agg' AND pp_size = 1 AND (
                (model_path = 'Qwen/Qwen3-32B' AND backend = 'vllm' AND backend_version = '0.12.0' AND "precision" IS NULL AND tp_size IN (2, 4, 8))
             OR (model_path = 'Qwen/Qwen3-32B' AND backend = 'sglang' AND backend_version = '0.5.1.post1' AND tp_size IN (2, 4, 8))
             OR (model_path = 'meta-llama/Llama-3.1-70B' AND backend = 'vllm' AND "precision" = 'fp8' AND tp_size IN (2, 4, 8)))
          ORDER BY backend, model_path, tp_size, isl, osl, batch_size) TO '${out}' (HEADER, DELIMITER ',')`,
  );
  const n = readFileSync(out, 'utf8').trim().split('\n').length - 1;
  return n;
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { shared: { type: 'string' } } });
  const shared = resolve(values.shared ?? join(HERE, '..', '..', '..', 'shared'));
  if (!existsSync(join(shared, 'traces', 'aiconfigurator-ops'))) {
    throw new Error(`${shared}/traces/aiconfigurator-ops not found: pass --shared <dir containing traces/>`);
  }
  const inst = await DuckDBInstance.create(':memory:');
  const con = await inst.connect();
  mkdirSync(OPERATOR_TABLES_DIR, { recursive: true });
  for (const src of SOURCES) {
    const t = await buildSource(con, shared, src);
    const file = join(OPERATOR_TABLES_DIR, `${t.name}.json`);
    writeFileSync(file, `${JSON.stringify(t)}\n`);
    process.stdout.write(`${file}: ${Object.keys(t.gemm).length} GEMM configs, ${Object.keys(t.contextAttention.tables).length} attention head layouts\n`);
  }
  const cc = await buildCrossCheck(con, shared);
  writeFileSync(join(OPERATOR_TABLES_DIR, 'cross-check.json'), `${JSON.stringify(cc)}\n`);
  const validationDir = join(HERE, '..', 'engine', 'validation-data');
  mkdirSync(validationDir, { recursive: true });
  const n = await buildSiliconRows(con, shared, validationDir);
  process.stdout.write(`${join(validationDir, 'silicon-h100-dense.csv')}: ${n} rows\n`);
  con.closeSync();
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  await main();
}
