/**
 * Experiment files (`experiments/*.yaml`): which trace to replay, on which simulated replicas,
 * under which strategies and seed, and where the results go. Validated with zod; an error
 * names the field and what is allowed.
 */
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { formatConfigError } from '../core/config/models-config.ts';
import { ReplicasSchema } from './engine/replica-config.ts';

/** A window during which one replica answers every new attempt with an HTTP error. */
export const FaultSchema = z
  .object({
    /** Replica name, e.g. `replica-1`. */
    endpoint: z.string().min(1),
    from_ms: z.number().nonnegative(),
    to_ms: z.number().nonnegative(),
    /** HTTP status returned during the window. */
    status: z.number().int().min(400).max(599).default(503),
    /** Virtual ms until the error arrives (connect + response). */
    latency_ms: z.number().nonnegative().default(20),
  })
  .strict()
  .refine((f) => f.to_ms > f.from_ms, { message: 'to_ms must be greater than from_ms' });

/** One replay: a strategy with its params. */
export const RunSchema = z
  .object({
    strategy: z.string().min(1),
    params: z.record(z.string(), z.unknown()).default({}),
    /** Optional label in tables; defaults to the strategy name. */
    label: z.string().min(1).optional(),
  })
  .strict();

/** The whole experiment file. */
export const ExperimentSchema = z
  .object({
    name: z.string().min(1),
    description: z.string().default(''),
    /** Arrow trace path, relative to the experiment file. */
    trace: z.string().min(1),
    /** Root seed; `--seed` overrides. */
    seed: z.number().int().default(1),
    /** Arrival-rate multiplier: arrival times are divided by it (2 = twice the load). */
    rate_scale: z.number().positive().default(1),
    /** Replay only the first N requests (after sorting by arrival). */
    limit: z.number().int().positive().optional(),
    /** Public model id the trace's requests are sent to. */
    model: z.string().min(1).default('default'),
    replicas: ReplicasSchema,
    /** Core routing settings (prefill-aware P2C, affinity, …), validated by the core. */
    routing: z.record(z.string(), z.unknown()).default({}),
    /** Callers are assigned to sessions by a seeded Zipf draw (traces carry no caller ids). */
    callers: z
      .object({ count: z.number().int().positive().default(100), zipf_s: z.number().nonnegative().default(1.1) })
      .strict()
      .default({ count: 100, zipf_s: 1.1 }),
    slo: z
      .object({ ttft_ms: z.number().positive().default(2000), tpot_ms: z.number().positive().default(100) })
      .strict()
      .default({ ttft_ms: 2000, tpot_ms: 100 }),
    /** Virtual interval of endpoint_timeseries samples. */
    sample_interval_ms: z.number().positive().default(1000),
    faults: z.array(FaultSchema).default([]),
    runs: z.array(RunSchema).min(1),
    /** DuckDB output path, relative to the working directory. */
    output: z.string().min(1),
  })
  .strict()
  .superRefine((e, ctx) => {
    if (e.replicas.weights && e.replicas.weights.length !== e.replicas.count) {
      ctx.addIssue({ code: 'custom', path: ['replicas', 'weights'], message: `needs ${e.replicas.count} weights (one per replica), got ${e.replicas.weights.length}` });
    }
    for (const [i, f] of e.faults.entries()) {
      const idx = /^replica-(\d+)$/.exec(f.endpoint);
      if (!idx || Number(idx[1]) >= e.replicas.count) {
        ctx.addIssue({ code: 'custom', path: ['faults', i, 'endpoint'], message: `must name a replica replica-0..replica-${e.replicas.count - 1}, got '${f.endpoint}'` });
      }
    }
  });

/** A validated experiment. `tracePath` is resolved to an absolute path. */
export type Experiment = z.infer<typeof ExperimentSchema> & { tracePath: string; file: string };

/**
 * Reads and validates an experiment file.
 * @throws Error naming the file and every bad field (path and allowed values).
 */
export function loadExperiment(file: string): Experiment {
  let raw: unknown;
  try {
    raw = parseYaml(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new Error(`${file}: cannot read experiment: ${(err as Error).message}`);
  }
  const r = ExperimentSchema.safeParse(raw);
  if (!r.success) throw new Error(formatConfigError(file, r.error));
  return { ...r.data, tracePath: resolve(dirname(file), r.data.trace), file };
}
