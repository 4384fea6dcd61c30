/**
 * The calibration file `switchyard calibrate --fit` writes (YAML) and an experiment names with
 * `calibration: <path>` (relative to the experiment file). It holds the fitted engine terms for
 * the experiment's `replicas:` block (step overheads, API-server term) and, per hosted-provider
 * endpoint, the TTFT summary and TPOT quantiles measured in the log. Loading an experiment fills
 * in from it only what the experiment leaves unset: a field written in the experiment wins.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { parse as parseYaml, stringify } from 'yaml';
import { z } from 'zod';
import { formatYamlSyntaxError, yamlSyntaxReport, type YamlErrorLike } from '../../core/index.ts';
import { ApiServerSchema } from '../engine/api-server.ts';
import { TtftSummarySchema } from '../providers/provider-profile.ts';
import { TpotSchema } from '../providers/provider-config.ts';

/** The file's schema. */
export const CalibrationFileSchema = z
  .object({
    /** What it was fitted on (log base names, request count, date). */
    source: z.string(),
    /** Terms for `replicas:`; step overheads absent when fitted on a legacy profile. */
    replicas: z
      .object({
        step_overhead_ms: z.number().nonnegative().optional(),
        per_sequence_overhead_ms: z.number().nonnegative().optional(),
        api_server: ApiServerSchema,
      })
      .strict()
      .optional(),
    /** Per provider name (the endpoint id's location part): measured TTFT summary and TPOT. */
    providers: z.record(z.string(), z.object({ ttft: TtftSummarySchema, tpot: TpotSchema }).strict()).default({}),
    /** How good the fit is (informational). */
    fit: z.record(z.string(), z.unknown()).default({}),
  })
  .strict();

/** A validated calibration file. */
export type CalibrationFile = z.infer<typeof CalibrationFileSchema>;

/**
 * Reads and validates a calibration file.
 * @throws Error naming the file and the bad field.
 */
export function loadCalibrationFile(path: string): CalibrationFile {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new Error(`calibration ${path}: cannot read: ${(err as Error).message}`);
  }
  let raw: unknown;
  try {
    raw = parseYaml(text);
  } catch (err) {
    throw new Error(`calibration ${formatYamlSyntaxError(path, yamlSyntaxReport(text, err as YamlErrorLike))}`);
  }
  const r = CalibrationFileSchema.safeParse(raw);
  if (!r.success) throw new Error(`calibration ${path}: ${r.error.issues.map((i) => `field ${i.path.join('.')}: ${i.message}`).join('; ')}`);
  return r.data;
}

/** Writes `cal` as YAML with a header comment. */
export function writeCalibrationFile(path: string, cal: CalibrationFile): void {
  const header = '# Written by `switchyard calibrate --fit`. Name it in an experiment: `calibration: <this file>`.\n';
  writeFileSync(path, header + stringify(CalibrationFileSchema.parse(cal)));
}

/**
 * Fills a raw (parsed, not yet validated) experiment object from the calibration file it names in
 * `calibration:` (relative to `file`): replicas' step overheads and `api_server`, and each
 * provider entry's `ttft` / `tpot`, where the experiment does not set them. Returns `raw`
 * unchanged when it names none.
 * @throws Error naming the experiment and the calibration file when that does not exist (saying
 *   how to write it) or cannot be read.
 */
export function applyCalibration(raw: unknown, file: string): unknown {
  if (raw === null || typeof raw !== 'object' || typeof (raw as { calibration?: unknown }).calibration !== 'string') return raw;
  const exp = raw as Record<string, unknown> & { calibration: string };
  const path = resolve(dirname(file), exp.calibration);
  if (!existsSync(path)) {
    throw new Error(`${file}: calibration: ${exp.calibration} does not exist; write it with 'switchyard calibrate <request-log.duckdb> --experiment ${file} --fit --out ${path}', or remove calibration:`);
  }
  let cal: CalibrationFile;
  try {
    cal = loadCalibrationFile(path);
  } catch (err) {
    throw new Error(`${file}: calibration: ${(err as Error).message}`);
  }
  const out: Record<string, unknown> = { ...exp };
  const replicas = exp.replicas;
  if (cal.replicas && replicas !== null && typeof replicas === 'object') {
    const r = { ...(replicas as Record<string, unknown>) };
    if (r.profile === undefined) {
      if (r.step_overhead_ms === undefined && cal.replicas.step_overhead_ms !== undefined) r.step_overhead_ms = cal.replicas.step_overhead_ms;
      if (r.per_sequence_overhead_ms === undefined && cal.replicas.per_sequence_overhead_ms !== undefined) r.per_sequence_overhead_ms = cal.replicas.per_sequence_overhead_ms;
    }
    if (r.api_server === undefined) r.api_server = cal.replicas.api_server;
    out.replicas = r;
  }
  if (Array.isArray(exp.providers)) {
    out.providers = exp.providers.map((p: unknown) => {
      if (p === null || typeof p !== 'object') return p;
      const entry = p as Record<string, unknown>;
      const c = typeof entry.name === 'string' ? cal.providers[entry.name] : undefined;
      if (!c) return p;
      return { ...entry, ttft: entry.ttft ?? c.ttft, tpot: entry.tpot ?? c.tpot };
    });
  }
  return out;
}
