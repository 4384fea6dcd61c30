/**
 * The cost envelope (L, U) that prices quota routes (seed 000 "RouteWise",
 * cold start; RouteWise paper §4): the low and high quantiles (P10 / P90 by default) of what
 * recent requests would have cost on the cheapest on-demand route ("API-equivalent cost"), over a
 * rolling window (24 h by default). A quota route's shadow price ψ(z) = L·(U/L)^z moves inside it.
 * Until the window holds `minSamples` requests the envelope is not calibrated and quota routes
 * are masked; if L ≤ 0 or L ≥ U, L := U·1e-3 so ψ still rises from "almost free" to U.
 *
 * Costs are counted in log-spaced buckets (ratio 1 + 1/128, from 1e-9 USD to above 1,000 USD; a
 * separate bucket for 0) held in a Fenwick tree, so an observation, an expiry and a quantile are
 * each O(log buckets). A quantile is reported as its bucket's geometric centre: within ±0.4 % of
 * the exact sample quantile (nearest-rank definition, rank ⌈q·n⌉).
 */

/** A calibrated envelope, USD per request. */
export interface Envelope {
  readonly lowUsd: number;
  readonly highUsd: number;
}

/** Options of the envelope. */
export interface CostEnvelopeOptions {
  /** Rolling window, ms (> 0). */
  readonly windowMs: number;
  /** Quantile of L in [0, 1). */
  readonly lowQuantile: number;
  /** Quantile of U in (lowQuantile, 1]. */
  readonly highQuantile: number;
  /** Samples needed in the window to calibrate (≥ 1). */
  readonly minSamples: number;
  /** Most samples kept; the oldest leave early beyond it (default 2^20). */
  readonly maxSamples?: number;
}

/** The floor applied when L ≤ 0 or L ≥ U: L := U·ENVELOPE_FLOOR_RATIO. */
export const ENVELOPE_FLOOR_RATIO = 1e-3;

/** L := U·1e-3 when L ≤ 0 or L ≥ U; otherwise (L, U) unchanged. */
export function floorEnvelope(lowUsd: number, highUsd: number): Envelope {
  if (lowUsd <= 0 || lowUsd >= highUsd) return { lowUsd: highUsd * ENVELOPE_FLOOR_RATIO, highUsd };
  return { lowUsd, highUsd };
}

const MIN_USD = 1e-9;
const RATIO = 1 + 1 / 128;
const LOG_RATIO = Math.log(RATIO);
/** Buckets: 0 for cost ≤ 0, then [MIN·r^(i−1), MIN·r^i) for i ≥ 1; the last also takes everything above. */
const BUCKETS = 1 + Math.ceil(Math.log(1e3 / MIN_USD) / LOG_RATIO) + 1;

/** Bucket of a cost in USD. */
function bucketOf(costUsd: number): number {
  if (!(costUsd > 0)) return 0;
  if (costUsd < MIN_USD) return 1;
  const i = 1 + Math.floor(Math.log(costUsd / MIN_USD) / LOG_RATIO) + 1;
  return i >= BUCKETS ? BUCKETS - 1 : i;
}

/** Representative cost of a bucket: 0, or the geometric centre of its range. */
function bucketValue(b: number): number {
  if (b === 0) return 0;
  return MIN_USD * Math.pow(RATIO, b - 1.5);
}

/** Rolling-window quantiles of the cheapest API-equivalent request cost. */
export class CostEnvelope {
  readonly options: CostEnvelopeOptions;
  private readonly tree = new Float64Array(BUCKETS + 1); // Fenwick, 1-based
  private times = new Float64Array(64);
  private buckets = new Int32Array(64);
  private head = 0;
  private size = 0;
  private readonly maxSamples: number;
  private readonly topBit: number;
  // The last envelope, valid while no sample entered or left (decisions far outnumber changes).
  private cached: Envelope | null = null;
  private cacheValid = false;

  /** @throws RangeError for a non-positive window, quantiles out of order, or minSamples < 1. */
  constructor(options: CostEnvelopeOptions) {
    if (!(options.windowMs > 0)) throw new RangeError(`envelope window must be > 0 ms, got ${options.windowMs}`);
    if (!(options.lowQuantile >= 0 && options.lowQuantile < options.highQuantile && options.highQuantile <= 1)) {
      throw new RangeError(`envelope quantiles need 0 ≤ low < high ≤ 1, got ${options.lowQuantile}, ${options.highQuantile}`);
    }
    if (!(options.minSamples >= 1)) throw new RangeError(`envelope minSamples must be ≥ 1, got ${options.minSamples}`);
    this.options = options;
    this.maxSamples = options.maxSamples ?? 1 << 20;
    let bit = 1;
    while (bit * 2 <= BUCKETS) bit *= 2;
    this.topBit = bit;
  }

  /** Records one request's cheapest API-equivalent cost (USD, ≥ 0; not finite ⇒ ignored) at `nowMs`. */
  observe(costUsd: number, nowMs: number): void {
    if (!Number.isFinite(costUsd)) return;
    this.expire(nowMs);
    if (this.size >= this.maxSamples) this.dropOldest();
    if (this.size === this.times.length) this.grow();
    const b = bucketOf(costUsd);
    const i = (this.head + this.size) % this.times.length;
    this.times[i] = nowMs;
    this.buckets[i] = b;
    this.size++;
    this.add(b, 1);
    this.cacheValid = false;
  }

  /** Samples in the window at `nowMs`. */
  samples(nowMs: number): number {
    this.expire(nowMs);
    return this.size;
  }

  /**
   * (L, U) at `nowMs` after the floor rule, or null when fewer than `minSamples` are in the window.
   * With every sample at 0 USD the result is (0, 0): quota routes are then free.
   */
  envelope(nowMs: number): Envelope | null {
    this.expire(nowMs);
    if (this.cacheValid) return this.cached;
    this.cached = this.size < this.options.minSamples ? null : floorEnvelope(this.quantile(this.options.lowQuantile), this.quantile(this.options.highQuantile));
    this.cacheValid = true;
    return this.cached;
  }

  /** @throws Error when the tree's total disagrees with the stored samples. */
  invariants(): void {
    let total = 0;
    for (let i = BUCKETS; i > 0; i -= i & -i) total += this.tree[i]!;
    if (total !== this.size) throw new Error(`cost envelope: tree total ${total} != samples ${this.size}`);
  }

  /** Nearest-rank quantile q of the window (size > 0): bucket value at rank max(1, ⌈q·n⌉). */
  private quantile(q: number): number {
    const rank = Math.max(1, Math.ceil(q * this.size - 1e-9));
    // Fenwick descent: the largest position whose prefix sum is < rank, plus one.
    let pos = 0;
    let remaining = rank;
    for (let step = this.topBit; step > 0; step >>= 1) {
      const next = pos + step;
      if (next <= BUCKETS && this.tree[next]! < remaining) {
        pos = next;
        remaining -= this.tree[next]!;
      }
    }
    return bucketValue(pos); // position pos+1 (1-based) is bucket pos (0-based)
  }

  private add(bucket: number, delta: number): void {
    for (let i = bucket + 1; i <= BUCKETS; i += i & -i) this.tree[i]! += delta;
  }

  private expire(nowMs: number): void {
    const cutoff = nowMs - this.options.windowMs;
    while (this.size > 0 && this.times[this.head]! <= cutoff) this.dropOldest();
  }

  private dropOldest(): void {
    this.add(this.buckets[this.head]!, -1);
    this.head = (this.head + 1) % this.times.length;
    this.size--;
    this.cacheValid = false;
  }

  private grow(): void {
    const cap = this.times.length * 2;
    const times = new Float64Array(cap);
    const buckets = new Int32Array(cap);
    for (let n = 0; n < this.size; n++) {
      const i = (this.head + n) % this.times.length;
      times[n] = this.times[i]!;
      buckets[n] = this.buckets[i]!;
    }
    this.times = times;
    this.buckets = buckets;
    this.head = 0;
  }
}
