// Caller tiers and key pools in the simulator (seed 000 "为某个层级预留上游 key"): tiers drawn
// from a hash of the caller id, pooled keys declared on a hosted provider's route with their own
// RPM, and the same core choosing the key, so the pro tier's reserved capacity shows in a replay.
import { beforeAll, describe, expect, it } from 'vitest';
import { RoutingCore } from '../../core/index.ts';
import { readTrace } from '../../traces/arrow-trace.ts';
import { replicaFactory } from '../../simulator/engine/replica-config.ts';
import { replayRun } from '../../simulator/replay.ts';
import { simulatedModelsConfig } from '../../simulator/replay/models-config.ts';
import { selectRows } from '../../simulator/sim-command.ts';
import { assignCallerRoles } from '../../simulator/workload.ts';
import { KeyLimits, simKeySecret } from '../../simulator/providers/key-limits.ts';
import type { TraceRow } from '../../traces/trace-row.ts';
import { azureConv, mixedExperiment } from './fixtures.ts';

const pooled = {
  replicas: { count: 1, profile: 'llama2-70b-h100-tp4' },
  providers: [{ name: 'minimax', profile: 'minimax-m2.5-openrouter/minimax', api_keys: [{ id: 'pro', min_role: 'pro', rpm: 30 }, { id: 'shared', rpm: 10 }] }],
  callers: { count: 100, roles: { free: 0.7, pro: 0.3 } },
};

let rows: TraceRow[];
beforeAll(async () => {
  rows = (await readTrace(azureConv)).rows;
});

describe('simulated key pools', () => {
  it('tiers come from the caller id: stable, prefixed, close to the declared shares', () => {
    const ids = Array.from({ length: 4000 }, (_, i) => `caller-${i}`);
    const a = assignCallerRoles(ids, { free: 0.7, pro: 0.3 });
    expect(assignCallerRoles(ids, { free: 0.7, pro: 0.3 })).toEqual(a);
    expect(a.callers[0]).toBe(`${a.roles[0]}:caller-0`);
    const pro = a.roles.filter((r) => r === 'pro').length / ids.length;
    expect(pro).toBeGreaterThan(0.27);
    expect(pro).toBeLessThan(0.33);
    expect(new Set(assignCallerRoles(ids, { internal: 1 }).roles)).toEqual(new Set(['internal']));
  });

  it('a provider with api_keys routes through a pool with those roles; each key has its own RPM', () => {
    const exp = mixedExperiment(pooled);
    const core = new RoutingCore(simulatedModelsConfig(exp, { strategy: 'round_robin', params: {}, label: 'rr' }));
    const route = core.model('m')!.routes.find((r) => r.endpointId.endsWith('minimax'))!;
    expect(route.keys.map((k) => [k.keyId, k.minRole])).toEqual([
      ['pro', 'pro'],
      ['shared', 'free'],
    ]);
    expect(simKeySecret('minimax', 'pro')).toBe('sim-minimax-pro');
    const limits = new KeyLimits(exp.providers, () => route.endpointId);
    for (let i = 0; i < 10; i++) expect(limits.tryAcquire(route.endpointId, 'shared', i, 10).ok).toBe(true);
    expect(limits.tryAcquire(route.endpointId, 'shared', 11, 10)).toMatchObject({ ok: false, limit: 'rpm' });
    expect(limits.tryAcquire(route.endpointId, 'pro', 11, 10).ok).toBe(true);
  });

  it('a replay gives the pro tier its reserved capacity: a larger share of its requests is served by the provider', () => {
    const exp = mixedExperiment(pooled);
    const result = replayRun({ experiment: exp, rows: selectRows(rows, exp), run: { strategy: 'round_robin', params: {}, label: 'rr' }, runId: 'r', seed: 3, makeReplica: replicaFactory(exp.replicas, 512), checkInvariants: true });
    const share = (tier: string) => {
      const mine = result.requests.filter((r) => r.callerId!.startsWith(`${tier}:`));
      return mine.filter((r) => r.status === 'ok' && r.endpointId?.endsWith('minimax')).length / mine.length;
    };
    expect(result.requests.some((r) => r.callerId!.startsWith('pro:'))).toBe(true);
    expect(share('pro')).toBeGreaterThan(share('free'));
  });
});
