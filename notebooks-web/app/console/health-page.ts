/**
 * Console · Health: per endpoint its breaker state, availability EWMA, consecutive failures,
 * probe and attempts in flight, cooldown, the outbound pool of its provider key and its engine
 * hold, its background health check (mode `report_only` / `enforce`, state, whether it holds
 * the route out), and which models exclude it and why; the gateway's verdict (`ok` / `degraded` /
 * `unavailable` / `draining`) on top. Refreshed every {@link POLL_MS} ms while the page is shown.
 *
 * History: the gateway samples its endpoints itself (`GET /admin/health/history`: every 2 s, the
 * last 5 minutes), so the sparklines — availability, attempts in flight, requests served per
 * sample (the endpoint's traffic) — show the recent past as soon as the page opens.
 *
 * Reads `GET /admin/health/endpoints`, `GET /admin/health/history` and `GET /health/deep`.
 */
import { fmtMs, fmtPct } from '../format.ts';
import type { PageContext } from '../pages/page-kit.ts';
import { h } from '../ui/dom.ts';
import { gatewayGet } from './console-client.ts';
import { consolePage, simpleTable, sparkline, stateBadge } from './console-kit.ts';

/** How often the page polls the gateway, ms. */
export const POLL_MS = 2000;

interface EndpointLive {
  endpoint_id: string;
  models: string[];
  provider: string;
  breaker: string;
  availability: number;
  consecutive_failures: number;
  open_for_ms: number | null;
  probe_in_flight: boolean;
  claims_in_flight: number;
  requests_served: number;
  cooldown: { state: string; reason: string | null; remaining_ms: number | null };
  outbound: { key: string; limit: number; held: number; waiting: number } | null;
  hold: { limit: number; held: number; waiting: number } | null;
  health_check: { mode: string; state: string; excluded: boolean; consecutive_failures: number; consecutive_passes: number; last_failure_reason: string | null; last_checked_age_ms: number | null } | null;
}
interface EndpointsBody {
  at_unix_ms: number;
  endpoints: EndpointLive[];
  probes: { active?: boolean; sent?: number; inFlight?: number } | null;
}
interface DeepHealth {
  status: string;
  in_flight: number;
  models_unavailable: string[];
  providers: Record<string, { excluded_from_models: string[]; exclusion_reasons: string[] }>;
}

interface EndpointSeries {
  breaker: Array<string | null>;
  availability: Array<number | null>;
  claims_in_flight: Array<number | null>;
  requests_served: Array<number | null>;
  waiting: Array<number | null>;
}
interface HistoryBody {
  interval_ms: number;
  at_unix_ms: number[];
  endpoints: Record<string, EndpointSeries>;
}

const present = (xs: ReadonlyArray<number | null> | undefined): number[] => (xs ?? []).filter((x): x is number => x !== null);
/** Requests served between consecutive samples. */
const perSample = (served: readonly number[]): number[] => served.slice(1).map((v, i) => Math.max(0, v - served[i]!));

const breakerKind = (s: string) => (s === 'closed' ? 'ok' : s === 'open' ? 'bad' : 'warn');
/** The health-check cell: none, or mode and state (an enforcing unhealthy check holds the route out). */
function healthCheckCell(e: EndpointLive): Node | string {
  const c = e.health_check;
  if (!c) return 'none';
  const kind = c.state === 'healthy' ? 'ok' : c.excluded ? 'bad' : 'warn';
  const detail = [
    c.excluded ? 'held out' : c.state === 'unhealthy' ? 'reported only' : null,
    c.last_failure_reason ? `last failure ${c.last_failure_reason}` : null,
    c.last_checked_age_ms !== null ? `checked ${fmtMs(c.last_checked_age_ms)} ago` : 'not checked yet',
  ].filter((x): x is string => x !== null);
  return h('span', { 'data-health-check': e.endpoint_id, 'data-mode': c.mode, 'data-state': c.state }, `${c.mode}: `, stateBadge(c.state, kind), ` (${detail.join(', ')})`);
}

const verdictKind = (s: string) => (s === 'ok' ? 'ok' : s === 'unavailable' ? 'bad' : 'warn');

function view(body: EndpointsBody, deep: DeepHealth, hist: HistoryBody): Node[] {
  const samples = hist.at_unix_ms.length;
  const rows = body.endpoints.map((e) => {
    const series = hist.endpoints[e.endpoint_id];
    const s = { availability: present(series?.availability), claims: present(series?.claims_in_flight), traffic: perSample(present(series?.requests_served)) };
    const ex = deep.providers[e.endpoint_id];
    const maxClaims = Math.max(1, ...s.claims);
    const maxTraffic = Math.max(1, ...s.traffic);
    return [
      h('code', {}, e.endpoint_id),
      e.models.join(', '),
      h('span', { 'data-breaker': e.endpoint_id }, stateBadge(e.breaker, breakerKind(e.breaker)), e.open_for_ms !== null ? ` for ${fmtMs(e.open_for_ms)}` : ''),
      h('span', { class: 'with-spark' }, fmtPct(e.availability), sparkline(s.availability, { min: 0, max: 1, label: `availability of ${e.endpoint_id}`, format: fmtPct })),
      h('span', { class: 'with-spark', 'data-served': e.endpoint_id, 'data-count': e.requests_served }, String(e.requests_served), sparkline(s.traffic, { min: 0, max: maxTraffic, label: `requests served per ${hist.interval_ms / 1000} s by ${e.endpoint_id}`, format: String })),
      String(e.consecutive_failures),
      e.probe_in_flight ? 'probe in flight' : 'no probe',
      h('span', { class: 'with-spark', 'data-claims': e.endpoint_id }, String(e.claims_in_flight), sparkline(s.claims, { min: 0, max: maxClaims, label: `attempts in flight on ${e.endpoint_id}`, format: String })),
      e.cooldown.state === 'cooldown' ? stateBadge(`cooling down (${e.cooldown.reason ?? '?'}, ${fmtMs(e.cooldown.remaining_ms)} left)`, 'warn') : e.cooldown.state === 'not_configured' ? 'not configured' : 'none',
      e.outbound ? `${e.outbound.held} / ${e.outbound.limit} held, ${e.outbound.waiting} waiting` : 'exempt (local)',
      e.hold ? `${e.hold.held} / ${e.hold.limit} held, ${e.hold.waiting} waiting` : 'none',
      healthCheckCell(e),
      h('span', { 'data-excluded': e.endpoint_id }, ex && ex.excluded_from_models.length ? `excluded from ${ex.excluded_from_models.join(', ')} (${ex.exclusion_reasons.join(', ')})` : 'in rotation'),
    ];
  });
  return [
    h(
      'p',
      { class: 'verdict', 'data-verdict': deep.status },
      'Gateway: ',
      stateBadge(deep.status, verdictKind(deep.status)),
      ` · ${deep.in_flight} request(s) in flight`,
      deep.models_unavailable.length ? ` · no route admits: ${deep.models_unavailable.join(', ')}` : '',
      body.probes ? ` · prober ${body.probes.active ? 'on' : 'off'}${body.probes.sent !== undefined ? `, ${body.probes.sent} probes sent` : ''}` : '',
    ),
    simpleTable('health', `Endpoints, refreshed every ${POLL_MS / 1000} s; sparklines: the gateway's last ${samples} sample(s), one every ${hist.interval_ms / 1000} s`, ['endpoint', 'models', 'breaker', 'availability (EWMA)', 'requests served (per sample)', 'consecutive failures', 'probe', 'attempts in flight', 'cooldown', 'outbound limit', 'engine hold', 'health check', 'rotation'], rows),
  ];
}

/** Renders the page, then keeps it fresh while it is shown. */
export async function renderConsoleHealthPage(_ctx: PageContext): Promise<HTMLElement> {
  let live: HTMLElement | null = null;
  const load = async (): Promise<Node[]> => {
    const [body, deep, hist] = await Promise.all([gatewayGet<EndpointsBody>('/admin/health/endpoints'), gatewayGet<DeepHealth>('/health/deep'), gatewayGet<HistoryBody>('/admin/health/history')]);
    live = h('div', { 'data-live': '', 'data-samples': hist.at_unix_ms.length }, ...view(body, deep, hist));
    return [live];
  };
  const page = await consolePage({ name: 'health', title: 'Gateway · Health', intro: 'Breakers, availability, probes, cooldowns and outbound limits per endpoint, live.', load: () => load() });
  let shown = false;
  let unshownTicks = 0;
  let busy = false;
  const timer = setInterval(() => {
    if (!page.isConnected) {
      // Gone: the reader went to another page, or a newer view replaced this one before it was shown.
      if (shown || ++unshownTicks > 5) clearInterval(timer);
      return;
    }
    shown = true;
    if (busy || page.dataset.state !== 'loaded' || !live) return;
    const current = live;
    busy = true;
    void load()
      .then(
        ([next]) => current.replaceWith(next!),
        () => {
          // A failed poll keeps the last view; the next poll tries again.
        },
      )
      .finally(() => (busy = false));
  }, POLL_MS);
  return page;
}
