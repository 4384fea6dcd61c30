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
import type { ResolvedModel, ResolvedMultiTarget, ResolvedRoute, ResolvedTarget } from '../model/resolved-model.ts';
import { plannerTraits, type PlannerContext } from '../strategies/planner.ts';
import type { StrategyRegistry } from '../strategies/registry.ts';
import { parseCidr } from './cidr.ts';
import type { CooldownPolicy, CooldownRegistry } from '../health/cooldown.ts';
import { TargetRateLimit } from './target-rate-limit.ts';

export type { ResolvedMultiTarget, ResolvedTarget } from '../model/resolved-model.ts';

/** The tag that untagged requests (and requests whose tags match nothing) fall back to. */
export const DEFAULT_TAG = 'default';

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
    traits: plannerTraits(planner),
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
