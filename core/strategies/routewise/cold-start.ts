/**
 * Cold start (seed 000 "RouteWise": without measurements RouteWise cannot tell
 * which route is faster, so it would send everything to the cheapest and never measure the rest).
 *
 * - Exploration: the cheapest unprofiled route gets probability
 *   q = clamp((B − c_min) / (c_target − c_min), 0, 1), or 1 when c_target ≤ B (it fits the budget),
 *   so a budget that is nearly enough still explores now and then and α = 0 explores only routes
 *   as cheap as the cheapest. An explored route is leased for 60 s (or until its first
 *   observation) so a burst of arrivals does not all land on one unmeasured route.
 * - Prober: drivers that enable it (gateway in wall time, simulator in virtual time) ask which
 *   route to probe with a one-token request: a route idle for `idleMs` (900 s), at most one probe
 *   round every `intervalMs` (300 s), and at most `ProbeGate.limit` probes in flight per process
 *   (seed 000: one shared cap per worker, the smallest any model asks for, so two models behind
 *   one subscription never probe it at once).
 */

/**
 * q = 1 when c_target ≤ B; else clamp((B − c_min)/(c_target − c_min), 0, 1) (0 when c_target = c_min).
 * All in USD.
 */
export function explorationProbability(budgetUsd: number, minCostUsd: number, targetCostUsd: number): number {
  if (targetCostUsd <= budgetUsd) return 1;
  const span = targetCostUsd - minCostUsd;
  if (!(span > 0)) return 0;
  const q = (budgetUsd - minCostUsd) / span;
  return q <= 0 ? 0 : q >= 1 ? 1 : q;
}

/** Exploration leases: an explored route is not explored again until its lease ends. */
export class ExplorationLeases {
  private readonly until = new Map<string, number>();

  /** @param leaseMs lease length, ms (≥ 0). */
  constructor(readonly leaseMs: number) {
    if (!(leaseMs >= 0)) throw new RangeError(`exploration lease must be ≥ 0 ms, got ${leaseMs}`);
  }

  /** Leases `endpointId` from `nowMs` for `leaseMs`. */
  take(endpointId: string, nowMs: number): void {
    this.until.set(endpointId, nowMs + this.leaseMs);
  }

  /** Whether `endpointId` is leased at `nowMs`. */
  leased(endpointId: string, nowMs: number): boolean {
    const u = this.until.get(endpointId);
    if (u === undefined) return false;
    if (nowMs < u) return true;
    this.until.delete(endpointId);
    return false;
  }

  /** Ends the lease early (the explored route answered). */
  end(endpointId: string): void {
    this.until.delete(endpointId);
  }

  /** Leases held (expired ones included until next looked up). */
  get size(): number {
    return this.until.size;
  }
}

/** The per-process probe cap shared by every RouteWise model of a worker. */
export class ProbeGate {
  private inFlightCount = 0;
  private cap: number;

  /** @param limit probes in flight at most (integer ≥ 1). */
  constructor(limit = 1) {
    if (!(Number.isInteger(limit) && limit >= 1)) throw new RangeError(`probe limit must be an integer ≥ 1, got ${limit}`);
    this.cap = limit;
  }

  /** Lowers (or raises) the cap: the smallest any model asks for wins when called per model with `Math.min`. Applies to probes not yet started. */
  setLimit(limit: number): void {
    if (!(Number.isInteger(limit) && limit >= 1)) throw new RangeError(`probe limit must be an integer ≥ 1, got ${limit}`);
    this.cap = limit;
  }

  get limit(): number {
    return this.cap;
  }

  get inFlight(): number {
    return this.inFlightCount;
  }

  /** Takes a probe slot if one is free. */
  tryAcquire(): boolean {
    if (this.inFlightCount >= this.cap) return false;
    this.inFlightCount++;
    return true;
  }

  /** Returns a probe slot. @throws Error when none is held (a driver bug). */
  release(): void {
    if (this.inFlightCount <= 0) throw new Error('probe gate: release without a probe in flight');
    this.inFlightCount--;
  }
}

/** Which idle route of one model to probe next, and when. */
export class ProbeScheduler {
  private lastRoundMs = Number.NEGATIVE_INFINITY;
  private readonly probing = new Set<string>();

  /**
   * @param idleMs a route is probed after this long without an observation, ms.
   * @param intervalMs at most one probe round per this long, ms.
   */
  constructor(readonly idleMs: number, readonly intervalMs: number) {
    if (!(idleMs > 0) || !(intervalMs > 0)) throw new RangeError('probe idle time and interval must be > 0 ms');
  }

  /**
   * The route to probe at `nowMs`, or null: the route idle longest (ties: first listed) among those
   * idle ≥ idleMs and not already probed, when a round is due and `gate` grants a slot (which the
   * caller returns through `finished`).
   * @param lastObservedMs time of each route's latest observation (−∞ if never).
   */
  due(nowMs: number, endpointIds: readonly string[], lastObservedMs: (endpointId: string) => number, gate: ProbeGate): string | null {
    if (nowMs - this.lastRoundMs < this.intervalMs) return null;
    let best: string | null = null;
    let bestIdle = -1;
    for (const id of endpointIds) {
      if (this.probing.has(id)) continue;
      const idle = nowMs - lastObservedMs(id);
      if (idle >= this.idleMs && idle > bestIdle) {
        best = id;
        bestIdle = idle;
      }
    }
    if (best === null || !gate.tryAcquire()) return null;
    this.lastRoundMs = nowMs;
    this.probing.add(best);
    return best;
  }

  /** The probe of `endpointId` ended; returns its gate slot. No-op for a route not being probed. */
  finished(endpointId: string, gate: ProbeGate): void {
    if (!this.probing.delete(endpointId)) return;
    gate.release();
  }

  /** Routes with a probe in flight. */
  get inFlight(): number {
    return this.probing.size;
  }
}
