// Shared fixtures for simulator tests: a small experiment over the committed Mooncake trace.
import { join } from 'node:path';
import type { Experiment } from '../../simulator/experiment.ts';
import { ExperimentSchema } from '../../simulator/experiment.ts';

export const repoRoot = join(import.meta.dirname, '..', '..');
export const mooncakeConversation = join(repoRoot, 'traces', 'mooncake', 'conversation.arrow');

export function smallExperiment(over: Record<string, unknown> = {}): Experiment {
  const raw = {
    name: 'small',
    trace: mooncakeConversation,
    seed: 7,
    rate_scale: 0.2,
    limit: 400,
    model: 'kimi',
    replicas: { count: 4, profile: 'llama2-70b-h100-tp4' },
    runs: [{ strategy: 'fixed' }],
    output: 'unused.duckdb',
    ...over,
  };
  const e = ExperimentSchema.parse(raw);
  return { ...e, tracePath: mooncakeConversation, file: 'test-experiment.yaml' };
}

export const azureConv = join(repoRoot, 'traces', 'azure-2023', 'conv.arrow');

/**
 * A small mixed experiment on the Azure conversation trace (short prompts, ~5.5 req/s): two local
 * replicas and two hosted MiniMax-M2.5 providers (deepinfra, minimax), 300 requests (~55 s).
 * The core's adaptive outbound limiter is off by default here, so fault tests can compare a run
 * exactly with its fault-free twin (queueing in the gateway would shift dispatch times);
 * `routing: {}` turns it back on.
 */
export function mixedExperiment(over: Record<string, unknown> = {}): Experiment {
  const raw = {
    name: 'mixed',
    trace: azureConv,
    seed: 5,
    limit: 300,
    model: 'm',
    replicas: { count: 2, profile: 'llama2-70b-h100-tp4' },
    providers: [
      { name: 'deepinfra', profile: 'minimax-m2.5-openrouter/deepinfra' },
      { name: 'minimax', profile: 'minimax-m2.5-openrouter/minimax' },
    ],
    runs: [{ strategy: 'round_robin' }],
    routing: { upstream_concurrency_enabled: false },
    output: 'unused.duckdb',
    ...over,
  };
  const e = ExperimentSchema.parse(raw);
  return { ...e, tracePath: azureConv, file: 'test-mixed.yaml' };
}
