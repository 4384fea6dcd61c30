/**
 * Sweeps: an experiment whose runs differ in their parameters (`runs.params_json`). This finds
 * the parameters that vary across runs (nested objects flattened to dotted keys, the run's
 * strategy included), and arranges runs on a grid of two of them, holding the others fixed.
 * Pure.
 */

/** A run as the sweep page sees it. */
export interface SweepRun {
  runId: string;
  strategy: string;
  params: Readonly<Record<string, unknown>>;
}

/** A scalar parameter value after flattening. */
export type ParamValue = string | number | boolean | null;

/** A parameter that varies across runs. */
export interface SweepKey {
  key: string;
  /** Distinct values as grid labels, numeric ascending when all are numbers, else natural order. */
  values: string[];
  numeric: boolean;
}

/**
 * Flattens nested params to dotted keys: `{offload:{wait_s:1}}` → `{'offload.wait_s': 1}`.
 * Arrays become their JSON text (a list is one value of a sweep, not several parameters).
 */
export function flattenParams(params: Readonly<Record<string, unknown>>, prefix = ''): Record<string, ParamValue> {
  const out: Record<string, ParamValue> = {};
  for (const [k, v] of Object.entries(params)) {
    const key = prefix ? `${prefix}.${k}` : k;
    if (v !== null && typeof v === 'object' && !Array.isArray(v)) Object.assign(out, flattenParams(v as Record<string, unknown>, key));
    else if (Array.isArray(v)) out[key] = JSON.stringify(v);
    else if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean' || v === null) out[key] = v;
    else out[key] = String(v);
  }
  return out;
}

/** The grid label of a value: numbers and booleans as JS prints them, null as `null`, missing as `–`. */
export function valueLabel(v: ParamValue | undefined): string {
  return v === undefined ? '–' : v === null ? 'null' : String(v);
}

/**
 * A run's flattened parameters, plus its strategy under `strategy` when the params do not name
 * one (added last, so a `label` in the params comes first and wins the alias check).
 */
export function runParams(run: SweepRun): Record<string, ParamValue> {
  const p = flattenParams(run.params);
  if (!('strategy' in p)) p.strategy = run.strategy;
  return p;
}

/** The partition of runs a key induces, as a canonical string (for spotting aliases). */
function partitionOf(all: readonly Record<string, ParamValue>[], key: string): string {
  const first = new Map<string, number>();
  return all.map((p, i) => {
    const v = valueLabel(p[key]);
    if (!first.has(v)) first.set(v, i);
    return first.get(v);
  }).join(',');
}

const collator = new Intl.Collator('en', { numeric: true });

/** Keys that are replicates, not parameters: never an axis, always averaged over. */
export const REPLICATE_KEYS: readonly string[] = ['seed'];

/**
 * Parameters taking at least two distinct values across `runs`: numeric ones first (the usual
 * heatmap axes), then the others, each group in first-seen key order. {@link REPLICATE_KEYS}
 * are excluded, and a key that splits the runs exactly like an earlier one (`strategy` beside
 * `label`) is an alias and left out.
 */
export function sweepKeys(runs: readonly SweepRun[]): SweepKey[] {
  const seen = new Map<string, Map<string, ParamValue | undefined>>();
  const all = runs.map(runParams);
  const keys: string[] = [];
  for (const p of all) for (const k of Object.keys(p)) if (!keys.includes(k) && !REPLICATE_KEYS.includes(k)) keys.push(k);
  for (const k of keys) {
    const vals = new Map<string, ParamValue | undefined>();
    for (const p of all) vals.set(valueLabel(p[k]), p[k]);
    seen.set(k, vals);
  }
  const out: SweepKey[] = [];
  const partitions = new Set<string>();
  for (const k of keys) {
    const vals = seen.get(k)!;
    if (vals.size < 2) continue;
    const part = partitionOf(all, k);
    if (partitions.has(part)) continue;
    partitions.add(part);
    const numeric = [...vals.values()].every((v) => typeof v === 'number');
    const labels = [...vals.keys()];
    labels.sort((a, b) => (numeric ? Number(a) - Number(b) : collator.compare(a, b)));
    out.push({ key: k, values: labels, numeric });
  }
  return [...out.filter((k) => k.numeric), ...out.filter((k) => !k.numeric)];
}

/** One grid cell: the runs at (x, y) under the fixed values, and their mean metric. */
export interface GridCell {
  x: string;
  y: string;
  runIds: string[];
  /** Mean of the runs' non-null metric values; null when none. */
  value: number | null;
}

/** The grid of {@link sweepGrid}. */
export interface SweepGrid {
  xValues: string[];
  yValues: string[];
  /** Only cells that have at least one run. */
  cells: GridCell[];
}

/**
 * Arranges runs on `xKey` × `yKey`. Runs whose other swept parameters differ from `fixed`
 * (key → value label) are left out; a parameter absent from `fixed` is not constrained, and
 * runs sharing a cell are averaged. Axis values are those of `keys` (all values of the sweep,
 * so the grid keeps its shape when filters empty some cells).
 */
export function sweepGrid(
  runs: readonly SweepRun[],
  keys: readonly SweepKey[],
  metric: (runId: string) => number | null,
  xKey: string,
  yKey: string,
  fixed: Readonly<Record<string, string>> = {},
): SweepGrid {
  const xs = keys.find((k) => k.key === xKey)?.values ?? [];
  const ys = keys.find((k) => k.key === yKey)?.values ?? [];
  const cells = new Map<string, GridCell>();
  for (const run of runs) {
    const p = runParams(run);
    if (Object.entries(fixed).some(([k, v]) => k !== xKey && k !== yKey && valueLabel(p[k]) !== v)) continue;
    const x = valueLabel(p[xKey]);
    const y = valueLabel(p[yKey]);
    const id = JSON.stringify([x, y]);
    const cell = cells.get(id) ?? { x, y, runIds: [], value: null };
    cell.runIds.push(run.runId);
    cells.set(id, cell);
  }
  for (const cell of cells.values()) {
    const vals = cell.runIds.map(metric).filter((v): v is number => v !== null && Number.isFinite(v));
    cell.value = vals.length > 0 ? vals.reduce((a, b) => a + b, 0) / vals.length : null;
  }
  return { xValues: xs, yValues: ys, cells: [...cells.values()] };
}
