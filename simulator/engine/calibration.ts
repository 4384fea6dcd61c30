/**
 * The per-step overhead constants of each engine — the only numbers of the step-time model not
 * read from measured operator tables. They stand for the CPU side of an iteration (scheduling,
 * input preparation, sampling, output processing) and are fitted by `switchyard validate-sim --fit`
 * on one validation group per engine (the other groups are held out); the fit and its provenance
 * are stored in `calibration.json` beside this file.
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';

/** Path of the committed calibration file. */
export const CALIBRATION_PATH = join(dirname(fileURLToPath(import.meta.url)), 'calibration.json');

const EngineCalibrationSchema = z
  .object({
    /** Fixed ms per non-empty step. */
    stepOverheadMs: z.number().finite().nonnegative(),
    /** ms per sequence in the step. */
    perSequenceOverheadMs: z.number().finite().nonnegative(),
    /** Validation group(s) the constants were fitted on. */
    fittedOn: z.string(),
    /** How they were fitted. */
    method: z.string(),
  })
  .strict();

/** Calibration of one engine. */
export type EngineCalibration = z.infer<typeof EngineCalibrationSchema>;

const CalibrationFileSchema = z.object({ vllm: EngineCalibrationSchema, sglang: EngineCalibrationSchema }).strict();

/** The calibration file: one entry per engine. */
export type CalibrationFile = z.infer<typeof CalibrationFileSchema>;

let cached: CalibrationFile | null = null;

/** Forget the cached committed calibration (after `validate-sim --fit` rewrote it). */
export function clearCalibrationCache(): void {
  cached = null;
}

/**
 * Load `calibration.json` (cached). A missing file means zero overheads.
 * @throws Error when the file exists but a field is invalid (naming it).
 */
export function loadCalibration(path: string = CALIBRATION_PATH): CalibrationFile {
  if (cached && path === CALIBRATION_PATH) return cached;
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, 'utf8'));
  } catch {
    const zero = { stepOverheadMs: 0, perSequenceOverheadMs: 0, fittedOn: 'none', method: 'no calibration file' };
    return { vllm: zero, sglang: zero };
  }
  const r = CalibrationFileSchema.safeParse(raw);
  if (!r.success) throw new Error(`${path}: ${r.error.issues.map((i) => `field ${i.path.join('.')}: ${i.message}`).join('; ')}`);
  if (path === CALIBRATION_PATH) cached = r.data;
  return r.data;
}
