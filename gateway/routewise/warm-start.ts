/**
 * RouteWise's warm start (seed 000 "RouteWise": measurements come from live traffic, from the
 * recent request log replayed at start — `db_bootstrap_enabled`, on by default — and from the
 * prober). At start the gateway reads its own request log (DuckDB, gateway/request-log/, through
 * the log's reader connection) and replays the finished requests of every RouteWise model with
 * `db_bootstrap_enabled` into its planner (`RouteWisePlanner.replay`): latency profiles, cost
 * envelope, output-length predictor and cached-prompt fractions. A restart therefore starts
 * with the profiles the last run ended with, as far as their windows reach.
 *
 * What is read: rows of the `requests` table served by an endpoint of the model (endpoint ids
 * are `{model}:{location}`; a row goes to the model with the longest id that prefixes it), that
 * arrived within the longest window any of those planners keeps
 * (`max(latency_window_sec, envelope_window_sec)`, 24 h by default), newest `maxRows` first
 * (default 200,000), replayed oldest first. A row with status `ok` is a success with its TTFT
 * (its end-to-end time when no first token was logged, as a live finish without a first-token
 * event is counted) and its usage; a row answered 429 or 5xx is a failure of that route; other
 * rows (client errors, clients gone, drain cuts) teach nothing and are skipped. A route keeps
 * its latency history only while its endpoint id is unchanged; rows of the model's former
 * routes still teach its predictor and envelope (`RouteWisePlanner.replay`). Times are
 * moved onto the gateway's monotonic clock: end = now − (wall now − (arrival + e2e)).
 */
import type { Logger } from 'pino';
import { RouteWisePlanner, type ReplayedRequest, type RoutingCore } from '../../core/index.ts';
import type { RequestLog } from '../request-log/request-log.ts';

/** Default bound on the rows one warm start reads. */
export const DEFAULT_WARM_START_MAX_ROWS = 200_000;

/** What a warm start did for one model. */
export interface WarmStartResult {
  readonly model: string;
  /** Requests the planner took. */
  readonly replayed: number;
}

/** Options of `warmStartRouteWise`. */
export interface WarmStartOptions {
  readonly core: RoutingCore;
  readonly log: RequestLog;
  /** Monotonic now, ms (the clock the planners run on). */
  readonly nowMs: number;
  /** Wall now, Unix ms. */
  readonly nowUnixMs: number;
  readonly logger: Logger;
  /** Most rows read (newest first); default `DEFAULT_WARM_START_MAX_ROWS`. */
  readonly maxRows?: number;
}

/**
 * Replays the request log into every RouteWise planner of `core` with `db_bootstrap_enabled`.
 * Logs one `routewise warm start` line per model.
 * @throws Error when the log cannot be read (the gateway refuses to start: a warm start asked
 *   for and silently skipped would look like a cold one).
 */
export async function warmStartRouteWise(o: WarmStartOptions): Promise<WarmStartResult[]> {
  const models: Array<{ id: string; planner: RouteWisePlanner; prefix: string }> = [];
  for (const m of o.core.allModels()) {
    if (m.planner instanceof RouteWisePlanner && m.planner.params.db_bootstrap_enabled) models.push({ id: m.id, planner: m.planner, prefix: `${m.id}:` });
  }
  if (models.length === 0) return [];
  const windowMs = Math.max(...models.map((m) => Math.max(m.planner.params.latency_window_sec, m.planner.params.envelope_window_sec) * 1000));
  const maxRows = o.maxRows ?? DEFAULT_WARM_START_MAX_ROWS;
  if (!(Number.isInteger(maxRows) && maxRows > 0)) throw new RangeError(`warm start maxRows must be an integer > 0, got ${maxRows}`);
  const rows = await o.log.query(
    `SELECT endpoint_id, arrival_unix_ms + e2e_ms AS end_unix_ms, status, http_status, ttft_ms, e2e_ms, input_tokens, cached_tokens, output_tokens
     FROM requests WHERE (${models.map(() => 'starts_with(endpoint_id, ?)').join(' OR ')}) AND arrival_unix_ms >= ?
     ORDER BY end_unix_ms DESC LIMIT ${maxRows}`,
    [...models.map((m) => m.prefix), o.nowUnixMs - windowMs],
  );
  const replayed: ReplayedRequest[] = [];
  for (let i = rows.length - 1; i >= 0; i--) {
    const r = rows[i]!;
    const status = String(r.status);
    const http = Number(r.http_status);
    const ok = status === 'ok';
    if (!ok && http !== 429 && !(http >= 500 && status !== 'draining')) continue;
    const endUnixMs = Number(r.end_unix_ms);
    replayed.push({
      endpointId: String(r.endpoint_id),
      endMs: o.nowMs - Math.max(0, o.nowUnixMs - endUnixMs),
      ok,
      ttftMs: ok ? (r.ttft_ms === null ? Number(r.e2e_ms) : Number(r.ttft_ms)) : null,
      inputTokens: Number(r.input_tokens),
      cachedTokens: Number(r.cached_tokens),
      outputTokens: Number(r.output_tokens),
    });
  }
  const out: WarmStartResult[] = [];
  for (const m of models) {
    const n = m.planner.replay(replayed.filter((q) => q.endpointId.startsWith(m.prefix) && !models.some((x) => x !== m && x.prefix.length > m.prefix.length && q.endpointId.startsWith(x.prefix))));
    out.push({ model: m.id, replayed: n });
    o.logger.info({ model: m.id, replayed: n, windowSec: windowMs / 1000 }, 'routewise warm start');
  }
  return out;
}

/**
 * The start check of seed 000's cold start: every RouteWise model whose routes are all quota
 * routes must have a calibrated envelope by now (after the warm start).
 * @throws EnvelopeNotCalibratedError naming the first model that has none, and the fixes.
 */
export function assertEnvelopesCalibrated(core: RoutingCore, nowMs: number): void {
  for (const m of core.allModels()) if (m.planner instanceof RouteWisePlanner) m.planner.assertEnvelopeCalibrated(m.id, nowMs);
}
