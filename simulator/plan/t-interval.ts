/**
 * Student-t confidence interval of a mean over a few independent replications (the seeds of one
 * planner probe): mean ± t(ν = n−1, (1+c)/2) · s / √n, with s the sample standard deviation
 * (NIST/SEMATECH e-Handbook of Statistical Methods, §7.2.2.1; Law, "Simulation Modeling and
 * Analysis", 5th ed., §9.4.1, the replication/deletion method for terminating simulations).
 *
 * The t quantile is found by bisection on the t CDF, which is computed from the regularized
 * incomplete beta function, F(t) = 1 − ½·I_{ν/(ν+t²)}(ν/2, ½) for t ≥ 0, with I evaluated by
 * Lentz's continued fraction (Press et al., "Numerical Recipes", 3rd ed., §6.4 and §6.14).
 */

/** A mean with its interval. */
export interface MeanInterval {
  readonly n: number;
  readonly mean: number;
  readonly low: number;
  readonly high: number;
}

function logGamma(x: number): number {
  // Lanczos approximation, g = 7, n = 9 (Numerical Recipes §6.1), |error| < 1e-13 for x > 0.
  const c = [0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313, -176.61502916214059, 12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7];
  if (x < 0.5) return Math.log(Math.PI / Math.sin(Math.PI * x)) - logGamma(1 - x);
  const xm = x - 1;
  let a = c[0]!;
  const t = xm + 7.5;
  for (let i = 1; i < 9; i++) a += c[i]! / (xm + i);
  return 0.5 * Math.log(2 * Math.PI) + (xm + 0.5) * Math.log(t) - t + Math.log(a);
}

function betaContinuedFraction(a: number, b: number, x: number): number {
  const tiny = 1e-300;
  let c = 1;
  let d = 1 - ((a + b) * x) / (a + 1);
  if (Math.abs(d) < tiny) d = tiny;
  d = 1 / d;
  let h = d;
  for (let m = 1; m <= 300; m++) {
    const m2 = 2 * m;
    let aa = (m * (b - m) * x) / ((a + m2 - 1) * (a + m2));
    d = 1 + aa * d;
    if (Math.abs(d) < tiny) d = tiny;
    c = 1 + aa / c;
    if (Math.abs(c) < tiny) c = tiny;
    d = 1 / d;
    h *= d * c;
    aa = (-(a + m) * (a + b + m) * x) / ((a + m2) * (a + m2 + 1));
    d = 1 + aa * d;
    if (Math.abs(d) < tiny) d = tiny;
    c = 1 + aa / c;
    if (Math.abs(c) < tiny) c = tiny;
    d = 1 / d;
    const del = d * c;
    h *= del;
    if (Math.abs(del - 1) < 1e-15) break;
  }
  return h;
}

/** Regularized incomplete beta I_x(a, b) for 0 ≤ x ≤ 1, a, b > 0. */
export function incompleteBeta(x: number, a: number, b: number): number {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const front = Math.exp(logGamma(a + b) - logGamma(a) - logGamma(b) + a * Math.log(x) + b * Math.log(1 - x));
  return x < (a + 1) / (a + b + 2) ? (front * betaContinuedFraction(a, b, x)) / a : 1 - (front * betaContinuedFraction(b, a, 1 - x)) / b;
}

/** CDF of Student's t with `df` degrees of freedom at `t`. */
export function studentTCdf(t: number, df: number): number {
  const tail = 0.5 * incompleteBeta(df / (df + t * t), df / 2, 0.5);
  return t >= 0 ? 1 - tail : tail;
}

/**
 * The p-quantile of Student's t with `df` degrees of freedom (e.g. p 0.975, df 4 → 2.776).
 * @throws RangeError unless 0 < p < 1 and df > 0.
 */
export function studentTQuantile(p: number, df: number): number {
  if (!(p > 0 && p < 1)) throw new RangeError(`studentTQuantile: p must be in (0, 1), got ${p}`);
  if (!(df > 0)) throw new RangeError(`studentTQuantile: df must be > 0, got ${df}`);
  if (p === 0.5) return 0;
  if (p < 0.5) return -studentTQuantile(1 - p, df);
  let lo = 0;
  let hi = 1;
  while (studentTCdf(hi, df) < p) hi *= 2;
  for (let i = 0; i < 200 && hi - lo > 1e-12 * hi; i++) {
    const mid = (lo + hi) / 2;
    if (studentTCdf(mid, df) < p) lo = mid;
    else hi = mid;
  }
  return (lo + hi) / 2;
}

/**
 * Mean of `values` and its two-sided Student-t interval at `confidence`.
 * @throws RangeError for fewer than two values, a non-finite value or confidence outside (0, 1).
 */
export function tInterval(values: readonly number[], confidence: number): MeanInterval {
  const n = values.length;
  if (n < 2) throw new RangeError(`tInterval: needs at least two values, got ${n}`);
  if (!values.every(Number.isFinite)) throw new RangeError('tInterval: values must be finite');
  if (!(confidence > 0 && confidence < 1)) throw new RangeError(`tInterval: confidence must be in (0, 1), got ${confidence}`);
  const mean = values.reduce((s, v) => s + v, 0) / n;
  const variance = values.reduce((s, v) => s + (v - mean) ** 2, 0) / (n - 1);
  const half = studentTQuantile((1 + confidence) / 2, n - 1) * Math.sqrt(variance / n);
  return { n, mean, low: mean - half, high: mean + half };
}
