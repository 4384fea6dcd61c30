/**
 * A local replica as the loop drives it: an `EngineModel` plus what faults do to a machine —
 * a crash (the engine is replaced by a fresh one: empty batch, cold prefix cache) and a slow
 * window (every step takes k× as long).
 *
 * Slowness is a time dilation: the engine runs on its own clock τ, which advances at 1/k of the
 * loop's virtual clock t while a `slow` window is open (τ = τ₀ + (t − t₀)/k, re-anchored at every
 * change of k). A step that straddles a change ends when its remaining inner time has elapsed
 * under the new k, so its end is rescheduled. The engine never sees k and stays deterministic.
 * Stale step events (after a crash or a reschedule) are recognised by a generation number.
 *
 * A replica that coalesces decode steps into runs (`EngineModel.interrupt`) has its run cut at
 * the next step boundary before every enqueue and cancel, as the seam requires; the moved step
 * end is returned for the loop to schedule.
 */
import type { KvEvent } from '../core/index.ts';
import type { EngineEvent, EngineModel, EngineRequest } from './engine/engine-model.ts';

/** One replica endpoint. Times in and out are the loop's virtual ms. */
export class EngineEndpoint {
  /** Bumped whenever the scheduled step end becomes stale; step events carry it. */
  generation = 0;
  private factor = 1;
  private t0 = 0;
  private tau0 = 0;
  private lastTau = 0;
  /** Inner end time of the step in flight, or null when the engine is idle. */
  private pendingTau: number | null = null;
  private retiredLookup = 0;
  private retiredHits = 0;
  private kvSink: ((e: KvEvent) => void) | null = null;

  constructor(
    private engine: EngineModel,
    private readonly makeEngine: () => EngineModel,
  ) {}

  private tau(t: number): number {
    const tau = this.factor === 1 && this.t0 === this.tau0 ? t : this.tau0 + (t - this.t0) / this.factor;
    // Guard against float round-off taking the inner clock backwards.
    return tau < this.lastTau ? this.lastTau : tau;
  }

  private outer(tau: number): number {
    return this.factor === 1 && this.t0 === this.tau0 ? tau : this.t0 + (tau - this.tau0) * this.factor;
  }

  /** Cuts a coalesced run in flight at the first step boundary ≥ nowMs; returns the moved end, or null. */
  private interrupt(nowMs: number): number | null {
    if (this.pendingTau === null || this.engine.interrupt === undefined) return null;
    const cut = this.engine.interrupt(this.tau(nowMs));
    if (cut === null) return null;
    this.pendingTau = cut;
    this.generation++;
    return this.outer(cut);
  }

  /**
   * Hands `req` to the engine at `nowMs`. Returns a step end the loop must schedule (with the
   * current generation) — a step the request started, or a coalesced run cut short — or null.
   */
  enqueue(req: EngineRequest, nowMs: number, emit: (e: EngineEvent) => void): number | null {
    const moved = this.interrupt(nowMs);
    const tau = this.tau(nowMs);
    this.lastTau = tau;
    const end = this.engine.enqueue(req, tau, emit);
    if (end === null) return moved;
    this.pendingTau = end;
    return this.outer(end);
  }

  /** Ends the step in flight (scheduled by this endpoint for `nowMs`); returns the next step's end, or null. */
  completeStep(nowMs: number, emit: (e: EngineEvent) => void): number | null {
    const tau = this.pendingTau;
    if (tau === null) throw new Error(`EngineEndpoint.completeStep at ${nowMs}: no step in flight`);
    this.lastTau = tau;
    const end = this.engine.completeStep(tau, emit);
    this.pendingTau = end;
    return end === null ? null : this.outer(end);
  }

  /**
   * Drops an attempt from the engine at `nowMs` (a no-op when it already left). Returns a moved
   * step end the loop must schedule (a coalesced run cut short), or null.
   */
  cancel(attemptId: number, nowMs: number): number | null {
    const moved = this.interrupt(nowMs);
    this.engine.cancel(attemptId);
    return moved;
  }

  /**
   * Changes the slow factor at `nowMs`. When a step is in flight its end moves: the generation is
   * bumped and the new end returned (the caller schedules it); null when idle or unchanged.
   * @throws RangeError unless factor is finite and > 0.
   */
  setSlowFactor(factor: number, nowMs: number): number | null {
    if (!(Number.isFinite(factor) && factor > 0)) throw new RangeError(`slow factor must be a finite number > 0, got ${factor}`);
    if (factor === this.factor) return null;
    const tau = this.tau(nowMs);
    this.t0 = nowMs;
    this.tau0 = tau;
    this.factor = factor;
    if (this.pendingTau === null) return null;
    this.generation++;
    return Math.max(nowMs, this.outer(this.pendingTau));
  }

  /**
   * Sends the engine's KV events to `sink` (when its model has them), across crashes: a crash
   * reports `cleared` and the fresh engine keeps reporting. Returns false when the engine model
   * emits no KV events.
   */
  setKvEventSink(sink: (e: KvEvent) => void): boolean {
    if (this.engine.setKvEventSink === undefined) return false;
    this.kvSink = sink;
    this.engine.setKvEventSink(sink);
    return true;
  }

  /**
   * Replaces the engine with a fresh one at `nowMs` (a crash: everything in it is lost). The
   * caller fails the attempts that were in it. The prefix-cache statistics of the old engine
   * are kept in the totals.
   */
  crash(nowMs: number): void {
    const s = this.engine.prefixCacheStats();
    this.retiredLookup += s.lookupTokens;
    this.retiredHits += s.hitTokens;
    // The fresh engine's clock starts where the old one's was.
    const tau = this.tau(nowMs);
    this.engine = this.makeEngine();
    if (this.kvSink) {
      this.kvSink({ kind: 'cleared' });
      this.engine.setKvEventSink?.(this.kvSink);
    }
    this.generation++;
    this.pendingTau = null;
    this.t0 = nowMs;
    this.tau0 = tau;
    this.lastTau = tau;
  }

  /** Load of the engine at `nowMs` (the loop's clock). */
  load(nowMs: number) {
    return this.engine.load(this.tau(nowMs));
  }

  /** Prefix-cache statistics over every engine this endpoint has run (crashed ones included). */
  prefixCacheStats(): { lookupTokens: number; hitTokens: number } {
    const s = this.engine.prefixCacheStats();
    return { lookupTokens: s.lookupTokens + this.retiredLookup, hitTokens: s.hitTokens + this.retiredHits };
  }

  /** @throws Error when the slow factor is not > 0, a pending step ends before the inner clock, or the engine's invariants fail. */
  invariants(): void {
    if (!(this.factor > 0)) throw new Error(`EngineEndpoint: slow factor ${this.factor} must be > 0`);
    if (this.pendingTau !== null && this.pendingTau < this.lastTau) throw new Error(`EngineEndpoint: step ends at inner ${this.pendingTau}, before the inner clock ${this.lastTau}`);
    this.engine.invariants();
  }
}
