/**
 * Paired comparisons stored by `switchyard compare`, when the results file has them.
 *
 * Expected table — one row per (baseline label, candidate label, pair group, metric):
 *
 *   comparisons(
 *     experiment_id    VARCHAR,   -- optional: without it every row is shown for every experiment
 *     baseline         VARCHAR,   -- baseline run label            (required)
 *     candidate        VARCHAR,   -- candidate run label           (required)
 *     pair_key         VARCHAR,   -- swept values of the paired cells, '' when none
 *     metric           VARCHAR,   -- a summary column: ttft_p50_ms, ttft_p99_ms, goodput, … (required)
 *     better           VARCHAR,   -- 'lower' | 'higher'
 *     seeds            INTEGER,   -- seeds paired
 *     baseline_mean    DOUBLE,
 *     candidate_mean   DOUBLE,
 *     diff_mean        DOUBLE,    -- candidate − baseline, mean over seeds
 *     diff_rel         DOUBLE,
 *     ci_low           DOUBLE,    -- bootstrap interval of diff_mean (required; null < 2 seeds)
 *     ci_high          DOUBLE,    --                                  (required)
 *     confidence       DOUBLE,    -- e.g. 0.95
 *     resamples        INTEGER,
 *     significant      BOOLEAN,
 *     candidate_better BOOLEAN
 *   )
 *
 * Only the columns marked required must exist; the others are read when present. A missing
 * table, missing required columns or no rows for the experiment all give `available: false`
 * with the reason, and the page shows bars without whiskers.
 */
import type { ComparisonRow, ComparisonsResponse } from '../shared/api-types.ts';
import { textParam, type ReadOnlyDb } from './read-only-db.ts';

/** Name of the comparisons table. */
export const COMPARISONS_TABLE = 'comparisons';

/** Columns that must exist for the table to be used. */
export const REQUIRED_COLUMNS = ['baseline', 'candidate', 'metric', 'ci_low', 'ci_high'] as const;

/** Columns read when present. Fixed identifiers, never client input. */
export const OPTIONAL_COLUMNS = [
  'experiment_id',
  'pair_key',
  'better',
  'seeds',
  'baseline_mean',
  'candidate_mean',
  'diff_mean',
  'diff_rel',
  'confidence',
  'significant',
  'candidate_better',
] as const;

/**
 * Whether the table can be used, and its columns (lower-case) if so.
 * @returns `{ columns }` or `{ reason }`.
 */
export async function comparisonColumns(db: ReadOnlyDb): Promise<{ columns: readonly string[] } | { reason: string }> {
  const cols = (await db.tables()).get(COMPARISONS_TABLE);
  if (!cols) return { reason: `no '${COMPARISONS_TABLE}' table in this results file (run \`switchyard compare\`)` };
  const missing = REQUIRED_COLUMNS.filter((c) => !cols.includes(c));
  if (missing.length > 0) return { reason: `table '${COMPARISONS_TABLE}' lacks column(s) ${missing.join(', ')}` };
  return { columns: cols };
}

interface SqlRow {
  baseline: string;
  candidate: string;
  pair_key: string | null;
  metric: string;
  better: string | null;
  seeds: number | null;
  baseline_mean: number | null;
  candidate_mean: number | null;
  diff_mean: number | null;
  diff_rel: number | null;
  ci_low: number | null;
  ci_high: number | null;
  confidence: number | null;
  significant: boolean | null;
  candidate_better: boolean | null;
}

/**
 * The stored comparisons of one experiment, ordered by baseline, pair key, metric, candidate.
 * `available` is false (with the reason) when the table is absent, unusable, or has no rows for
 * this experiment.
 */
export async function experimentComparisons(db: ReadOnlyDb, experimentId: string): Promise<ComparisonsResponse> {
  const found = await comparisonColumns(db);
  if ('reason' in found) return { available: false, reason: found.reason, rows: [] };
  const has = (c: string) => found.columns.includes(c);
  const col = (c: string, cast: string) => (has(c) ? `TRY_CAST(c."${c}" AS ${cast})` : `CAST(NULL AS ${cast})`);
  const rows = await db.query<SqlRow>(
    `SELECT CAST(c.baseline AS VARCHAR) AS baseline, CAST(c.candidate AS VARCHAR) AS candidate,
            ${col('pair_key', 'VARCHAR')} AS pair_key, CAST(c.metric AS VARCHAR) AS metric,
            ${col('better', 'VARCHAR')} AS better, ${col('seeds', 'BIGINT')} AS seeds,
            ${col('baseline_mean', 'DOUBLE')} AS baseline_mean, ${col('candidate_mean', 'DOUBLE')} AS candidate_mean,
            ${col('diff_mean', 'DOUBLE')} AS diff_mean, ${col('diff_rel', 'DOUBLE')} AS diff_rel,
            TRY_CAST(c.ci_low AS DOUBLE) AS ci_low, TRY_CAST(c.ci_high AS DOUBLE) AS ci_high,
            ${col('confidence', 'DOUBLE')} AS confidence, ${col('significant', 'BOOLEAN')} AS significant,
            ${col('candidate_better', 'BOOLEAN')} AS candidate_better
     FROM ${COMPARISONS_TABLE} c
     ${has('experiment_id') ? 'WHERE c.experiment_id = $exp' : ''}
     ORDER BY 1, 3, 4, 2`,
    has('experiment_id') ? { exp: textParam(experimentId) } : {},
  );
  if (rows.length === 0) {
    return { available: false, reason: 'no comparisons stored for this experiment (run `switchyard compare`)', rows: [] };
  }
  return {
    available: true,
    reason: null,
    rows: rows.map((r) => {
      const diff = r.diff_mean ?? (r.candidate_mean !== null && r.baseline_mean !== null ? r.candidate_mean - r.baseline_mean : null);
      return {
        baseline: r.baseline,
        candidate: r.candidate,
        pairKey: r.pair_key ?? '',
        metric: r.metric,
        better: r.better === 'lower' || r.better === 'higher' ? r.better : null,
        seeds: r.seeds,
        baselineMean: r.baseline_mean,
        candidateMean: r.candidate_mean,
        diffMean: diff,
        diffRel: r.diff_rel,
        ciLow: r.ci_low,
        ciHigh: r.ci_high,
        confidence: r.confidence,
        significant: r.significant ?? (r.ci_low !== null && r.ci_high !== null ? r.ci_low > 0 || r.ci_high < 0 : null),
        candidateBetter: r.candidate_better,
      };
    }),
  };
}
