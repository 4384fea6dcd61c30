/**
 * Checks `switchyard sim` makes before it touches anything: every run's routing configuration
 * builds (the same models config and `RoutingCore` a run builds, without the trace), every trace
 * file exists, and the output path is either new or an earlier Switchyard results file — so a
 * typo in the experiment never empties a results file or clobbers an unrelated one.
 */
import { existsSync, statSync } from 'node:fs';
import { RoutingCore } from '../core/routing-core.ts';
import { strategyRegistry } from './strategy-modules.ts';
import { parseRoutingSettings } from '../core/config/routing-settings.ts';
import { healthOptions, runLabel, type Experiment } from './experiment.ts';
import { endpointIdsOf, simulatedModelsConfig } from './replay.ts';
import type { Cell } from './sweep/grid.ts';

/** Prefix of the core's per-model errors, e.g. `models[0] (id 'kimi'): `. */
const MODEL_PREFIX = /^models\[\d+\] \(id '[^']*'\)(?::\s*|\.)/;

/** Rewrites a core error about the run's model as the field of the run entry that caused it. */
function runFieldMessage(message: string): string {
  if (!MODEL_PREFIX.test(message)) return `: ${message}`;
  const rest = message.replace(MODEL_PREFIX, '');
  if (/^unknown router\b/.test(rest)) return `.strategy: ${rest}`;
  if (/^router_params\b/.test(rest)) return `.params: ${rest}`;
  if (/^routing\.strategy\b/.test(rest)) return `.strategy${rest.slice('routing.strategy'.length)}`;
  if (/^routing\.params\b/.test(rest)) return `.params${rest.slice('routing.params'.length)}`;
  return `: ${rest}`;
}

/**
 * Builds every cell's routing exactly as its run will (experiment-level `routing:` settings,
 * the simulated models config, a `RoutingCore`, the endpoint ids) without reading the trace.
 * Each distinct (swept combination, run) is checked once; seeds do not change the routing.
 * @throws Error listing every run that cannot be built (one line each), naming the experiment file and the run entry (`runs[i] (label …)`), or the
 *   `routing:` block, and the bad field, e.g.
 *   `x.yaml: runs[1] (label round_robbin).strategy: unknown router 'round_robbin'; known routers: …`.
 */
export function validateCellRouting(exp: Experiment, cells: readonly Cell[]): void {
  const problems: string[] = [];
  const seen = new Set<string>();
  const settingsSeen = new Set<Experiment>();
  for (const cell of cells) {
    const cx = cell.experiment;
    const inCell = cell.pairKey ? ` (sweep cell ${cell.pairKey})` : '';
    if (!settingsSeen.has(cx)) {
      settingsSeen.add(cx);
      parseRoutingSettings(cx.routing, `${exp.file}${inCell}: routing`);
    }
    const key = `${cell.pairKey}\u0000${cell.run.label}`;
    if (seen.has(key)) continue;
    seen.add(key);
    const index = exp.runs.findIndex((r) => runLabel(r) === cell.run.label);
    const where = `${exp.file}: runs[${index}] (label ${cell.run.label})${inCell}`;
    try {
      const core = new RoutingCore(simulatedModelsConfig(cx, cell.run), { settings: cx.routing, health: healthOptions(cx), registry: strategyRegistry(cx.strategyModules ?? []) });
      endpointIdsOf(core, cx, cell.run);
    } catch (err) {
      const message = (err as Error).message;
      // Errors of the models config already name the file and run.
      problems.push(message.startsWith(exp.file) ? message : `${where}${runFieldMessage(message)}`);
    }
  }
  // Every run's problem in one report, not one per attempt.
  if (problems.length === 1) throw new Error(problems[0]);
  if (problems.length > 1) throw new Error(`${exp.file}: ${problems.length} runs cannot be built:\n${problems.map((p) => `  ${p}`).join('\n')}`);
}

/** The error for a trace path that does not exist. */
export function traceNotFound(exp: Pick<Experiment, 'file'>, path: string): Error {
  return new Error(`${exp.file}: trace: file not found: ${path} (paths are relative to the experiment file)`);
}

/**
 * Checks the trace of every cell (the experiment's, and any swept `trace`) is an existing file.
 * @throws Error `<experiment.yaml>: trace: file not found: <resolved path> (…)`.
 */
export function checkTraceFiles(exp: Experiment, cells: readonly Cell[]): void {
  const paths = new Set([exp.tracePath, ...cells.map((c) => c.experiment.tracePath)]);
  for (const path of paths) {
    if (!existsSync(path)) throw traceNotFound(exp, path);
    if (!statSync(path).isFile()) throw new Error(`${exp.file}: trace: not a file: ${path}`);
  }
}

