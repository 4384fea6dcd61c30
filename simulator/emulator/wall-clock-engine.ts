/**
 * Runs a simulated replica (`EngineModel`, e.g. `VllmReplica`) in wall-clock time: the same
 * step model the simulator advances on its virtual clock, advanced here by timers. The engine's
 * clock is "engine ms"; wall ms = engine ms × `latencyScale` (1 = the profile's real speed).
 * The emulator is a driver, so timers and `performance.now()` are fine here.
 *
 * Per-token timing. The engine model reports `first_token` and `finished` only; a decoding
 * request produces one token per step (vLLM V1 schedules every running decode each step, before
 * prefill chunks), so each step that ends while a request is decoding yields one token for it.
 * Tokens a request would lose to a recompute preemption are not modelled: a preempted request
 * keeps producing at the step rate, capped so that its last token still comes at `finished`.
 * A late timer delays the step that ends there and every later one (engine time is re-anchored
 * at each step end), rather than bunching the following tokens to catch up.
 */
import type { EngineEvent, EngineModel } from '../engine/engine-model.ts';

/** What the engine tells one request's owner. */
export interface EngineListener {
  /** Output token `index` (0-based) was produced. `cachedTokens` is set on index 0. */
  token(index: number, cachedTokens: number): void;
  /** The last token was produced (called after its `token`). */
  finished(): void;
  /** The engine refused the request (prompt + output cannot fit in the KV cache). */
  rejected(): void;
}

interface Live {
  readonly listener: EngineListener;
  readonly outputTokens: number;
  sent: number;
  decoding: boolean;
}

/** One replica on a wall clock. Not thread-safe (Node). */
export class WallClockEngine {
  private readonly live = new Map<number, Live>();
  private nextId = 1;
  private timer: NodeJS.Timeout | null = null;
  private stepEndMs: number | null = null;
  /** Engine time = anchorEngineMs + (wall − anchorWallMs) / scale. */
  private anchorWallMs: number;
  private anchorEngineMs = 0;
  private scale: number;
  private readonly events: EngineEvent[] = [];
  private readonly emit = (e: EngineEvent): void => {
    this.events.push(e);
  };

  /**
   * @param engine a fresh replica (owned by this clock from now on).
   * @param latencyScale wall ms per engine ms, > 0.
   * @param wallNow monotonic wall clock in ms (default `performance.now`).
   */
  constructor(
    private readonly engine: EngineModel,
    latencyScale: number,
    private readonly wallNow: () => number = () => performance.now(),
  ) {
    this.scale = checkScale(latencyScale);
    this.anchorWallMs = wallNow();
  }

  /** Changes the latency scale from now on (engine time stays continuous). */
  setLatencyScale(latencyScale: number): void {
    const engineNow = this.engineNow();
    this.anchorWallMs = this.wallNow();
    this.anchorEngineMs = engineNow;
    this.scale = checkScale(latencyScale);
    if (this.stepEndMs !== null) this.arm(this.stepEndMs);
  }

  /**
   * Submits a request; its listener hears every token, then `finished` (or `rejected`).
   * `rejected` is called synchronously, before `submit` returns.
   * @returns an id for `cancel`.
   */
  submit(inputTokens: number, outputTokens: number, hashIds: readonly number[] | null, listener: EngineListener): number {
    const id = this.nextId++;
    const out = Math.max(1, Math.floor(outputTokens));
    this.live.set(id, { listener, outputTokens: out, sent: 0, decoding: false });
    this.interruptRun();
    const end = this.engine.enqueue({ attemptId: id, inputTokens: Math.max(0, Math.floor(inputTokens)), outputTokens: out, hashIds }, this.engineNow(), this.emit);
    this.drain(new Set());
    if (end !== null) this.arm(end);
    return id;
  }

  /** Drops a request wherever it is; its listener hears nothing more. Unknown ids are ignored. */
  cancel(id: number): void {
    if (!this.live.delete(id)) return;
    this.interruptRun();
    this.engine.cancel(id);
  }

  /**
   * A replica that coalesces decode steps into runs must be cut at a step boundary before it is
   * handed a request or a cancel (`EngineModel.interrupt`); the timer moves to that boundary.
   */
  private interruptRun(): void {
    // Read structurally: `interrupt` is optional and newer than the EngineModel seam itself.
    const engine = this.engine as EngineModel & { interrupt?(nowMs: number): number | null };
    if (this.stepEndMs === null || !engine.interrupt) return;
    const cut = engine.interrupt(this.engineNow());
    if (cut !== null) this.arm(cut);
  }

  /** Requests in the engine (queued or running). */
  get size(): number {
    return this.live.size;
  }

  /** The engine's load (running / waiting / KV usage). */
  load(): ReturnType<EngineModel['load']> {
    return this.engine.load();
  }

  /** Stops the step timer; requests still inside hear nothing more. */
  close(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    for (const id of [...this.live.keys()]) this.cancel(id);
  }

  private engineNow(): number {
    return this.anchorEngineMs + (this.wallNow() - this.anchorWallMs) / this.scale;
  }

  private arm(stepEndMs: number): void {
    this.stepEndMs = stepEndMs;
    if (this.timer) clearTimeout(this.timer);
    const delayMs = Math.max(0, (stepEndMs - this.engineNow()) * this.scale);
    this.timer = setTimeout(this.onStepEnd, delayMs);
  }

  private readonly onStepEnd = (): void => {
    this.timer = null;
    const end = this.stepEndMs!;
    this.stepEndMs = null;
    // A timer that fired late stretches engine time instead of compressing the next steps: the
    // step ends now, so inter-token gaps stay at the modelled step time (plus timer slack).
    this.anchorWallMs = this.wallNow();
    this.anchorEngineMs = end;
    // Requests decoding before this step each get one token from it.
    const decodingBefore = new Set<number>();
    for (const [id, l] of this.live) if (l.decoding) decodingBefore.add(id);
    const next = this.engine.completeStep(end, this.emit);
    this.drain(decodingBefore);
    if (next !== null) this.arm(next);
  };

  /** Delivers the engine's events, then one step token to each request decoding before the step. */
  private drain(decodingBefore: Set<number>): void {
    const finishedNow = new Set<number>();
    for (const e of this.events) {
      const l = this.live.get(e.attemptId);
      if (!l) continue;
      if (e.kind === 'first_token') {
        l.decoding = true;
        l.sent = 1;
        l.listener.token(0, e.cachedTokens);
      } else if (e.kind === 'finished') {
        finishedNow.add(e.attemptId);
        this.live.delete(e.attemptId);
        while (l.sent < l.outputTokens) l.listener.token(l.sent++, 0);
        l.listener.finished();
      } else {
        this.live.delete(e.attemptId);
        l.listener.rejected();
      }
    }
    this.events.length = 0;
    for (const id of decodingBefore) {
      if (finishedNow.has(id)) continue;
      const l = this.live.get(id);
      if (l && l.sent < l.outputTokens - 1) l.listener.token(l.sent++, 0);
    }
  }
}

function checkScale(s: number): number {
  if (!(s > 0) || !Number.isFinite(s)) throw new RangeError(`latency_scale must be a finite number > 0, got ${s}`);
  return s;
}
