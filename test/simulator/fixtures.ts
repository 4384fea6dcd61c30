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
