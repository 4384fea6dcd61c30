/**
 * The `plan:` block of an experiment: the capacity questions `switchyard plan` answers, the SLO
 * they are answered against, and how many seeds a probe may spend before it must decide.
 *
 * A configuration (`configs`, `choices`) is a label plus `set`: experiment fields by dotted path
 * (as `sweep.axes` names them: `replicas.count`, `replicas.gpu`, `costs.gpu_usd_per_hour`, …).
 * The planner runs every probe as a one-combination sweep with these as axes, so each probe cell
 * is validated and named like any sweep cell.
 */
import { z } from 'zod';
import { AxisValueSchema } from '../sweep/sweep-config.ts';

const DottedPath = z.string().regex(/^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/, 'a dotted path such as replicas.gpu');

/** A latency bound on one percentile of a run's ok requests (the percentiles `summary` stores). */
export const PercentileBoundSchema = z
  .object({
    percentile: z.union([z.literal(50), z.literal(90), z.literal(99)]).default(99),
    ms: z.number().positive(),
  })
  .strict();

/** The SLO a plan holds: goodput ≥ `goodput` and, when given, TTFT / TPOT percentile bounds. */
export const PlanSloSchema = z
  .object({
    /** Least fraction of requests ok within the experiment's `slo:` (TTFT and TPOT per request). */
    goodput: z.number().gt(0).max(1),
    ttft: PercentileBoundSchema.optional(),
    tpot: PercentileBoundSchema.optional(),
  })
  .strict();

/** A labelled configuration: experiment fields to set, by dotted path. */
export const PlanConfigSchema = z
  .object({
    label: z.string().regex(/^[A-Za-z0-9_.-]+$/, 'use letters, digits, _, - and .'),
    set: z.record(DottedPath, AxisValueSchema).default({}),
  })
  .strict();

/** `max_rate:` — the highest `rate_scale` holding the SLO, per run (strategy) and configuration. */
export const MaxRateSchema = z
  .object({
    /** First rate probed; the bracket doubles or halves from it. Default: the experiment's rate_scale. */
    start: z.number().positive().optional(),
    /** Lowest rate the bracket tries (a stretched trace runs long in virtual time). Default start / 32. */
    floor: z.number().positive().optional(),
    /** Highest rate the bracket tries. Default start × 32. */
    ceiling: z.number().positive().optional(),
    /** Stop bisecting when high / low − 1 ≤ tolerance. */
    tolerance: z.number().gt(0).lt(1).default(0.05),
    /** Most probes (rates) per search, bracket included. */
    max_probes: z.number().int().min(2).max(100).default(16),
    /** Replica sets to search; default one, the experiment as written (label `base`). */
    configs: z.array(PlanConfigSchema).min(1).default([{ label: 'base', set: {} }]),
  })
  .strict()
  .superRefine((q, ctx) => {
    // The bracket walks from start towards floor or ceiling: they must lie in that order.
    const { start, floor, ceiling } = q;
    if (floor !== undefined && ceiling !== undefined && floor > ceiling) {
      ctx.addIssue({ code: 'custom', path: ['floor'], message: `floor ${floor} is above ceiling ${ceiling}; use floor ≤ start ≤ ceiling` });
      return;
    }
    if (start !== undefined && floor !== undefined && start < floor) {
      ctx.addIssue({ code: 'custom', path: ['start'], message: `start ${start} is below floor ${floor}; use floor ≤ start ≤ ceiling` });
    }
    if (start !== undefined && ceiling !== undefined && start > ceiling) {
      ctx.addIssue({ code: 'custom', path: ['start'], message: `start ${start} is above ceiling ${ceiling}; use floor ≤ start ≤ ceiling` });
    }
  });

/**
 * The message when a `max_rate` bracket, with `start` defaulted from the experiment's
 * `rate_scale`, does not satisfy floor ≤ start ≤ ceiling; null when it does.
 */
export function maxRateBracketProblem(start: number, floor: number, ceiling: number): string | null {
  if (floor <= start && start <= ceiling) return null;
  return `plan.max_rate: start ${start} (the experiment's rate_scale when start is not set) must lie within floor ${floor} and ceiling ${ceiling}; set start, floor or ceiling so that floor ≤ start ≤ ceiling`;
}

/** `min_replicas:` — the fewest replicas per choice holding the SLO at `rate_scale`, ranked by cost. */
export const MinReplicasSchema = z
  .object({
    /** Arrival-rate multiplier to hold. Default: the experiment's rate_scale. */
    rate_scale: z.number().positive().optional(),
    /** Largest replica count tried. */
    max_count: z.number().int().min(1).max(1024).default(32),
    /** GPU × TP × engine choices (each a label and fields to set, e.g. replicas.gpu, replicas.tp, costs.gpu_usd_per_hour). */
    choices: z.array(PlanConfigSchema).min(1),
  })
  .strict();

/** `offload:` — the offload wait and engine-queue limit meeting the SLO at the lowest cost. */
export const OffloadPlanSchema = z
  .object({
    /** Arrival-rate multiplier to hold. Default: the experiment's rate_scale. */
    rate_scale: z.number().positive().optional(),
    /** Candidate `offload.wait_sec` values, seconds. */
    wait_sec: z.array(z.number().positive()).min(1),
    /** Candidate `offload.engine_queue_limit` values (0 = no limit). */
    engine_queue_limit: z.array(z.number().int().min(0)).min(1).default([0]),
  })
  .strict();

/** The `plan:` block. At least one question. */
export const PlanSchema = z
  .object({
    slo: PlanSloSchema,
    /** Confidence of each probe's interval (two-sided). */
    confidence: z.number().gt(0).lt(1).default(0.95),
    /** Seeds per probe: start with `min`, add one at a time until decided or `max`. */
    seeds: z
      .object({ min: z.number().int().min(2).default(3), max: z.number().int().min(2).default(8) })
      .strict()
      .default({ min: 3, max: 8 })
      .refine((s) => s.max >= s.min, { message: 'max must be ≥ min' }),
    max_rate: MaxRateSchema.optional(),
    min_replicas: MinReplicasSchema.optional(),
    offload: OffloadPlanSchema.optional(),
  })
  .strict()
  .refine((p) => p.max_rate || p.min_replicas || p.offload, { message: 'ask at least one question: max_rate, min_replicas or offload' });

/** A validated `plan:` block. */
export type PlanConfig = z.infer<typeof PlanSchema>;
/** A validated plan SLO. */
export type PlanSlo = z.infer<typeof PlanSloSchema>;
/** A validated labelled configuration. */
export type PlanConfigEntry = z.infer<typeof PlanConfigSchema>;
