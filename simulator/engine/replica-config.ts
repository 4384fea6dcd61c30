/**
 * The `replicas:` block of an experiment and the factory that builds one simulated replica from
 * it. Kept beside the engine models so a new engine (e.g. SGLang) is added here only.
 */
import { z } from 'zod';
import type { EngineModel } from './engine-model.ts';
import { loadStepTimeProfile } from './step-time.ts';
import { VllmReplica } from './vllm-replica.ts';

/** `replicas:` — how many replicas, which engine and step-time profile, and engine limits. */
export const ReplicasSchema = z
  .object({
    count: z.number().int().min(1).max(1024),
    engine: z.enum(['vllm']).default('vllm'),
    /** Step-time profile name under simulator/engine/profiles/. */
    profile: z.string().min(1),
    max_num_seqs: z.number().int().positive().optional(),
    max_num_batched_tokens: z.number().int().positive().optional(),
    kv_blocks: z.number().int().positive().optional(),
    /** Route weights, one per replica; default all 1. */
    weights: z.array(z.number().nonnegative()).optional(),
  })
  .strict();

/** A validated `replicas:` block. */
export type ReplicasConfig = z.infer<typeof ReplicasSchema>;

/**
 * Returns a factory of fresh replicas for `config`; loads the profile once.
 * @param hashBlockTokens tokens per trace hash block (from the trace metadata; Mooncake 512).
 * @throws Error when the profile is missing or invalid (names the file and field).
 */
export function replicaFactory(config: ReplicasConfig, hashBlockTokens: number): (index: number) => EngineModel {
  const { model: stepTime } = loadStepTimeProfile(config.profile);
  return () =>
    new VllmReplica({
      stepTime,
      hashBlockTokens,
      ...(config.max_num_seqs !== undefined && { maxNumSeqs: config.max_num_seqs }),
      ...(config.max_num_batched_tokens !== undefined && { maxNumBatchedTokens: config.max_num_batched_tokens }),
      ...(config.kv_blocks !== undefined && { kvBlocks: config.kv_blocks }),
    });
}

/** One line naming what the replicas model, for run headers. */
export function describeReplicas(config: ReplicasConfig): string {
  return `${config.count} × ${config.engine} replicas (profile ${config.profile})`;
}
