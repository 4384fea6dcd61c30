/**
 * Timing of a coalesced decode run, shared by the vLLM and SGLang replica models: k decode
 * steps of an unchanged batch, where every step adds one token of context to each sequence.
 * Step j (0-based) therefore sees `decodeContextTokens + j·decodeSeqs`. Summing the step times
 * this way is exactly what per-step simulation would produce, which is why coalescing is
 * bit-identical (test/simulator/engine).
 */
import type { BatchShape, StepTimeModel } from './step-time.ts';

/**
 * Walks a decode run of up to `steps` steps starting at `startMs` and stops after the first step
 * whose end is ≥ `untilMs` (pass Infinity for the whole run). `shape` is restored before return.
 * @returns the number of steps walked and the end time of the last one (ms, virtual clock).
 */
export function walkDecodeRun(
  stepTime: StepTimeModel,
  shape: BatchShape,
  startMs: number,
  steps: number,
  untilMs: number,
): { steps: number; endMs: number } {
  const base = shape.decodeContextTokens;
  let endMs = startMs;
  let j = 0;
  while (j < steps) {
    shape.decodeContextTokens = base + j * shape.decodeSeqs;
    endMs += stepTime.stepMs(shape);
    j++;
    if (endMs >= untilMs) break;
  }
  shape.decodeContextTokens = base;
  return { steps: j, endMs };
}

/**
 * Writes the end time of every step of a decode run into `ends[0..steps-1]` (ms): the values
 * `walkDecodeRun` passes through, bit for bit (the same additions in the same order), through the
 * step-time model's own `decodeRunEnds` when it has one. `shape` is restored before return.
 * @throws RangeError when `ends` is shorter than `steps`.
 */
export function fillDecodeRunEnds(stepTime: StepTimeModel, shape: BatchShape, startMs: number, steps: number, ends: Float64Array): void {
  if (ends.length < steps) throw new RangeError(`decode run of ${steps} steps needs ${steps} slots, got ${ends.length}`);
  if (stepTime.decodeRunEnds) {
    stepTime.decodeRunEnds(shape, startMs, steps, ends);
    return;
  }
  const base = shape.decodeContextTokens;
  let endMs = startMs;
  for (let j = 0; j < steps; j++) {
    shape.decodeContextTokens = base + j * shape.decodeSeqs;
    endMs += stepTime.stepMs(shape);
    ends[j] = endMs;
  }
  shape.decodeContextTokens = base;
}

/**
 * Steps of a run (with step ends `ends`, nondecreasing) that `walkDecodeRun(…, untilMs)` walks:
 * up to and including the first whose end is ≥ `untilMs`, at most `steps`. Binary search.
 */
export function cutDecodeRun(ends: Float64Array, steps: number, untilMs: number): number {
  let lo = 0;
  let hi = steps;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (ends[mid]! >= untilMs) hi = mid;
    else lo = mid + 1;
  }
  return lo < steps ? lo + 1 : steps;
}

/** Longest coalesced decode run, in steps (the size of a run's step-end buffer). */
export const MAX_COALESCED_STEPS = 4096;

/**
 * Steps until the first of `reqs` has produced its last token: the minimum of output − generated,
 * capped at {@link MAX_COALESCED_STEPS} (a run longer than that is split into several).
 */
export function stepsUntilFirstFinish(reqs: readonly { readonly output: number; readonly generated: number }[]): number {
  let k = MAX_COALESCED_STEPS;
  for (let i = 0; i < reqs.length; i++) {
    const left = reqs[i]!.output - reqs[i]!.generated;
    if (left < k) k = left;
  }
  return k;
}

/**
 * The coalesced decode run in flight on one replica, shared by the vLLM and SGLang models: how
 * many decode steps the step in flight stands for (1 = an ordinary step) and every one of their
 * end times, so an arrival can cut the run at the first step boundary at or after it
 * (`EngineModel.interrupt`). Allocates its buffer once.
 */
export class DecodeRun {
  /** Decode steps in the run in flight (1 = an ordinary step). */
  steps = 1;
  /** End time of each step of the run (ms; the first `steps` are valid). */
  readonly ends = new Float64Array(MAX_COALESCED_STEPS);

  /**
   * Start a run of `k` decode steps of `shape` at `startMs` (`fillDecodeRunEnds`).
   * @returns the end of its last step (ms).
   */
  start(stepTime: StepTimeModel, shape: BatchShape, startMs: number, k: number): number {
    this.steps = k;
    fillDecodeRunEnds(stepTime, shape, startMs, k, this.ends);
    return this.ends[k - 1]!;
  }

  /** Steps of the run that per-step simulation would have started by `nowMs` (the one in flight included). */
  stepsThrough(nowMs: number): number {
    return cutDecodeRun(this.ends, this.steps, nowMs);
  }

  /**
   * Cut the run at its first step boundary ≥ `nowMs`. `settle`, when given, is called first with
   * the steps per-step scheduling would have started by then (so a replica can make the side
   * effects of those steps), also when nothing is cut.
   * @returns the new end of the step in flight, or null when the run is an ordinary step or ends
   *   at that boundary anyway.
   */
  cut(nowMs: number, settle?: (steps: number) => void): number | null {
    if (this.steps <= 1) return null;
    const steps = cutDecodeRun(this.ends, this.steps, nowMs);
    settle?.(Math.min(steps, this.steps));
    if (steps >= this.steps) return null;
    this.steps = steps;
    return this.ends[steps - 1]!;
  }

  /** The run's step count, leaving an ordinary step (1) for the next. */
  take(): number {
    const k = this.steps;
    this.steps = 1;
    return k;
  }
}
