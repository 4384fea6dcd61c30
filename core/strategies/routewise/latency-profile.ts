/**
 * One route's time-to-first-token profile over a causal rolling window (RouteWise paper §4–5):
 * the mean T̄ the LP minimises and the distribution F hedging reads.
 *
 * Three kinds of observation enter the window, each stamped with the time it was observed:
 * - a success: the first token came after `ttftMs`;
 * - a failure before the first token (5xx, 429, transport error, first-token timeout);
 * - a censored attempt: it was cancelled (a hedge loser, a client that left) before its first
 *   token after `elapsedMs`, so all we know is TTFT > elapsedMs.
 *
 * Mean: T̄ = (Σ TTFT + Σ imputed + n_err·penalty) / (n_ok + n_cens + n_err). Dropping censored
 * attempts would bias T̄ low exactly where it matters (the slow attempts are the ones hedges
 * cancel), so each censored attempt enters with an imputed TTFT: the mean of the window's
 * successes beyond its elapsed time (Efron's redistribute-to-the-right, the idea behind
 * Kaplan–Meier), or its elapsed time when no success is beyond it (a lower bound). Imputation is
 * done once, when the observation arrives, at the resolution of the query grid below (the
 * successes of the censoring's own cell count as beyond it).
 *
 * Distribution: the profile answers F only at a fixed, sorted grid of query points a_0 < … <
 * a_{m−1} (hedging needs F at the checkpoints t, at S and at S − t − δ — about 55 points), which
 * makes every update O(log m) (a binary search for the cell) and O(1) bookkeeping. F is the
 * censoring-aware life-table (actuarial) estimate: over cells (a_{k−1}, a_k], with n_k at risk at
 * the start of a cell, d_k first tokens and w_k censored attempts in it, the survival is
 * S(a_k) = Π_{j≤k} (1 − d_j / (n_j − w_j/2)) (Cutler & Ederer 1958), and F = 1 − S. Without
 * censoring this is exactly the empirical CDF #{TTFT ≤ a_k}/n. Failures do not enter F (it is the
 * distribution of TTFT given an answer); they enter T̄ through the penalty.
 * Expiry: samples leave the window when `nowMs − observedAtMs ≥ windowMs`.
 */

const SUCCESS = 0;
const FAILURE = 1;
const CENSORED = 2;

/** Counts of the observations in the window. */
export interface ProfileCounts {
  readonly successes: number;
  readonly failures: number;
  readonly censored: number;
}

/** Options of a profile. */
export interface LatencyProfileOptions {
  /** Rolling window length, ms (> 0). */
  readonly windowMs: number;
  /** TTFT charged to a failure before the first token in T̄, ms. */
  readonly errorPenaltyMs: number;
  /** Sorted, strictly increasing, finite query points of F, ms (may be empty). */
  readonly gridMs: readonly number[];
}

/** A rolling-window TTFT profile with a censoring-aware CDF on a fixed grid. */
export class LatencyProfile {
  readonly windowMs: number;
  readonly errorPenaltyMs: number;
  /** The query points a_k of F, ms. */
  readonly gridMs: Float64Array;
  // Ring buffer of observations in arrival order.
  private kinds = new Uint8Array(16);
  private times = new Float64Array(16);
  private values = new Float64Array(16);
  private cellsOf = new Int32Array(16);
  private head = 0;
  private size = 0;
  // Per cell k ∈ [0, m]: first tokens d_k, censored w_k, and the sum of success TTFTs in it.
  private readonly events: Int32Array;
  private readonly censoredIn: Int32Array;
  private readonly sumIn: Float64Array;
  private nOk = 0;
  private nErr = 0;
  private nCens = 0;
  private sumOkMs = 0;
  private sumImputedMs = 0;
  // F(a_k) cached until the next change.
  private readonly cdfCache: Float64Array;
  private cdfFresh = false;
  /** Time of the latest observation (expired or not), ms; −∞ before the first. */
  lastObservedMs = Number.NEGATIVE_INFINITY;

  /** @throws RangeError when the window is not positive or the grid is not strictly increasing and finite. */
  constructor(options: LatencyProfileOptions) {
    if (!(options.windowMs > 0)) throw new RangeError(`latency window must be > 0 ms, got ${options.windowMs}`);
    if (!(options.errorPenaltyMs >= 0)) throw new RangeError(`error penalty must be ≥ 0 ms, got ${options.errorPenaltyMs}`);
    const g = options.gridMs;
    for (let i = 0; i < g.length; i++) {
      if (!Number.isFinite(g[i]!) || (i > 0 && !(g[i]! > g[i - 1]!))) throw new RangeError(`latency grid must be finite and strictly increasing; bad at index ${i}`);
    }
    this.windowMs = options.windowMs;
    this.errorPenaltyMs = options.errorPenaltyMs;
    this.gridMs = Float64Array.from(g);
    const cells = g.length + 1;
    this.events = new Int32Array(cells);
    this.censoredIn = new Int32Array(cells);
    this.sumIn = new Float64Array(cells);
    this.cdfCache = new Float64Array(g.length);
  }

  /** Whether `other` has the same window, error penalty and grid (so one may stand for the other). */
  sameOptions(other: LatencyProfile): boolean {
    return other.windowMs === this.windowMs && other.errorPenaltyMs === this.errorPenaltyMs && other.gridMs.length === this.gridMs.length && other.gridMs.every((g, k) => g === this.gridMs[k]);
  }

  /** A first token after `ttftMs` (negative values read as 0), observed at `nowMs`. */
  recordSuccess(ttftMs: number, nowMs: number): void {
    const v = ttftMs > 0 ? ttftMs : 0;
    const cell = this.cellOf(v, false);
    this.push(SUCCESS, nowMs, v, cell);
    this.events[cell]! += 1;
    this.sumIn[cell]! += v;
    this.nOk++;
    this.sumOkMs += v;
  }

  /** A failure before the first token, observed at `nowMs` (charged `errorPenaltyMs` in T̄). */
  recordFailure(nowMs: number): void {
    this.push(FAILURE, nowMs, 0, -1);
    this.nErr++;
  }

  /**
   * An attempt cancelled before its first token after `elapsedMs` (TTFT > elapsedMs), observed at
   * `nowMs`. Its imputed TTFT for T̄ is the mean of the window's successes from its own cell on
   * (cell resolution) when that exceeds `elapsedMs`, else `elapsedMs`.
   */
  recordCensored(elapsedMs: number, nowMs: number): void {
    this.expire(nowMs);
    const c = elapsedMs > 0 ? elapsedMs : 0;
    // TTFT > c: a censoring exactly at a grid point survived that point, so it belongs to the next cell.
    const cell = this.cellOf(c, true);
    let n = 0;
    let sum = 0;
    for (let k = cell; k < this.events.length; k++) {
      n += this.events[k]!;
      sum += this.sumIn[k]!;
    }
    const imputed = n > 0 && sum / n > c ? sum / n : c;
    this.push(CENSORED, nowMs, imputed, cell);
    this.censoredIn[cell]! += 1;
    this.nCens++;
    this.sumImputedMs += imputed;
  }

  /** Drops observations that left the window at `nowMs`. */
  expire(nowMs: number): void {
    const cutoff = nowMs - this.windowMs;
    while (this.size > 0 && this.times[this.head]! <= cutoff) {
      const i = this.head;
      const cell = this.cellsOf[i]!;
      const v = this.values[i]!;
      switch (this.kinds[i]) {
        case SUCCESS:
          this.events[cell]! -= 1;
          this.sumIn[cell]! -= v;
          this.nOk--;
          this.sumOkMs -= v;
          break;
        case FAILURE:
          this.nErr--;
          break;
        default:
          this.censoredIn[cell]! -= 1;
          this.nCens--;
          this.sumImputedMs -= v;
      }
      this.head = (this.head + 1) % this.kinds.length;
      this.size--;
      this.cdfFresh = false;
    }
    if (this.nOk === 0) this.sumOkMs = 0; // no float residue once empty
    if (this.nCens === 0) this.sumImputedMs = 0;
  }

  /** Observation counts in the window at `nowMs`. */
  counts(nowMs: number): ProfileCounts {
    this.expire(nowMs);
    return { successes: this.nOk, failures: this.nErr, censored: this.nCens };
  }

  /** Successful first tokens in the window at `nowMs`. */
  successes(nowMs: number): number {
    this.expire(nowMs);
    return this.nOk;
  }

  /** All observations (successes, failures, censored) in the window at `nowMs`. */
  observations(nowMs: number): number {
    this.expire(nowMs);
    return this.size;
  }

  /**
   * T̄ at `nowMs`, ms: (Σ TTFT + Σ imputed + n_err·penalty) / (n_ok + n_cens + n_err); null when the
   * window is empty.
   */
  meanMs(nowMs: number): number | null {
    this.expire(nowMs);
    const n = this.nOk + this.nErr + this.nCens;
    if (n === 0) return null;
    return (this.sumOkMs + this.sumImputedMs + this.nErr * this.errorPenaltyMs) / n;
  }

  /**
   * T̄ at `nowMs` when the window holds at least `minObservations` observations, else NaN (one
   * expiry; the planner's per-decision read).
   */
  meanIfProfiled(nowMs: number, minObservations: number): number {
    this.expire(nowMs);
    const n = this.nOk + this.nErr + this.nCens;
    if (n === 0 || n < minObservations) return Number.NaN;
    return (this.sumOkMs + this.sumImputedMs + this.nErr * this.errorPenaltyMs) / n;
  }

  /**
   * F(a_k) = 1 − S(a_k) at grid index `k` with the window as of the last `expire`/record call
   * (the hot path expires once per decision). 0 when the window holds no success or censoring.
   * @throws RangeError when `k` is outside the grid.
   */
  cdfAt(k: number): number {
    if (!(k >= 0 && k < this.gridMs.length)) throw new RangeError(`grid index ${k} outside [0, ${this.gridMs.length})`);
    if (!this.cdfFresh) this.computeCdf();
    return this.cdfCache[k]!;
  }

  /** F at every grid point (index k = `cdfAt(k)`), as of the last expiry; valid until the next change. */
  cdfArray(): Float64Array {
    if (!this.cdfFresh) this.computeCdf();
    return this.cdfCache;
  }

  /**
   * F(x) at `nowMs` for any x: exact at grid points; between them, F at the largest grid point
   * ≤ x (a lower bound); 0 below the grid.
   */
  cdf(xMs: number, nowMs: number): number {
    this.expire(nowMs);
    let lo = 0;
    let hi = this.gridMs.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.gridMs[mid]! <= xMs) lo = mid + 1;
      else hi = mid;
    }
    return lo === 0 ? 0 : this.cdfAt(lo - 1);
  }

  /** @throws Error when the counts, sums or cells disagree with the stored observations. */
  invariants(): void {
    let ok = 0;
    let err = 0;
    let cens = 0;
    const ev = new Int32Array(this.events.length);
    const ce = new Int32Array(this.events.length);
    for (let n = 0; n < this.size; n++) {
      const i = (this.head + n) % this.kinds.length;
      const kind = this.kinds[i];
      if (kind === SUCCESS) {
        ok++;
        ev[this.cellsOf[i]!]! += 1;
      } else if (kind === FAILURE) err++;
      else {
        cens++;
        ce[this.cellsOf[i]!]! += 1;
      }
      if (n > 0 && this.times[i]! < this.times[(i - 1 + this.kinds.length) % this.kinds.length]!) throw new Error('latency profile: observations out of time order');
    }
    if (ok !== this.nOk || err !== this.nErr || cens !== this.nCens) throw new Error(`latency profile: counts ${this.nOk}/${this.nErr}/${this.nCens} != stored ${ok}/${err}/${cens}`);
    for (let k = 0; k < ev.length; k++) {
      if (ev[k] !== this.events[k] || ce[k] !== this.censoredIn[k]) throw new Error(`latency profile: cell ${k} counts disagree`);
    }
    if (!(this.sumOkMs >= -1e-6) || !(this.sumImputedMs >= -1e-6)) throw new Error('latency profile: negative sums');
  }

  /** Cell of value v: first k with v ≤ a_k (`strict`: v < a_k), else m. O(log m). */
  private cellOf(v: number, strict: boolean): number {
    let lo = 0;
    let hi = this.gridMs.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const a = this.gridMs[mid]!;
      if (strict ? v < a : v <= a) hi = mid;
      else lo = mid + 1;
    }
    return lo;
  }

  private push(kind: number, nowMs: number, value: number, cell: number): void {
    this.expire(nowMs);
    if (this.size === this.kinds.length) this.grow();
    const i = (this.head + this.size) % this.kinds.length;
    this.kinds[i] = kind;
    this.times[i] = nowMs;
    this.values[i] = value;
    this.cellsOf[i] = cell;
    this.size++;
    this.cdfFresh = false;
    if (nowMs > this.lastObservedMs) this.lastObservedMs = nowMs;
  }

  private grow(): void {
    const cap = this.kinds.length * 2;
    const kinds = new Uint8Array(cap);
    const times = new Float64Array(cap);
    const values = new Float64Array(cap);
    const cells = new Int32Array(cap);
    for (let n = 0; n < this.size; n++) {
      const i = (this.head + n) % this.kinds.length;
      kinds[n] = this.kinds[i]!;
      times[n] = this.times[i]!;
      values[n] = this.values[i]!;
      cells[n] = this.cellsOf[i]!;
    }
    this.kinds = kinds;
    this.times = times;
    this.values = values;
    this.cellsOf = cells;
    this.head = 0;
  }

  private computeCdf(): void {
    const total = this.nOk + this.nCens;
    let atRisk = total;
    let s = 1;
    let events = 0;
    let censoredSoFar = 0;
    for (let k = 0; k < this.cdfCache.length; k++) {
      const d = this.events[k]!;
      const w = this.censoredIn[k]!;
      events += d;
      censoredSoFar += w;
      const r = atRisk - w / 2;
      const h = r > 0 ? Math.min(1, d / r) : 0;
      s *= 1 - h;
      // Until the first censoring the product equals the empirical survival; report the exact
      // ratio there (no product rounding).
      this.cdfCache[k] = censoredSoFar === 0 ? (total === 0 ? 0 : events / total) : 1 - s;
      atRisk -= d + w;
    }
    this.cdfFresh = true;
  }
}
