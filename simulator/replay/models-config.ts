/**
 * The routing side of a simulated experiment: the models config its runs route with (one route
 * per replica and provider, as `sim://` URLs the gateway never sees) and the endpoint ids the
 * core gives those routes, in the loop's endpoint order.
 */
import { simKeySecret } from '../providers/key-limits.ts';
import type { ProviderEntry } from '../providers/provider-config.ts';
import type { CallerRole } from '../../core/index.ts';
import type { RoutingCore } from '../../core/routing-core.ts';
import { parseModelsConfig } from '../../core/config/models-config.ts';
import { resolveProviders, runLabel, type Experiment } from '../experiment.ts';

/** The run to replay: a strategy, its params and a label. */
export interface RunSpec {
  strategy: string;
  params: Record<string, unknown>;
  label: string;
}

/** Endpoint names in route order: `replica-0..n-1`, then the providers. */
export function endpointNames(exp: Experiment): string[] {
  const names: string[] = [];
  for (let i = 0; i < (exp.replicas.count); i++) names.push(`replica-${i}`);
  for (const p of exp.providers) names.push(p.name);
  return names;
}

/**
 * The models config a simulated experiment routes with: one model, one route per replica
 * (`sim://replica-<i>`, local) then one per provider (`sim://<name>`, remote) with its prices
 * and resource semantics (`provider_type`; the quota windows of a `quota` provider; the slots of
 * a `concurrency` provider), so strategies that read them (RouteWise) see what the provider model
 * enforces.
 * @throws Error naming the experiment and run when the core rejects the config.
 */
export function simulatedModelsConfig(exp: Experiment, run: RunSpec) {
  const entry = runEntry(exp, run);
  const replicas = Array.from({ length: exp.replicas.count }, (_, i) => ({
    kind: 'openai_compat',
    base_url: `sim://replica-${i}`,
    weight: exp.replicas.weights?.[i] ?? 1,
    local: true,
  }));
  const providers = resolveProviders(exp).map((p, i) => ({
    ...keyPoolOf(exp.providers[i]!),
    kind: 'openai_compat',
    base_url: `sim://${p.name}`,
    weight: p.weight,
    local: false,
    provider: p.name,
    pricing: {
      input_usd_per_1m: p.pricing.inputUsdPer1M,
      output_usd_per_1m: p.pricing.outputUsdPer1M,
      cached_input_usd_per_1m: p.pricing.cachedInputUsdPer1M,
    },
    ...(p.contextLength !== null && { context_length: p.contextLength }),
    provider_type: p.type,
    ...(p.type === 'quota' && {
      quota: p.limits.quota.flatMap((w) => [
        ...(w.requests !== undefined ? [{ limit: w.requests, window_sec: w.windowMs / 1000, unit: 'requests' }] : []),
        ...(w.tokens !== undefined ? [{ limit: w.tokens, window_sec: w.windowMs / 1000, unit: 'tokens' }] : []),
      ]),
    }),
    ...(p.type === 'concurrency' && p.limits.concurrency !== undefined && { concurrency: { limit: p.limits.concurrency } }),
  }));
  const routing = exp.local_weight_share !== undefined ? { routing: { default_router: 'fixed', local_weight_share: exp.local_weight_share } } : {};
  const where = `${exp.file} (runs: ${run.label})`;
  if (entry?.style === 'multi_target') {
    const mt = exp.multi_target!;
    const cooldown = { ...mt.cooldown, ...(entry.multi_target?.cooldown ?? {}) };
    const routes = [...replicas, ...providers];
    const names = endpointNames(exp);
    const direct = names.map((name, i) => ({ id: name, route: [routes[i]!], ...(cooldown[name] !== undefined && { cooldown: cooldown[name] }) }));
    const alias = {
      id: exp.model,
      routing: {
        strategy: run.strategy,
        params: run.params,
        ...mt.routing,
        ...(entry.multi_target?.routing ?? {}),
        targets: mt.targets.map(({ endpoint, ...fields }) => ({ model: endpoint, ...fields })),
      },
    };
    return parseModelsConfig({ models: [...direct, alias], ...routing, ...autoBlock(exp) }, where);
  }
  const off = exp.offload;
  const offload = off && {
    route: `${exp.model}:${off.provider}`,
    wait_sec: off.wait_sec,
    ...(off.engine_queue_limit != null && off.engine_queue_limit > 0 && { engine_queue_limit: off.engine_queue_limit }),
    ...(off.max_input_tokens !== undefined && { max_input_tokens: off.max_input_tokens }),
  };
  // With auto profiles, each endpoint is also a direct model of its own name (their candidates).
  const names = endpointNames(exp);
  const routes = [...replicas, ...providers];
  const direct = exp.auto === undefined ? [] : names.map((name, i) => ({ id: name, route: [routes[i]!] }));
  return parseModelsConfig(
    {
      models: [{ id: exp.model, router: run.strategy, router_params: run.params, route: routes, ...(offload && { offload }) }, ...direct],
      ...routing,
      ...autoBlock(exp),
    },
    where,
  );
}

/** The experiment's `auto:` block as the models config carries it (nothing when absent). */
function autoBlock(exp: Experiment): { auto?: unknown } {
  return exp.auto === undefined ? {} : { auto: exp.auto };
}

/**
 * More endpoint ids of the endpoints, in `endpointNames` order: for per-model runs with auto
 * profiles, the id of each endpoint's own direct model (`<name>:<name>`), which the loop sends to
 * the same simulated endpoint; otherwise none.
 */
export function directEndpointIdsOf(core: RoutingCore, exp: Experiment, run: RunSpec): Array<string | null> {
  if (exp.auto === undefined || runEntry(exp, run)?.style === 'multi_target') return endpointNames(exp).map(() => null);
  return endpointNames(exp).map((name) => core.model(name)?.routes[0]?.endpointId ?? null);
}

/** The experiment's run entry a run spec came from (by label), if any. */
function runEntry(exp: Experiment, run: RunSpec): Experiment['runs'][number] | undefined {
  return exp.runs.find((r) => runLabel(r) === run.label);
}

/**
 * Endpoint id of each endpoint, in `endpointNames` order: `<model>:<name>` for per-model runs,
 * `<name>:<name>` (the endpoint's own direct model) for `style: multi_target` runs. Looked up in
 * the core by model, so the order of the alias's targets does not matter.
 * @throws Error naming the endpoint when the core has no route for it.
 */
export function endpointIdsOf(core: RoutingCore, exp: Experiment, run: RunSpec): string[] {
  const multi = runEntry(exp, run)?.style === 'multi_target';
  const model = core.model(exp.model);
  return endpointNames(exp).map((name) => {
    const id = multi ? core.model(name)?.routes[0]?.endpointId : model?.routes.find((r) => r.endpointId === `${exp.model}:${name}`)?.endpointId;
    if (id === undefined) throw new Error(`${exp.file} (runs: ${run.label}): no route for endpoint '${name}'`);
    return id;
  });
}

/** A provider entry's `api_keys:` as its route declares them (secrets are `simKeySecret` names); none ⇒ {}. */
function keyPoolOf(p: ProviderEntry): { api_keys?: Array<{ key: string; id: string; min_role: CallerRole }> } {
  if (!p.api_keys) return {};
  return { api_keys: p.api_keys.map((k) => ({ key: simKeySecret(p.name, k.id), id: k.id, min_role: k.min_role })) };
}
