/**
 * Resolution of multi-target models (seed 003): a public alias whose `routing:` block lists
 * existing direct models as targets. Each target is its direct model's single route — the same
 * endpoint id, so health, latency statistics, in-flight counts and cooldown are shared with the
 * direct model — plus the target's own weight, priority tier, tags, retries, rate limit and
 * CIDR allow-list. Called by `RoutingCore` once every direct model is resolved; config-level
 * checks (unknown or nested targets, route counts, statuses, CIDR syntax) already ran in
 * `ModelsConfigSchema`.
 */
import type { ModelConfig, ModelsConfig, CooldownConfig } from '../config/models-config.ts';
import type { ResolvedModel, ResolvedRoute } from '../routing-core.ts';
import type { PlannerContext } from '../strategies/planner.ts';
import type { StrategyRegistry } from '../strategies/registry.ts';
import { parseCidr, type CidrBlock } from './cidr.ts';
import type { CooldownPolicy, CooldownRegistry } from './cooldown.ts';
import type { BackoffPolicy, RetryRules } from './retry-policy.ts';
import { TargetRateLimit } from './target-rate-limit.ts';

/** The tag that untagged requests (and requests whose tags match nothing) fall back to. */
export const DEFAULT_TAG = 'default';

/** One target after resolution. */
export interface ResolvedTarget {
  /** Position in the model's `targets:` list (declaration order; the planner's `routeIndex`). */
  readonly index: number;
  /** The direct model's id (what `x-switchyard-served-by` names). */
  readonly model: string;
  /** The direct model's single route (`routeIndex` renumbered to `index`). */
  readonly route: ResolvedRoute;
  readonly endpointId: string;
  /** > 0. */
  readonly weight: number;
  /** Higher tiers are tried first. */
  readonly priority: number;
  /** Lower-cased. */
  readonly tags: readonly string[];
  /** Same-target retries, overriding the block's; null = not set. */
  readonly retries: number | null;
  /** The target's own request-rate limit (state owned by the core), or null. */
  readonly rateLimit: TargetRateLimit | null;
  /** Caller IPs admitted, or null = everyone. */
  readonly allowedCidrs: readonly CidrBlock[] | null;
}

/** A multi-target model's `routing:` block after resolution. */
export interface ResolvedMultiTarget {
  readonly targets: readonly ResolvedTarget[];
  /** The block's default same-target retries, or null (then: move on; deployment default on the last target). */
  readonly retries: number | null;
  /** Extra targets a request may try across all tiers; null = unlimited. */
  readonly maxFallbacks: number | null;
  readonly rules: RetryRules;
  readonly whenAllUnavailable: 'fail' | 'try_anyway';
  /**
   * First-token wait for streams, ms (`stream_timeout_ms`, else the model's `timeout_ms`), or
   * null (commit when the upstream response starts).
   */
  readonly streamTimeoutMs: number | null;
  /** The model's own `timeout_ms` (non-stream attempt bound), or null. */
  readonly timeoutMs: number | null;
  /** The block's backoff (extension), or null for the deployment defaults. */
  readonly backoff: BackoffPolicy | null;
  /** Whether any target carries the `default` tag. */
  readonly hasDefaultTag: boolean;
}

/** A direct model's `cooldown:` block as a policy, or null when absent or not enabled. */
export function cooldownPolicy(c: CooldownConfig | undefined): CooldownPolicy | null {
  if (!c || !c.enabled) return null;
  return { durationMs: c.duration_sec * 1000, triggerStatuses: new Set(c.trigger_statuses), consecutiveFailures: c.consecutive_failures };
}

/**
 * Resolves one multi-target model `m` (which has a `routing:` block) against the already
 * resolved direct models.
 * @param direct looks up a resolved direct model by id or alias.
 * @param where label for errors, e.g. `models[3] (id 'chat')`.
 * @throws Error naming the model and field for an unknown strategy or bad strategy params, or a
 *   target that is not a resolved direct model with one route (only when the config bypassed
 *   `ModelsConfigSchema`).
 */
export function resolveMultiTargetModel(
  m: ModelConfig,
  direct: (name: string) => ResolvedModel | undefined,
  registry: StrategyRegistry,
  context: PlannerContext,
  where: string,
): ResolvedModel {
  const block = m.routing;
  if (!block) throw new Error(`${where}: not a multi-target model`);
  const targets: ResolvedTarget[] = block.targets.map((t, i) => {
    const d = direct(t.model);
    const only = d?.routes[0];
    if (!d || d.multiTarget || d.routes.length !== 1 || !only) {
      throw new Error(`${where}.routing.targets[${i}].model: '${t.model}' is not a direct model with exactly one route`);
    }
    return {
      index: i,
      model: d.id,
      route: { ...only, routeIndex: i },
      endpointId: only.endpointId,
      weight: t.weight,
      priority: t.priority,
      tags: t.tags.map((x) => x.trim().toLowerCase()),
      retries: t.retries ?? null,
      rateLimit: t.rate_limit ? new TargetRateLimit(t.rate_limit.requests_per_minute, t.rate_limit.burst) : null,
      allowedCidrs: t.allowed_cidrs ? t.allowed_cidrs.map(parseCidr) : null,
    };
  });
  const params = block.hash_on ? { ...block.params, hash_on: block.hash_on } : block.params;
  const planner = registry.create(
    block.strategy,
    params,
    targets.map((t) => ({ endpointId: t.endpointId, configuredWeight: t.weight, costUsdPer1kTokens: t.route.costUsdPer1kTokens })),
    `${where} routing.strategy${block.hash_on ? ' (params include routing.hash_on)' : ''}`,
    context,
  );
  return {
    id: m.id,
    aliases: m.aliases,
    strategy: block.strategy,
    planner,
    published: m.published,
    routes: targets.map((t) => t.route),
    candidates: targets.map((t) => t.route.candidate),
    multiTarget: {
      targets,
      retries: block.retries ?? null,
      maxFallbacks: block.max_fallbacks ?? null,
      rules: {
        retryOn429: block.retry_on_429,
        fallbackOnStatuses: new Set(block.fallback_on_statuses),
        retrySameOn: block.retry_same_target_on ? new Set(block.retry_same_target_on) : null,
      },
      whenAllUnavailable: block.when_all_unavailable,
      streamTimeoutMs: block.stream_timeout_ms ?? block.timeout_ms ?? null,
      timeoutMs: block.timeout_ms ?? null,
      backoff: block.backoff ? { baseMs: block.backoff.base_ms, maxMs: block.backoff.max_ms, jitter: block.backoff.jitter } : null,
      hasDefaultTag: targets.some((t) => t.tags.includes(DEFAULT_TAG)),
    },
  };
}

/**
 * Opts every route of each direct model with an enabled `cooldown:` block into `cooldowns`.
 * @param direct the resolved model for a config entry.
 */
export function configureCooldowns(config: ModelsConfig, direct: (m: ModelConfig) => ResolvedModel | undefined, cooldowns: CooldownRegistry): void {
  for (const m of config.models) {
    const policy = cooldownPolicy(m.cooldown);
    const resolved = policy && !m.routing ? direct(m) : undefined;
    if (!policy || !resolved) continue;
    for (const r of resolved.routes) cooldowns.configure(r.endpointId, policy);
  }
}
