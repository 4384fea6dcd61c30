/**
 * The fitted constants of the engine models — the only numbers of the step-time and API-server
 * models not read from measured operator tables or engine defaults:
 *  - per step and per sequence in the step (ms): the CPU side of an iteration (scheduling, input
 *    preparation, sampling, output processing);
 *  - `elementwiseScale`: the fraction of the tables' eager elementwise time a CUDA-graph step
 *    still pays where the graph and the engine's fused kernels remove launch gaps and passes
 *    (`operator-step-time.ts`);
 *  - `eagerElementwiseScale`: the same for steps outside a CUDA graph (prefill), below 1 only where
 *    the engine fuses the ops at every token count (vLLM's torch.compile; fitted for vLLM only);
 *  - the API-server terms (`api-server.ts`): per request and per prompt token, added to TTFT.
 * `switchyard validate-sim --fit` fits them per validation group (engine × model × dtype × TP) on a
 * seeded half of the group's measured points and reports the errors on the other half; the
 * engine-level entry (used for any other model or TP) is the median over that engine's groups.
 * The fit and its provenance are stored in `calibration.json` beside this file.
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import type { ApiServerTerm } from './api-server.ts';

/** Path of the committed calibration file. */
export const CALIBRATION_PATH = join(dirname(fileURLToPath(import.meta.url)), 'calibration.json');

const ApiServerCalibrationSchema = z
  .object({
    requestMs: z.number().finite().nonnegative(),
    perPromptTokenMs: z.number().finite().nonnegative(),
    perOutputTokenMs: z.number().finite().nonnegative(),
  })
  .strict();

const EngineCalibrationSchema = z
  .object({
    /** Fixed ms per non-empty step. */
    stepOverheadMs: z.number().finite().nonnegative(),
    /** ms per sequence in the step. */
    perSequenceOverheadMs: z.number().finite().nonnegative(),
    /** Fraction (0..1] of eager elementwise time a CUDA-graph step pays. Default 1. */
    elementwiseScale: z.number().gt(0).max(1).default(1),
    /** Fraction (0..1] of eager elementwise time a step outside a CUDA graph (prefill) pays. Default 1. */
    eagerElementwiseScale: z.number().gt(0).max(1).default(1),
    /** API-server terms, ms. Default none. */
    apiServer: ApiServerCalibrationSchema.default({ requestMs: 0, perPromptTokenMs: 0, perOutputTokenMs: 0 }),
    /** Validation group(s) the constants were fitted on. */
    fittedOn: z.string(),
    /** How they were fitted. */
    method: z.string(),
  })
  .strict();

/** Calibration of one engine (or one engine × model × dtype × TP group). */
export type EngineCalibration = z.infer<typeof EngineCalibrationSchema>;

const ClientCalibrationSchema = z
  .object({
    /** Client cohorts of the data source's benchmark client (`ClosedLoopSpec.startCohorts`). */
    startCohorts: z.number().int().min(1),
    /** Validation points it was fitted on. */
    fittedOn: z.string(),
    /** How it was fitted. */
    method: z.string(),
  })
  .strict();

/** A fitted benchmark-client parameter of one validation data source (family). */
export type ClientCalibration = z.infer<typeof ClientCalibrationSchema>;

const CalibrationFileSchema = z
  .object({
    vllm: EngineCalibrationSchema,
    sglang: EngineCalibrationSchema,
    /** Per group, keyed by {@link calibrationGroupKey}. */
    groups: z.record(z.string(), EngineCalibrationSchema).default({}),
    /**
     * Benchmark clients of validation data sources without harness provenance, keyed by family
     * (`validation.ts`); used by `validate-sim` only, never by a simulated experiment.
     */
    clients: z.record(z.string(), ClientCalibrationSchema).default({}),
  })
  .strict();

/** The calibration file: one entry per engine, and per fitted group. */
export type CalibrationFile = z.infer<typeof CalibrationFileSchema>;

/** Key of a group entry: `engine/model/dtype/tpN`, e.g. `vllm/qwen3-32b/bfloat16/tp4`. */
export function calibrationGroupKey(engine: 'vllm' | 'sglang', model: string, dtype: string, tp: number): string {
  return `${engine}/${model}/${dtype}/tp${tp}`;
}

let cached: CalibrationFile | null = null;

/** Forget the cached committed calibration (after `validate-sim --fit` rewrote it). */
export function clearCalibrationCache(): void {
  cached = null;
}

const ZERO: EngineCalibration = {
  stepOverheadMs: 0,
  perSequenceOverheadMs: 0,
  elementwiseScale: 1,
  eagerElementwiseScale: 1,
  apiServer: { requestMs: 0, perPromptTokenMs: 0, perOutputTokenMs: 0 },
  fittedOn: 'none',
  method: 'no calibration file',
};

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
    return { vllm: ZERO, sglang: ZERO, groups: {}, clients: {} };
  }
  const r = CalibrationFileSchema.safeParse(raw);
  if (!r.success) throw new Error(`${path}: ${r.error.issues.map((i) => `field ${i.path.join('.')}: ${i.message}`).join('; ')}`);
  if (path === CALIBRATION_PATH) cached = r.data;
  return r.data;
}

/**
 * The constants for one replica: the group entry when that engine × model × dtype × TP was fitted,
 * else the engine-level entry.
 */
export function calibrationFor(engine: 'vllm' | 'sglang', model: string, dtype: string, tp: number, cal: CalibrationFile = loadCalibration()): EngineCalibration {
  return cal.groups[calibrationGroupKey(engine, model, dtype, tp)] ?? cal[engine];
}

/** The API-server term of a calibration entry. */
export function calibratedApiServer(c: EngineCalibration): ApiServerTerm {
  return { requestMs: c.apiServer.requestMs, perPromptTokenMs: c.apiServer.perPromptTokenMs, perOutputTokenMs: c.apiServer.perOutputTokenMs };
}
