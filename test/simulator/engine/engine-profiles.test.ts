import { describe, expect, it } from 'vitest';
import { ENGINE_PROFILE_NAMES, ENGINE_PROFILES, engineProfile, sglangProfileDefaults, vllmProfileDefaults } from '../../../simulator/engine/engine-profiles.ts';
import { ReplicasSchema, resolveReplicas } from '../../../simulator/engine/replica-config.ts';

describe('engine version profiles pin the cited defaults', () => {
  it('vLLM: 1024 seqs / 8192 tokens on ≥ 70 GiB GPUs; A100 takes 256 / 2048 from 0.9.0 (PR #17885)', () => {
    for (const p of ['vllm-0.8', 'vllm-0.10', 'vllm-0.14'] as const) {
      const h = vllmProfileDefaults(p, 'h100_sxm');
      expect([h.maxNumSeqs, h.maxNumBatchedTokens, h.gpuMemoryUtilization, h.blockTokens, h.prefixCaching, h.preemption]).toEqual([1024, 8192, 0.9, 16, true, 'recompute']);
    }
    expect(vllmProfileDefaults('vllm-0.8', 'a100_sxm')).toMatchObject({ maxNumSeqs: 1024, maxNumBatchedTokens: 8192 });
    expect(vllmProfileDefaults('vllm-0.10', 'a100_sxm')).toMatchObject({ maxNumSeqs: 256, maxNumBatchedTokens: 2048 });
    expect(vllmProfileDefaults('vllm-0.14', 'a100_sxm')).toMatchObject({ maxNumSeqs: 256, maxNumBatchedTokens: 2048 });
  });

  it('SGLang 0.4: chunk 8192, max prefill 16384, mem_fraction_static by TP', () => {
    expect([1, 2, 4, 8].map((tp) => sglangProfileDefaults('sglang-0.4', 'h100_sxm', tp).memFractionStatic)).toEqual([0.88, 0.87, 0.85, 0.81]);
    expect(sglangProfileDefaults('sglang-0.4', 'h100_sxm', 4)).toMatchObject({ chunkedPrefillSize: 8192, maxPrefillTokens: 16384, schedulePolicy: 'fcfs', enableMixedChunk: false });
  });

  it('SGLang 0.5: mem_fraction_static = (memory − reserved) / memory with the PR #10975 reserve', () => {
    const mib = (79.19 * 1024);
    // TP 1: 512 + 1.5 × 8192 + 2 × 256 + 128 MiB reserved.
    expect(sglangProfileDefaults('sglang-0.5', 'h100_sxm', 1).memFractionStatic).toBe(Math.round(((mib - (512 + 12288 + 512 + 128)) / mib) * 1000) / 1000);
    // TP 8: 512 + 12288 + 2 × 512 + 1024 MiB.
    expect(sglangProfileDefaults('sglang-0.5', 'h100_sxm', 8).memFractionStatic).toBe(Math.round(((mib - (512 + 12288 + 1024 + 1024)) / mib) * 1000) / 1000);
    expect(sglangProfileDefaults('sglang-0.5', 'h100_sxm', 8).chunkedPrefillSize).toBe(8192);
  });

  it('every profile cites its sources; a profile of the other engine is refused by name', () => {
    for (const n of ENGINE_PROFILE_NAMES) expect(ENGINE_PROFILES[n].sources.length).toBeGreaterThan(0);
    expect(() => engineProfile('vllm', 'sglang-0.5')).toThrow(/sglang profile; this block has engine vllm/);
    expect(ReplicasSchema.safeParse({ count: 1, engine: 'sglang', model: 'qwen3-32b', tp: 4, engine_profile: 'vllm-0.8' }).success).toBe(false);
  });

  it('replicas take their defaults from the profile; explicit settings win; max_model_len defaults to the context length', () => {
    const r = resolveReplicas(ReplicasSchema.parse({ count: 1, engine: 'vllm', model: 'llama-3.1-70b', tp: 4, engine_profile: 'vllm-0.8' }));
    if (r.kind !== 'calibrated' || r.engine !== 'vllm') throw new Error('expected a calibrated vLLM replica');
    expect([r.maxNumSeqs, r.maxNumBatchedTokens, r.engineProfile, r.maxModelLen]).toEqual([1024, 8192, 'vllm-0.8', 131072]);
    const a = resolveReplicas(ReplicasSchema.parse({ count: 1, engine: 'vllm', gpu: 'a100_sxm', model: 'llama-3.1-70b', tp: 4, max_num_seqs: 64 }));
    if (a.kind !== 'calibrated' || a.engine !== 'vllm') throw new Error('expected a calibrated vLLM replica');
    expect([a.maxNumSeqs, a.maxNumBatchedTokens, a.engineProfile]).toEqual([64, 2048, 'vllm-0.14']);
  });
});
