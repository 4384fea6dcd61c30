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
