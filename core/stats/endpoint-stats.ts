/**
 * Per-endpoint signals the learning strategies read (seed 003 "route by cost, latency or load"):
 * attempts in flight and a moving average of recent upstream latency. One instance per core,
 * keyed by endpoint id, so a target used by several multi-target models (or also requested
 * directly under a `router:` that reads these signals) is one busy endpoint, not several.
 *
 * Lifecycles feed it: `begin` at dispatch, `end` exactly once when the attempt ends (finished,
 * failed or cancelled), `sample` with the attempt's latency — time to first token for a stream,
 * time to the end of the response otherwise; a timed-out attempt samples its elapsed time, so a
 * target that hangs looks slow rather than unmeasured. Planners only read (`EndpointStatsView`).
 * The average is an EWMA: after `n` samples a sample's weight is α(1−α)^n; with the default
 * α = 0.2 the last ~10 samples carry 90 % of the weight.
 */

/** What planners read. Unknown endpoints read as idle and unmeasured. */
export interface EndpointStatsView {
  /** Attempts dispatched to `endpointId` and not yet ended, integer ≥ 0. */
  inFlight(endpointId: string): number;
  /** EWMA of recent latency samples in ms, or null before the first sample. */
  latencyMs(endpointId: string): number | null;
}

/** One endpoint's signals as data (for /health/deep and results). */
export interface EndpointStatsSnapshot {
  readonly endpointId: string;
  readonly inFlight: number;
  readonly latencyMs: number | null;
  readonly samples: number;
}

interface Entry {
  inFlight: number;
  latencyMs: number;
  samples: number;
}

/** Default EWMA weight of a new latency sample. */
export const DEFAULT_LATENCY_EWMA_ALPHA = 0.2;

/** In-flight counts and latency averages per endpoint. Deterministic; reads no clock. */
export class EndpointStats implements EndpointStatsView {
  private readonly entries = new Map<string, Entry>();

  /**
   * @param alpha EWMA weight of a new sample, in (0, 1].
   * @throws RangeError when `alpha` is outside (0, 1].
   */
  constructor(readonly alpha: number = DEFAULT_LATENCY_EWMA_ALPHA) {
    if (!(alpha > 0 && alpha <= 1)) throw new RangeError(`latency EWMA alpha must be in (0, 1], got ${alpha}`);
  }

  inFlight(endpointId: string): number {
    return this.entries.get(endpointId)?.inFlight ?? 0;
  }

  latencyMs(endpointId: string): number | null {
    const e = this.entries.get(endpointId);
    return e === undefined || e.samples === 0 ? null : e.latencyMs;
  }

  /** An attempt was dispatched to `endpointId`. */
  begin(endpointId: string): void {
    this.entry(endpointId).inFlight += 1;
  }

  /**
   * An attempt to `endpointId` ended (any outcome). Exactly once per `begin`.
   * @throws Error when no attempt is in flight there (an accounting bug in the caller).
   */
  end(endpointId: string): void {
    const e = this.entries.get(endpointId);
    if (e === undefined || e.inFlight <= 0) throw new Error(`endpoint stats: end() for '${endpointId}' with nothing in flight`);
    e.inFlight -= 1;
  }

  /**
   * Adds a latency sample in ms (finite, ≥ 0; negative values are clamped to 0 — a driver whose
   * clock stepped back should not poison the average).
   */
  sample(endpointId: string, latencyMs: number): void {
    if (!Number.isFinite(latencyMs)) return;
    const e = this.entry(endpointId);
    const x = Math.max(0, latencyMs);
    e.latencyMs = e.samples === 0 ? x : e.latencyMs + this.alpha * (x - e.latencyMs);
    e.samples += 1;
  }

  /** Every known endpoint, sorted by id. */
  snapshot(): EndpointStatsSnapshot[] {
    return [...this.entries.keys()]
      .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
      .map((id) => ({ endpointId: id, inFlight: this.inFlight(id), latencyMs: this.latencyMs(id), samples: this.entries.get(id)!.samples }));
  }

  /** @throws Error when an in-flight count is negative or fractional, or an average is not finite. */
  invariants(): void {
    for (const [id, e] of this.entries) {
      if (!Number.isSafeInteger(e.inFlight) || e.inFlight < 0) throw new Error(`endpoint stats '${id}': inFlight ${e.inFlight}`);
      if (e.samples > 0 && !(Number.isFinite(e.latencyMs) && e.latencyMs >= 0)) throw new Error(`endpoint stats '${id}': latency ${e.latencyMs}`);
    }
  }

  private entry(endpointId: string): Entry {
    let e = this.entries.get(endpointId);
    if (e === undefined) {
      e = { inFlight: 0, latencyMs: 0, samples: 0 };
      this.entries.set(endpointId, e);
    }
    return e;
  }
}
