/**
 * Paired comparisons of run labels over seeds. Cells with the same pair key and seed differ only
 * in the run (strategy) and share arrivals, client draws, provider latencies and fault draws
 * (common random numbers), so the per-seed difference candidate − baseline cancels the noise
 * those would add; the verdict is the mean difference with a percentile-bootstrap interval over
 * seeds, significant when the interval excludes 0.
 */
import { deriveRng } from '../../core/rng.ts';
import type { ComparisonRow } from '../results/result-rows.ts';
import type { ResultsStore } from '../results/results-store.ts';
import { bootstrapMean } from './bootstrap.ts';
import { DEFAULT_METRICS, METRICS, type MetricName } from './metrics.ts';

/** A run with its summary metrics, as read from `runs` ⋈ `summary`. */
export interface RunRecord {
  readonly runId: string;
  readonly experimentId: string;
  readonly label: string;
  readonly pairKey: string;
  readonly seed: number;
  /** Summary columns by name; null where the summary has no value (e.g. no ok request). */
  readonly values: Readonly<Record<string, number | null>>;
}

/** Options of `pairedComparisons`. */
export interface CompareOptions {
  baseline: string;
  metrics: readonly MetricName[];
  resamples: number;
  confidence: number;
  /** Root seed of the bootstrap draws (stream `compare/<candidate>/<pair key>/<metric>`). */
  seed: number;
}

/** Reads every run with its summary from a results database, in run-id order. */
export async function loadRunRecords(store: ResultsStore): Promise<RunRecord[]> {
  const rows = await store.query<Record<string, unknown>>(
    'SELECT r.run_id AS run_id_, r.experiment_id AS experiment_id_, r.label AS label_, r.pair_key AS pair_key_, r.seed AS seed_, s.* FROM runs r JOIN summary s USING (run_id) ORDER BY r.run_id',
  );
  return rows.map((r) => {
    const values: Record<string, number | null> = {};
    for (const m of Object.values(METRICS)) {
      const v = r[m.column];
      values[m.column] = typeof v === 'number' ? v : null;
    }
    return { runId: String(r.run_id_), experimentId: String(r.experiment_id_), label: String(r.label_), pairKey: String(r.pair_key_), seed: Number(r.seed_), values };
  });
}

/**
 * One row per (candidate label, pair key, metric) with at least one paired seed; candidates
 * and pair keys in order of first appearance, metrics in the order given.
 * @throws Error when no run has the baseline label (lists the labels there are).
 */
export function pairedComparisons(records: readonly RunRecord[], opts: CompareOptions): ComparisonRow[] {
  const labels = [...new Set(records.map((r) => r.label))];
  if (!labels.includes(opts.baseline)) throw new Error(`no runs labelled '${opts.baseline}'; labels are ${labels.join(', ')}`);
  const key = (label: string, pairKey: string, seed: number) => `${label}\u0000${pairKey}\u0000${seed}`;
  const byCell = new Map(records.map((r) => [key(r.label, r.pairKey, r.seed), r]));
  const pairKeys = [...new Set(records.map((r) => r.pairKey))];
  const out: ComparisonRow[] = [];
  for (const candidate of labels) {
    if (candidate === opts.baseline) continue;
    for (const pairKey of pairKeys) {
      const seeds = [...new Set(records.filter((r) => r.label === candidate && r.pairKey === pairKey).map((r) => r.seed))].sort((a, b) => a - b);
      for (const metric of opts.metrics) {
        const def = METRICS[metric];
        const b: number[] = [];
        const c: number[] = [];
        let experimentId = '';
        for (const s of seeds) {
          const base = byCell.get(key(opts.baseline, pairKey, s));
          const cand = byCell.get(key(candidate, pairKey, s))!;
          const bv = base?.values[def.column];
          const cv = cand.values[def.column];
          if (bv === null || bv === undefined || cv === null || cv === undefined) continue;
          b.push(bv);
          c.push(cv);
          experimentId = cand.experimentId;
        }
        if (b.length === 0) continue;
        const diffs = c.map((v, i) => v - b[i]!);
        const rng = deriveRng(opts.seed, `compare/${candidate}/${pairKey}/${metric}`);
        const ci = bootstrapMean(diffs, rng, opts.resamples, opts.confidence);
        const baselineMean = b.reduce((s, v) => s + v, 0) / b.length;
        const candidateMean = c.reduce((s, v) => s + v, 0) / c.length;
        const significant = ci.low !== null && ci.high !== null && (ci.low > 0 || ci.high < 0);
        out.push({
          experimentId,
          baseline: opts.baseline,
          candidate,
          pairKey,
          metric,
          better: def.better,
          seeds: b.length,
          baselineMean,
          candidateMean,
          diffMean: ci.mean,
          diffRel: baselineMean === 0 ? null : ci.mean / Math.abs(baselineMean),
          ciLow: ci.low,
          ciHigh: ci.high,
          confidence: opts.confidence,
          resamples: opts.resamples,
          significant,
          candidateBetter: significant && (def.better === 'lower' ? ci.mean < 0 : ci.mean > 0),
        });
      }
    }
  }
  return out;
}

const num = (v: number, unit: string, signed = false): string => {
  const digits = unit === 'ms' ? 0 : unit === 'fraction' ? 4 : unit === 'usd' ? 4 : unit === 'count' ? 1 : 3;
  const s = Math.abs(v) >= 1e5 && unit !== 'ms' ? v.toExponential(3) : v.toFixed(digits);
  return signed && v >= 0 ? `+${s}` : s;
};

/**
 * Renders comparison rows as text: one table per (candidate, pair key), a line per metric with
 * baseline and candidate means, the difference, its interval, and `*` when significant
 * (`better`/`worse` for the candidate).
 */
export function formatComparisons(rows: readonly ComparisonRow[]): string {
  if (rows.length === 0) return 'no paired runs to compare (each candidate needs runs with the baseline’s pair keys and seeds)';
  const first = rows[0]!;
  const out: string[] = [
    `paired comparison, baseline ${first.baseline}: mean of per-seed differences (candidate − baseline), ` +
      `${Math.round(first.confidence * 100)}% percentile-bootstrap interval over seeds (${first.resamples} resamples); * = interval excludes 0`,
  ];
  const groups = new Map<string, ComparisonRow[]>();
  for (const r of rows) {
    const k = `${r.candidate}\u0000${r.pairKey}`;
    groups.set(k, [...(groups.get(k) ?? []), r]);
  }
  for (const group of groups.values()) {
    const g0 = group[0]!;
    out.push('');
    out.push(`${g0.candidate} vs ${g0.baseline}${g0.pairKey ? ` [${g0.pairKey}]` : ''}, ${g0.seeds} seed${g0.seeds === 1 ? '' : 's'}`);
    const header = ['metric', g0.baseline, g0.candidate, 'diff', 'rel', `${Math.round(g0.confidence * 100)}% interval`, ''];
    const body = group.map((r) => {
      const unit = METRICS[r.metric as MetricName]?.unit ?? 'count';
      return [
        r.metric,
        num(r.baselineMean, unit),
        num(r.candidateMean, unit),
        num(r.diffMean, unit, true),
        r.diffRel === null ? '-' : `${r.diffRel >= 0 ? '+' : ''}${(r.diffRel * 100).toFixed(1)}%`,
        r.ciLow === null || r.ciHigh === null ? '-' : `[${num(r.ciLow, unit, true)}, ${num(r.ciHigh, unit, true)}]`,
        r.significant ? (r.candidateBetter ? '* better' : '* worse') : '',
      ];
    });
    const widths = header.map((h, i) => Math.max(h.length, ...body.map((b) => b[i]!.length)));
    const line = (cells: string[]) => cells.map((c, i) => (i === 0 || i === cells.length - 1 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ').trimEnd();
    out.push(line(header), ...body.map(line));
  }
  return out.join('\n');
}

/** Options of `compareInStore`; defaults: DEFAULT_METRICS, 10,000 resamples, 95 %. */
export interface StoreCompareOptions {
  /** A run label, or a run id (its label is used). */
  baseline: string;
  metrics?: readonly MetricName[];
  resamples?: number;
  confidence?: number;
}

/**
 * Compares every label against `baseline` over the runs of a results database, merges the rows
 * into `comparisons` (this baseline's rows of the compared metrics are replaced, other metrics'
 * rows kept: `ResultsStore.mergeComparisons`) and returns them. The bootstrap seed is the
 * experiment's seed (1 when the database has no experiment row).
 * @throws Error when the database has no runs or the baseline matches no label or run id.
 */
export async function compareInStore(store: ResultsStore, opts: StoreCompareOptions): Promise<ComparisonRow[]> {
  const records = await loadRunRecords(store);
  if (records.length === 0) throw new Error(`${store.path}: no runs with a summary to compare`);
  const labels = new Set(records.map((r) => r.label));
  const baseline = labels.has(opts.baseline) ? opts.baseline : records.find((r) => r.runId === opts.baseline)?.label;
  if (baseline === undefined) throw new Error(`--baseline '${opts.baseline}' is neither a run label (${[...labels].join(', ')}) nor a run id`);
  const [exp] = await store.query<{ seed: number }>('SELECT seed FROM experiments ORDER BY started_at LIMIT 1');
  const metrics = opts.metrics ?? DEFAULT_METRICS;
  const rows = pairedComparisons(records, {
    baseline,
    metrics,
    resamples: opts.resamples ?? 10_000,
    confidence: opts.confidence ?? 0.95,
    seed: exp?.seed ?? 1,
  });
  const experimentId = records[0]!.experimentId;
  await store.mergeComparisons(experimentId, baseline, metrics, rows);
  return rows;
}
