import { describe, expect, it } from 'vitest';
import { describeReplicas, replicaFactory, ReplicasSchema, resolveReplicas } from '../../../simulator/engine/replica-config.ts';
import { SglangReplica } from '../../../simulator/engine/sglang-replica.ts';
import { VllmReplica } from '../../../simulator/engine/vllm-replica.ts';

const issues = (raw: unknown) => {
  const r = ReplicasSchema.safeParse(raw);
  return r.success ? '' : r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
};

describe('replicas: block', () => {
  it('a legacy profile block still builds the linear-model vLLM replica', () => {
    const c = ReplicasSchema.parse({ count: 2, profile: 'llama2-70b-h100-tp4' });
    const r = replicaFactory(c, 512)(0);
    expect(r).toBeInstanceOf(VllmReplica);
    expect((r as VllmReplica).kvBlocks).toBe(32_279);
    expect(describeReplicas(c)).toBe('2 × vllm replicas (profile llama2-70b-h100-tp4)');
  });

  it('a calibrated block names engine, version, model, dtype, GPU and TP, and sizes KV from memory', () => {
    const c = ReplicasSchema.parse({ count: 4, engine: 'vllm', gpu: 'h100_sxm', model: 'llama-3.1-70b', tp: 4 });
    const d = describeReplicas(c);
    expect(d).toMatch(/^4 × vLLM replicas \(profile vllm-0\.14, 0\.14\.0 operator tables\) of llama-3\.1-70b \(bfloat16\) on 4× H100 SXM 80GB \(TP 4\), step times from measured operators, [\d,]+ KV blocks × 16 tokens$/);
    const r = resolveReplicas(c);
    expect(r.kind).toBe('calibrated');
    if (r.engine === 'vllm') expect(r.kvBlocks).toBeGreaterThan(20_000);
    const s = ReplicasSchema.parse({ count: 1, engine: 'sglang', model: 'qwen3-32b', tp: 2, schedule_policy: 'lpm', enable_mixed_chunk: true });
    const rep = replicaFactory(s, 512)(0) as SglangReplica;
    expect(rep).toBeInstanceOf(SglangReplica);
    expect(rep.schedulePolicy).toBe('lpm');
    expect(rep.enableMixedChunk).toBe(true);
    expect(describeReplicas(s)).toMatch(/SGLang replicas \(profile sglang-0\.5, 0\.5\.9 operator tables\) of qwen3-32b \(bfloat16\) on 2× H100 SXM 80GB \(TP 2\).* KV tokens$/);
    // gpu_memory_utilization moves the KV capacity.
    const lo = resolveReplicas(ReplicasSchema.parse({ count: 1, model: 'llama-3.1-8b', tp: 1, gpu_memory_utilization: 0.5 }));
    const hi = resolveReplicas(ReplicasSchema.parse({ count: 1, model: 'llama-3.1-8b', tp: 1, gpu_memory_utilization: 0.9 }));
    if (lo.engine === 'vllm' && hi.engine === 'vllm') expect(hi.kvBlocks).toBeGreaterThan((lo.kvBlocks ?? 0) * 2);
  });

  it('bad blocks name the field and the fix', () => {
    expect(issues({ count: 1, engine: 'sglang', profile: 'llama2-70b-h100-tp4' })).toMatch(/profile: a linear profile models vLLM only/);
    expect(issues({ count: 1, profile: 'llama2-70b-h100-tp4', model: 'qwen3-32b' })).toMatch(/model: use either profile .* or gpu\/model\/tp/);
    expect(issues({ count: 1, model: 'qwen3-32b' })).toMatch(/tp: required/);
    expect(issues({ count: 1, tp: 2 })).toMatch(/model: required \(one of llama-3\.1-8b/);
    expect(issues({ count: 1, model: 'qwen3-32b', tp: 3 })).toMatch(/tp:/);
    expect(issues({ count: 1, engine: 'sglang', gpu: 'a100_sxm', model: 'qwen3-32b', tp: 2 })).toMatch(/gpu: SGLang operator tables exist for h100_sxm only/);
    expect(issues({ count: 1, gpu: 'a100_sxm', model: 'qwen3-32b', tp: 2, dtype: 'fp8' })).toMatch(/dtype: fp8 GEMM tables exist for h100_sxm only/);
    expect(issues({ count: 1, model: 'qwen3-32b', tp: 2, engine_version: '0.11.0' })).toMatch(/engine_version: vllm operator tables exist for 0\.14\.0; got 0\.11\.0/);
    expect(issues({ count: 1, model: 'qwen3-32b', tp: 2, chunked_prefill_size: 4096 })).toMatch(/chunked_prefill_size: is an SGLang setting; this block has engine vllm/);
    expect(issues({ count: 1, engine: 'sglang', model: 'qwen3-32b', tp: 2, max_num_seqs: 4 })).toMatch(/max_num_seqs: is a vLLM setting; this block has engine sglang/);
    expect(() => resolveReplicas(ReplicasSchema.parse({ count: 1, model: 'llama-3.1-70b', tp: 1 }))).toThrow(/does not fit H100 SXM 80GB.*raise tp/);
  });
});
