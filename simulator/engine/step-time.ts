/**
 * Step (iteration) time model of one serving replica.
 *
 * A continuous-batching engine (vLLM V1, SGLang) runs one batched forward pass per step; the pass
 * mixes prefill chunks and decode tokens (vLLM V1 "chunked prefill": a step is a token budget shared
 * by both, https://docs.vllm.ai/en/latest/configuration/optimization.html). Its time is modelled as
 * linear in a few batch features, the form used by Splitwise (Patel et al., ISCA 2024, §IV: prompt
 * time ~ linear in prompt tokens, token time ~ linear in batch size) plus the attention terms that
 * grow with context:
 *
 *   stepMs = overheadMs
 *          + prefillMsPerToken      · prefillTokens
 *          + prefillAttnMsPerMPair  · prefillAttnPairs / 1e6
 *          + decodeMsPerSeq         · decodeSeqs
 *          + decodeMsPerKTokCtx     · decodeContextTokens / 1e3
 *
 * An empty batch costs 0 ms (no pass is run). Coefficients are fitted by `fit-step-time.ts`
 * and stored as JSON profiles under `simulator/engine/profiles/`, loaded by `loadStepTimeProfile`.
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';

/**
 * The shape of one step's batch. All fields are token or sequence counts (integers ≥ 0, except
 * `prefillAttnPairs`, which may be fractional).
 */
export interface BatchShape {
  /** Prompt tokens computed in this step, summed over all prefill chunks (tokens). */
  prefillTokens: number;
  /** Requests with a prefill chunk in this step (sequences). */
  prefillSeqs: number;
  /**
   * Causal query–key pairs attended by the prefill chunks: Σ over chunks of
   * `chunkTokens × (contextBeforeChunk + chunkTokens / 2)`, where `contextBeforeChunk` counts the
   * tokens already in the KV cache for that request (earlier chunks and prefix-cache hits).
   * A whole prompt of p tokens in one chunk gives p²/2; the sum is the same however it is chunked.
   */
  prefillAttnPairs: number;
  /** Requests producing one decode token in this step (sequences). */
  decodeSeqs: number;
  /** KV-cache tokens attended by the decode tokens: Σ over decode requests of their context length (tokens). */
  decodeContextTokens: number;
}

/** Predicts a step's duration from its batch. Implementations are pure and deterministic. */
export interface StepTimeModel {
  /** Duration of one forward pass over `batch`, in milliseconds (≥ 0; 0 for an empty batch). */
  stepMs(batch: BatchShape): number;
  /**
   * Optional fast path of a decode run (`decode-run.ts`): writes into `ends[j]` the end time of
   * step j of `steps` decode steps of `batch` starting at `startMs`, where step j sees
   * `decodeContextTokens + j·decodeSeqs` — bit-identical to summing `stepMs` step by step.
   * `batch` is left unchanged.
   */
  decodeRunEnds?(batch: BatchShape, startMs: number, steps: number, ends: Float64Array): void;
}

/** Coefficients of the linear step-time form (see the module doc). All are ≥ 0. */
export interface LinearStepTimeCoefficients {
  /** Fixed cost of a non-empty step: weight reads, kernel launches, sampling, scheduling (ms). */
  overheadMs: number;
  /** Cost per prefill token: the dense (MLP/projection) FLOPs (ms per token). */
  prefillMsPerToken: number;
  /** Cost of prefill attention (ms per 1e6 query–key pairs, see `BatchShape.prefillAttnPairs`). */
  prefillAttnMsPerMPair: number;
  /** Cost per decoding sequence (ms per sequence). */
  decodeMsPerSeq: number;
  /** Cost of decode attention: KV reads (ms per 1,000 context tokens). */
  decodeMsPerKTokCtx: number;
}

/** Zod schema of `LinearStepTimeCoefficients`: every coefficient a finite number ≥ 0. */
export const linearStepTimeCoefficientsSchema = z.object({
  overheadMs: z.number().finite().nonnegative(),
  prefillMsPerToken: z.number().finite().nonnegative(),
  prefillAttnMsPerMPair: z.number().finite().nonnegative(),
  decodeMsPerSeq: z.number().finite().nonnegative(),
  decodeMsPerKTokCtx: z.number().finite().nonnegative(),
});

/**
 * Build the linear step-time model (formula in the module doc).
 * @throws Error when a coefficient is negative or not finite (naming it).
 */
export function linearStepTime(coeffs: LinearStepTimeCoefficients): StepTimeModel {
  const parsed = linearStepTimeCoefficientsSchema.safeParse(coeffs);
  if (!parsed.success) throw new Error(`linearStepTime: ${formatZodError(parsed.error)}`);
  // Copy into locals: the closure is on the simulator's hot path.
  const c0 = coeffs.overheadMs;
  const cTok = coeffs.prefillMsPerToken;
  const cAttn = coeffs.prefillAttnMsPerMPair / 1e6;
  const cSeq = coeffs.decodeMsPerSeq;
  const cCtx = coeffs.decodeMsPerKTokCtx / 1e3;
  return {
    stepMs(b: BatchShape): number {
      if (b.prefillTokens === 0 && b.decodeSeqs === 0) return 0;
      return (
        c0 + cTok * b.prefillTokens + cAttn * b.prefillAttnPairs + cSeq * b.decodeSeqs + cCtx * b.decodeContextTokens
      );
    },
  };
}

/** Coefficient of determination and mean absolute percentage error of a fit on one set of rows. */
const fitQualitySchema = z.object({
  /** R² = 1 − SS_res/SS_tot on the rows' measured times. */
  r2: z.number().finite(),
  /** Mean absolute percentage error, in percent (e.g. 4.2 means 4.2 %). */
  mapePct: z.number().finite().nonnegative(),
});

/** One measured configuration used in the fit (a row of the source CSV). Times in ms. */
const profileRowSchema = z.object({
  promptSize: z.number().int().positive(),
  batchSize: z.number().int().positive(),
  tokenSize: z.number().int().nonnegative(),
  promptTimeMs: z.number().finite().positive(),
  tokenTimeMs: z.number().finite().positive(),
});

/** Zod schema of a step-time profile JSON file (`simulator/engine/profiles/<name>.json`). */
export const stepTimeProfileSchema = z.object({
  name: z.string().min(1),
  description: z.string(),
  form: z.literal('linear-v1'),
  coefficients: linearStepTimeCoefficientsSchema,
  /** Features dropped from the fit because their OLS coefficient came out negative. */
  droppedFeatures: z.array(z.string()),
  source: z.object({
    dataset: z.string(),
    localPath: z.string(),
    upstreamRepository: z.string(),
    upstreamPath: z.string(),
    commit: z.string(),
    license: z.string(),
    filter: z.object({ model: z.string(), hardware: z.string(), tensorParallel: z.number().int().positive() }),
  }),
  /** How the CSV columns were mapped to `BatchShape`s. */
  approximation: z.array(z.string()),
  fit: z.object({
    method: z.string(),
    rowsUsed: z.number().int().positive(),
    prefill: fitQualitySchema,
    decode: fitQualitySchema,
  }),
  rows: z.array(profileRowSchema).min(1),
});

/** A parsed, validated step-time profile. */
export type StepTimeProfile = z.infer<typeof stepTimeProfileSchema>;

/** One row of a profile: a measured (prompt, batch, output) configuration and its times (ms). */
export type StepTimeProfileRow = z.infer<typeof profileRowSchema>;

/** Directory holding the committed profiles (`simulator/engine/profiles/`). */
export const PROFILES_DIR = join(dirname(fileURLToPath(import.meta.url)), 'profiles');

/**
 * The batch a Splitwise `prompt_time` measures: `batchSize` prompts of `promptSize` tokens
 * prefilled together in one pass (no prefix cache).
 */
export function prefillBatchOfRow(row: Pick<StepTimeProfileRow, 'promptSize' | 'batchSize'>): BatchShape {
  const p = row.promptSize;
  const b = row.batchSize;
  return { prefillTokens: b * p, prefillSeqs: b, prefillAttnPairs: (b * p * p) / 2, decodeSeqs: 0, decodeContextTokens: 0 };
}

/**
 * The batch a Splitwise `token_time` (mean ms per decode iteration) is taken to measure:
 * `batchSize` sequences decoding at their mean context `promptSize + tokenSize / 2`
 * (context grows linearly from promptSize to promptSize + tokenSize over the iterations,
 * and the decode-attention term is linear in context, so the mean context gives the mean time).
 */
export function decodeBatchOfRow(row: Pick<StepTimeProfileRow, 'promptSize' | 'batchSize' | 'tokenSize'>): BatchShape {
  const b = row.batchSize;
  return {
    prefillTokens: 0,
    prefillSeqs: 0,
    prefillAttnPairs: 0,
    decodeSeqs: b,
    decodeContextTokens: b * (row.promptSize + row.tokenSize / 2),
  };
}

/**
 * Load and validate `simulator/engine/profiles/<name>.json` (or `<dir>/<name>.json`).
 * Never reads the source CSV, so it works in a clone without `../shared`.
 * @returns the linear model built from the profile's coefficients, and the profile itself.
 * @throws Error when the name is not a plain file name, the file is missing or not JSON, or a
 *   field fails validation (the message names the field path, e.g. `coefficients.overheadMs`).
 */
export function loadStepTimeProfile(
  name: string,
  dir: string = PROFILES_DIR,
): { model: StepTimeModel; profile: StepTimeProfile } {
  if (!/^[A-Za-z0-9._-]+$/.test(name) || name.startsWith('.')) {
    throw new Error(`loadStepTimeProfile: invalid profile name ${JSON.stringify(name)}`);
  }
  const path = join(dir, `${name}.json`);
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new Error(`loadStepTimeProfile: cannot read ${path}: ${(e as Error).message}`);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    throw new Error(`loadStepTimeProfile: ${path} is not valid JSON: ${(e as Error).message}`);
  }
  const parsed = stepTimeProfileSchema.safeParse(raw);
  if (!parsed.success) throw new Error(`loadStepTimeProfile: ${path}: ${formatZodError(parsed.error)}`);
  return { model: linearStepTime(parsed.data.coefficients), profile: parsed.data };
}

function formatZodError(err: z.ZodError): string {
  return err.issues.map((i) => `field ${i.path.length ? i.path.join('.') : '(root)'}: ${i.message}`).join('; ');
}
