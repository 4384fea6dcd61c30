/**
 * Validation of the engine models against real serving runs: every closed-loop point of
 * AIConfigurator's silicon sample that the operator tables cover (dense models on H100 — vLLM
 * Qwen3-32B, SGLang Qwen3-32B, vLLM Llama-3.1-70B FP8, TP 2/4/8) is replayed on one simulated
 * replica with the benchmark client's protocol, and the simulated mean TTFT and TPOT are compared
 * with the measured ones. The measured rows are committed in `validation-data/` (with their SOURCE
 * note), so this runs without `../shared`.
 *
 * Benchmark protocols (from AIConfigurator's `eval` harness, `src/aiconfigurator/eval/benchmarks/`):
 *  - vLLM points: genai-perf, `--concurrency C --request-count 10C --warmup-request-count 2C
 *    --num-dataset-entries 12C`; the warm-up drains before profiling starts, and perf_analyzer's data
 *    order makes the measured phase's first 2C requests resend the warm-up's prompts
 *    (`ClosedLoopSpec.prompts`), which the server's prefix cache (on by default in vLLM V1; the
 *    rule does not turn it off) serves as hits. Server settings from AIConfigurator's benchmark rule
 *    for vLLM (`generator/rule_plugin/benchmark/vllm.rule`, see {@link vllmBenchmarkServer}).
 *  - SGLang points: SGLang `bench_serving --max-concurrency C --num-prompts 10C`, nothing excluded;
 *    SGLang 0.5 server defaults (chunked_prefill_size 8,192, max_prefill_tokens 16,384, fcfs,
 *    mixed chunking off).
 * Prompts are random (no prefix reuse); output lengths are fixed (ignore_eos).
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ApiServerTerm } from './api-server.ts';
import { calibratedApiServer, calibrationFor, loadCalibration } from './calibration.ts';
import { type ClosedLoopSpec, meanOf, runClosedLoop } from './closed-loop.ts';
import { buildReplica, type ReplicasConfig, ReplicasSchema, resolveReplicas } from './replica-config.ts';

/** Tokens per prompt hash block of the validation replicas (`buildReplica`'s `hashBlockTokens`). */
export const VALIDATION_HASH_BLOCK_TOKENS = 512;

/** Path of the committed silicon rows. */
export const SILICON_ROWS_PATH = join(dirname(fileURLToPath(import.meta.url)), 'validation-data', 'silicon-h100-dense.csv');

/** One measured closed-loop point. Times in ms. */
export interface SiliconRow {
  id: string;
  backend: 'vllm' | 'sglang';
  backendVersion: string;
  modelPath: string;
  precision: string;
  isl: number;
  osl: number;
  concurrency: number;
  tp: number;
  ttftMs: number;
  tpotMs: number;
}

/**
 * Read the committed silicon rows (CSV with a header; quoted empty strings allowed).
 * @throws Error when the file is missing or a row has a bad number (names the row).
 */
export function readSiliconRows(path: string = SILICON_ROWS_PATH): SiliconRow[] {
  const lines = readFileSync(path, 'utf8').trim().split('\n');
  const header = lines[0]!.split(',');
  const col = (n: string) => {
    const i = header.indexOf(n);
    if (i < 0) throw new Error(`${path}: missing column ${n}`);
    return i;
  };
  const c = {
    id: col('id'),
    backend: col('backend'),
    version: col('backend_version'),
    model: col('model_path'),
    precision: col('precision'),
    isl: col('isl'),
    osl: col('osl'),
    bs: col('batch_size'),
    tp: col('tp_size'),
    ttft: col('silicon_ttft_ms'),
    tpot: col('silicon_tpot_ms'),
  };
  return lines.slice(1).map((line, i) => {
    const f = line.split(',').map((x) => x.replace(/^"(.*)"$/, '$1'));
    const num = (k: number, name: string) => {
      const v = Number(f[k]);
      if (!Number.isFinite(v)) throw new Error(`${path}: row ${i + 2}: ${name} is not a number: '${f[k]}'`);
      return v;
    };
    const backend = f[c.backend];
    if (backend !== 'vllm' && backend !== 'sglang') throw new Error(`${path}: row ${i + 2}: unknown backend '${backend}'`);
    return {
      id: f[c.id]!,
      backend,
      backendVersion: f[c.version]!,
      modelPath: f[c.model]!,
      precision: f[c.precision]!,
      isl: num(c.isl, 'isl'),
      osl: num(c.osl, 'osl'),
      concurrency: num(c.bs, 'batch_size'),
      tp: num(c.tp, 'tp_size'),
      ttftMs: num(c.ttft, 'silicon_ttft_ms'),
      tpotMs: num(c.tpot, 'silicon_tpot_ms'),
    };
  });
}

/** A family of validation groups: engine × model × precision (one group per TP). */
export interface ValidationFamily {
  key: string;
  label: string;
  engine: 'vllm' | 'sglang';
  model: 'qwen3-32b' | 'llama-3.1-70b';
  dtype: 'bfloat16' | 'fp8';
  matches(r: SiliconRow): boolean;
  /** What the measured runs used vs the operator tables. */
  versionNote: string;
  /**
   * Benchmark client: `genai-perf` (drained warm-up, measured phase opens with a burst of C),
   * `bench-serving` (SGLang's, C clients from t = 0, every request measured) or `staggered`
   * (clients started in `startCohorts` cohorts spread over one lone request's latency, warm-up
   * continued: assumed for rows without harness provenance whose TTFT is one prefill at low C;
   * the cohort count is fitted on the family's fit half, `validation-fit.ts`).
   */
  protocol: 'genai-perf' | 'bench-serving' | 'staggered';
}

/** The covered families (see the module doc). */
export const VALIDATION_FAMILIES: readonly ValidationFamily[] = [
  {
    key: 'vllm-qwen3-32b',
    label: 'H100 vLLM Qwen3-32B',
    engine: 'vllm',
    model: 'qwen3-32b',
    dtype: 'bfloat16',
    matches: (r) => r.backend === 'vllm' && r.modelPath === 'Qwen/Qwen3-32B' && r.precision === '',
    versionNote: 'measured on vLLM 0.12.0; operator tables from vLLM 0.14.0',
    protocol: 'genai-perf',
  },
  {
    key: 'sglang-qwen3-32b',
    label: 'H100 SGLang Qwen3-32B',
    engine: 'sglang',
    model: 'qwen3-32b',
    dtype: 'bfloat16',
    matches: (r) => r.backend === 'sglang' && r.modelPath === 'Qwen/Qwen3-32B',
    versionNote: 'measured on SGLang 0.5.1.post1; operator tables from SGLang 0.5.9',
    protocol: 'bench-serving',
  },
  {
    key: 'vllm-llama-3.1-70b-fp8',
    label: 'H100 vLLM Llama-3.1-70B FP8',
    engine: 'vllm',
    model: 'llama-3.1-70b',
    dtype: 'fp8',
    matches: (r) => r.backend === 'vllm' && r.modelPath === 'meta-llama/Llama-3.1-70B' && r.precision === 'fp8',
    versionNote: 'measured vLLM version not recorded (measured 2025-10-29); operator tables from vLLM 0.14.0, FP8 GEMMs from SGLang 0.5.9 (see operator-tables notes)',
    protocol: 'staggered',
  },
];

/**
 * The fitted constants of one group (see `calibration.ts`): step-time overheads, the elementwise
 * fusion fraction and the API-server terms (ms).
 */
export interface GroupConstants {
  stepOverheadMs: number;
  perSequenceOverheadMs: number;
  elementwiseScale: number;
  /** Fraction of eager elementwise time paid by steps outside a CUDA graph (prefill). Default 1. */
  eagerElementwiseScale?: number;
  apiServer: ApiServerTerm;
  /**
   * Client cohorts of the `staggered` protocol (`ClosedLoopSpec.startCohorts`); ignored by the
   * others. Default: the committed client calibration of the family, else one per client.
   */
  startCohorts?: number;
}

/** The committed constants of a family's TP group (group entry, else the engine-level one). */
export function committedConstants(fam: ValidationFamily, tp: number): GroupConstants {
  const c = calibrationFor(fam.engine, fam.model, fam.dtype, tp);
  const clients = loadCalibration().clients[fam.key];
  return {
    stepOverheadMs: c.stepOverheadMs,
    perSequenceOverheadMs: c.perSequenceOverheadMs,
    elementwiseScale: c.elementwiseScale,
    eagerElementwiseScale: c.eagerElementwiseScale,
    apiServer: calibratedApiServer(c),
    ...(clients && { startCohorts: clients.startCohorts }),
  };
}

/**
 * vLLM server settings of a measured point, by AIConfigurator's benchmark rule for vLLM
 * (`src/aiconfigurator/generator/rule_plugin/benchmark/vllm.rule` of github.com/ai-dynamo/aiconfigurator:
 * `agg max_num_tokens = max_batch_size + isl + 1500`, `agg max_seq_len = isl + osl + 1500`), with
 * `max_batch_size` the point's batch size (= the client concurrency C, the silicon sample's
 * `batch_size` column): `max_num_seqs` C, `max_num_batched_tokens` C + isl + 1,500, `max_model_len`
 * isl + osl + 1,500. (The serving rule `rule_plugin/vllm.rule` raises the batch size to ≥ 512 for
 * aggregated decode; the benchmark rule does not.)
 */
export function vllmBenchmarkServer(r: Pick<SiliconRow, 'concurrency' | 'isl' | 'osl'>): { max_num_seqs: number; max_num_batched_tokens: number; max_model_len: number } {
  return { max_num_seqs: r.concurrency, max_num_batched_tokens: r.concurrency + r.isl + 1500, max_model_len: r.isl + r.osl + 1500 };
}

/**
 * The simulated replica and client for one measured point, with the group's constants (default:
 * the committed calibration).
 */
export function pointSetup(fam: ValidationFamily, r: SiliconRow, k: GroupConstants = committedConstants(fam, r.tp)): { replicas: ReplicasConfig; client: ClosedLoopSpec } {
  const common = {
    count: 1,
    engine: fam.engine,
    gpu: 'h100_sxm',
    model: fam.model,
    tp: r.tp,
    dtype: fam.dtype,
    step_overhead_ms: k.stepOverheadMs,
    per_sequence_overhead_ms: k.perSequenceOverheadMs,
    elementwise_scale: k.elementwiseScale,
    eager_elementwise_scale: k.eagerElementwiseScale ?? 1,
  };
  const c = r.concurrency;
  const io = { concurrency: c, inputTokens: r.isl, outputTokens: r.osl, apiServer: k.apiServer };
  // vLLM V1's default prefix cache (AIConfigurator's vLLM CLI template passes --no-enable-prefix-caching
  // only for `disable_prefix_cache`, which its benchmark rule never sets). With random prompts it
  // matters where a preempted request's blocks stay cached for its readmission.
  const vllmServer = { ...common, ...vllmBenchmarkServer(r), enable_prefix_caching: true };
  if (fam.protocol === 'genai-perf') {
    // perf_analyzer's data order: each client's first measured requests resend its warm-up prompts.
    return {
      replicas: ReplicasSchema.parse(vllmServer),
      client: { ...io, warmupRequests: 2 * c, measuredRequests: 10 * c, drainWarmup: true, prompts: { blockTokens: VALIDATION_HASH_BLOCK_TOKENS, reuse: 'per-client-phase' } },
    };
  }
  if (fam.protocol === 'staggered') {
    const replicas = ReplicasSchema.parse(vllmServer);
    // Clients start in cohorts spread over one lone request's latency; a cohort's members send together.
    const lone = runClosedLoop(buildReplica(resolveReplicas(replicas), VALIDATION_HASH_BLOCK_TOKENS, { coalesceDecodeSteps: true }), { ...io, concurrency: 1, warmupRequests: 0, measuredRequests: 1 });
    const cohorts = k.startCohorts !== undefined ? { startCohorts: k.startCohorts } : {};
    return { replicas, client: { ...io, warmupRequests: 2 * c, measuredRequests: 10 * c, startSpreadMs: lone.durationMs, ...cohorts } };
  }
  return { replicas: ReplicasSchema.parse({ ...common, engine_profile: 'sglang-0.4' }), client: { ...io, warmupRequests: 0, measuredRequests: 10 * c } };
}

/**
 * The seeded half of each group's points the constants are fitted on (the rest is held out):
 * within each family × TP group, points ordered by an FNV-1a hash of `seed/id`, the first ⌈n/2⌉.
 * @returns the ids of the fit half.
 */
export function fitHalf(rows: readonly SiliconRow[], seed = 'validation-split-1'): Set<string> {
  const hash = (s: string): number => {
    let h = 0x811c9dc5;
    for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193) >>> 0;
    return h;
  };
  const out = new Set<string>();
  for (const fam of VALIDATION_FAMILIES) {
    for (const tp of [1, 2, 4, 8]) {
      const g = rows.filter((r) => fam.matches(r) && r.tp === tp).sort((a, b) => hash(`${seed}/${a.id}`) - hash(`${seed}/${b.id}`) || (a.id < b.id ? -1 : 1));
      for (const r of g.slice(0, Math.ceil(g.length / 2))) out.add(r.id);
    }
  }
  return out;
}

/** Result of one point. Errors are signed percentages: 100 × (simulated − measured) / measured. */
export interface PointResult {
  family: string;
  group: string;
  row: SiliconRow;
  simTtftMs: number;
  simTpotMs: number;
  ttftErrPct: number;
  tpotErrPct: number;
  steps: number;
  wallMs: number;
  /** Whether the point is in its group's fit half or held out (`fitHalf`); `all` when no split was given. */
  half: 'fit' | 'held-out' | 'all';
}

/** Summary of one group (family × TP). Absolute errors in percent. */
export interface GroupSummary {
  family: string;
  label: string;
  tp: number;
  group: string;
  points: number;
  ttftMeanAbsPct: number;
  ttftMedianAbsPct: number;
  ttftP90AbsPct: number;
  ttftBiasPct: number;
  tpotMeanAbsPct: number;
  tpotMedianAbsPct: number;
  tpotP90AbsPct: number;
  tpotBiasPct: number;
  /** Median targets met (TTFT and TPOT ≤ `TARGET_MEDIAN_ABS_PCT`). */
  meetsTarget: boolean;
  simulatedSteps: number;
  wallMs: number;
}

/** Target of every group's median |error| of TTFT and of TPOT on its held-out half, percent. */
export const TARGET_MEDIAN_ABS_PCT = 10;

/** Quantile (0..1) of finite values by nearest rank on the sorted array; NaN when empty. */
export function quantile(xs: readonly number[], q: number): number {
  const s = xs.filter(Number.isFinite).sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))]!;
}

/** Median by the usual definition (mean of the two middle values for an even count). */
export function median(xs: readonly number[]): number {
  const s = xs.filter(Number.isFinite).sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/**
 * Simulate one point.
 * @throws Error when the replica cannot be built or the closed loop fails (names the point).
 */
export function simulatePoint(
  fam: ValidationFamily,
  r: SiliconRow,
  constants?: GroupConstants,
  opts: { coalesce?: boolean; half?: PointResult['half'] } = {},
): PointResult {
  const t0 = performance.now();
  const { replicas, client } = pointSetup(fam, r, constants);
  let res;
  // Coalesced decode runs are exact (the closed loop calls interrupt before every arrival).
  const replica = buildReplica(resolveReplicas(replicas), VALIDATION_HASH_BLOCK_TOKENS, { coalesceDecodeSteps: opts.coalesce ?? true });
  try {
    res = runClosedLoop(replica, client);
  } catch (e) {
    throw new Error(`${r.id}: ${(e as Error).message}`);
  }
  const simTtftMs = meanOf(res.ttftMs);
  const simTpotMs = meanOf(res.tpotMs);
  return {
    family: fam.key,
    group: `${fam.key}/tp${r.tp}`,
    row: r,
    simTtftMs,
    simTpotMs,
    ttftErrPct: (100 * (simTtftMs - r.ttftMs)) / r.ttftMs,
    tpotErrPct: (100 * (simTpotMs - r.tpotMs)) / r.tpotMs,
    steps: (replica as unknown as { steps: number }).steps,
    wallMs: performance.now() - t0,
    half: opts.half ?? 'all',
  };
}

/** Summaries per group, in family then TP order. */
export function summarize(points: readonly PointResult[]): GroupSummary[] {
  const out: GroupSummary[] = [];
  for (const fam of VALIDATION_FAMILIES) {
    for (const tp of [1, 2, 4, 8]) {
      const ps = points.filter((p) => p.family === fam.key && p.row.tp === tp);
      if (ps.length === 0) continue;
      const at = ps.map((p) => Math.abs(p.ttftErrPct));
      const ap = ps.map((p) => Math.abs(p.tpotErrPct));
      const mean = (xs: number[]) => xs.reduce((s, x) => s + x, 0) / xs.length;
      const s: GroupSummary = {
        family: fam.key,
        label: fam.label,
        tp,
        group: `${fam.key}/tp${tp}`,
        points: ps.length,
        ttftMeanAbsPct: mean(at),
        ttftMedianAbsPct: median(at),
        ttftP90AbsPct: quantile(at, 0.9),
        ttftBiasPct: mean(ps.map((p) => p.ttftErrPct)),
        tpotMeanAbsPct: mean(ap),
        tpotMedianAbsPct: median(ap),
        tpotP90AbsPct: quantile(ap, 0.9),
        tpotBiasPct: mean(ps.map((p) => p.tpotErrPct)),
        meetsTarget: false,
        simulatedSteps: ps.reduce((s2, p) => s2 + p.steps, 0),
        wallMs: ps.reduce((s2, p) => s2 + p.wallMs, 0),
      };
      s.meetsTarget = s.tpotMedianAbsPct <= TARGET_MEDIAN_ABS_PCT && s.ttftMedianAbsPct <= TARGET_MEDIAN_ABS_PCT;
      out.push(s);
    }
  }
  return out;
}

/** Options of {@link runValidation}. */
export interface ValidationOptions {
  rows?: readonly SiliconRow[];
  /** Only these family keys. Default all. */
  families?: readonly string[];
  /** Constants per family × TP (`${family}/tp${tp}`) instead of the committed calibration. */
  constants?: ReadonlyMap<string, GroupConstants>;
  /** Ids of the fit half: points are labelled fit / held-out. Default: no labels (`all`). */
  fitIds?: ReadonlySet<string>;
  onPoint?: (p: PointResult, done: number, total: number) => void;
}

/** Simulate every covered point; returns per-point results (family, TP, isl, osl, C order). */
export function runValidation(opts: ValidationOptions = {}): PointResult[] {
  const rows = opts.rows ?? readSiliconRows();
  const jobs: [ValidationFamily, SiliconRow][] = [];
  for (const fam of VALIDATION_FAMILIES) {
    if (opts.families && !opts.families.includes(fam.key)) continue;
    for (const r of rows) if (fam.matches(r)) jobs.push([fam, r]);
  }
  const out: PointResult[] = [];
  for (const [fam, r] of jobs) {
    const half = opts.fitIds === undefined ? 'all' : opts.fitIds.has(r.id) ? 'fit' : 'held-out';
    const p = simulatePoint(fam, r, opts.constants?.get(`${fam.key}/tp${r.tp}`), { half });
    out.push(p);
    opts.onPoint?.(p, out.length, jobs.length);
  }
  return out;
}
