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
