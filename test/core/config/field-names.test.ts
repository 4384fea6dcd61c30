// Dotted paths into a schema (sweep axes, plan `set:`): where a path leaves the schema, and the
// valid path to suggest in its place.
import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { BUILTIN_STRATEGIES, StrategyRegistry, closestPath, unknownPathSegment } from '../../../core/index.ts';

const Schema = z.object({
  name: z.string(),
  replicas: z.object({ count: z.number().int(), engine: z.enum(['vllm', 'sglang']), max_num_seqs: z.number().optional(), kv_blocks: z.number().optional() }).optional(),
  client: z.object({ timeout_ms: z.number().default(1000) }).default({ timeout_ms: 1000 }),
  providers: z.array(z.object({ name: z.string(), limits: z.object({ rpm: z.number() }) })).default([]),
  runs: z.array(z.object({ params: z.record(z.string(), z.unknown()) })),
});

describe('unknownPathSegment', () => {
  it('passes valid paths, list entries by name and record keys', () => {
    for (const p of ['replicas.count', 'client.timeout_ms', 'providers.deepinfra.limits.rpm', 'runs.fixed.params.anything']) expect(unknownPathSegment(Schema, p), p).toBeNull();
  });

  it('names the first unknown segment with what is allowed there, and a path below a single value', () => {
    expect(unknownPathSegment(Schema, 'engine.max_num_seq')).toEqual({ index: 0, segment: 'engine', allowed: ['name', 'replicas', 'client', 'providers', 'runs'], belowValue: false });
    expect(unknownPathSegment(Schema, 'replicas.engine.max_num_seq')).toEqual({ index: 2, segment: 'max_num_seq', allowed: [], belowValue: true });
  });
});

describe('closestPath', () => {
  it('mends the segment that left the schema when that makes the path valid', () => {
    expect(closestPath(Schema, 'client.timout_ms')).toBe('client.timeout_ms');
    expect(closestPath(Schema, 'clinet.timeout_ms')).toBe('client.timeout_ms');
    expect(closestPath(Schema, 'replica.count')).toBe('replicas.count');
  });

  it('else finds the field by its last segment anywhere in the schema', () => {
    expect(closestPath(Schema, 'engine.max_num_seq')).toBe('replicas.max_num_seqs');
    expect(closestPath(Schema, 'replicas.engine.max_num_seq')).toBe('replicas.max_num_seqs');
    expect(closestPath(Schema, 'engine.kv_blocks')).toBe('replicas.kv_blocks');
  });

  it('suggests nothing for a valid path or one near nothing (a short segment needs a close match)', () => {
    expect(closestPath(Schema, 'replicas.count')).toBeNull();
    expect(closestPath(Schema, 'zzz.qqq')).toBeNull();
    expect(closestPath(Schema, 'nope.nmae')).toBeNull();
  });
});

describe('allowed keys behind a pipe', () => {
  it("lists RouteWise's router_params keys for an unknown key, not 'takes no router_params'", () => {
    const msg = new StrategyRegistry([...BUILTIN_STRATEGIES]).paramsProblem('routewise', { budget_alpah: 0.5 });
    expect(msg).toContain("(did you mean 'budget_alpha'?)");
    expect(msg).toMatch(/allowed keys: .*budget_alpha/);
    expect(msg).not.toContain('takes no router_params');
  });
});
