/**
 * Predicted output length L̂ for pricing on-demand routes (RouteWise paper §4).
 * Output length loosely follows prompt size, so completed requests are averaged per
 * ⌊log2(input tokens)⌋ bucket. The prediction cascades: the caller's own estimate when it gives
 * one; else the request's bucket mean once the bucket has `bucketMinSamples`; else the global mean
 * once there are `globalMinSamples`; else a default (500 tokens). Means are online and
 * cumulative (no window): output-length habits drift slowly, and every sample is O(1).
 */

/** Options of the predictor (RouteWise's defaults). */
export interface OutputLengthOptions {
  readonly bucketMinSamples: number;
  readonly globalMinSamples: number;
  readonly defaultTokens: number;
}

/** Default thresholds: 5 per bucket, 20 overall, 500 tokens before that. */
export const DEFAULT_OUTPUT_LENGTH_OPTIONS: OutputLengthOptions = { bucketMinSamples: 5, globalMinSamples: 20, defaultTokens: 500 };

/** Buckets 0…53 cover every safe integer; inputs of 0 or 1 token share bucket 0. */
const BUCKETS = 54;

/** ⌊log2(n)⌋ for n ≥ 1, 0 for n < 1. */
export function lengthBucket(inputTokens: number): number {
  if (!(inputTokens >= 2)) return 0;
  if (inputTokens < 2 ** 31) return 31 - Math.clz32(inputTokens); // exact, no floating log
  const b = Math.floor(Math.log2(inputTokens));
  // Math.log2 can land a hair below an exact power of two.
  const fixed = 2 ** (b + 1) <= inputTokens ? b + 1 : b;
  return fixed >= BUCKETS ? BUCKETS - 1 : fixed;
}

/** Online per-bucket and global means of output tokens. */
export class OutputLengthPredictor {
  private readonly counts = new Float64Array(BUCKETS);
  private readonly sums = new Float64Array(BUCKETS);
  private total = 0;
  private totalSum = 0;

  /** @throws RangeError when a threshold is < 1 or the default is negative. */
  constructor(readonly options: OutputLengthOptions = DEFAULT_OUTPUT_LENGTH_OPTIONS) {
    if (!(options.bucketMinSamples >= 1) || !(options.globalMinSamples >= 1)) throw new RangeError('output-length thresholds must be ≥ 1');
    if (!(options.defaultTokens >= 0)) throw new RangeError(`default output length must be ≥ 0, got ${options.defaultTokens}`);
  }

  /** Records a completed request: `outputTokens` produced for `inputTokens` (both ≥ 0; others ignored). */
  observe(inputTokens: number, outputTokens: number): void {
    if (!(outputTokens >= 0) || !Number.isFinite(outputTokens)) return;
    const b = lengthBucket(inputTokens);
    this.counts[b]! += 1;
    this.sums[b]! += outputTokens;
    this.total += 1;
    this.totalSum += outputTokens;
  }

  /**
   * L̂ in tokens for a request of `inputTokens`: `hint` when it is a number ≥ 0, else the
   * bucket mean (≥ bucketMinSamples), else the global mean (≥ globalMinSamples), else the default.
   */
  predict(inputTokens: number, hint: number | null = null): number {
    if (hint !== null && hint >= 0) return hint;
    const b = lengthBucket(inputTokens);
    const n = this.counts[b]!;
    if (n >= this.options.bucketMinSamples) return this.sums[b]! / n;
    if (this.total >= this.options.globalMinSamples) return this.totalSum / this.total;
    return this.options.defaultTokens;
  }

  /** Samples seen so far (all buckets). */
  get samples(): number {
    return this.total;
  }

  /** @throws Error when bucket counts do not add up to the total. */
  invariants(): void {
    let n = 0;
    for (let b = 0; b < BUCKETS; b++) n += this.counts[b]!;
    if (n !== this.total) throw new Error(`output-length predictor: bucket counts ${n} != total ${this.total}`);
  }
}
