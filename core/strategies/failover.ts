/**
 * `failover`: declaration order (seed 003 "keep one primary and ordered backups"). The first
 * admitted target serves; the next one is tried only when it fails. Stateless; draws nothing.
 * As a `router:` over a model's own routes it always picks the first admitted route.
 */
import { z } from 'zod';
import type { StrategyDefinition } from './planner.ts';

/** `failover` takes no parameters. */
export const FailoverParamsSchema = z.object({}).strict();

/** The `failover` strategy definition. */
export const failoverStrategy: StrategyDefinition<Record<string, never>> = {
  name: 'failover',
  description: 'declaration order: the first admitted target, then the next',
  paramsSchema: FailoverParamsSchema as z.ZodType<Record<string, never>>,
  create() {
    return {
      pick: () => ({ candidate: 0, reason: 'failover' }),
      order: (candidates) => ({ order: candidates.map((_, i) => i), reason: 'failover' }),
    };
  },
};
