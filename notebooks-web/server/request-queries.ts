/**
 * The request drill-down: one run's requests filtered by status, endpoint and a latency range,
 * sorted and paged in SQL, and one request with its attempts.
 */
import type { AttemptInfo, LatencyMetric, RequestDetail, RequestListRow, RequestSortKey, RequestsPage } from '../shared/api-types.ts';
import { notFound } from './http-errors.ts';
import { LATENCY_COLUMNS } from './metric-queries.ts';
import { bigintParam, doubleParam, textParam, type ReadOnlyDb } from './read-only-db.ts';

/** Sortable columns. The client sends a key from this list; the SQL uses the key as a column. */
export const REQUEST_SORT_KEYS: readonly RequestSortKey[] = [
  'arrival_ms',
  'ttft_ms',
  'tpot_ms',
  'e2e_ms',
  'queue_wait_ms',
  'input_tokens',
  'output_tokens',
  'fallbacks',
  'cost_usd',
  'status',
  'endpoint_id',
  'request_id',
];

/** Filters, sort and page of {@link listRequests}. */
export interface RequestFilter {
  status?: string;
  endpoint?: string;
  /** Latency the range applies to. */
  metric: LatencyMetric;
  minMs?: number;
  maxMs?: number;
  sort: RequestSortKey;
  order: 'asc' | 'desc';
  limit: number;
  offset: number;
}

const COLUMNS = `request_id, session_id, arrival_ms, endpoint_id, status, queue_wait_ms, ttft_ms,
  tpot_ms, e2e_ms, input_tokens, output_tokens, cached_tokens, fallbacks, offload_reason, cost_usd`;

interface RequestSqlRow {
  request_id: string;
  session_id: string | null;
  arrival_ms: number;
  endpoint_id: string | null;
  status: string;
  queue_wait_ms: number | null;
  ttft_ms: number | null;
  tpot_ms: number | null;
  e2e_ms: number | null;
  input_tokens: number;
  output_tokens: number;
  cached_tokens: number;
  fallbacks: number;
  offload_reason: string | null;
  cost_usd: number;
}

function toRow(r: RequestSqlRow): RequestListRow {
  return {
    requestId: r.request_id,
    sessionId: r.session_id,
    arrivalMs: r.arrival_ms,
    endpointId: r.endpoint_id,
    status: r.status,
    queueWaitMs: r.queue_wait_ms,
    ttftMs: r.ttft_ms,
    tpotMs: r.tpot_ms,
    e2eMs: r.e2e_ms,
    inputTokens: r.input_tokens,
    outputTokens: r.output_tokens,
    cachedTokens: r.cached_tokens,
    fallbacks: r.fallbacks,
    offloadReason: r.offload_reason,
    costUsd: r.cost_usd,
  };
}

/**
 * One page of run `runId`'s requests (the caller has checked the run). Nulls sort last either
 * way; ties break on request id. Facets list every status and endpoint of the run.
 */
export async function listRequests(db: ReadOnlyDb, runId: string, f: RequestFilter): Promise<RequestsPage> {
  if (!REQUEST_SORT_KEYS.includes(f.sort)) throw new Error(`unchecked sort key ${f.sort}`); // a bug, not input
  const metricCol = LATENCY_COLUMNS[f.metric];
  const params = {
    run: textParam(runId),
    status: textParam(f.status ?? null),
    endpoint: textParam(f.endpoint ?? null),
    min: doubleParam(f.minMs ?? null),
    max: doubleParam(f.maxMs ?? null),
  };
  const where = `run_id = $run
    AND ($status IS NULL OR status = $status)
    AND ($endpoint IS NULL OR endpoint_id = $endpoint)
    AND ($min IS NULL OR ${metricCol} >= $min)
    AND ($max IS NULL OR ${metricCol} <= $max)`;
  const [count] = await db.query<{ n: number }>(`SELECT count(*) AS n FROM requests WHERE ${where}`, params);
  const rows = await db.query<RequestSqlRow>(
    `SELECT ${COLUMNS} FROM requests WHERE ${where}
     ORDER BY ${f.sort} ${f.order === 'asc' ? 'ASC' : 'DESC'} NULLS LAST, request_id
     LIMIT $limit OFFSET $offset`,
    { ...params, limit: bigintParam(f.limit), offset: bigintParam(f.offset) },
  );
  const facets = await db.query<{ statuses: string[] | null; endpoints: (string | null)[] | null }>(
    `SELECT list_sort(list(DISTINCT status)) AS statuses, list_sort(list(DISTINCT endpoint_id)) AS endpoints
     FROM requests WHERE run_id = $run`,
    { run: params.run },
  );
  return {
    total: count?.n ?? 0,
    offset: f.offset,
    limit: f.limit,
    rows: rows.map(toRow),
    statuses: facets[0]?.statuses ?? [],
    endpoints: (facets[0]?.endpoints ?? []).filter((e): e is string => e !== null),
  };
}

/**
 * One request of run `runId` and its attempts in order.
 * @throws ApiError 404 when the run has no such request.
 */
export async function requestDetail(db: ReadOnlyDb, runId: string, requestId: string): Promise<RequestDetail> {
  const params = { run: textParam(runId), req: textParam(requestId) };
  const [row] = await db.query<RequestSqlRow>(`SELECT ${COLUMNS} FROM requests WHERE run_id = $run AND request_id = $req LIMIT 1`, params);
  if (!row) throw notFound(`unknown request '${requestId}' in run '${runId}'`);
  const attempts = await db.query<{ attempt_id: number; endpoint_id: string; start_ms: number; end_ms: number; outcome: string; status: number | null }>(
    `SELECT attempt_id, endpoint_id, start_ms, end_ms, outcome, status FROM attempts
     WHERE run_id = $run AND request_id = $req ORDER BY attempt_id`,
    params,
  );
  return {
    request: toRow(row),
    attempts: attempts.map(
      (a): AttemptInfo => ({ attemptId: a.attempt_id, endpointId: a.endpoint_id, startMs: a.start_ms, endMs: a.end_ms, outcome: a.outcome, status: a.status }),
    ),
  };
}
