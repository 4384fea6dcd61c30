/**
 * Latest-safe hedging (RouteWise paper §5): when to send one backup attempt for
 * a request whose primary has not answered yet, and where.
 *
 * With TTFT SLO S, checkpoints t run from 0.25·S to 0.90·S every 0.025·S (27 points for the
 * defaults). If the primary p is still silent at t, sending backup b then meets the SLO with
 *
 *   P = [F_p(S) − F_p(t)] / (1 − F_p(t))  +  [(1 − F_p(S)) / (1 − F_p(t))] · F_b(S − t − δ)
 *
 * (the primary answers in (t, S], or it does not and the backup answers within the time left,
 * δ = dispatch overhead). A backup is feasible at t when P ≥ ρ. The plan sends the cheapest
 * feasible backup at the *latest* checkpoint that has one — waiting as long as is safe keeps
 * most requests from ever needing the backup. At most one backup per request.
 *
 * One refinement of the rule: a checkpoint where the primary alone already meets ρ
 * ([F_p(S) − F_p(t)] / (1 − F_p(t)) ≥ ρ) needs no backup — every backup, even one that never
 * answers in time, would count as feasible there and be billed for nothing — so the scan stops
 * with `primary_safe`. If F_p(t) = 1 (the profile says the primary is never still silent at t)
 * the primary term is taken as 0 and P = F_b(S − t − δ).
 *
 * Pure: CDFs come in as `CdfSource`s indexed over a `HedgeGrid`'s query points, so a route's
 * `LatencyProfile` built on `grid.pointsMs` answers directly.
 */

/** Distribution of a route's TTFT evaluated at a `HedgeGrid`'s query points. */
export interface CdfSource {
  /** F at `grid.pointsMs[k]`, in [0, 1]. */
  cdfAt(k: number): number;
  /** Optional fast path: F at every grid point at once (index k = `cdfAt(k)`), valid until the source changes. */
  cdfArray?(): ArrayLike<number>;
}

/**
 * The checkpoint grid t_k = S·(start + k·step) for k = 0 … ⌊(end − start)/step⌋, ms, rounded to
 * 1e-6 ms so fractions like 0.025 land on whole milliseconds (S = 3 s: 750, 825, …, 2,700).
 * @throws RangeError when S ≤ 0, step ≤ 0 or start > end.
 */
export function hedgeCheckpointsMs(sloMs: number, startFraction = 0.25, endFraction = 0.9, stepFraction = 0.025): number[] {
  if (!(sloMs > 0) || !(stepFraction > 0) || !(startFraction <= endFraction)) {
    throw new RangeError(`hedge checkpoints need S > 0, step > 0 and start ≤ end; got S=${sloMs}, start=${startFraction}, end=${endFraction}, step=${stepFraction}`);
  }
  const n = Math.floor((endFraction - startFraction) / stepFraction + 1e-9) + 1;
  const out: number[] = [];
  for (let k = 0; k < n; k++) out.push(Math.round(sloMs * (startFraction + k * stepFraction) * 1e6) / 1e6);
  return out;
}

/**
 * The primary-only term [F_p(S) − F_p(t)] / (1 − F_p(t)): the chance a primary still silent at t
 * answers by S. 0 when F_p(t) ≥ 1.
 */
export function primaryOnlyProbability(primaryCdfAtSlo: number, primaryCdfAtCheckpoint: number): number {
  const surv = 1 - primaryCdfAtCheckpoint;
  if (!(surv > 0)) return 0;
  const p = (primaryCdfAtSlo - primaryCdfAtCheckpoint) / surv;
  return p <= 0 ? 0 : p >= 1 ? 1 : p;
}

/**
 * P = [F_p(S) − F_p(t)]/(1 − F_p(t)) + [(1 − F_p(S))/(1 − F_p(t))]·F_b(S − t − δ), clamped to [0, 1];
 * F_b(S − t − δ) alone when F_p(t) ≥ 1.
 */
export function hedgeSuccessProbability(primaryCdfAtSlo: number, primaryCdfAtCheckpoint: number, backupCdfAtRemaining: number): number {
  const surv = 1 - primaryCdfAtCheckpoint;
  if (!(surv > 0)) return backupCdfAtRemaining <= 0 ? 0 : backupCdfAtRemaining >= 1 ? 1 : backupCdfAtRemaining;
  const p = (primaryCdfAtSlo - primaryCdfAtCheckpoint) / surv + ((1 - primaryCdfAtSlo) / surv) * backupCdfAtRemaining;
  return p <= 0 ? 0 : p >= 1 ? 1 : p;
}

/**
 * The query points hedging needs and where each checkpoint's values sit among them: the
 * checkpoints t_k, S, and S − t_k − δ, sorted and de-duplicated (`pointsMs`).
 */
export class HedgeGrid {
  readonly sloMs: number;
  readonly deltaMs: number;
  /** t_k, ms, increasing. */
  readonly checkpointsMs: readonly number[];
  /** Sorted unique query points, ms: the grid a route's `LatencyProfile` is built on. */
  readonly pointsMs: readonly number[];
  /** Index in `pointsMs` of each t_k. */
  readonly checkpointIndex: Int32Array;
  /** Index in `pointsMs` of each S − t_k − δ. */
  readonly remainingIndex: Int32Array;
  /** Index in `pointsMs` of S. */
  readonly sloIndex: number;

  /**
   * @param sloMs S, ms.
   * @param deltaMs δ, ms (≥ 0).
   * @param checkpointsMs t_k from `hedgeCheckpointsMs`; each must be < S.
   * @throws RangeError when δ < 0 or a checkpoint is not in (0, S).
   */
  constructor(sloMs: number, deltaMs: number, checkpointsMs: readonly number[]) {
    if (!(deltaMs >= 0)) throw new RangeError(`hedge delta must be ≥ 0 ms, got ${deltaMs}`);
    for (const t of checkpointsMs) if (!(t > 0 && t < sloMs)) throw new RangeError(`hedge checkpoint ${t} ms is not inside (0, S=${sloMs})`);
    this.sloMs = sloMs;
    this.deltaMs = deltaMs;
    this.checkpointsMs = [...checkpointsMs];
    const round = (x: number) => Math.round(x * 1e6) / 1e6;
    const remaining = checkpointsMs.map((t) => round(sloMs - t - deltaMs));
    const points = [...new Set([...checkpointsMs, sloMs, ...remaining])].sort((a, b) => a - b);
    this.pointsMs = points;
    const at = new Map(points.map((p, i) => [p, i]));
    this.checkpointIndex = Int32Array.from(checkpointsMs, (t) => at.get(t)!);
    this.remainingIndex = Int32Array.from(remaining, (r) => at.get(r)!);
    this.sloIndex = at.get(sloMs)!;
  }

  /** A `CdfSource` over this grid from any CDF function F(x) (x in ms): for tests and callers with a model. */
  sourceFrom(cdf: (xMs: number) => number): CdfSource {
    const values = Float64Array.from(this.pointsMs, cdf);
    return { cdfAt: (k) => values[k]!, cdfArray: () => values };
  }
}

/** One backup candidate: a route other than the primary, eligible and profiled. */
export interface HedgeBackup {
  readonly endpointId: string;
  /** Effective cost of sending the request there, USD (ties: endpoint id). */
  readonly costUsd: number;
  readonly cdf: CdfSource;
}

/** A planned hedge, or why there is none. */
export type HedgePlan =
  | {
      readonly kind: 'hedge';
      /** Index of the checkpoint in `grid.checkpointsMs`. */
      readonly checkpoint: number;
      /** t, ms after the primary's dispatch. */
      readonly atMs: number;
      /** Index of the backup in the `backups` argument. */
      readonly backup: number;
      readonly endpointId: string;
      /** P with this backup at t. */
      readonly probability: number;
      /** The primary-only term at t. */
      readonly primaryProbability: number;
    }
  | { readonly kind: 'none'; readonly reason: 'no_backup' | 'primary_safe' | 'no_feasible_backup' };

/**
 * The latest-safe hedge plan (see the module comment for the rule and its one refinement).
 * Scans checkpoints from the latest down; at each, tries backups cheapest first (ties by endpoint
 * id) and returns the first with P ≥ ρ. O(K·n) for K checkpoints and n backups, plus a sort of n.
 * @param targetProbability ρ ∈ (0, 1].
 */
export function planHedge(grid: HedgeGrid, primary: CdfSource, backups: readonly HedgeBackup[], targetProbability: number): HedgePlan {
  const costs = backups.map((b) => b.costUsd);
  const sources = backups.map((b) => b.cdf);
  return planHedgeArrays(grid, primary, sources, costs, backups, backups.length, targetProbability, new Int32Array(backups.length));
}

/**
 * `planHedge` over parallel arrays, allocation-free (the planner's hot path): backup j takes
 * part when `sources[j]` is not null; its cost is `costs[j]` and its id `ids[j].endpointId`.
 * `scratch` holds at least `count` entries. The plan's `backup` indexes these arrays.
 */
export function planHedgeArrays(
  grid: HedgeGrid,
  primary: CdfSource,
  sources: ArrayLike<CdfSource | null>,
  costs: ArrayLike<number>,
  ids: ArrayLike<{ readonly endpointId: string }>,
  count: number,
  targetProbability: number,
  scratch: Int32Array,
): HedgePlan {
  // Insertion sort of the taking-part backups by (cost, endpoint id): n is a handful of routes.
  let m = 0;
  for (let j = 0; j < count; j++) {
    if (sources[j] === null || sources[j] === undefined) continue;
    let k = m++;
    while (k > 0 && cheaper(j, scratch[k - 1]!, costs, ids)) {
      scratch[k] = scratch[k - 1]!;
      k--;
    }
    scratch[k] = j;
  }
  if (m === 0) return { kind: 'none', reason: 'no_backup' };
  // Each backup's F over the grid, read once (the inner loop is then array reads and arithmetic).
  const cols = new Array<ArrayLike<number>>(m);
  for (let x = 0; x < m; x++) {
    const src = sources[scratch[x]!]!;
    cols[x] = src.cdfArray ? src.cdfArray() : Float64Array.from(grid.pointsMs, (_, i) => src.cdfAt(i));
  }
  const fpS = primary.cdfAt(grid.sloIndex);
  for (let k = grid.checkpointsMs.length - 1; k >= 0; k--) {
    const fpT = primary.cdfAt(grid.checkpointIndex[k]!);
    const alone = primaryOnlyProbability(fpS, fpT);
    if (fpT < 1 && alone >= targetProbability) return { kind: 'none', reason: 'primary_safe' };
    const rem = grid.remainingIndex[k]!;
    // P = A + B·F_b(S − t − δ), as in hedgeSuccessProbability (same operations, same rounding).
    const surv = 1 - fpT;
    const degenerate = !(surv > 0);
    const A = degenerate ? 0 : (fpS - fpT) / surv;
    const B = degenerate ? 1 : (1 - fpS) / surv;
    for (let x = 0; x < m; x++) {
      const f = cols[x]![rem]!;
      let p = degenerate ? f : A + B * f;
      p = p <= 0 ? 0 : p >= 1 ? 1 : p;
      if (p >= targetProbability) {
        const b = scratch[x]!;
        return { kind: 'hedge', checkpoint: k, atMs: grid.checkpointsMs[k]!, backup: b, endpointId: ids[b]!.endpointId, probability: p, primaryProbability: alone };
      }
    }
  }
  return { kind: 'none', reason: 'no_feasible_backup' };
}

/** Whether backup a sorts before backup b: lower cost, then lower endpoint id, then lower index. */
function cheaper(a: number, b: number, costs: ArrayLike<number>, ids: ArrayLike<{ readonly endpointId: string }>): boolean {
  const ca = costs[a]!;
  const cb = costs[b]!;
  if (ca !== cb) return ca < cb;
  const ia = ids[a]!.endpointId;
  const ib = ids[b]!.endpointId;
  if (ia !== ib) return ia < ib;
  return a < b;
}
