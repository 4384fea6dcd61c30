/**
 * Session affinity (seed 000, "会话亲和"): (caller, model) → the endpoint the caller's last
 * request was routed to, so a conversation stays where its prefix cache is warm.
 *
 * A pin lives `ttlMs` after its last use (sliding), but never past `createdAtMs + maxAgeMs`
 * (refreshing does not extend that; 0 = no cap), so a caller that never pauses still gets a
 * fresh weighted choice once a day and weight changes reach it. Pins are spread over the day
 * because each counts from its own creation. Expired pins are removed when looked up, and swept
 * lazily once the table holds more than the sweep threshold; the threshold then doubles with the
 * live size so a large live table is not rescanned on every insert.
 *
 * The table decides nothing: the lifecycle looks up, refreshes, re-pins and drops (on an error
 * of the pinned endpoint, when it is no longer admissible, or when its backlog passes the
 * ceiling). In-process state: lost on restart, one table per gateway process.
 */
import type { RoutingSettings } from '../config/routing-settings.ts';

/** One pin, as data. Times are ms on the caller's clock. */
export interface AffinityPin {
  readonly endpointId: string;
  /** When the pin was (re)created; the max age counts from here. */
  readonly createdAtMs: number;
  /** The pin is valid while `nowMs < expiresAtMs`. */
  readonly expiresAtMs: number;
}

interface MutablePin {
  endpointId: string;
  createdAtMs: number;
  expiresAtMs: number;
}

/** The pins of one process, keyed by caller key and model id. */
export class AffinityTable {
  /** modelId → callerKey → pin. Nested so lookups need no key concatenation. */
  private readonly byModel = new Map<string, Map<string, MutablePin>>();
  private readonly ttlMs: number;
  private readonly maxAgeMs: number;
  private readonly sweepThreshold: number;
  private count = 0;
  private nextSweepAt: number;

  /** `settings` must be validated (`resolveRoutingSettings`). */
  constructor(settings: Pick<RoutingSettings, 'affinityTtlSec' | 'affinityMaxAgeSec' | 'affinitySweepThreshold'>) {
    this.ttlMs = settings.affinityTtlSec * 1000;
    this.maxAgeMs = settings.affinityMaxAgeSec * 1000;
    this.sweepThreshold = settings.affinitySweepThreshold;
    this.nextSweepAt = this.sweepThreshold;
  }

  /** Pins held (expired ones included until looked up or swept). */
  get size(): number {
    return this.count;
  }

  /** The valid pin of (callerKey, modelId) at `nowMs`, or null (an expired one is removed). */
  lookup(callerKey: string, modelId: string, nowMs: number): AffinityPin | null {
    const m = this.byModel.get(modelId);
    const p = m?.get(callerKey);
    if (p === undefined) return null;
    if (nowMs < p.expiresAtMs) return p;
    m!.delete(callerKey);
    this.count--;
    return null;
  }

  /**
   * Slides the TTL of a valid pin after a request used it: `min(nowMs + ttl, createdAt + maxAge)`.
   * No-op when there is no pin.
   */
  refresh(callerKey: string, modelId: string, nowMs: number): void {
    const p = this.byModel.get(modelId)?.get(callerKey);
    if (p !== undefined) p.expiresAtMs = this.expiry(p.createdAtMs, nowMs);
  }

  /**
   * `refresh` for a pin just returned by `lookup` (same call stack, no other table call in
   * between): slides it without looking it up again. Hot path of an affinity hit.
   */
  slide(pin: AffinityPin, nowMs: number): void {
    const p = pin as MutablePin;
    p.expiresAtMs = this.expiry(p.createdAtMs, nowMs);
  }

  /** Pins (callerKey, modelId) to `endpointId` from `nowMs`, replacing any pin (a new max age starts). */
  pin(callerKey: string, modelId: string, endpointId: string, nowMs: number): void {
    let m = this.byModel.get(modelId);
    if (m === undefined) {
      m = new Map();
      this.byModel.set(modelId, m);
    }
    const p = m.get(callerKey);
    if (p !== undefined) {
      p.endpointId = endpointId;
      p.createdAtMs = nowMs;
      p.expiresAtMs = this.expiry(nowMs, nowMs);
      return;
    }
    m.set(callerKey, { endpointId, createdAtMs: nowMs, expiresAtMs: this.expiry(nowMs, nowMs) });
    if (++this.count > this.nextSweepAt) this.sweep(nowMs);
  }

  /** Drops the pin of (callerKey, modelId) if it points at `endpointId`; returns whether it did. */
  dropIfPinnedTo(callerKey: string, modelId: string, endpointId: string): boolean {
    const m = this.byModel.get(modelId);
    const p = m?.get(callerKey);
    if (p === undefined || p.endpointId !== endpointId) return false;
    m!.delete(callerKey);
    this.count--;
    return true;
  }

  /** Removes every pin expired at `nowMs`; returns how many. Called lazily by `pin`. */
  sweep(nowMs: number): number {
    let dropped = 0;
    for (const m of this.byModel.values()) {
      for (const [k, p] of m) {
        if (nowMs >= p.expiresAtMs) {
          m.delete(k);
          dropped++;
        }
      }
    }
    this.count -= dropped;
    this.nextSweepAt = Math.max(this.sweepThreshold, 2 * this.count);
    return dropped;
  }

  /**
   * Checks the table; for tests and the simulator's checked mode.
   * @throws Error describing the first violation: a pin that expires at or before its creation
   *   or (with a max age) after `createdAt + maxAge`; the size counter different from the pins
   *   held; more pins than the current sweep bound.
   */
  invariants(): void {
    let n = 0;
    for (const [model, m] of this.byModel) {
      for (const [k, p] of m) {
        n++;
        if (!(p.expiresAtMs > p.createdAtMs)) throw new Error(`affinity (${k}, ${model}): expires at ${p.expiresAtMs} ≤ created ${p.createdAtMs}`);
        if (this.maxAgeMs > 0 && p.expiresAtMs > p.createdAtMs + this.maxAgeMs) {
          throw new Error(`affinity (${k}, ${model}): expires at ${p.expiresAtMs}, past its max age (created ${p.createdAtMs})`);
        }
      }
    }
    if (n !== this.count) throw new Error(`affinity table: counted ${this.count} pins, holds ${n}`);
    if (this.count > this.nextSweepAt) throw new Error(`affinity table: ${this.count} pins above the sweep bound ${this.nextSweepAt}`);
  }

  private expiry(createdAtMs: number, nowMs: number): number {
    const sliding = nowMs + this.ttlMs;
    return this.maxAgeMs > 0 ? Math.min(sliding, createdAtMs + this.maxAgeMs) : sliding;
  }
}
