/**
 * Console · Models and routes: per model its strategy (router) and every route's configured and
 * effective weight, where the route comes from (`yaml` / `override` / `runtime`), why it is
 * excluded and its weight override; the provider labels, enabled or disabled. Actions: set or
 * clear a weight override (0 drains the route), disable or enable a provider, change a model's
 * strategy, and verify the upstream of a route or provider before saving.
 *
 * Reads `GET /admin/routing` and `GET /admin/routing/provider-routes`.
 */
import { fmtWeight } from '../format.ts';
import { h } from '../ui/dom.ts';
import type { PageContext } from '../pages/page-kit.ts';
import { enc, gatewayGet } from './console-client.ts';
import { button, choice, consolePage, field, simpleTable, stateBadge, type ConsoleHandle } from './console-kit.ts';

interface RoutingRoute {
  endpoint_id: string;
  provider: string;
  base_url: string;
  configured_weight: number;
  effective_weight: number;
  exclusion_reasons: string[];
  weight_override: { weight: number; version: number; updated_by: string; updated_at: string } | null;
}
interface RoutingModel {
  id: string;
  aliases: string[];
  strategy: string;
  published: boolean;
  multi_target?: boolean;
  routes: RoutingRoute[];
}
interface Provider {
  provider: string;
  disabled: boolean;
  version: number;
  endpoints: string[];
}
interface RoutingBody {
  generation: number;
  persistent: boolean;
  models: RoutingModel[];
  providers: Provider[];
}
interface OriginRoute {
  route_id: string;
  endpoint_id: string;
  source: string;
}
interface OriginModel {
  model_id: string;
  source: string;
  router: string | null;
  router_source: string;
  strategy_version: number;
  routes: OriginRoute[];
}

/** Routers an operator can switch a model to from the console. */
const ROUTERS = ['fixed', 'failover', 'round_robin', 'least_busy', 'least_latency', 'least_cost', 'consistent_hash', 'routewise'] as const;

/** Renders the page. */
export function renderConsoleRoutesPage(_ctx: PageContext): Promise<HTMLElement> {
  return consolePage({
    name: 'routes',
    title: 'Gateway · Models and routes',
    intro: 'Where traffic goes: effective weights, where each route comes from, exclusions and their reasons, the strategy of each model.',
    load: async (c) => {
      const [routing, origins] = await Promise.all([gatewayGet<RoutingBody>('/admin/routing'), gatewayGet<{ models: OriginModel[] }>('/admin/routing/provider-routes').catch(() => ({ models: [] as OriginModel[] }))]);
      const originOf = new Map(origins.models.map((m) => [m.model_id, m]));
      return [
        h('p', { class: 'meta', 'data-generation': routing.generation }, `Configuration generation ${routing.generation} · overlay ${routing.persistent ? 'kept in the store' : 'in this process only (no store)'}`),
        ...routing.models.map((m) => modelSection(c, m, originOf.get(m.id))),
        h('h2', {}, 'Providers'),
        providersTable(c, routing.providers),
      ];
    },
  });
}

function modelSection(c: ConsoleHandle, m: RoutingModel, origin: OriginModel | undefined): HTMLElement {
  const sourceOf = new Map((origin?.routes ?? []).map((r) => [r.endpoint_id, r.source]));
  const rows = m.routes.map((r) => {
    const weight = field(`weight for ${r.endpoint_id}`, 'weight', { type: 'number', min: '0', step: 'any', value: r.weight_override ? String(r.weight_override.weight) : '', placeholder: String(r.configured_weight), size: 6 });
    weight.label.classList.add('inline');
    const inRotation = r.effective_weight > 0;
    return [
      h('code', {}, r.endpoint_id),
      r.provider,
      sourceOf.get(r.endpoint_id) ?? (m.multi_target ? 'target' : '–'),
      h('span', { title: String(r.configured_weight) }, fmtWeight(r.configured_weight)),
      h('span', { 'data-effective': r.endpoint_id, 'data-weight': r.effective_weight, title: String(r.effective_weight) }, fmtWeight(r.effective_weight)),
      inRotation ? stateBadge('in rotation', 'ok') : stateBadge('excluded', 'off'),
      r.exclusion_reasons.length ? r.exclusion_reasons.join(', ') : 'none',
      r.weight_override ? `${fmtWeight(r.weight_override.weight)} (v${r.weight_override.version}, by ${r.weight_override.updated_by})` : 'none',
      m.multi_target
        ? '–'
        : h(
            'div',
            { class: 'row-actions' },
            button('Drain', () => c.act({ name: 'drain', title: `Drain ${r.endpoint_id} of ${m.id}`, description: `Sets a weight override of 0 on this route: new requests for ${m.id} stop going to it (requests in flight finish).`, method: 'PUT', path: weightPath(m.id, r.endpoint_id), body: { weight: 0 } }), { 'data-drain': r.endpoint_id, 'aria-label': `Drain ${r.endpoint_id}` }),
            weight.label,
            button('Set weight', () => c.act({ name: 'set-weight', title: `Set the weight of ${r.endpoint_id} to ${weight.input.value || '?'}`, description: `Overrides the configured weight ${r.configured_weight} of this route of ${m.id}.`, method: 'PUT', path: weightPath(m.id, r.endpoint_id), body: { weight: Number(weight.input.value) } }), { 'aria-label': `Set weight of ${r.endpoint_id}` }),
            r.weight_override ? button('Clear override', () => c.act({ name: 'clear-weight', title: `Clear the weight override of ${r.endpoint_id}`, description: `The route goes back to its configured weight ${r.configured_weight}.`, method: 'DELETE', path: weightPath(m.id, r.endpoint_id) }), { 'data-clear': r.endpoint_id, 'aria-label': `Clear the weight override of ${r.endpoint_id}` }) : null,
            button('Verify upstream', () => c.act({ name: 'verify-route', title: `Verify the upstream of ${r.endpoint_id}`, description: 'Tries the route’s upstream now without saving anything, and shows what it answered.', method: 'PUT', path: `/admin/routing/weights-verifications/${enc(m.id)}/${enc(r.endpoint_id)}`, body: { weight: r.weight_override?.weight ?? r.configured_weight } }), { 'aria-label': `Verify the upstream of ${r.endpoint_id}` }),
          ),
    ];
  });
  const strategy = choice(`strategy of ${m.id}`, 'strategy', [...new Set([m.strategy, ...ROUTERS])].map((s) => [s, s] as const), m.strategy);
  const strategyTools = m.multi_target
    ? null
    : h(
        'div',
        { class: 'controls' },
        strategy.label,
        button('Change strategy', () => c.act({ name: 'strategy', title: `Switch ${m.id} to ${strategy.select.value}`, description: `Changes the router of ${m.id} from ${m.strategy} to ${strategy.select.value}.`, method: 'PATCH', path: `/admin/routing/provider-route-strategies/${enc(m.id)}`, body: { router: strategy.select.value } }), { 'aria-label': `Change the strategy of ${m.id}` }),
      );
  return h(
    'section',
    { class: 'card wide', 'data-model': m.id, 'aria-labelledby': `model-${m.id}` },
    h('h2', { id: `model-${m.id}` }, `${m.id}`, h('span', { class: 'meta' }, ` · strategy ${m.strategy}${origin ? ` (from ${origin.router_source})` : ''} · ${m.published ? 'published' : 'not published'}${m.aliases.length ? ` · aliases ${m.aliases.join(', ')}` : ''}${m.multi_target ? ' · multi-target' : ''}`)),
    simpleTable(`routes-${m.id}`, `Routes of ${m.id}`, ['endpoint', 'provider', 'source', 'configured', 'effective', 'state', 'exclusions', 'override', 'actions'], rows),
    strategyTools,
  );
}

function providersTable(c: ConsoleHandle, providers: readonly Provider[]): HTMLElement {
  return simpleTable(
    'providers',
    'Provider labels (disabling one takes every route with it out of rotation)',
    ['provider', 'state', 'endpoints', 'actions'],
    providers.map((p) => [
      p.provider,
      p.disabled ? stateBadge('disabled', 'bad') : stateBadge('enabled', 'ok'),
      p.endpoints.join(', '),
      h(
        'div',
        { class: 'row-actions' },
        button(p.disabled ? 'Enable' : 'Disable', () => c.act({ name: p.disabled ? 'enable-provider' : 'disable-provider', title: `${p.disabled ? 'Enable' : 'Disable'} provider ${p.provider}`, description: p.disabled ? `Its routes (${p.endpoints.join(', ')}) go back into rotation.` : `Takes its routes (${p.endpoints.join(', ')}) out of rotation for every model.`, method: 'PUT', path: `/admin/routing/providers/${enc(p.provider)}`, body: { disabled: !p.disabled } }), { 'aria-label': `${p.disabled ? 'Enable' : 'Disable'} provider ${p.provider}` }),
        button('Verify upstreams', () => c.act({ name: 'verify-provider', title: `Verify the upstreams of ${p.provider}`, description: 'Tries every route of this provider now without saving anything.', method: 'PUT', path: `/admin/routing/providers-verifications/${enc(p.provider)}`, body: { disabled: false } }), { 'aria-label': `Verify the upstreams of ${p.provider}` }),
      ),
    ]),
  );
}

/** `/admin/routing/weights/{model}/{endpoint}` with both parts encoded. */
export function weightPath(model: string, endpoint: string): string {
  return `/admin/routing/weights/${enc(model)}/${enc(endpoint)}`;
}
