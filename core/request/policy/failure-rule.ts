/**
 * The one rule a request life asks when an attempt fails: what the failure means for this
 * model family (`kind-policy.ts`), and so what happens next. Both families read the shared
 * outcome table (`lifecycle/outcome-table.ts`):
 * - `router:` models (seed 000, `failureRules` null): a cancelled attempt or a departed client
 *   ends quietly; an error scoped to the request (content policy, other 4xx) goes back to the
 *   caller; a context-length refusal moves on only to a route with a larger window; everything
 *   else fails over to the next route. A route is never tried twice in a row.
 * - multi-target aliases (seed 003): `retry-policy.ts` with the block's `retries`,
 *   `retry_on_429`, `fallback_on_statuses` and per-cause filter; a retryable failure is retried
 *   on the same target while its `retries` last.
 */
import type { Outcome } from '../../lifecycle/outcome.ts';
import { OUTCOME_RULES } from '../../lifecycle/outcome-table.ts';
import { classifyFailure, type FailureClass } from './retry-policy.ts';
import type { RequestKindPolicy } from './kind-policy.ts';

/**
 * What follows a failed attempt: `end` (the error, or nothing for a departed client, goes back),
 * `larger_window` (only a target with a larger context window may be tried), `fail_over` (the
 * next target), `retry_same` (the same target again, when its retries allow; else fail over).
 */
export type FailureStep = 'end' | 'larger_window' | 'fail_over' | 'retry_same';

/** The `router:` family's class of a failed outcome (rules in the module comment). */
export function routerFailureClass(outcome: Outcome): FailureClass {
  if (outcome.kind === 'cancelled' || outcome.kind === 'client_gone') return 'terminal';
  if (outcome.kind !== 'http_status') return 'fail_over';
  const action = OUTCOME_RULES[outcome.errorClass].action;
  return action === 'larger_window' ? 'larger_window' : action === 'return' ? 'final' : 'fail_over';
}

/**
 * The class of a failed `outcome` under `policy`'s family rule.
 * @throws Error for an `ok` outcome under the alias rule (not a failure: a bug in the caller).
 */
export function failureClassOf(policy: RequestKindPolicy, outcome: Outcome): FailureClass {
  return policy.failureRules === null ? routerFailureClass(outcome) : classifyFailure(outcome, policy.failureRules);
}

/** The step a failure of class `cls` leads to under `policy` (before commit and without a pin). */
export function failureStep(policy: RequestKindPolicy, cls: FailureClass): FailureStep {
  switch (cls) {
    case 'terminal':
    case 'final':
      return 'end';
    case 'larger_window':
      return 'larger_window';
    case 'fail_over':
      return 'fail_over';
    case 'retryable':
      return policy.failureRules === null ? 'fail_over' : 'retry_same';
  }
}
