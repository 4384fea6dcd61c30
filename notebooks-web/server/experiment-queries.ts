/**
 * Experiments and their runs: the list page and the header of every other page. Parameterised
 * SQL over the `experiments`, `runs`, `summary`, `requests` and `endpoint_timeseries` tables of
 * simulator/results/schema.ts; only named columns are read, so tables that gain columns later
 * keep working.
 */
import type { ExperimentDetail, ExperimentSummary, RunInfo } from '../shared/api-types.ts';
import { notFound } from './http-errors.ts';
import { textParam, type ReadOnlyDb } from './read-only-db.ts';

interface ExperimentSqlRow {
  experiment_id: string;
  name: string;
  trace_path: string;
  trace_source: string;
  started_at: string;
  seed: number;
  runs: number;
  strategies: (string | null)[] | null;
  git_revisions: (string | null)[] | null;
}

const EXPERIMENT_SQL = `
  SELECT e.experiment_id, e.name, e.trace_path, e.trace_source, e.started_at, e.seed,
         count(r.run_id) AS runs,
         list_sort(list(DISTINCT r.strategy)) AS strategies,
         list_sort(list(DISTINCT r.git_revision)) AS git_revisions
  FROM experiments e LEFT JOIN runs r ON r.experiment_id = e.experiment_id`;

function toSummary(db: string, r: ExperimentSqlRow): ExperimentSummary {
  const clean = (xs: (string | null)[] | null) => (xs ?? []).filter((x): x is string => x !== null);
  return {
    db,
    experimentId: r.experiment_id,
    name: r.name,
    tracePath: r.trace_path,
    traceSource: (r.trace_source.split('\n')[0] ?? '').trim(),
    startedAt: r.started_at,
    seed: r.seed,
    runs: r.runs,
    strategies: clean(r.strategies),
    gitRevisions: clean(r.git_revisions),
  };
}

/**
 * Every experiment of one results file, newest first.
 * @throws Error (DuckDB's) when the file lacks the `experiments` or `runs` table.
 */
export async function listExperiments(db: ReadOnlyDb, dbName: string): Promise<ExperimentSummary[]> {
  const rows = await db.query<ExperimentSqlRow>(`${EXPERIMENT_SQL} GROUP BY ALL ORDER BY e.started_at DESC, e.name`);
  return rows.map((r) => toSummary(dbName, r));
}

/**
 * The experiment row of `experimentId`.
 * @throws ApiError 404 when the file has no such experiment.
 */
export async function getExperiment(db: ReadOnlyDb, dbName: string, experimentId: string): Promise<ExperimentSummary & { configJson: string }> {
  const rows = await db.query<ExperimentSqlRow & { config_json: string }>(
    `${EXPERIMENT_SQL.replace('e.seed,', 'e.seed, e.config_json,')} WHERE e.experiment_id = $exp GROUP BY ALL`,
    { exp: textParam(experimentId) },
  );
  const row = rows[0];
  if (!row) throw notFound(`unknown experiment '${experimentId}' in results file '${dbName}'`);
  return { ...toSummary(dbName, row), configJson: row.config_json };
}

/**
 * Checks that `runId` is a run of `experimentId`.
 * @throws ApiError 404 otherwise.
 */
export async function checkRun(db: ReadOnlyDb, experimentId: string, runId: string): Promise<void> {
  const rows = await db.query(`SELECT 1 FROM runs WHERE run_id = $run AND experiment_id = $exp`, {
    run: textParam(runId),
    exp: textParam(experimentId),
  });
  if (rows.length === 0) throw notFound(`unknown run '${runId}' in experiment '${experimentId}'`);
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

function sloFromConfig(config: unknown, key: 'ttft_ms' | 'tpot_ms'): number | null {
  if (config === null || typeof config !== 'object') return null;
  const slo = (config as { slo?: unknown }).slo;
  if (slo === null || typeof slo !== 'object') return null;
  const v = (slo as Record<string, unknown>)[key];
  return typeof v === 'number' && Number.isFinite(v) ? v : null;
}

/**
 * The experiment's own SLOs, ms: those its runs' summaries were computed with, else the
 * experiment file's `slo`, else null.
 */
export async function experimentSlos(db: ReadOnlyDb, experimentId: string, configJson: string): Promise<{ sloTtftMs: number | null; sloTpotMs: number | null }> {
  const slo = await db.query<{ slo_ttft_ms: number; slo_tpot_ms: number }>(
    `SELECT slo_ttft_ms, slo_tpot_ms FROM summary
     WHERE run_id IN (SELECT run_id FROM runs WHERE experiment_id = $exp) LIMIT 1`,
    { exp: textParam(experimentId) },
  );
  const config = parseJson(configJson);
  return {
    sloTtftMs: slo[0]?.slo_ttft_ms ?? sloFromConfig(config, 'ttft_ms'),
    sloTpotMs: slo[0]?.slo_tpot_ms ?? sloFromConfig(config, 'tpot_ms'),
  };
}

/**
 * Everything the pages need to know about one experiment: its row, parsed config, runs (in
 * insertion order, parameters parsed), endpoints, SLOs, and whether comparisons are stored.
 * @throws ApiError 404 for an unknown experiment.
 */
export async function experimentDetail(
  db: ReadOnlyDb,
  dbName: string,
  experimentId: string,
  hasComparisons: boolean,
): Promise<ExperimentDetail> {
  const { configJson, ...experiment } = await getExperiment(db, dbName, experimentId);
  const exp = { exp: textParam(experimentId) };
  // label / pair_key arrived with sweeps; older files lack them (label = strategy, no pairs).
  const runCols = (await db.tables()).get('runs') ?? [];
  const runRows = await db.query<{
    run_id: string;
    strategy: string;
    label: string | null;
    pair_key: string | null;
    params_json: string;
    seed: number;
    git_revision: string;
    wall_seconds: number;
  }>(
    `SELECT run_id, strategy, ${runCols.includes('label') ? 'label' : 'NULL'} AS label,
            ${runCols.includes('pair_key') ? 'pair_key' : 'NULL'} AS pair_key,
            params_json, seed, git_revision, wall_seconds
     FROM runs WHERE experiment_id = $exp ORDER BY rowid`,
    exp,
  );
  const runs: RunInfo[] = runRows.map((r) => {
    const params = parseJson(r.params_json);
    return {
      runId: r.run_id,
      strategy: r.strategy,
      label: r.label ?? r.strategy,
      pairKey: r.pair_key ?? '',
      params: params !== null && typeof params === 'object' && !Array.isArray(params) ? (params as Record<string, unknown>) : {},
      seed: r.seed,
      gitRevision: r.git_revision,
      wallSeconds: r.wall_seconds,
    };
  });
  const endpoints = await db.query<{ endpoint_id: string }>(
    `WITH rs AS (SELECT run_id FROM runs WHERE experiment_id = $exp)
     SELECT DISTINCT endpoint_id FROM (
       SELECT endpoint_id FROM endpoint_timeseries WHERE run_id IN (SELECT run_id FROM rs)
       UNION ALL
       SELECT endpoint_id FROM requests WHERE run_id IN (SELECT run_id FROM rs) AND endpoint_id IS NOT NULL
     ) ORDER BY endpoint_id`,
    exp,
  );
  return {
    experiment,
    config: parseJson(configJson),
    runs,
    endpoints: endpoints.map((e) => e.endpoint_id),
    ...(await experimentSlos(db, experimentId, configJson)),
    hasComparisons,
  };
}
