/**
 * What a multi-target alias's client is told when its tier walk admitted no target at the start
 * (seed 003 "全部不可用"), the alias counterpart of `admitted.ts`'s `noAdmittedRoute`:
 * - every untried target is cooling after upstream 429s or busy answers (Retry-After, or a
 *   cooldown a 429 started): 429 — or 503 when a busy answer set the soonest time — with a
 *   Retry-After until the first may be tried again;
 * - else, when targets were skipped for their own rate limits: 429 `target_rate_limited`, with a
 *   Retry-After until the soonest token when one is known;
 * - else 503 `all_candidates_unavailable`, naming each target and its cooldown state.
 */
import type { ErrorCode } from '../../lifecycle/errors.ts';
import { ERROR_STATUS } from '../../lifecycle/errors.ts';
import type { RetryAfterTable } from '../../health/retry-after.ts';
import type { CooldownRegistry } from '../../health/cooldown.ts';
import type { TierWalk } from './tier-walk.ts';

/** The error answer: code, message, HTTP status and Retry-After in whole seconds (or null). */
export interface NoTargetError {
  readonly code: ErrorCode;
  readonly message: string;
  readonly status: number;
  readonly retryAfterSec: number | null;
}

/** Why the walk came back empty: its rate-limit skips, and the soonest token among them (ms from now; Infinity when unknown). */
export interface RateSkips {
  readonly count: number;
  readonly soonestTokenMs: number;
}

/** The answer when `tiers` admitted nothing at `nowMs` for model `modelId` (see the file doc). */
export function noTargetAdmitted(modelId: string, tiers: TierWalk, retryAfter: RetryAfterTable, cooldowns: CooldownRegistry, skips: RateSkips, nowMs: number): NoTargetError {
  const cooling = coolingAnswer(modelId, tiers, retryAfter, cooldowns, nowMs);
  if (cooling !== null) return cooling;
  if (skips.count > 0) {
    const after = Number.isFinite(skips.soonestTokenMs) ? Math.max(1, Math.ceil(skips.soonestTokenMs / 1000)) : null;
    return { code: 'target_rate_limited', message: `every eligible target of model '${modelId}' is over its rate limit`, status: ERROR_STATUS.target_rate_limited, retryAfterSec: after };
  }
  const considered = tiers.tiers.flat().map((x) => {
    if (tiers.healthCheckRefuses(x)) return `${x.model} (unhealthy: health_check_failed)`;
    const s = cooldowns.status(x.endpointId, nowMs);
    return `${x.model} (${s.state === 'cooldown' ? `cooldown: ${s.reason}` : s.state})`;
  });
  return {
    code: 'all_candidates_unavailable',
    message: `no admissible target for model '${modelId}'; considered: ${considered.join(', ')}`,
    status: ERROR_STATUS.all_candidates_unavailable,
    retryAfterSec: null,
  };
}

/** The cooling answer, or null when some untried target was left out for another reason. */
function coolingAnswer(modelId: string, tiers: TierWalk, retryAfter: RetryAfterTable, cooldowns: CooldownRegistry, nowMs: number): NoTargetError | null {
  let soonestMs = Number.POSITIVE_INFINITY;
  let status = 429;
  for (const x of tiers.tiers.flat()) {
    if (tiers.tried.has(x.index)) continue;
    const wait = retryAfter.remainingMs(x.endpointId, nowMs);
    const c = cooldowns.status(x.endpointId, nowMs);
    let ms = 0;
    let st = 429;
    if (wait > 0) {
      ms = wait;
      st = retryAfter.statusOf(x.endpointId);
    }
    if (c.state === 'cooldown' && !tiers.ignoreCooldown) {
      if (c.reason !== 'http_429') return null;
      ms = Math.max(ms, c.untilMs! - nowMs);
    }
    if (ms <= 0) return null;
    if (ms < soonestMs) {
      soonestMs = ms;
      status = st;
    }
  }
  if (!Number.isFinite(soonestMs)) return null;
  const code = status === 429 ? 'upstream_rate_limited' : 'upstream_overloaded';
  return { code, message: `every target of model '${modelId}' asked us to retry later`, status: ERROR_STATUS[code], retryAfterSec: Math.max(1, Math.ceil(soonestMs / 1000)) };
}
