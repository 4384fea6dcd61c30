/**
 * Request drill-down: one run's requests filtered by status, endpoint and a latency range,
 * sorted and paged by the server; selecting one shows its attempts on a time line.
 *
 * View parameters: `run`, `status`, `endpoint`, `metric` (latency the range applies to),
 * `min` / `max` (ms), `sort` / `order`, `offset`, `req` (selected request).
 */
import type { LatencyMetric, RequestDetail, RequestListRow, RequestSortKey, RequestsPage } from '../../shared/api-types.ts';
import { api, runPath } from '../api-client.ts';
import { attemptsModel, renderAttemptsChart } from '../charts/attempts-chart.ts';
import { outcomeColor } from '../colors.ts';
import { fmtInt, fmtMs, fmtUsd } from '../format.ts';
import { formatRoute, formatSort, numberParam, parseSort } from '../route.ts';
import { chartCard } from '../ui/chart-card.ts';
import { dataTable, type Column } from '../ui/data-table.ts';
import { h, note, numberInput, selectInput } from '../ui/dom.ts';
import { controls, noExperiments, pageHeader, resolveExperiment, resolveRun, runSelect, type PageContext } from './page-kit.ts';

const PAGE_SIZE = 100;
const METRICS: readonly (readonly [LatencyMetric, string])[] = [
  ['e2e', 'E2E'],
  ['ttft', 'TTFT'],
  ['tpot', 'TPOT'],
  ['queue_wait', 'queue wait'],
];
const SORT_KEYS: readonly RequestSortKey[] = ['arrival_ms', 'ttft_ms', 'tpot_ms', 'e2e_ms', 'queue_wait_ms', 'input_tokens', 'output_tokens', 'fallbacks', 'cost_usd', 'status', 'endpoint_id', 'request_id'];

/** Renders the page. */
export async function renderRequestsPage(ctx: PageContext): Promise<HTMLElement> {
  const detail = await resolveExperiment(ctx);
  if (!detail) return noExperiments();
  const run = resolveRun(ctx, detail);
  if (run === null) return h('div', { class: 'page' }, pageHeader('Requests', detail), note('This experiment has no runs.'));
  const p = ctx.route.params;
  const metric = (METRICS.find(([m]) => m === p.metric)?.[0] ?? 'e2e') as LatencyMetric;
  const sort = (SORT_KEYS as readonly string[]).includes(p.sort ?? '') ? (p.sort as RequestSortKey) : 'arrival_ms';
  const order = p.order === 'desc' ? 'desc' : 'asc';
  const offset = Math.max(0, Math.floor(numberParam(p.offset, 0)));
  const min = numberParam(p.min);
  const max = numberParam(p.max);
  const base = runPath(detail.experiment.db, detail.experiment.experimentId, run);
  const page = await api<RequestsPage>(`${base}/requests`, {
    status: p.status,
    endpoint: p.endpoint,
    metric,
    min_ms: min,
    max_ms: max,
    sort,
    order,
    limit: PAGE_SIZE,
    offset,
  });
  const selected = p.req !== undefined ? await api<RequestDetail>(`${base}/requests/${encodeURIComponent(p.req)}`).catch(() => null) : null;

  const filter = (patch: Record<string, string | number | undefined | null>) => ctx.update({ ...patch, offset: null, req: null });
  const columns: Column<RequestListRow>[] = [
    { key: 'request_id', label: 'request', value: (r) => r.requestId },
    { key: 'arrival_ms', label: 'arrival (s)', value: (r) => r.arrivalMs / 1000, format: (v) => (v as number).toFixed(1), numeric: true },
    { key: 'endpoint_id', label: 'endpoint', value: (r) => r.endpointId },
    { key: 'status', label: 'status', value: (r) => r.status },
    { key: 'queue_wait_ms', label: 'queue wait', value: (r) => r.queueWaitMs, format: (v) => fmtMs(v as number | null), numeric: true },
    { key: 'ttft_ms', label: 'TTFT', value: (r) => r.ttftMs, format: (v) => fmtMs(v as number | null), numeric: true },
    { key: 'tpot_ms', label: 'TPOT', value: (r) => r.tpotMs, format: (v) => fmtMs(v as number | null), numeric: true },
    { key: 'e2e_ms', label: 'E2E', value: (r) => r.e2eMs, format: (v) => fmtMs(v as number | null), numeric: true },
    { key: 'input_tokens', label: 'input tok', value: (r) => r.inputTokens, format: (v) => fmtInt(v as number), numeric: true },
    { key: 'output_tokens', label: 'output tok', value: (r) => r.outputTokens, format: (v) => fmtInt(v as number), numeric: true },
    { key: 'fallbacks', label: 'fallbacks', value: (r) => r.fallbacks, numeric: true },
    { key: 'offload', label: 'offload', value: (r) => r.offloadReason, sortable: false },
    { key: 'cost_usd', label: 'cost', value: (r) => r.costUsd, format: (v) => fmtUsd(v as number), numeric: true },
  ];
  const last = Math.min(page.total, offset + page.rows.length);
  const pager = h(
    'div',
    { class: 'pager' },
    h('button', { type: 'button', class: 'action', disabled: offset === 0, onclick: () => ctx.update({ offset: Math.max(0, offset - PAGE_SIZE) || null }) }, '← previous'),
    h('span', { 'data-total': page.total }, page.total === 0 ? 'no matching requests' : `requests ${fmtInt(offset + 1)}–${fmtInt(last)} of ${fmtInt(page.total)}`),
    h('button', { type: 'button', class: 'action', disabled: last >= page.total, onclick: () => ctx.update({ offset: offset + PAGE_SIZE }) }, 'next →'),
  );
  const timelineLink = formatRoute('timeline', { db: detail.experiment.db, exp: detail.experiment.experimentId, run });
  return h(
    'div',
    { class: 'page' },
    pageHeader(`Requests: ${run}`, detail),
    controls(
      runSelect(detail, run, (r) => ctx.update({ run: r, offset: null, req: null, endpoint: null })),
      selectInput('status', [['', 'any'], ...page.statuses.map((s) => [s, s] as const)], p.status ?? '', (v) => filter({ status: v }), 'status'),
      selectInput('endpoint', [['', 'any'], ...page.endpoints.map((e) => [e, e] as const)], p.endpoint ?? '', (v) => filter({ endpoint: v }), 'endpoint'),
      selectInput('latency', METRICS, metric, (v) => filter({ metric: v }), 'metric'),
      numberInput('min (ms)', min, (v) => filter({ min: v }), { min: 0, name: 'min' }),
      numberInput('max (ms)', max, (v) => filter({ max: v }), { min: 0, name: 'max' }),
      h('a', { href: timelineLink, class: 'action' }, '← timeline of this run'),
    ),
    selected ? requestPanel(ctx, selected) : p.req !== undefined ? note(`request ${p.req} not found in ${run}`, 'warn') : null,
    pager,
    dataTable({
      name: 'requests',
      columns,
      rows: page.rows,
      sort: { key: sort, dir: order },
      presorted: true,
      onSort: (s) => ctx.update({ sort: s.key, order: s.dir, offset: null }),
      onRowClick: (r) => ctx.update({ req: r.requestId }),
      rowKey: (r) => r.requestId,
      ...(p.req !== undefined && { selectedKey: p.req }),
      csvName: `${run}-requests-${offset + 1}-${last}`,
      caption: 'click a request to see its attempts; CSV exports this page',
      emptyText: 'no requests match these filters',
    }),
  );
}

function requestPanel(ctx: PageContext, d: RequestDetail): HTMLElement {
  const r = d.request;
  const model = attemptsModel({ title: `Attempts of request ${r.requestId}`, attempts: d.attempts, arrivalMs: r.arrivalMs, ttftMs: r.ttftMs, e2eMs: r.e2eMs, colorOf: outcomeColor, size: { width: 1140, height: Math.max(150, 90 + 36 * d.attempts.length) } });
  const facts: [string, string][] = [
    ['status', r.status],
    ['endpoint', r.endpointId ?? '–'],
    ['arrival', fmtMs(r.arrivalMs)],
    ['queue wait', fmtMs(r.queueWaitMs)],
    ['TTFT', fmtMs(r.ttftMs)],
    ['TPOT', fmtMs(r.tpotMs)],
    ['E2E', fmtMs(r.e2eMs)],
    ['tokens in / cached / out', `${fmtInt(r.inputTokens)} / ${fmtInt(r.cachedTokens)} / ${fmtInt(r.outputTokens)}`],
    ['fallbacks', String(r.fallbacks)],
    ['offload', r.offloadReason ?? '–'],
    ['session', r.sessionId ?? '–'],
    ['cost', fmtUsd(r.costUsd)],
  ];
  return h(
    'section',
    { class: 'card wide request-panel', 'data-request': r.requestId },
    h('header', { class: 'card-head' }, h('h3', {}, `Request ${r.requestId}`)),
    h('dl', { class: 'facts' }, facts.flatMap(([k, v]) => [h('dt', {}, k), h('dd', {}, v)])),
    chartCard({ name: 'attempts', title: 'Attempts', chart: renderAttemptsChart(model), caption: 'bars: attempts from dispatch to end, coloured by outcome; dashed: first token', wide: true }),
    dataTable({
      name: 'attempts',
      columns: [
        { key: 'attempt', label: 'attempt', value: (a) => a.attemptId, numeric: true },
        { key: 'endpoint', label: 'endpoint', value: (a) => a.endpointId },
        { key: 'start', label: 'start (ms after arrival)', value: (a) => a.startMs - r.arrivalMs, format: (v) => (v as number).toFixed(0), numeric: true },
        { key: 'end', label: 'end (ms after arrival)', value: (a) => a.endMs - r.arrivalMs, format: (v) => (v as number).toFixed(0), numeric: true },
        { key: 'outcome', label: 'outcome', value: (a) => a.outcome },
        { key: 'status', label: 'HTTP status', value: (a) => a.status, numeric: true },
      ],
      rows: d.attempts,
      sort: parseSort(ctx.route.params.asort, null),
      onSort: (s) => ctx.update({ asort: formatSort(s) }),
      csvName: `request-${r.requestId}-attempts`,
    }),
  );
}
