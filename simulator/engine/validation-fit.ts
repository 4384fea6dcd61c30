/**
 * Fitting the constants of one validation group (engine × model × dtype × TP, see
 * `calibration.ts`) on the fit half of its measured points, in two stages by grid search:
 *  1. TPOT: per-step overhead, per-sequence overhead and the elementwise fusion fraction, with no
 *     API-server term — minimising the median |TPOT error| (ties: the mean);
 *  2. TTFT: the API server's per-request and per-prompt-token terms, given stage 1 — and for vLLM
 *     together with them the eager elementwise fraction (what prefill steps, which run outside
 *     CUDA graphs, pay of the tables' elementwise time: vLLM compiles fused kernels for every token
 *     count, SGLang's groups keep 1) — minimising the mean |TTFT error| among the cells whose median
 *     |TTFT error| is within `TTFT_MEDIAN_TOL_PCT` of the lowest, within physical bounds (`API_REQUEST_MS_MAX`, `EAGER_ELEMENTWISE_GRID`). The per-output-token term
 *     stays 0: in closed-loop means it is indistinguishable from the per-step overhead.
 * Each stage runs a coarse grid, then a finer one around the best cell; every constant stays ≥ 0
 * and the fusion fraction in (0, 1].
 *
 * For a family whose benchmark client is not recorded (`staggered` protocol), the client's cohort
 * count is fitted per family (data source) on the fit halves of all its groups together
 * ({@link fitClientCohorts}), given each group's constants.
 */
import { NO_API_SERVER } from './api-server.ts';
import { type GroupConstants, median, type SiliconRow, simulatePoint, type ValidationFamily } from './validation.ts';

/** Result of {@link fitGroupConstants}. Errors in percent, on the fit points. */
export interface GroupFit {
  constants: GroupConstants;
  tpotMedianAbsPct: number;
  ttftMedianAbsPct: number;
  points: number;
}

/** A scored grid cell: its key and the median and mean |error| (percent) over the fit points. */
interface Scored<K> {
  k: K;
  med: number;
  mean: number;
}

/** Score every candidate key by the median and mean of its |errors|. */
function scoreAll<K>(cands: readonly K[], errs: (k: K) => number[]): Scored<K>[] {
  return cands.map((k) => {
    const e = errs(k).map(Math.abs);
    return { k, med: median(e), mean: e.reduce((s, x) => s + x, 0) / e.length };
  });
}

/**
 * The cell of `cells` with the lowest mean |error| among those whose median |error| is within
 * `medianTolPct` percentage points of the lowest median (0: the lowest median, ties: the mean).
 */
function pickCell<K>(cells: readonly Scored<K>[], medianTolPct = 0): Scored<K> {
  const minMed = Math.min(...cells.map((c) => c.med));
  let b: Scored<K> | null = null;
  for (const c of cells) {
    if (c.med > minMed + medianTolPct + 1e-9) continue;
    const better = b === null || (medianTolPct > 0 ? c.mean < b.mean - 1e-9 || (Math.abs(c.mean - b.mean) <= 1e-9 && c.med < b.med - 1e-9) : c.med < b.med - 1e-9 || (Math.abs(c.med - b.med) <= 1e-9 && c.mean < b.mean - 1e-9));
    if (better) b = c;
  }
  return b!;
}

/** Grid search minimising the median |error| (ties: the mean) over candidate keys. */
function gridMin<K>(cands: readonly K[], errs: (k: K) => number[], best: Scored<K> | null): Scored<K> {
  return pickCell([...(best ? [best] : []), ...scoreAll(cands, errs)]);
}

/**
 * TTFT stage tolerance on the median |error|, percentage points: among the cells whose median is
 * within it of the lowest, the one with the lowest mean |error| is taken. With 7–15 fit points
 * the median jumps by several points between neighbouring cells (a few ms of API delay shifts
 * which closed-loop clients collide in a prefill), so the lowest median alone picks an isolated
 * cell that suits only the points near the middle of the error ranking.
 */
export const TTFT_MEDIAN_TOL_PCT = 1;

const r4 = (x: number) => Number(x.toFixed(4));

/**
 * Upper bounds of the API-server grid, ms: per request 20, per prompt token 0.005 (5 µs — a fast
 * tokenizer spends ~1 µs per token). They keep the term physical; without them the TTFT fit
 * would absorb scheduling errors into a large constant.
 */
export const API_REQUEST_MS_MAX = 20;

/**
 * Candidate eager elementwise fractions of a vLLM group (stage 2). The floor of 0.4 keeps it
 * physical: at prefill sizes the ops are bandwidth-bound, and fusing each layer's residual add +
 * RMSNorm (+ FP8 quantisation) pairs and SiLU × mul into single kernels removes the intermediate
 * writes and re-reads but still reads every input and writes every output once, about 40 % of the
 * unfused chain's activation traffic (Vidur's eager op list: two norms, two adds, rotary, SiLU, mul).
 */
export const EAGER_ELEMENTWISE_GRID: readonly number[] = [1, 0.85, 0.7, 0.55, 0.4];

/**
 * Fit one group's constants on `rows` (the group's fit half).
 * @throws Error when `rows` is empty or a point fails to simulate.
 */
export function fitGroupConstants(fam: ValidationFamily, rows: readonly SiliconRow[], startCohorts?: number): GroupFit {
  if (rows.length === 0) throw new Error(`fitGroupConstants: no fit points for ${fam.key}`);
  type S = [number, number, number];
  const client = startCohorts !== undefined ? { startCohorts } : {};
  const stepConsts = (k: S): GroupConstants => ({ stepOverheadMs: k[0], perSequenceOverheadMs: k[1], elementwiseScale: k[2], apiServer: NO_API_SERVER, ...client });
  const tpotErrs = (k: S) => rows.map((r) => simulatePoint(fam, r, stepConsts(k)).tpotErrPct);
  const coarse: S[] = [];
  for (const a of [0, 0.5, 1, 2, 3]) for (const b of [0, 0.01, 0.02, 0.035, 0.05]) for (const e of [1, 0.7, 0.4, 0.2]) coarse.push([a, b, e]);
  let s1 = gridMin(coarse, tpotErrs, null);
  const fine: S[] = [];
  for (const da of [-0.25, 0, 0.25]) for (const db of [-0.005, 0, 0.005]) for (const de of [-0.1, 0, 0.1]) {
    const k: S = [r4(s1.k[0] + da), r4(s1.k[1] + db), r4(s1.k[2] + de)];
    if (k[0] >= 0 && k[1] >= 0 && k[2] > 0 && k[2] <= 1) fine.push(k);
  }
  s1 = gridMin(fine, tpotErrs, s1);
  type A = [number, number, number];
  const allConsts = (k: A): GroupConstants => ({ ...stepConsts(s1.k), eagerElementwiseScale: k[2], apiServer: { requestMs: k[0], perPromptTokenMs: k[1], perOutputTokenMs: 0 } });
  const ttftErrs = (k: A) => rows.map((r) => simulatePoint(fam, r, allConsts(k)).ttftErrPct);
  const eagerGrid = fam.engine === 'vllm' ? EAGER_ELEMENTWISE_GRID : [1];
  const coarseA: A[] = [];
  for (const e of eagerGrid) for (const a of [0, 5, 10, 15, 20]) for (const b of [0, 0.001, 0.002, 0.003, 0.004, 0.005]) coarseA.push([a, b, e]);
  const cellsA = scoreAll(coarseA, ttftErrs);
  let s2 = pickCell(cellsA, TTFT_MEDIAN_TOL_PCT);
  const fineA: A[] = [];
  for (const da of [-2.5, 0, 2.5]) {
    const k: A = [r4(s2.k[0] + da), s2.k[1], s2.k[2]];
    if (k[0] >= 0 && k[0] <= API_REQUEST_MS_MAX) fineA.push(k);
  }
  cellsA.push(...scoreAll(fineA.filter((k) => !cellsA.some((c) => c.k.every((x, i) => x === k[i]))), ttftErrs));
  s2 = pickCell(cellsA, TTFT_MEDIAN_TOL_PCT);
  return { constants: allConsts(s2.k), tpotMedianAbsPct: s1.med, ttftMedianAbsPct: s2.med, points: rows.length };
}

/** Candidate cohort counts of {@link fitClientCohorts}; 64 (≥ every C in the data) is one cohort per client. */
export const CLIENT_COHORT_GRID: readonly number[] = [2, 3, 4, 6, 8, 10, 12, 16, 24, 32, 64];

/**
 * Fit the client cohort count of a `staggered` family on the fit points of all its groups
 * together: the count in {@link CLIENT_COHORT_GRID} minimising the median |TTFT error| (ties: the
 * mean), each point simulated with its group's constants in `constantsByTp`.
 * @returns the count and the fit points' median |TTFT error| (percent).
 * @throws Error when `rows` is empty or a point's TP has no constants.
 */
export function fitClientCohorts(fam: ValidationFamily, rows: readonly SiliconRow[], constantsByTp: ReadonlyMap<number, GroupConstants>): { startCohorts: number; ttftMedianAbsPct: number; points: number } {
  if (rows.length === 0) throw new Error(`fitClientCohorts: no fit points for ${fam.key}`);
  const errs = (g: number) =>
    rows.map((r) => {
      const k = constantsByTp.get(r.tp);
      if (!k) throw new Error(`fitClientCohorts: no constants for ${fam.key}/tp${r.tp}`);
      return simulatePoint(fam, r, { ...k, startCohorts: g }).ttftErrPct;
    });
  const b = gridMin(CLIENT_COHORT_GRID, errs, null);
  return { startCohorts: b.k, ttftMedianAbsPct: b.med, points: rows.length };
}
