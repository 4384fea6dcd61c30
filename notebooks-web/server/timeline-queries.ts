/**
 * One run over time: per-endpoint gauges from `endpoint_timeseries`, the request rate from
 * `requests`, and breaker transitions and fault windows from `events`. Series are bucketed in
 * SQL so a window of any length comes back as at most `maxPoints` buckets per series; zooming
 * in (a narrower window) gives finer buckets, down to one second.
 */
import type { BreakerEvent, EndpointPoint, FaultEdge, RatePoint, TimelineResponse } from '../shared/api-types.ts';
import { badRequest } from './http-errors.ts';
import { doubleParam, textParam, type ReadOnlyDb } from './read-only-db.ts';

/** Finest bucket, ms: rates over less than a second are mostly noise. */
export const MIN_BUCKET_MS = 1000;

/** Most events returned for one run; a run with more is cut (and flagged by its length). */
const MAX_EVENTS = 20_000;

/** Options of {@link runTimeline}. */
export interface TimelineWindow {
  /** Window start, ms; default: run start. */
  fromMs?: number;
  /** Window end, ms; default: run end. */
  toMs?: number;
  /** Most buckets per series (10..5000). */
  maxPoints: number;
}

/**
 * Bucket width for a window: the window over `maxPoints`, rounded up to a whole second, never
 * below {@link MIN_BUCKET_MS}.
 */
export function bucketWidthMs(fromMs: number, toMs: number, maxPoints: number): number {
  const raw = Math.max(0, toMs - fromMs) / Math.max(1, maxPoints);
  return Math.max(MIN_BUCKET_MS, Math.ceil(raw / 1000) * 1000);
}

function parseDetail(json: string): Record<string, unknown> {
  try {
    const v: unknown = JSON.parse(json);
    return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

/**
 * The timeline of run `runId` (the caller has checked it belongs to the experiment).
 * Gauges are the maximum over each bucket (peaks are what a queue plot is for); rates are
 * arrivals and non-`ok` requests per virtual second, zero-filled between arrivals.
 * @throws ApiError 400 when both ends are given and `fromMs ≥ toMs`.
 */
export async function runTimeline(db: ReadOnlyDb, runId: string, win: TimelineWindow): Promise<TimelineResponse> {
  if (win.fromMs !== undefined && win.toMs !== undefined && win.fromMs >= win.toMs) {
    throw badRequest(`from_ms (${win.fromMs}) must be less than to_ms (${win.toMs})`);
  }
  const run = { run: textParam(runId) };
  const [extent] = await db.query<{ start_ms: number | null; end_ms: number | null }>(
    `SELECT least((SELECT min(at_ms) FROM endpoint_timeseries WHERE run_id = $run),
                  (SELECT min(arrival_ms) FROM requests WHERE run_id = $run)) AS start_ms,
            greatest((SELECT max(at_ms) FROM endpoint_timeseries WHERE run_id = $run),
                     (SELECT max(arrival_ms + coalesce(e2e_ms, 0)) FROM requests WHERE run_id = $run)) AS end_ms`,
    run,
  );
  const runStartMs = extent?.start_ms ?? 0;
  const runEndMs = Math.max(runStartMs + 1, extent?.end_ms ?? runStartMs + 1);
  const fromMs = Math.min(Math.max(win.fromMs ?? runStartMs, runStartMs), runEndMs);
  const toMs = Math.max(Math.min(win.toMs ?? runEndMs, runEndMs), fromMs);
  const bucketMs = bucketWidthMs(fromMs, toMs, win.maxPoints);
  const range = { ...run, from: doubleParam(fromMs), to: doubleParam(toMs), bucket: doubleParam(bucketMs) };

  // Result files written before the engine counters existed have no such columns: they read as 0.
  const [hasCounters] = await db.query<{ n: number }>(
    `SELECT count(*)::INTEGER AS n FROM information_schema.columns WHERE table_name = 'endpoint_timeseries' AND column_name = 'batch_tokens'`,
    {},
  );
  const counters = (hasCounters?.n ?? 0) > 0
    ? 'max(batch_tokens) AS batch_tokens, (max(preemptions) - min(preemptions))::DOUBLE AS preemptions, (max(steps) - min(steps))::DOUBLE AS steps'
    : '0 AS batch_tokens, 0 AS preemptions, 0 AS steps';
  const samples = await db.query<{
    endpoint_id: string;
    at_ms: number;
    running: number;
    waiting: number;
    kv_usage: number;
    backlog: number;
    batch_tokens: number;
    preemptions: number;
    steps: number;
  }>(
    `SELECT endpoint_id, floor(at_ms / $bucket) * $bucket AS at_ms,
            max(running) AS running, max(waiting) AS waiting, max(kv_usage) AS kv_usage,
            max(prefill_backlog_tokens) AS backlog, ${counters}
     FROM endpoint_timeseries
     WHERE run_id = $run AND at_ms >= $from AND at_ms <= $to
     GROUP BY ALL ORDER BY endpoint_id, at_ms`,
    range,
  );
  const byEndpoint = new Map<string, EndpointPoint[]>();
  for (const s of samples) {
    const list = byEndpoint.get(s.endpoint_id) ?? [];
    list.push({ atMs: s.at_ms, running: s.running, waiting: s.waiting, kvUsage: s.kv_usage, prefillBacklogTokens: s.backlog, batchTokens: s.batch_tokens, preemptions: s.preemptions, steps: s.steps });
    byEndpoint.set(s.endpoint_id, list);
  }

  const rateRows = await db.query<{ at_ms: number; arrivals: number; failures: number }>(
    `WITH grid AS (
       SELECT b * $bucket AS at_ms
       FROM range(CAST(floor($from / $bucket) AS BIGINT), CAST(floor($to / $bucket) AS BIGINT) + 1) t(b)),
     counts AS (
       SELECT floor(arrival_ms / $bucket) * $bucket AS at_ms, count(*) AS arrivals,
              count(*) FILTER (WHERE status <> 'ok') AS failures
       FROM requests WHERE run_id = $run AND arrival_ms >= $from AND arrival_ms <= $to
       GROUP BY 1)
     SELECT grid.at_ms, coalesce(counts.arrivals, 0) AS arrivals, coalesce(counts.failures, 0) AS failures
     FROM grid LEFT JOIN counts ON counts.at_ms = grid.at_ms ORDER BY grid.at_ms`,
    range,
  );
  const perSec = 1000 / bucketMs;
  const rate: RatePoint[] = rateRows.map((r) => ({
    atMs: r.at_ms,
    arrivalsPerSec: r.arrivals * perSec,
    failuresPerSec: r.failures * perSec,
  }));

  const events = await db.query<{ at_ms: number; kind: string; endpoint_id: string | null; detail_json: string }>(
    `SELECT at_ms, kind, endpoint_id, detail_json FROM events
     WHERE run_id = $run AND kind IN ('breaker', 'fault')
     ORDER BY at_ms, rowid LIMIT ${MAX_EVENTS}`,
    run,
  );
  const breakers: BreakerEvent[] = [];
  const faults: FaultEdge[] = [];
  for (const e of events) {
    if (e.endpoint_id === null) continue;
    const d = parseDetail(e.detail_json);
    if (e.kind === 'breaker' && typeof d.from === 'string' && typeof d.to === 'string') {
      breakers.push({ atMs: e.at_ms, endpointId: e.endpoint_id, from: d.from, to: d.to, reason: typeof d.reason === 'string' ? d.reason : null });
    } else if (e.kind === 'fault' && (d.phase === 'start' || d.phase === 'end')) {
      faults.push({ atMs: e.at_ms, endpointId: e.endpoint_id, phase: d.phase, status: typeof d.status === 'number' ? d.status : null });
    }
  }

  const endpoints = [...new Set([...byEndpoint.keys(), ...breakers.map((b) => b.endpointId), ...faults.map((f) => f.endpointId)])].sort();
  const all = await db.query<{ endpoint_id: string }>(
    `SELECT DISTINCT endpoint_id FROM endpoint_timeseries WHERE run_id = $run ORDER BY endpoint_id`,
    run,
  );
  for (const a of all) if (!endpoints.includes(a.endpoint_id)) endpoints.push(a.endpoint_id);
  endpoints.sort();

  return {
    runId,
    fromMs,
    toMs,
    runStartMs,
    runEndMs,
    bucketMs,
    endpoints,
    series: endpoints.map((endpointId) => ({ endpointId, points: byEndpoint.get(endpointId) ?? [] })),
    rate,
    breakers,
    faults,
  };
}
