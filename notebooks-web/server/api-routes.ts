/**
 * The dashboard's JSON API: a fixed table of GET routes over the results catalog. A route
 * validates its path segments and query parameters (400), checks that the file, experiment and
 * run exist (404), then runs parameterised queries. Handlers return plain data; the server
 * serialises it.
 *
 *   GET /api/health                 → { ok: true, gateway: <started with --gateway> }
 *   GET /api/experiments
 *   GET /api/experiments/:db/:experiment
 *   GET /api/experiments/:db/:experiment/metrics?slo_ttft_ms=&slo_tpot_ms=
 *   GET /api/experiments/:db/:experiment/cdf?metric=ttft|tpot|e2e|queue_wait&points=10..1000
 *   GET /api/experiments/:db/:experiment/comparisons
 *   GET /api/experiments/:db/:experiment/plans
 *   GET /api/experiments/:db/:experiment/runs/:run/timeline?from_ms=&to_ms=&max_points=
 *   GET /api/experiments/:db/:experiment/runs/:run/requests?status=&endpoint=&metric=&min_ms=&max_ms=&sort=&order=&limit=&offset=
 *   GET /api/experiments/:db/:experiment/runs/:run/requests/:request
 */
import type { CatalogProblem, ExperimentsResponse, ExperimentSummary } from '../shared/api-types.ts';
import { comparisonColumns, experimentComparisons } from './comparison-queries.ts';
import { checkRun, experimentDetail, experimentSlos, getExperiment, listExperiments } from './experiment-queries.ts';
import { ApiError, notFound } from './http-errors.ts';
import { LATENCY_METRICS, latencyCdf, runMetrics } from './metric-queries.ts';
import { checkSegment, QueryParams } from './query-params.ts';
import type { ReadOnlyDb } from './read-only-db.ts';
import { listRequests, REQUEST_SORT_KEYS, requestDetail } from './request-queries.ts';
import type { ResultsCatalog } from './results-catalog.ts';
import { runTimeline } from './timeline-queries.ts';
import { planTables } from './plan-queries.ts';

/** What a handler gets: the catalog, the path's named segments and query parameters (checked). */
interface RouteContext {
  catalog: ResultsCatalog;
  /** Whether the dashboard forwards to a gateway (`--gateway`). */
  gateway: boolean;
  params: Readonly<Record<string, string>>;
  q: QueryParams;
}

interface Route {
  /** Segments after `api`; `:name` captures one segment. */
  pattern: readonly string[];
  /** Query parameters the route takes; any other is a 400. */
  query: readonly string[];
  handle(ctx: RouteContext): Promise<unknown>;
}

/** SLO bounds accepted from the client, ms (an hour is far beyond any sensible latency SLO). */
const MAX_SLO_MS = 3_600_000;
/** Largest time accepted for a window bound, ms (about 3 years). */
const MAX_TIME_MS = 1e11;

/** Opens the file and checks the experiment; 404 for either unknown. */
async function experimentScope(ctx: RouteContext): Promise<{ db: ReadOnlyDb; experimentId: string; configJson: string }> {
  const db = await ctx.catalog.db(ctx.params.db!);
  const { configJson } = await getExperiment(db, ctx.params.db!, ctx.params.experiment!);
  return { db, experimentId: ctx.params.experiment!, configJson };
}

/** {@link experimentScope} plus the run; 404 for an unknown run. */
async function runScope(ctx: RouteContext): Promise<{ db: ReadOnlyDb; experimentId: string; runId: string }> {
  const scope = await experimentScope(ctx);
  await checkRun(scope.db, scope.experimentId, ctx.params.run!);
  return { ...scope, runId: ctx.params.run! };
}

const ROUTES: readonly Route[] = [
  {
    pattern: ['health'],
    query: [],
    handle: async ({ gateway }) => ({ ok: true, gateway }),
  },
  {
    pattern: ['experiments'],
    query: [],
    async handle({ catalog }): Promise<ExperimentsResponse> {
      const experiments: ExperimentSummary[] = [];
      const problems: CatalogProblem[] = [];
      for (const entry of catalog.entries()) {
        try {
          const db = await catalog.db(entry.name);
          experiments.push(...(await listExperiments(db, entry.name)));
        } catch (err) {
          // One unreadable file (locked, foreign schema) must not hide the others.
          const message = err instanceof ApiError ? err.message : `not a results database (${(err as Error).message.split('\n')[0]})`;
          problems.push({ db: entry.name, message });
        }
      }
      experiments.sort((a, b) => (a.startedAt < b.startedAt ? 1 : a.startedAt > b.startedAt ? -1 : 0));
      return { experiments, problems };
    },
  },
  {
    pattern: ['experiments', ':db', ':experiment'],
    query: [],
    async handle(ctx) {
      const db = await ctx.catalog.db(ctx.params.db!);
      const usable = 'columns' in (await comparisonColumns(db));
      return experimentDetail(db, ctx.params.db!, ctx.params.experiment!, usable);
    },
  },
  {
    pattern: ['experiments', ':db', ':experiment', 'metrics'],
    query: ['slo_ttft_ms', 'slo_tpot_ms'],
    async handle(ctx) {
      const q = ctx.q;
      const sloTtft = q.number('slo_ttft_ms', { min: 0, max: MAX_SLO_MS });
      const sloTpot = q.number('slo_tpot_ms', { min: 0, max: MAX_SLO_MS });
      const { db, experimentId, configJson } = await experimentScope(ctx);
      // Default to the experiment's own SLOs, so the page opens on the numbers `sim` printed
      // (2000 / 100 ms, the experiment schema's defaults, when the file records none).
      const own = sloTtft === undefined || sloTpot === undefined ? await experimentSlos(db, experimentId, configJson) : null;
      return runMetrics(db, experimentId, sloTtft ?? own?.sloTtftMs ?? 2000, sloTpot ?? own?.sloTpotMs ?? 100);
    },
  },
  {
    pattern: ['experiments', ':db', ':experiment', 'cdf'],
    query: ['metric', 'points'],
    async handle(ctx) {
      const q = ctx.q;
      const metric = q.choice('metric', LATENCY_METRICS, 'ttft');
      const points = q.integer('points', { min: 10, max: 1000, fallback: 200 });
      const { db, experimentId } = await experimentScope(ctx);
      return latencyCdf(db, experimentId, metric, points);
    },
  },
  {
    pattern: ['experiments', ':db', ':experiment', 'comparisons'],
    query: [],
    async handle(ctx) {
      const { db, experimentId } = await experimentScope(ctx);
      return experimentComparisons(db, experimentId);
    },
  },
  {
    pattern: ['experiments', ':db', ':experiment', 'plans'],
    query: [],
    async handle(ctx) {
      const { db, experimentId } = await experimentScope(ctx);
      return planTables(db, experimentId);
    },
  },
  {
    pattern: ['experiments', ':db', ':experiment', 'runs', ':run', 'timeline'],
    query: ['from_ms', 'to_ms', 'max_points'],
    async handle(ctx) {
      const q = ctx.q;
      const fromMs = q.number('from_ms', { min: 0, max: MAX_TIME_MS });
      const toMs = q.number('to_ms', { min: 0, max: MAX_TIME_MS });
      const maxPoints = q.integer('max_points', { min: 10, max: 5000, fallback: 600 });
      const { db, runId } = await runScope(ctx);
      return runTimeline(db, runId, { maxPoints, ...(fromMs !== undefined && { fromMs }), ...(toMs !== undefined && { toMs }) });
    },
  },
  {
    pattern: ['experiments', ':db', ':experiment', 'runs', ':run', 'requests'],
    query: ['status', 'endpoint', 'metric', 'min_ms', 'max_ms', 'sort', 'order', 'limit', 'offset'],
    async handle(ctx) {
      const q = ctx.q;
      const filter = {
        metric: q.choice('metric', LATENCY_METRICS, 'e2e'),
        sort: q.choice('sort', REQUEST_SORT_KEYS, 'arrival_ms'),
        order: q.choice('order', ['asc', 'desc'] as const, 'asc'),
        limit: q.integer('limit', { min: 1, max: 1000, fallback: 100 }),
        offset: q.integer('offset', { min: 0, max: 100_000_000, fallback: 0 }),
      };
      const status = q.text('status');
      const endpoint = q.text('endpoint');
      const minMs = q.number('min_ms', { min: 0, max: MAX_TIME_MS });
      const maxMs = q.number('max_ms', { min: 0, max: MAX_TIME_MS });
      const { db, runId } = await runScope(ctx);
      return listRequests(db, runId, {
        ...filter,
        ...(status !== undefined && { status }),
        ...(endpoint !== undefined && { endpoint }),
        ...(minMs !== undefined && { minMs }),
        ...(maxMs !== undefined && { maxMs }),
      });
    },
  },
  {
    pattern: ['experiments', ':db', ':experiment', 'runs', ':run', 'requests', ':request'],
    query: [],
    async handle(ctx) {
      const { db, runId } = await runScope(ctx);
      return requestDetail(db, runId, ctx.params.request!);
    },
  },
];

/** Readable names of captured segments, for error messages. */
const SEGMENT_NAMES: Readonly<Record<string, string>> = {
  db: 'results file name',
  experiment: 'experiment id',
  run: 'run id',
  request: 'request id',
};

/**
 * Answers one API request: `segments` are the decoded path segments after `/api`.
 * `gateway`: whether `--gateway` was given (reported by `/api/health`).
 * @throws ApiError 404 for an unknown route (or file, experiment, run, request), 400 for a
 *   malformed segment or parameter, 503 for a file that cannot be opened.
 */
export async function handleApi(catalog: ResultsCatalog, segments: readonly string[], search: URLSearchParams, gateway = false): Promise<unknown> {
  for (const route of ROUTES) {
    if (route.pattern.length !== segments.length) continue;
    const params: Record<string, string> = {};
    let match = true;
    for (let i = 0; i < segments.length && match; i++) {
      const p = route.pattern[i]!;
      const s = segments[i]!;
      if (p.startsWith(':')) params[p.slice(1)] = s;
      else match = p === s;
    }
    if (!match) continue;
    for (const [name, value] of Object.entries(params)) checkSegment(SEGMENT_NAMES[name] ?? name, value, { slashes: name === 'run' });
    return route.handle({ catalog, gateway, params, q: new QueryParams(search, route.query) });
  }
  throw notFound(`no API route /api/${segments.join('/')}`);
}
