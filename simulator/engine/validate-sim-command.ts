/**
 * `switchyard validate-sim`: replays the measured closed-loop silicon points on the simulated
 * engines, writes `simulator/VALIDATION.md` and the same numbers to DuckDB, and prints the
 * per-group summary. `--fit` first refits the per-step overhead constants (one group per engine)
 * and rewrites `simulator/engine/calibration.json`.
 */
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { UsageError, type CliCommand } from '../../bin/command.ts';
import { CALIBRATION_PATH, type CalibrationFile, clearCalibrationCache, loadCalibration } from './calibration.ts';
import { loadCrossCheck } from './operator-tables.ts';
import { fitOverheads, readSiliconRows, runValidation, summarize, VALIDATION_FAMILIES } from './validation.ts';
import { crossCheckRows, renderValidationMarkdown, writeValidationDuckDb } from './validation-report.ts';

/** Default path of the generated report. */
export const VALIDATION_MD_PATH = join(dirname(fileURLToPath(import.meta.url)), '..', 'VALIDATION.md');

/** The groups the overhead constants are fitted on (the others are held out). */
export const FIT_GROUPS = { vllm: { family: 'vllm-qwen3-32b', tp: 4 }, sglang: { family: 'sglang-qwen3-32b', tp: 4 } } as const;

/** Options of {@link runValidateSim}. */
export interface ValidateSimOptions {
  /** Markdown output path. Default `simulator/VALIDATION.md`. */
  out?: string;
  /** DuckDB output path. Default `results/validation.duckdb`. */
  db?: string;
  /** Refit the overheads and rewrite calibration.json first. */
  fit?: boolean;
  /** Only these families (report still written). */
  families?: string[];
  print?: (line: string) => void;
}

/**
 * Run the validation end to end.
 * @returns the group summaries.
 * @throws Error when the silicon rows or tables cannot be read, or a point fails to simulate.
 */
export async function runValidateSim(opts: ValidateSimOptions = {}) {
  const print = opts.print ?? ((s: string) => process.stdout.write(`${s}\n`));
  const rows = readSiliconRows();
  if (opts.fit) {
    const cal: CalibrationFile = { ...loadCalibration() };
    for (const engine of ['vllm', 'sglang'] as const) {
      const g = FIT_GROUPS[engine];
      const fam = VALIDATION_FAMILIES.find((f) => f.key === g.family)!;
      const fitRows = rows.filter((r) => fam.matches(r) && r.tp === g.tp);
      print(`fitting ${engine} overheads on ${g.family}/tp${g.tp} (${fitRows.length} points)…`);
      const fit = fitOverheads(fam, fitRows);
      cal[engine] = {
        stepOverheadMs: fit.stepOverheadMs,
        perSequenceOverheadMs: fit.perSequenceOverheadMs,
        fittedOn: `${g.family}/tp${g.tp} (${fit.points} points)`,
        method: 'switchyard validate-sim --fit: grid search minimising the median |TPOT error|',
      };
      print(`  step ${fit.stepOverheadMs} ms + ${fit.perSequenceOverheadMs} ms per sequence (median |TPOT error| ${fit.tpotMedianAbsPct.toFixed(1)} %)`);
    }
    writeFileSync(CALIBRATION_PATH, `${JSON.stringify(cal, null, 2)}\n`);
    clearCalibrationCache();
  }
  const calibration = loadCalibration();
  const overheads = { vllm: calibration.vllm, sglang: calibration.sglang };
  const t0 = performance.now();
  const points = runValidation({ rows, overheads, ...(opts.families && { families: opts.families }) });
  const wallS = (performance.now() - t0) / 1000;
  const groups = summarize(points);
  const cross = crossCheckRows(loadCrossCheck(), calibration);
  const steps = points.reduce((s, p) => s + p.steps, 0);
  const md = renderValidationMarkdown({ points, groups, crossCheck: cross, calibration, steps });
  const out = opts.out ?? VALIDATION_MD_PATH;
  writeFileSync(out, `${md}\n`);
  const db = opts.db ?? join('results', 'validation.duckdb');
  await writeValidationDuckDb(db, points, groups, cross);
  print(`${points.length} points in ${wallS.toFixed(1)} s (${steps.toLocaleString('en-US')} simulated steps, ${Math.round(steps / Math.max(wallS, 1e-9)).toLocaleString('en-US')} steps/s on this machine)`);
  print('group                                   pts  TTFT med  p90   bias | TPOT med  p90   bias');
  for (const g of groups) {
    print(`${`${g.label} TP ${g.tp}`.padEnd(38)} ${String(g.points).padStart(4)}  ${g.ttftMedianAbsPct.toFixed(1).padStart(7)} ${g.ttftP90AbsPct.toFixed(1).padStart(5)} ${g.ttftBiasPct.toFixed(1).padStart(6)} | ${g.tpotMedianAbsPct.toFixed(1).padStart(7)} ${g.tpotP90AbsPct.toFixed(1).padStart(5)} ${g.tpotBiasPct.toFixed(1).padStart(6)}  ${g.meetsTarget ? 'met' : 'MISSED'}`);
  }
  print(`wrote ${out} and ${db} (tables validation_points, validation_groups, validation_crosscheck)`);
  return groups;
}

/** The `validate-sim` command. */
export const validateSimCommand: CliCommand = {
  name: 'validate-sim',
  summary: 'replay measured GPU serving points on the engine models; writes simulator/VALIDATION.md',
  usage: 'usage: switchyard validate-sim [--out FILE.md] [--db FILE.duckdb] [--fit] [--family KEY]…\n' +
    `  families: ${VALIDATION_FAMILIES.map((f) => f.key).join(', ')}`,
  async run(args) {
    const { values, positionals } = parseArgs({
      args,
      allowPositionals: true,
      options: { out: { type: 'string' }, db: { type: 'string' }, fit: { type: 'boolean' }, family: { type: 'string', multiple: true } },
    });
    if (positionals.length) throw new UsageError(`validate-sim takes no positional arguments, got '${positionals[0]}'`);
    for (const f of values.family ?? []) {
      if (!VALIDATION_FAMILIES.some((x) => x.key === f)) throw new UsageError(`unknown family '${f}'`);
    }
    const groups = await runValidateSim({
      ...(values.out !== undefined && { out: values.out }),
      ...(values.db !== undefined && { db: values.db }),
      ...(values.fit && { fit: true }),
      ...(values.family && { families: values.family }),
    });
    return groups.length > 0 ? 0 : 1;
  },
};
