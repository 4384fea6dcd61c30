// Experiment-level `offload:` and `style: multi_target` runs, end to end through the loop.
import { beforeAll, describe, expect, it } from 'vitest';
import { readTrace } from '../../traces/arrow-trace.ts';
import type { TraceRow } from '../../traces/trace-row.ts';
import { replicaFactory } from '../../simulator/engine/replica-config.ts';
import { ExperimentSchema, parseExperiment } from '../../simulator/experiment.ts';
import { replayRun, runSpecs, simulatedModelsConfig, type RunResult } from '../../simulator/replay.ts';
import { selectRows } from '../../simulator/sim-command.ts';
import { expandGrid } from '../../simulator/sweep/grid.ts';
import { azureConv, mixedExperiment } from './fixtures.ts';

let allRows: TraceRow[];
beforeAll(async () => {
  allRows = (await readTrace(azureConv)).rows;
});

function run(over: Record<string, unknown>, label?: string): RunResult {
  const exp = mixedExperiment(over);
  const spec = label === undefined ? runSpecs(exp)[0]! : runSpecs(exp).find((r) => r.label === label)!;
  return replayRun({ experiment: exp, rows: selectRows(allRows, exp), run: spec, runId: 'r', seed: 5, makeReplica: replicaFactory(exp.replicas, 512), checkInvariants: true });
}

const baseRaw = () => ({
  name: 'x',
  trace: azureConv,
  model: 'm',
  replicas: { count: 2, profile: 'llama2-70b-h100-tp4' },
  providers: [{ name: 'deepinfra', profile: 'minimax-m2.5-openrouter/deepinfra' }],
  runs: [{ strategy: 'fixed' }],
  output: 'unused.duckdb',
});

describe('offload block', () => {
  it('maps to the model offload policy with the provider endpoint as route; limit 0 means none', () => {
    const exp = mixedExperiment({ offload: { provider: 'minimax', wait_sec: 0.5, engine_queue_limit: 0 } });
    const cfg = simulatedModelsConfig(exp, runSpecs(exp)[0]!);
    expect(cfg.models[0]!.offload).toEqual({ route: 'm:minimax', wait_sec: 0.5 });
    const exp2 = mixedExperiment({ offload: { provider: 'minimax', wait_sec: 2, engine_queue_limit: 4, max_input_tokens: 8000 } });
    expect(simulatedModelsConfig(exp2, runSpecs(exp2)[0]!).models[0]!.offload).toEqual({ route: 'm:minimax', wait_sec: 2, engine_queue_limit: 4, max_input_tokens: 8000 });
  });

  it('a short wait under load offloads requests, and offload_reason is set on them', () => {
    const res = run({
      rate_scale: 6,
      replicas: { count: 1, profile: 'llama2-70b-h100-tp4' },
      providers: [
        { name: 'deepinfra', profile: 'minimax-m2.5-openrouter/deepinfra', weight: 0.0001 },
        { name: 'minimax', profile: 'minimax-m2.5-openrouter/minimax', weight: 0.0001 },
      ],
      routing: {},
      client: { stream: 1 },
      offload: { provider: 'minimax', wait_sec: 0.2, engine_queue_limit: 1 },
    });
    const off = res.requests.filter((r) => r.offloadReason !== null);
    expect(off.length).toBeGreaterThan(0);
    for (const r of off) expect(['queue_wait', 'engine_wait', 'last_resort']).toContain(r.offloadReason);
    expect(res.attempts.some((a) => a.endpointId === 'm:minimax')).toBe(true);
  });

  it('validation errors name the field', () => {
    expect(() => parseExperiment({ ...baseRaw(), offload: { provider: 'nope', wait_sec: 1 } }, 'e.yaml')).toThrow(/offload\.provider/);
    expect(() => parseExperiment({ ...baseRaw(), offload: { provider: 'deepinfra', wait_sec: -1 } }, 'e.yaml')).toThrow(/offload\.wait_sec/);
    expect(() => parseExperiment({ ...baseRaw(), offload: { provider: 'deepinfra', wait_sec: 1, bogus: 1 } }, 'e.yaml')).toThrow(/offload/);
    expect(() => parseExperiment({ ...baseRaw(), offload: { provider: 'deepinfra', wait_sec: 1, engine_queue_limit: -2 } }, 'e.yaml')).toThrow(/offload\.engine_queue_limit/);
  });

  it('sweep axes set offload.wait_sec and offload.engine_queue_limit per cell', () => {
    const exp = parseExperiment(
      { ...baseRaw(), offload: { provider: 'deepinfra', wait_sec: 1 }, sweep: { axes: { 'offload.wait_sec': [0.5, 2], 'offload.engine_queue_limit': [0, 4] } } },
      'e.yaml',
    );
    const cells = expandGrid(exp, 1);
    expect(cells.map((c) => [c.experiment.offload?.wait_sec, c.experiment.offload?.engine_queue_limit])).toEqual([[0.5, 0], [0.5, 4], [2, 0], [2, 4]]);
    expect(simulatedModelsConfig(cells[1]!.experiment, cells[1]!.run).models[0]!.offload).toEqual({ route: 'm:deepinfra', wait_sec: 0.5, engine_queue_limit: 4 });
  });
});

describe('style: multi_target runs', () => {
  const mt = {
    multi_target: {
      targets: [{ endpoint: 'deepinfra' }, { endpoint: 'minimax' }],
      cooldown: { deepinfra: { enabled: true, duration_sec: 5, consecutive_failures: 2 } },
    },
    runs: [{ strategy: 'round_robin' }, { strategy: 'failover', style: 'multi_target' }],
  };

  it('builds one direct model per endpoint and the alias with the run strategy', () => {
    const exp = mixedExperiment(mt);
    const cfg = simulatedModelsConfig(exp, runSpecs(exp)[1]!);
    expect(cfg.models.map((m) => m.id)).toEqual(['replica-0', 'replica-1', 'deepinfra', 'minimax', 'm']);
    expect(cfg.models[2]!.cooldown?.enabled).toBe(true);
    expect(cfg.models[4]!.routing?.strategy).toBe('failover');
    expect(cfg.models[4]!.routing?.targets.map((t) => t.model)).toEqual(['deepinfra', 'minimax']);
  });

  it('failover over two targets, one crashed for a window, still serves every request', () => {
    const res = run({ ...mt, client: { stream: 0, retries: { max: 0 } }, faults: [{ kind: 'crash', endpoint: 'deepinfra', from_ms: 10_000, to_ms: 30_000 }] }, 'failover');
    expect(res.requests).toHaveLength(300);
    expect(res.requests.filter((r) => r.status !== 'ok')).toEqual([]);
    expect(res.requests.some((r) => r.fallbacks > 0)).toBe(true);
    expect(new Set(res.attempts.map((a) => a.endpointId))).toEqual(new Set(['deepinfra:deepinfra', 'minimax:minimax']));
  });

  it('validation: style multi_target needs the block, targets must name endpoints', () => {
    expect(() => parseExperiment({ ...baseRaw(), runs: [{ strategy: 'failover', style: 'multi_target' }] }, 'e.yaml')).toThrow(/runs\.0\.style|runs\[0\]\.style/);
    expect(() => parseExperiment({ ...baseRaw(), multi_target: { targets: [{ endpoint: 'zzz' }] } }, 'e.yaml')).toThrow(/multi_target\.targets/);
    expect(ExperimentSchema.safeParse({ ...baseRaw(), runs: [{ strategy: 'x', style: 'bogus' }] }).success).toBe(false);
  });
});
