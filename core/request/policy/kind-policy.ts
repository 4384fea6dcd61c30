/**
 * The attempt policy of a model family: the seed defaults a request life follows for that kind.
 * - `router:` models (seed 000): fall back over the model's routes in declaration order after
 *   the planner's first pick, commit a stream at its first content token, claim the breaker for
 *   every attempt (a half-open breaker lets one probe through), first-token wait from the
 *   deployment settings.
 * - multi-target aliases (seed 003): walk the priority tiers in the strategy's order, retry the
 *   same target per `retries` and fail over per `max_fallbacks` (`retry-policy.ts`, `backoff.ts`),
 *   commit at the upstream's response start unless a first-chunk wait (`stream_timeout`, else the
 *   model's `timeout`) is set, and only record outcomes into the breaker (ejection is the
 *   target's opt-in cooldown).
 */
import type { RoutingSettings } from '../../config/routing-settings.ts';
import type { ResolvedMultiTarget } from '../../model/resolved-model.ts';
import type { CommitPoint } from './commit.ts';
import type { AttemptWaits } from './attempt-deadlines.ts';
import type { RetryRules } from './retry-policy.ts';

/** One family's rules, resolved. */
export interface RequestKindPolicy {
  readonly kind: 'router' | 'alias';
  readonly commitPoint: CommitPoint;
  readonly waits: AttemptWaits;
  /** Headers wait: dispatch → first upstream output, ms. */
  readonly headersMs: number;
  /** `claim`: each attempt claims the breaker; `record`: outcomes are only recorded. */
  readonly breaker: 'claim' | 'record';
  /** `declaration`: fall back over the routes in config order; `tiers`: the alias's tier walk. */
  readonly fallbackOrder: 'declaration' | 'tiers';
  /**
   * What a failed attempt means (`failure-rule.ts`): null for the `router:` family's rule (the
   * outcome table alone, never the same route twice), else the alias block's retry rules.
   */
  readonly failureRules: RetryRules | null;
}

/** The policy of every `router:` model under `settings`. */
export function routerPolicy(settings: Readonly<RoutingSettings>): RequestKindPolicy {
  return {
    kind: 'router',
    commitPoint: 'first_token',
    waits: { firstChunkMs: settings.firstTokenTimeoutSec * 1000, totalMs: settings.requestTimeoutSec * 1000 },
    headersMs: settings.headersTimeoutSec * 1000,
    breaker: 'claim',
    fallbackOrder: 'declaration',
    failureRules: null,
  };
}

/** The policy of the multi-target model `mt` under `settings`. */
export function aliasPolicy(mt: ResolvedMultiTarget, settings: Readonly<RoutingSettings>): RequestKindPolicy {
  return {
    kind: 'alias',
    commitPoint: mt.streamTimeoutMs === null ? 'response_start' : 'first_token',
    waits: { firstChunkMs: mt.streamTimeoutMs, totalMs: mt.timeoutMs ?? settings.requestTimeoutSec * 1000 },
    headersMs: settings.headersTimeoutSec * 1000,
    breaker: 'record',
    fallbackOrder: 'tiers',
    failureRules: mt.rules,
  };
}
