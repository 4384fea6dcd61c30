/**
 * Checks `switchyard sim` makes before it touches anything: every run's routing configuration
 * builds (the same models config and `RoutingCore` a run builds, without the trace), every trace
 * file exists, and the output path is either new or an earlier Switchyard results file — so a
 * typo in the experiment never empties a results file or clobbers an unrelated one.
 */
import { existsSync, statSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { DuckDBInstance } from '@duckdb/node-api';
import { RoutingCore } from '../core/routing-core.ts';
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
      const core = new RoutingCore(simulatedModelsConfig(cx, cell.run), { settings: cx.routing, health: healthOptions(cx) });
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

/** Bytes 8..11 of every DuckDB database file. */
const DUCKDB_MAGIC = 'DUCK';

/**
 * Refuses an output path `switchyard sim` must not replace: a directory or other non-file, a
 * non-empty file that is not a DuckDB database, or a DuckDB database that holds tables but not
 * the Switchyard results tables (`experiments`, `runs`). A missing path, an empty file, an empty
 * DuckDB database and an earlier results file pass (the run replaces the latter, as before).
 * @throws Error naming the file and saying to pick another path or delete it.
 */
export async function checkResultsOutput(path: string): Promise<void> {
  if (path === ':memory:' || !existsSync(path)) return;
  const refuse = (why: string) =>
    new Error(`output ${path} ${why}; refusing to overwrite it: pick another --output path (or output: in the experiment) or delete the file`);
  const st = statSync(path);
  if (st.isDirectory()) throw refuse('is a directory');
  if (!st.isFile()) throw refuse('is not a regular file');
  if (st.size === 0) return;
  const head = Buffer.alloc(12);
  const fh = await open(path, 'r');
  let read: number;
  try {
    ({ bytesRead: read } = await fh.read(head, 0, 12, 0));
  } finally {
    await fh.close();
  }
  if (read < 12 || head.toString('latin1', 8, 12) !== DUCKDB_MAGIC) throw refuse('exists and is not a DuckDB file');
  let tables: string[];
  try {
    const instance = await DuckDBInstance.create(path, { access_mode: 'READ_ONLY' });
    try {
      const connection = await instance.connect();
      try {
        const reader = await connection.runAndReadAll('SELECT table_name FROM duckdb_tables()');
        tables = reader.getRowObjectsJS().map((r) => String(r.table_name));
      } finally {
        connection.closeSync();
      }
    } finally {
      instance.closeSync();
    }
  } catch (err) {
    throw refuse(`is a DuckDB file that could not be opened to check it holds Switchyard results (${(err as Error).message.split('\n')[0]})`);
  }
  if (tables.length > 0 && !(tables.includes('experiments') && tables.includes('runs'))) {
    throw refuse(`is a DuckDB database without Switchyard results tables (it has: ${tables.slice(0, 5).join(', ')}${tables.length > 5 ? ', …' : ''})`);
  }
}
