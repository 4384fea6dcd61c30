/**
 * Percentile bootstrap interval of a mean (Efron & Tibshirani, "An Introduction to the
 * Bootstrap", 1993, ch. 13): resample the n values with replacement B times, take each
 * resample's mean, and read the (1−c)/2 and (1+c)/2 quantiles of those means (linear
 * interpolation between order statistics, Hyndman & Fan type 7). Used on per-seed paired
 * differences, so n is small (the seeds of a sweep) and B large.
 */
import type { Rng } from '../../core/rng.ts';

/** Mean and interval; `low`/`high` are null with fewer than two values. */
export interface MeanInterval {
  readonly mean: number;
  readonly low: number | null;
  readonly high: number | null;
}

/** Type-7 quantile of an ascending-sorted, non-empty array. */
export function sortedQuantile(sorted: ArrayLike<number>, p: number): number {
  const h = (sorted.length - 1) * p;
  const lo = Math.floor(h);
  const hi = Math.min(lo + 1, sorted.length - 1);
  return sorted[lo]! + (h - lo) * (sorted[hi]! - sorted[lo]!);
}

/**
 * The mean of `values` and its percentile-bootstrap interval at `confidence`, from `resamples`
 * resamples drawn with `rng` (n draws of `rng.int(n)` per resample).
 * @throws RangeError for no values, a non-finite value, resamples < 1 or confidence outside (0, 1).
 */
export function bootstrapMean(values: readonly number[], rng: Rng, resamples: number, confidence: number): MeanInterval {
  const n = values.length;
  if (n === 0) throw new RangeError('bootstrapMean: needs at least one value');
  if (!values.every(Number.isFinite)) throw new RangeError('bootstrapMean: values must be finite');
  if (!(Number.isInteger(resamples) && resamples >= 1)) throw new RangeError(`bootstrapMean: resamples must be an integer ≥ 1, got ${resamples}`);
  if (!(confidence > 0 && confidence < 1)) throw new RangeError(`bootstrapMean: confidence must be in (0, 1), got ${confidence}`);
  let sum = 0;
  for (const v of values) sum += v;
  const mean = sum / n;
  if (n < 2) return { mean, low: null, high: null };
  const means = new Float64Array(resamples);
  for (let b = 0; b < resamples; b++) {
    let s = 0;
    for (let i = 0; i < n; i++) s += values[rng.int(n)]!;
    means[b] = s / n;
  }
  means.sort();
  const alpha = (1 - confidence) / 2;
  return { mean, low: sortedQuantile(means, alpha), high: sortedQuantile(means, 1 - alpha) };
}
