/**
 * Where the gateway keeps the responses of `/v1/responses` that asked to be stored (`store` not
 * false): the response as its client saw it and the conversation items that led to it, so that a
 * later turn naming it in `previous_response_id` can be sent whole to any upstream, and
 * `GET /v1/responses/{id}` can return it. The interface is asynchronous so that a shared store
 * (the control plane's database, `store/response-records.ts`, used when `store:` is configured)
 * can stand behind it; `MemoryResponseStore` keeps them in this process, bounded in count and age.
 */

/** One stored response. */
export interface StoredResponse {
  /** The gateway's response id (`response-ids.ts`). */
  readonly id: string;
  /** The response object as the client received it (status, output, usage, …). */
  readonly response: Record<string, unknown>;
  /**
   * The input items of the turn that produced it, the earlier turns' included (their inputs and
   * outputs, oldest first): with `response.output` after them, the context of the next turn.
   */
  readonly input: readonly unknown[];
  /** The endpoint id that served it. */
  readonly endpointId: string;
}

/** A store of responses by id. */
export interface ResponseStore {
  /** The response stored under `id`, or null (never stored, expired, evicted). */
  get(id: string): Promise<StoredResponse | null>;
  /** Stores `r` under `r.id`, replacing any earlier one. */
  put(r: StoredResponse): Promise<void>;
}

/** Bounds of a `MemoryResponseStore`. */
export interface MemoryStoreLimits {
  /** Responses kept at most; the oldest is dropped first. */
  readonly maxEntries: number;
  /** A response is dropped this long after it was stored, ms. */
  readonly ttlMs: number;
}

/** Default bounds: 10,000 responses for at most an hour. */
export const DEFAULT_MEMORY_LIMITS: MemoryStoreLimits = { maxEntries: 10_000, ttlMs: 3_600_000 };

/**
 * The in-process store: a Map in insertion order, the oldest evicted past `maxEntries`, entries
 * older than `ttlMs` on `now`'s clock treated as gone. It reaches only this process (one worker
 * thread): a gateway with several workers answers a follow-up turn from another worker as a
 * stale id, unless the control plane's store is configured.
 */
export class MemoryResponseStore implements ResponseStore {
  private readonly entries = new Map<string, { r: StoredResponse; atMs: number }>();

  /** @throws Error when a bound is not a positive number. */
  constructor(private readonly limits: MemoryStoreLimits = DEFAULT_MEMORY_LIMITS, private readonly now: () => number = Date.now) {
    if (!(limits.maxEntries >= 1) || !(limits.ttlMs > 0)) throw new Error(`response store bounds must be positive (maxEntries ${limits.maxEntries}, ttlMs ${limits.ttlMs})`);
  }

  /** Responses held now (expired ones not yet swept included). */
  get size(): number {
    return this.entries.size;
  }

  get(id: string): Promise<StoredResponse | null> {
    const e = this.entries.get(id);
    if (e === undefined) return Promise.resolve(null);
    if (this.now() - e.atMs > this.limits.ttlMs) {
      this.entries.delete(id);
      return Promise.resolve(null);
    }
    return Promise.resolve(e.r);
  }

  put(r: StoredResponse): Promise<void> {
    this.entries.delete(r.id);
    this.entries.set(r.id, { r, atMs: this.now() });
    while (this.entries.size > this.limits.maxEntries) {
      const oldest = this.entries.keys().next().value as string;
      this.entries.delete(oldest);
    }
    return Promise.resolve();
  }
}
