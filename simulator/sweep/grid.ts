/**
 * Expands an experiment's `sweep:` block into cells: one validated experiment, run and seed per
 * cell, with a stable, readable run id `<label>[/<swept value>…]/s<seed>` (e.g.
 * `fixed/outage/s42`, `p2c/replicas2/rate0.5/s1`) and the flat parameter record stored in
 * `runs.params_json`. A swept `trace` shows as its file's base name, never its path. Order: swept combinations (first axis outermost), then seeds,
 * then runs — so the cells a comparison pairs are neighbours.
 */
import { basename, dirname, extname, resolve } from 'node:path';
import { ExperimentSchema, NO_SCENARIO, resolveProviders, runLabel, type Experiment } from '../experiment.ts';
import { formatConfigError } from '../../core/config/models-config.ts';
import type { RunSpec } from '../replay.ts';
import type { AxisValue } from './sweep-config.ts';

/** One swept axis of a cell: its name (`scenario`, `replicas`, `rate_scale` or a dotted path) and value. */
export interface AxisSetting {
  readonly name: string;
  readonly value: AxisValue;
}

/** One cell of the grid: a run of one strategy on one parameter combination and seed. */
export interface Cell {
  /** Position in grid order (also the order results are written). */
  readonly index: number;
  readonly runId: string;
  readonly run: RunSpec;
  readonly seed: number;
  /** Swept values other than run and seed, in axis order. */
  readonly axes: readonly AxisSetting[];
  /** `name=value,…` of `axes`; '' when only runs and seeds vary. */
  readonly pairKey: string;
  /** `runs.params_json`: label, strategy, router_params, seed and each axis by name. */
  readonly paramsJson: string;
  /** The cell's own experiment: overrides applied, scenario faults added, no `sweep`. */
  readonly experiment: Experiment;
}

interface Axis {
  name: string;
  values: readonly AxisValue[];
  /** Id fragment for a value. */
  part: (v: AxisValue) => string;
}

const clean = (v: AxisValue) => String(v).replace(/[^A-Za-z0-9_.]/g, '_');

/** The seeds of a sweep: `seed` alone, `seed..seed+k−1`, or the listed ones. */
export function sweepSeeds(exp: Experiment, seed: number): number[] {
  const s = exp.sweep?.seeds;
  if (s === undefined) return [seed];
  if (typeof s === 'number') return Array.from({ length: s }, (_, i) => seed + i);
  return [...s];
}

function axesOf(exp: Experiment): Axis[] {
  const sw = exp.sweep;
  if (!sw) return [];
  const axes: Axis[] = [];
  if (sw.scenarios) axes.push({ name: 'scenario', values: sw.scenarios, part: clean });
  if (sw.replicas) axes.push({ name: 'replicas', values: sw.replicas, part: (v) => `replicas${clean(v)}` });
  if (sw.rate_scale) axes.push({ name: 'rate_scale', values: sw.rate_scale, part: (v) => `rate${clean(v)}` });
  const paths = Object.keys(sw.axes);
  const last = (p: string) => p.slice(p.lastIndexOf('.') + 1);
  for (const path of paths) {
    // The last path segment names the value unless two axes share it (then the whole path does).
    const ambiguous = paths.filter((p) => last(p) === last(path)).length > 1;
    const stem = ambiguous ? path.replace(/\./g, '_') : last(path);
    const part = path === 'trace' ? (v: AxisValue) => clean(basename(String(v), extname(String(v)))) : (v: AxisValue) => `${stem}${clean(v)}`;
    axes.push({ name: path, values: sw.axes[path]!, part });
  }
  return axes;
}

/**
 * Sets `value` at dotted `path` inside a plain object. Array entries are found by index, or by
 * their `name`, `label` or `strategy` field; missing objects on the way are created.
 * @throws Error naming the path when a segment goes through a scalar or names no array entry.
 */
export function setPath(root: Record<string, unknown>, path: string, value: unknown): void {
  const segs = path.split('.');
  let node: unknown = root;
  for (let i = 0; i < segs.length; i++) {
    const seg = segs[i]!;
    const lastSeg = i === segs.length - 1;
    const where = segs.slice(0, i + 1).join('.');
    if (Array.isArray(node)) {
      const idx = /^\d+$/.test(seg)
        ? Number(seg)
        : node.findIndex((e) => e !== null && typeof e === 'object' && [(e as Record<string, unknown>).name, (e as Record<string, unknown>).label ?? (e as Record<string, unknown>).strategy].includes(seg));
      if (idx < 0 || idx >= node.length) throw new Error(`sweep.axes['${path}']: '${where}' names no entry of the list`);
      if (lastSeg) node[idx] = value;
      else node = node[idx];
      continue;
    }
    if (node === null || typeof node !== 'object') throw new Error(`sweep.axes['${path}']: '${segs.slice(0, i).join('.')}' is not an object`);
    const obj = node as Record<string, unknown>;
    if (lastSeg) obj[seg] = value;
    else {
      if (obj[seg] === undefined) obj[seg] = {};
      node = obj[seg];
    }
  }
}

/**
 * Expands the grid. Without a `sweep:` block: one cell per run at `seed`.
 * @param seed the root seed (`--seed` or the experiment's).
 * @throws Error naming the cell and field when a combination makes the experiment invalid
 *   (e.g. a fault on `replica-3` with `replicas: [2]`), or when two cells would share a run id.
 */
export function expandGrid(exp: Experiment, seed: number): Cell[] {
  const axes = axesOf(exp);
  const seeds = sweepSeeds(exp, seed);
  const runs: RunSpec[] = exp.runs.map((r) => ({ strategy: r.strategy, params: r.params, label: runLabel(r) }));
  const { tracePath, file, sweep: _sweep, strategyModules, ...base } = exp;
  let combos: AxisSetting[][] = [[]];
  for (const axis of axes) combos = combos.flatMap((c) => axis.values.map((value) => [...c, { name: axis.name, value }]));
  const cells: Cell[] = [];
  const ids = new Map<string, string>();
  for (const combo of combos) {
    const raw = structuredClone(base) as Record<string, unknown> & typeof base;
    for (const { name, value } of combo) {
      if (name === 'scenario') raw.faults = [...base.faults, ...(value === NO_SCENARIO ? [] : base.scenarios[String(value)] ?? [])];
      else if (name === 'replicas') setPath(raw, 'replicas.count', value);
      else setPath(raw, name, value);
    }
    const pairKey = combo.map((a) => `${a.name}=${String(a.value)}`).join(',');
    const where = `${file} (sweep cell ${pairKey || 'base'})`;
    const parsed = ExperimentSchema.safeParse(raw);
    if (!parsed.success) throw new Error(formatConfigError(where, parsed.error));
    try {
      resolveProviders(parsed.data);
    } catch (err) {
      throw new Error(`${where} is invalid:\n  ${(err as Error).message}`);
    }
    // A swept `trace` is relative to the experiment file, like the base one.
    const cellTrace = parsed.data.trace === base.trace ? tracePath : resolve(dirname(file), parsed.data.trace);
    const experiment: Experiment = { ...parsed.data, tracePath: cellTrace, file, ...(strategyModules && { strategyModules }) };
    const fragment = combo.map((a) => axes.find((x) => x.name === a.name)!.part(a.value));
    for (const s of seeds) {
      for (const run of runs) {
        const runId = [run.label, ...fragment, `s${s}`].join('/');
        const what = `${run.label} ${pairKey} seed ${s}`;
        const clash = ids.get(runId);
        if (clash !== undefined) throw new Error(`${file}: sweep cells '${clash}' and '${what}' would share run id '${runId}'; use distinct values or labels`);
        ids.set(runId, what);
        const params: Record<string, unknown> = { label: run.label, strategy: run.strategy, router_params: run.params, seed: s };
        for (const a of combo) params[a.name] = a.value;
        cells.push({ index: cells.length, runId, run, seed: s, axes: combo, pairKey, paramsJson: JSON.stringify(params), experiment });
      }
    }
  }
  return cells;
}
