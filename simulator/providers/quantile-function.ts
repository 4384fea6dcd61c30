/**
 * A latency distribution fitted through published quantiles, for drawing hosted-provider TTFTs
 * and per-token times from summaries that carry no raw samples (RouteWise's provider profiles
 * give n, p50, p90, p99, mean and max per provider).
 *
 * Fit: monotone piecewise-linear interpolation of the log quantile function on the normal-score
 * axis, i.e. between two knots (p_i, x_i) and (p_j, x_j), ln Q(u) is linear in z = Φ⁻¹(u). Each
 * segment is a log-normal piece, so the fit passes through every given quantile exactly, is
 * monotone whenever the quantiles are, and is a plain log-normal when only two are given
 * (quantile-matching in the sense of Hyndman & Fan's sample quantiles, Am. Stat. 1996; the
 * normal-score axis is the usual probability-plot axis of a log-normal).
 * - Below the first knot the first segment's log-normal slope continues (x → 0 as u → 0).
 * - The sample maximum, when given with the sample size n, is a knot at u = n/(n+1) (its
 *   Weibull plotting position) and the support ends there: Q(u) = max for u ≥ n/(n+1). This is
 *   a named truncation at the largest value ever observed, not an extrapolation past the data.
 * - Without a maximum, the last segment's slope continues (an unbounded log-normal tail).
 * The summary mean is *not* used by the fit; `mean()` reproduces it as a check (within ~7 % on
 * the MiniMax-M2.5 profiles; see the tests).
 */

/** One quantile of a summary: probability `p` in (0, 1) and the value at it, ms (> 0). */
export interface QuantileKnot {
  readonly p: number;
  readonly ms: number;
}

/** What the fit needs: at least two quantiles, optionally the sample size and maximum. */
export interface QuantileSummary {
  /** Quantiles in increasing p; values non-decreasing, > 0. */
  readonly quantiles: readonly QuantileKnot[];
  /** Sample size (used only to place the maximum); ≥ 1. */
  readonly n?: number;
  /** Largest observed value, ms; ≥ the last quantile. */
  readonly maxMs?: number;
}

/** A fitted distribution. `quantile(u)` maps a uniform draw in [0, 1) to a value in ms. */
export interface QuantileFunction {
  /** Q(u) in ms for u in [0, 1); u outside is clamped. */
  quantile(u: number): number;
  /** Mean of the fitted distribution, ms (numerical integral of Q over 20,000 midpoints). */
  mean(): number;
  /** The knots the fit passes through, in increasing p (the max knot included when used). */
  readonly knots: readonly QuantileKnot[];
}

// Acklam's rational approximation of the normal quantile (relative error < 1.15e-9),
// https://web.archive.org/web/2015/http://home.online.no/~pjacklam/notes/invnorm/
const A = [-3.969683028665376e1, 2.209460984245205e2, -2.759285104469687e2, 1.38357751867269e2, -3.066479806614716e1, 2.506628277459239];
const B = [-5.447609879822406e1, 1.615858368580409e2, -1.556989798598866e2, 6.680131188771972e1, -1.328068155288572e1];
const C = [-7.784894002430293e-3, -3.223964580411365e-1, -2.400758277161838, -2.549732539343734, 4.374664141464968, 2.938163982698783];
const D = [7.784695709041462e-3, 3.224671290700398e-1, 2.445134137142996, 3.754408661907416];

/**
 * Φ⁻¹(p): the standard normal quantile (Acklam's algorithm, relative error < 1.15e-9).
 * @throws RangeError unless 0 < p < 1.
 */
export function normalQuantile(p: number): number {
  if (!(p > 0 && p < 1)) throw new RangeError(`normalQuantile: p must be in (0, 1), got ${p}`);
  const lo = 0.02425;
  if (p < lo) {
    const q = Math.sqrt(-2 * Math.log(p));
    return (((((C[0]! * q + C[1]!) * q + C[2]!) * q + C[3]!) * q + C[4]!) * q + C[5]!) / ((((D[0]! * q + D[1]!) * q + D[2]!) * q + D[3]!) * q + 1);
  }
  if (p > 1 - lo) {
    const q = Math.sqrt(-2 * Math.log(1 - p));
    return -(((((C[0]! * q + C[1]!) * q + C[2]!) * q + C[3]!) * q + C[4]!) * q + C[5]!) / ((((D[0]! * q + D[1]!) * q + D[2]!) * q + D[3]!) * q + 1);
  }
  const q = p - 0.5;
  const r = q * q;
  return ((((((A[0]! * r + A[1]!) * r + A[2]!) * r + A[3]!) * r + A[4]!) * r + A[5]!) * q) / (((((B[0]! * r + B[1]!) * r + B[2]!) * r + B[3]!) * r + B[4]!) * r + 1);
}

/**
 * Fits the piecewise log-normal quantile function described in the module doc.
 * @param where label for errors, e.g. `minimax-m2.5/deepinfra ttft`.
 * @throws RangeError naming `where` when fewer than two quantiles are given, a p is outside
 *   (0, 1) or not increasing, a value is not finite and > 0 or decreases, or max < last quantile.
 */
export function fitQuantileFunction(summary: QuantileSummary, where = 'quantile summary'): QuantileFunction {
  const qs = summary.quantiles;
  if (qs.length < 2) throw new RangeError(`${where}: needs at least two quantiles, got ${qs.length}`);
  qs.forEach((k, i) => {
    if (!(k.p > 0 && k.p < 1)) throw new RangeError(`${where}: quantile p must be in (0, 1), got ${k.p}`);
    if (!(Number.isFinite(k.ms) && k.ms > 0)) throw new RangeError(`${where}: p${k.p * 100} must be a finite number of ms > 0, got ${k.ms}`);
    const prev = qs[i - 1];
    if (prev && !(k.p > prev.p)) throw new RangeError(`${where}: quantiles must have increasing p (${prev.p} then ${k.p})`);
    if (prev && k.ms < prev.ms) throw new RangeError(`${where}: p${k.p * 100} (${k.ms} ms) is below p${prev.p * 100} (${prev.ms} ms)`);
  });
  const last = qs[qs.length - 1]!;
  const knots: QuantileKnot[] = [...qs];
  let capped = false;
  if (summary.maxMs !== undefined) {
    if (!(Number.isFinite(summary.maxMs) && summary.maxMs >= last.ms)) {
      throw new RangeError(`${where}: max (${summary.maxMs} ms) must be ≥ the last quantile (${last.ms} ms)`);
    }
    const n = summary.n ?? 0;
    const pMax = n / (n + 1);
    // The max is a knot only when its plotting position lies beyond the last quantile.
    if (pMax > last.p) {
      knots.push({ p: pMax, ms: summary.maxMs });
      capped = true;
    }
  }
  const z = knots.map((k) => normalQuantile(k.p));
  const lnx = knots.map((k) => Math.log(k.ms));
  const m = knots.length;
  const slope = (i: number) => (z[i + 1]! - z[i]! > 0 ? (lnx[i + 1]! - lnx[i]!) / (z[i + 1]! - z[i]!) : 0);
  const lowSlope = slope(0);
  const highSlope = slope(m - 2);
  const pFirst = knots[0]!.p;
  const pLast = knots[m - 1]!.p;
  const quantile = (u: number): number => {
    if (!(u > 0)) u = Number.MIN_VALUE;
    if (u >= pLast) {
      if (capped || u === pLast) return knots[m - 1]!.ms;
      if (u >= 1) u = 1 - 2 ** -53;
      return Math.exp(lnx[m - 1]! + highSlope * (normalQuantile(u) - z[m - 1]!));
    }
    const zu = normalQuantile(u);
    if (u <= pFirst) return Math.exp(lnx[0]! + lowSlope * (zu - z[0]!));
    let i = 0;
    while (knots[i + 1]!.p < u) i++;
    return Math.exp(lnx[i]! + slope(i) * (zu - z[i]!));
  };
  let meanCache: number | null = null;
  return {
    knots,
    quantile,
    mean() {
      if (meanCache === null) {
        const steps = 20_000;
        let sum = 0;
        for (let s = 0; s < steps; s++) sum += quantile((s + 0.5) / steps);
        meanCache = sum / steps;
      }
      return meanCache;
    },
  };
}
