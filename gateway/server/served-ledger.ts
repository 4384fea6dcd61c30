/**
 * Which endpoint served each of the last requests this gateway finished, by request id
 * (`RunningGateway.servedEndpoint`). The client is told only what the seed allows (a
 * multi-target alias names its direct model in `x-switchyard-served-by`; other models name
 * nothing), so tests and operators who need the endpoint itself ask here. Bounded: the oldest
 * entry goes when `capacity` is reached.
 */

/** Finished requests' serving endpoints, newest `capacity` kept. */
export class ServedLedger {
  private readonly served = new Map<string, string | null>();
  private readonly waiters = new Map<string, Array<(endpointId: string | null) => void>>();

  /** @param capacity entries kept (> 0). */
  constructor(private readonly capacity = 4096) {
    if (!(capacity > 0)) throw new Error(`ServedLedger capacity must be > 0, got ${capacity}`);
  }

  /** Records that request `requestId` is over, served by `endpointId` (null: no upstream answer served it). */
  record(requestId: string, endpointId: string | null): void {
    this.served.delete(requestId);
    this.served.set(requestId, endpointId);
    if (this.served.size > this.capacity) this.served.delete(this.served.keys().next().value!);
    const w = this.waiters.get(requestId);
    if (w) {
      this.waiters.delete(requestId);
      for (const resolve of w) resolve(endpointId);
    }
  }

  /**
   * The endpoint id that served request `requestId`, or null when it ended without one; waits
   * for a request still in flight (or not yet arrived) to end.
   */
  endpointOf(requestId: string): Promise<string | null> {
    if (this.served.has(requestId)) return Promise.resolve(this.served.get(requestId)!);
    return new Promise((resolve) => {
      const w = this.waiters.get(requestId);
      if (w) w.push(resolve);
      else this.waiters.set(requestId, [resolve]);
    });
  }

  /** Entries held (≤ capacity). */
  get size(): number {
    return this.served.size;
  }
}
