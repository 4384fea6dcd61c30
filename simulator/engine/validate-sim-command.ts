/**
 * `switchyard validate-sim`: replays the measured closed-loop silicon points on the simulated
 * engines, writes `simulator/VALIDATION.md` and the same numbers to DuckDB, and prints the
 * per-group summary of the held-out half. `--fit` first refits every group's constants on its
 * seeded fit half (`validation-fit.ts`) and rewrites `simulator/engine/calibration.json`.
 */
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { UsageError, type CliCommand } from '../../bin/command.ts';
import { CALIBRATION_PATH, type CalibrationFile, calibrationGroupKey, clearCalibrationCache, type ClientCalibration, type EngineCalibration, loadCalibration } from './calibration.ts';
import { loadCrossCheck } from './operator-tables.ts';
import { fitHalf, type GroupConstants, median, readSiliconRows, runValidation, type SiliconRow, summarize, VALIDATION_FAMILIES, type ValidationFamily } from './validation.ts';
import { fitClientCohorts, fitGroupConstants } from './validation-fit.ts';
import { crossCheckRows, renderValidationMarkdown, writeValidationDuckDb } from './validation-report.ts';

/** Default path of the generated report. */
export const VALIDATION_MD_PATH = join(dirname(fileURLToPath(import.meta.url)), '..', 'VALIDATION.md');

/** How the constants are fitted (recorded in calibration.json). */
export const FIT_METHOD = 'switchyard validate-sim --fit: two-stage grid search on the seeded fit half (validation-fit.ts)';

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
  const fitIds = fitHalf(rows);
  if (opts.fit) {
    const groups: Record<string, EngineCalibration> = {};
    const clients: Record<string, ClientCalibration> = {};
    for (const fam of VALIDATION_FAMILIES) {
      const famRows = rows.filter((r) => fam.matches(r) && fitIds.has(r.id));
      let constants = fitFamilyGroups(fam, famRows, groups, print);
      if (fam.protocol === 'staggered' && famRows.length > 0) {
        // The client's cohort count, given the groups' constants; then the groups again, given it.
        const c = fitClientCohorts(fam, famRows, constants);
        print(`fitted ${fam.key} client: ${c.startCohorts} cohorts (fit half: TTFT ${c.ttftMedianAbsPct.toFixed(1)} %); refitting its groups`);
        clients[fam.key] = { startCohorts: c.startCohorts, fittedOn: `${fam.key} (${c.points} points: the fit halves of its groups)`, method: CLIENT_FIT_METHOD };
        constants = fitFamilyGroups(fam, famRows, groups, print, c.startCohorts);
      }
    }
    const cal: CalibrationFile = { vllm: engineLevelCalibration('vllm', groups), sglang: engineLevelCalibration('sglang', groups), groups, clients };
    writeFileSync(CALIBRATION_PATH, `${JSON.stringify(cal, null, 2)}\n`);
    clearCalibrationCache();
  }
  const calibration = loadCalibration();
  const t0 = performance.now();
  const points = runValidation({ rows, fitIds, ...(opts.families && { families: opts.families }) });
  const wallS = (performance.now() - t0) / 1000;
  const groups = summarize(points.filter((p) => p.half === 'held-out'));
  const fitGroups = summarize(points.filter((p) => p.half === 'fit'));
  const cross = crossCheckRows(loadCrossCheck(), calibration);
  const steps = points.reduce((s, p) => s + p.steps, 0);
  const md = renderValidationMarkdown({ points, groups, fitGroups, crossCheck: cross, calibration, steps });
  const out = opts.out ?? VALIDATION_MD_PATH;
  writeFileSync(out, `${md}\n`);
  const db = opts.db ?? join('results', 'validation.duckdb');
  await writeValidationDuckDb(db, points, groups, cross);
  print(`${points.length} points in ${wallS.toFixed(1)} s (${steps.toLocaleString('en-US')} simulated steps, ${Math.round(steps / Math.max(wallS, 1e-9)).toLocaleString('en-US')} steps/s on this machine)`);
  print('held-out half:');
  print('group                                   pts  TTFT med  p90   bias | TPOT med  p90   bias');
  for (const g of groups) {
    print(`${`${g.label} TP ${g.tp}`.padEnd(38)} ${String(g.points).padStart(4)}  ${g.ttftMedianAbsPct.toFixed(1).padStart(7)} ${g.ttftP90AbsPct.toFixed(1).padStart(5)} ${g.ttftBiasPct.toFixed(1).padStart(6)} | ${g.tpotMedianAbsPct.toFixed(1).padStart(7)} ${g.tpotP90AbsPct.toFixed(1).padStart(5)} ${g.tpotBiasPct.toFixed(1).padStart(6)}  ${g.meetsTarget ? 'met' : 'MISSED'}`);
  }
  print(`wrote ${out} and ${db} (tables validation_points, validation_groups, validation_crosscheck)`);
  return groups;
}

/** How the client cohort count is fitted (recorded in calibration.json). */
export const CLIENT_FIT_METHOD = 'switchyard validate-sim --fit: grid search over the cohort count on the fit halves of the family (validation-fit.ts fitClientCohorts)';

/**
 * Fit every TP group of `fam` on its fit points (`famRows`: the family's fit half), writing the
 * entries into `groups`.
 * @returns the fitted constants by TP.
 */
function fitFamilyGroups(fam: ValidationFamily, famRows: readonly SiliconRow[], groups: Record<string, EngineCalibration>, print: (s: string) => void, startCohorts?: number): Map<number, GroupConstants> {
  const out = new Map<number, GroupConstants>();
  for (const tp of [1, 2, 4, 8]) {
    const fitRows = famRows.filter((r) => r.tp === tp);
    if (fitRows.length === 0) continue;
    print(`fitting ${fam.key}/tp${tp} on ${fitRows.length} points…`);
    const f = fitGroupConstants(fam, fitRows, startCohorts);
    const k = f.constants;
    out.set(tp, k);
    groups[calibrationGroupKey(fam.engine, fam.model, fam.dtype, tp)] = {
      stepOverheadMs: k.stepOverheadMs,
      perSequenceOverheadMs: k.perSequenceOverheadMs,
      elementwiseScale: k.elementwiseScale,
      eagerElementwiseScale: k.eagerElementwiseScale ?? 1,
      apiServer: { ...k.apiServer },
      fittedOn: `${fam.key}/tp${tp} (${f.points} of the group's points, seeded half)`,
      method: FIT_METHOD,
    };
    print(`  step ${k.stepOverheadMs} ms + ${k.perSequenceOverheadMs} ms/seq, elementwise ×${k.elementwiseScale} (eager ×${k.eagerElementwiseScale ?? 1}), API ${k.apiServer.requestMs} ms + ${k.apiServer.perPromptTokenMs} ms/prompt token (fit half: TPOT ${f.tpotMedianAbsPct.toFixed(1)} %, TTFT ${f.ttftMedianAbsPct.toFixed(1)} %)`);
  }
  return out;
}

/**
 * The engine-level entry (for models and TPs without a group entry): the step-time constants are
 * the medians over the engine's bfloat16 groups (fusion and overheads depend on the dtype; bf16 is
 * the default), the API-server terms the medians over all its groups (the frontend does not depend
 * on the model's dtype or TP).
 */
export function engineLevelCalibration(engine: 'vllm' | 'sglang', groups: Record<string, EngineCalibration>): EngineCalibration {
  const all = Object.entries(groups).filter(([k]) => k.startsWith(`${engine}/`));
  const bf16 = all.filter(([k]) => k.includes('/bfloat16/')).map(([, g]) => g);
  const gs = all.map(([, g]) => g);
  const step = bf16.length > 0 ? bf16 : gs;
  const med = (xs: EngineCalibration[], f: (g: EngineCalibration) => number) => Number(median(xs.map(f)).toFixed(4));
  return {
    stepOverheadMs: med(step, (g) => g.stepOverheadMs),
    perSequenceOverheadMs: med(step, (g) => g.perSequenceOverheadMs),
    elementwiseScale: med(step, (g) => g.elementwiseScale),
    eagerElementwiseScale: med(step, (g) => g.eagerElementwiseScale),
    apiServer: { requestMs: med(gs, (g) => g.apiServer.requestMs), perPromptTokenMs: med(gs, (g) => g.apiServer.perPromptTokenMs), perOutputTokenMs: 0 },
    fittedOn: `medians: step constants over the ${step.length} ${engine} bfloat16 groups, API server over all ${gs.length} ${engine} groups`,
    method: FIT_METHOD,
  };
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
