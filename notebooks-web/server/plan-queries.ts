/**
 * A capacity plan's tables (`switchyard plan`, simulator/plan/plan-tables.ts): every evaluated
 * probe run (`plan_points`) and every answer (`plans`) of one plan, whose id is the experiment
 * id of its runs. A results file without those tables has no plan (`available: false`).
 */
import type { PlanAnswer, PlanPoint, PlansResponse } from '../shared/api-types.ts';
import { textParam, type ReadOnlyDb } from './read-only-db.ts';

/** Points and answers of plan `planId`, in question, configuration and rate order. */
export async function planTables(db: ReadOnlyDb, planId: string): Promise<PlansResponse> {
  const tables = await db.tables();
  if (!tables.has('plan_points') || !tables.has('plans')) return { available: false, points: [], answers: [] };
  const id = { id: textParam(planId) };
  const points = await db.query<PlanPoint>(
    `SELECT question, config, label, rate_scale AS "rateScale", replicas, seed, run_id AS "runId", goodput,
            ttft_ms AS "ttftMs", tpot_ms AS "tpotMs", holds, cost_per_hour_usd AS "costPerHourUsd",
            cost_per_1k_requests_usd AS "costPer1kRequestsUsd", probe_verdict AS "probeVerdict"
     FROM plan_points WHERE plan_id = $id ORDER BY question, config, label, rate_scale, replicas, seed`,
    id,
  );
  const answers = await db.query<PlanAnswer>(
    `SELECT question, config, label, status, answer, low, high, unit, confidence,
            cost_per_hour_usd AS "costPerHourUsd", cost_per_1k_requests_usd AS "costPer1kRequestsUsd", rank
     FROM plans WHERE plan_id = $id ORDER BY question, rank NULLS LAST, config, label`,
    id,
  );
  return { available: true, points, answers };
}
