/**
 * The request log as operators query it (seed 000, "Recent Requests"): `GET
 * /admin/recent-requests` lists the newest rows, and `GET /admin/recent-requests/offloads`
 * counts, per model, serving route and reason, the requests moved to an offload route in the last
 * `days`, with their share of the model's traffic and how many still failed (a client that went
 * away, HTTP 499, is not counted as a failure). Each recent request comes with its attempts
 * (`attempt_list`, from the `attempts` table, in start order). Both take the same filters (`caller`, `session`,
 * `model`, `type` = an endpoint family id: chat | completion | embedding | …) and read through the log's writer thread,
 * which owns the live DuckDB file (`RequestLog.query`).
 */
import { z } from 'zod';
import { endpointFamily } from '../endpoints/families.ts';
import type { RequestLog } from '../request-log/request-log.ts';
import type { AdminAnswer, AdminCall } from './admin-api.ts';
import { parseQuery } from './admin-bodies.ts';

const Filters = {
  caller: z.string().min(1).optional(),
  session: z.string().min(1).optional(),
  model: z.string().min(1).optional(),
  type: z
    .string()
    .refine((id) => endpointFamily(id) !== undefined, { message: 'type must be an endpoint family the gateway serves (chat, completion, embedding, …)' })
    .optional(),
};

/** `GET /admin/recent-requests` query: filters, a time window in Unix ms, and a row limit. */
export const RecentQuerySchema = z
  .object({ ...Filters, since_ms: z.coerce.number().min(0).optional(), until_ms: z.coerce.number().min(0).optional(), limit: z.coerce.number().int().min(1).max(1000).default(100) })
  .strict();

/** `GET /admin/recent-requests/offloads` query: filters and the window in days (default 1). */
export const OffloadQuerySchema = z.object({ ...Filters, days: z.coerce.number().positive().max(366).default(1) }).strict();

/** One attempt of a recent request, as a struct of the `attempts` table's columns. */
const ATTEMPT_FIELDS = `{attempt_index: attempt_index, endpoint_id: endpoint_id, target: target, outcome: outcome, reason: reason, start_unix_ms: start_unix_ms, end_unix_ms: end_unix_ms, input_tokens: input_tokens, output_tokens: output_tokens, cached_tokens: cached_tokens}`;

const WHERE = `($1::VARCHAR IS NULL OR caller_id = $1) AND ($2::VARCHAR IS NULL OR session_id = $2) AND ($3::VARCHAR IS NULL OR model = $3) AND ($4::VARCHAR IS NULL OR api = $4) AND arrival_unix_ms >= $5 AND arrival_unix_ms < $6`;

/**
 * The report routes over `log` (null: the request log is off ⇒ 404 naming the setting), for
 * `AdminDeps.extraRoutes`; null for a call that is not one of them.
 * @param nowUnixMs the wall clock (Unix ms), for `days`.
 */
export function requestReports(log: RequestLog | null, nowUnixMs: () => number): (call: AdminCall) => Promise<AdminAnswer> | null {
  return (call) => {
    if (call.method !== 'GET' || (call.path !== '/admin/recent-requests' && call.path !== '/admin/recent-requests/offloads')) return null;
    return (async (): Promise<AdminAnswer> => {
      if (!log) return { status: 404, body: { error: { message: 'The request log is off; set request_log.path in gateway.yaml to keep one.', type: 'invalid_request_error', param: null, code: 'request_log_off' } } };
      if (call.path === '/admin/recent-requests') {
        const q = parseQuery(RecentQuerySchema, call.query);
        if (!q.ok) return { status: 400, body: { error: { message: q.problem.message, type: 'invalid_request_error', param: q.problem.param, code: 'invalid_request' } } };
        const v = q.value;
        const rows = await log.query(
          `WITH r AS (SELECT arrival_unix_ms, request_id, session_id, caller_id, model, api, stream, endpoint_id, attempts, http_status, status, fallback, offload_reason, strategy, input_tokens, output_tokens, cached_tokens, ttft_ms, e2e_ms, cost_usd
                      FROM requests WHERE ${WHERE} ORDER BY arrival_unix_ms DESC LIMIT ${v.limit}),
                a AS (SELECT request_id, arrival_unix_ms, list(${ATTEMPT_FIELDS} ORDER BY attempt_index) AS attempt_list FROM attempts JOIN (SELECT request_id, arrival_unix_ms FROM r) USING (request_id, arrival_unix_ms) GROUP BY request_id, arrival_unix_ms)
           SELECT r.*, coalesce(a.attempt_list, []) AS attempt_list FROM r LEFT JOIN a USING (request_id, arrival_unix_ms) ORDER BY r.arrival_unix_ms DESC`,
          [v.caller ?? null, v.session ?? null, v.model ?? null, v.type ?? null, v.since_ms ?? 0, v.until_ms ?? Number.MAX_SAFE_INTEGER],
        );
        return { status: 200, body: { requests: rows } };
      }
      const q = parseQuery(OffloadQuerySchema, call.query);
      if (!q.ok) return { status: 400, body: { error: { message: q.problem.message, type: 'invalid_request_error', param: q.problem.param, code: 'invalid_request' } } };
      const v = q.value;
      const now = nowUnixMs();
      const rows = await log.query(
        `WITH f AS (SELECT * FROM requests WHERE ${WHERE}), t AS (SELECT model, count(*) AS total FROM f GROUP BY model)
         SELECT f.model, f.endpoint_id, f.offload_reason AS reason, count(*) AS offloaded, any_value(t.total) AS model_requests,
                count(*) FILTER (WHERE f.status <> 'ok' AND f.http_status <> 499) AS still_failed
         FROM f JOIN t USING (model) WHERE f.offload_reason IS NOT NULL
         GROUP BY f.model, f.endpoint_id, f.offload_reason ORDER BY f.model, offloaded DESC, f.endpoint_id`,
        [v.caller ?? null, v.session ?? null, v.model ?? null, v.type ?? null, now - v.days * 86_400_000, now + 1],
      );
      return {
        status: 200,
        body: {
          days: v.days,
          offloads: rows.map((r) => ({
            model: r.model,
            endpoint_id: r.endpoint_id,
            reason: r.reason,
            offloaded: Number(r.offloaded),
            share_of_model: Number(r.offloaded) / Number(r.model_requests),
            still_failed: Number(r.still_failed),
          })),
        },
      };
    })();
  };
}
