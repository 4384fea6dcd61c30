/**
 * Console · Offload (seed 000, "queue offload"): every model's offload policy — its route, the
 * wait and the optional engine-queue and input-size conditions, where it comes from, and whether
 * it is active (with the reason when not) — and the requests moved to an offload route in the
 * last 24 hours by model, route and reason, with their share of the model's traffic and how many
 * still failed. Actions: set a policy (verified first if asked), clear one set here.
 *
 * Reads `GET /admin/routing/offload-routes`, `GET /admin/recent-requests/offloads?days=1` and
 * `GET /admin/routing/provider-routes` (the route ids to choose from).
 */
import { fmtPct } from '../format.ts';
import type { PageContext } from '../pages/page-kit.ts';
import { h, note } from '../ui/dom.ts';
import { enc, gatewayGet, GatewayError } from './console-client.ts';
import { button, choice, consolePage, field, simpleTable, stateBadge, type ConsoleHandle } from './console-kit.ts';

interface Policy {
  model_id: string;
  source: string;
  route_id: string;
  endpoint_id: string | null;
  wait_sec: number;
  engine_queue_limit: number | null;
  max_input_tokens: number | null;
  active: boolean;
  inactive_reason: string | null;
  version: number;
  updated_by: string | null;
}
interface OffloadRow {
  model: string;
  endpoint_id: string;
  reason: string;
  offloaded: number;
  share_of_model: number;
  still_failed: number;
}
interface OriginModel {
  model_id: string;
  router: string | null;
  routes: Array<{ route_id: string; endpoint_id: string }>;
}

/** Renders the page. */
export function renderConsoleOffloadPage(_ctx: PageContext): Promise<HTMLElement> {
  return consolePage({
    name: 'offload',
    title: 'Gateway · Offload',
    intro: 'Queue offload policies, and the requests they moved in the last 24 hours.',
    load: async (c) => {
      const [policies, origins] = await Promise.all([gatewayGet<{ policies: Policy[] }>('/admin/routing/offload-routes'), gatewayGet<{ models: OriginModel[] }>('/admin/routing/provider-routes')]);
      let report: Node;
      try {
        const r = await gatewayGet<{ offloads: OffloadRow[] }>('/admin/recent-requests/offloads?days=1');
        report = simpleTable(
          'offloads',
          'Offloaded requests, last 24 hours',
          ['model', 'served by', 'reason', 'requests', 'share of the model’s requests', 'still failed'],
          r.offloads.map((o) => [o.model, h('code', {}, o.endpoint_id), o.reason, String(o.offloaded), fmtPct(o.share_of_model), String(o.still_failed)]),
          'no request was offloaded in the last 24 hours',
        );
      } catch (err) {
        if (!(err instanceof GatewayError) || err.status !== 404) throw err;
        report = note(`No offload report: ${err.message}`, 'warn');
      }
      return [h('h2', {}, 'Policies'), policiesTable(c, policies.policies), h('h2', {}, 'Set a policy'), policyForm(c, origins.models), h('h2', {}, 'Offloads'), report];
    },
  });
}

function policiesTable(c: ConsoleHandle, policies: readonly Policy[]): HTMLElement {
  return simpleTable(
    'policies',
    'Offload policies of the configuration in force',
    ['model', 'route', 'endpoint', 'wait', 'engine queue ≥', 'input tokens ≤', 'source', 'state', 'actions'],
    policies.map((p) => [
      p.model_id,
      h('code', {}, p.route_id),
      p.endpoint_id ? h('code', {}, p.endpoint_id) : '–',
      `${p.wait_sec} s`,
      p.engine_queue_limit === null ? 'any' : String(p.engine_queue_limit),
      p.max_input_tokens === null ? 'any' : String(p.max_input_tokens),
      p.source === 'override' ? `admin API (v${p.version}${p.updated_by ? `, by ${p.updated_by}` : ''})` : p.source,
      h('span', { 'data-policy-state': p.model_id }, p.active ? stateBadge('active', 'ok') : stateBadge(`inactive: ${p.inactive_reason ?? 'unknown'}`, 'warn')),
      p.source === 'override'
        ? button('Clear', () => c.act({ name: 'clear-offload', title: `Clear the offload policy of ${p.model_id}`, description: 'Removes the policy set through the admin API; a policy in models.yaml, if any, applies again.', method: 'DELETE', path: `/admin/routing/offload-routes/${enc(p.model_id)}` }), { 'aria-label': `Clear the offload policy of ${p.model_id}` })
        : 'set in models.yaml',
    ]),
    'no model has an offload policy',
  );
}

function policyForm(c: ConsoleHandle, models: readonly OriginModel[]): HTMLElement {
  const eligible = models.filter((m) => m.router !== 'routewise' && m.routes.length > 0);
  if (eligible.length === 0) return note('No model can take an offload policy (RouteWise models plan their own candidates).');
  const model = choice('model', 'offload-model', eligible.map((m) => [m.model_id, m.model_id] as const));
  const route = choice('offload route', 'offload-route', []);
  const fillRoutes = () => {
    const m = eligible.find((x) => x.model_id === model.select.value)!;
    route.select.replaceChildren(...m.routes.map((r) => h('option', { value: r.route_id }, r.route_id === r.endpoint_id ? r.route_id : `${r.route_id} (${r.endpoint_id})`)));
  };
  model.select.addEventListener('change', fillRoutes);
  fillRoutes();
  const wait = field('wait before offloading (s)', 'wait-sec', { type: 'number', min: '0', step: 'any', value: '2', size: 6 });
  const queue = field('engine queue at least (optional)', 'engine-queue-limit', { type: 'number', min: '1', step: '1', size: 6 });
  const tokens = field('input tokens at most (optional)', 'max-input-tokens', { type: 'number', min: '1', step: '1', size: 8 });
  const body = () => ({
    route_id: route.select.value,
    wait_sec: Number(wait.input.value),
    ...(queue.input.value !== '' && { engine_queue_limit: Number(queue.input.value) }),
    ...(tokens.input.value !== '' && { max_input_tokens: Number(tokens.input.value) }),
  });
  return h(
    'form',
    { class: 'controls', 'data-offload-form': '', onsubmit: (e) => e.preventDefault() },
    model.label,
    route.label,
    wait.label,
    queue.label,
    tokens.label,
    button('Verify route', () => c.act({ name: 'verify-offload', title: `Verify the offload route of ${model.select.value}`, description: 'Checks the policy and tries the route’s upstream now, without saving anything.', method: 'PUT', path: `/admin/routing/offload-routes-verifications/${enc(model.select.value)}`, body: body() })),
    button('Set policy', () => c.act({ name: 'set-offload', title: `Set the offload policy of ${model.select.value}`, description: `Requests of ${model.select.value} that wait longer than ${wait.input.value || '?'} s go to ${route.select.value}.`, method: 'PUT', path: `/admin/routing/offload-routes/${enc(model.select.value)}`, body: body() }), { 'data-set-offload': '' }),
  );
}
