/**
 * Cost accounting in one currency for local and hosted routes: hosted tokens are priced per
 * request from the provider's prices (cached prompt tokens at the cached price), subscriptions
 * by their hourly fee, and local replicas by GPU-hours at a configurable $/GPU-hour — the
 * replicas are paid for while the run lasts, busy or idle.
 */
import { z } from 'zod';

/** The `costs:` block. */
export const CostsSchema = z
  .object({
    /** Price of one GPU for one hour, USD (e.g. ~2-4 for an on-demand H100 in 2025). Default 0: local is free. */
    gpu_usd_per_hour: z.number().nonnegative().default(0),
    /** GPUs one local replica occupies (4 for a tensor-parallel-4 replica). */
    gpus_per_replica: z.number().int().positive().default(1),
  })
  .strict()
  .prefault({});

/** A validated `costs:` block. */
export type CostsConfig = z.infer<typeof CostsSchema>;

/** Run-level costs, USD unless named otherwise. */
export interface RunCosts {
  /** Σ per-request token costs of hosted attempts (wasted attempts included). */
  tokenUsd: number;
  /** Σ subscription fees over the run's duration. */
  fixedUsd: number;
  /** replicas × gpus_per_replica × duration, hours. */
  gpuHours: number;
  /** gpuHours × gpu_usd_per_hour. */
  gpuUsd: number;
}

const MS_PER_HOUR = 3_600_000;

/**
 * Costs of a run lasting `durationMs` of virtual time with `replicas` local replicas and
 * hosted fees `fixedUsdPerHour` (summed over providers).
 */
export function runCosts(costs: CostsConfig, replicas: number, durationMs: number, tokenUsd: number, fixedUsdPerHour: number): RunCosts {
  const hours = durationMs / MS_PER_HOUR;
  const gpuHours = replicas * costs.gpus_per_replica * hours;
  return { tokenUsd, fixedUsd: fixedUsdPerHour * hours, gpuHours, gpuUsd: gpuHours * costs.gpu_usd_per_hour };
}
