/**
 * The `sweep:` block of an experiment: a grid of cells, each one run. The grid is
 * runs (strategies with params) × scenarios × replica counts × rate scales × any other
 * experiment field by dotted path (`axes`) × seeds. Cells that differ only in the run share
 * their seed, arrivals, client draws and fault draws (common random numbers), so they pair up
 * in `switchyard compare`.
 */
import { z } from 'zod';

/** A value an axis may take. */
export const AxisValueSchema = z.union([z.number(), z.string(), z.boolean()]);

/** An axis value. */
export type AxisValue = z.infer<typeof AxisValueSchema>;

/** The `sweep:` block. */
export const SweepSchema = z
  .object({
    /** A count k (seeds seed, seed+1, …, seed+k−1 from the experiment's seed) or an explicit list. */
    seeds: z.union([z.number().int().min(1), z.array(z.number().int()).min(1)]).optional(),
    /** Names from `scenarios:` (`none` = no extra faults). A cell's faults are `faults:` + its scenario's. */
    scenarios: z.array(z.string().min(1)).min(1).optional(),
    /** Local replica counts (`replicas.count`). */
    replicas: z.array(z.number().int().min(1)).min(1).optional(),
    /** Arrival-rate multipliers (`rate_scale`). */
    rate_scale: z.array(z.number().positive()).min(1).optional(),
    /**
     * Any other field by dotted path into the experiment, e.g. `client.timeout_ms`,
     * `routing.prefill_p2c.threshold_tokens`, `providers.deepinfra.limits.rpm` (list entries by
     * `name`, runs by label, or by index). Each cell's experiment is validated again.
     */
    axes: z.record(z.string().regex(/^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/, 'a dotted path such as client.timeout_ms'), z.array(AxisValueSchema).min(1)).default({}),
  })
  .strict();

/** A validated `sweep:` block. */
export type SweepConfig = z.infer<typeof SweepSchema>;
