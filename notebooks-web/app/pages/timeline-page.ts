/**
 * Timeline of one run: request rate over the whole run (brush it to zoom), then, for the
 * brushed window, per-endpoint queue depth, running batch, KV-cache usage and prefill backlog,
 * the request rate, breaker state bands and fault windows, and the list of discrete events.
 *
 * View parameters: `run`, `from` / `to` (window, ms of virtual time), `sort` (events table).
 */
import type { EndpointPoint, TimelineResponse } from '../../shared/api-types.ts';
import { api, runPath } from '../api-client.ts';
import { renderStateBands, stateBandsModel } from '../charts/state-bands-chart.ts';
import { renderTimeSeriesChart, timeSeriesModel, type TimeBandInput, type TimeSeriesInput } from '../charts/time-series-chart.ts';
import { BREAKER_COLORS, FAULT_COLOR, runColor } from '../colors.ts';
import { fmtMs, fmtPct } from '../format.ts';
import { breakerIntervals, faultWindows } from '../model/timeline-intervals.ts';
import { formatRoute, formatSort, numberParam, parseSort } from '../route.ts';
import { chartCard } from '../ui/chart-card.ts';
import { dataTable, type Column } from '../ui/data-table.ts';
import { h, note } from '../ui/dom.ts';
import { CHART_SIZE, controls, noExperiments, pageHeader, resolveExperiment, resolveRun, runSelect, type PageContext } from './page-kit.ts';

/** A discrete event as listed under the charts. */
interface EventRowView {
  atMs: number;
  endpointId: string;
  kind: 'breaker' | 'fault';
  what: string;
  detail: string;
}

/** `kimi:replica-0` → `replica-0`: the model prefix is the same on every row. */
function shortEndpoint(id: string): string {
  const i = id.lastIndexOf(':');
  return i >= 0 ? id.slice(i + 1) : id;
}

function gaugeSeries(t: TimelineResponse, pick: (p: EndpointPoint) => number): TimeSeriesInput[] {
  return t.series.map((s, i) => ({
    id: s.endpointId,
    label: shortEndpoint(s.endpointId),
    color: runColor(i),
    points: s.points.map((p) => [p.atMs, pick(p)] as const),
  }));
}

/** Renders the page. */
export async function renderTimelinePage(ctx: PageContext): Promise<HTMLElement> {
  const detail = await resolveExperiment(ctx);
  if (!detail) return noExperiments();
  const run = resolveRun(ctx, detail);
  if (run === null) return h('div', { class: 'page' }, pageHeader('Run timeline', detail), note('This experiment has no runs.'));
  const p = ctx.route.params;
  const path = `${runPath(detail.experiment.db, detail.experiment.experimentId, run)}/timeline`;
  const full = await api<TimelineResponse>(path, { max_points: 400 });
  const from = numberParam(p.from);
  const to = numberParam(p.to);
  const zoomed = from !== undefined && to !== undefined && to > from;
  const win = zoomed ? await api<TimelineResponse>(path, { from_ms: Math.round(from), to_ms: Math.round(to), max_points: 600 }) : full;
  const domain: [number, number] = [win.fromMs, Math.max(win.toMs, win.fromMs + 1)];

  const faults = faultWindows(full.faults, full.runEndMs);
  const bands: TimeBandInput[] = faults.map((f) => ({ fromMs: f.fromMs, toMs: f.toMs, label: `fault on ${shortEndpoint(f.endpointId)}${f.status !== null ? ` (HTTP ${f.status})` : ''}`, color: FAULT_COLOR }));
  const bandLegend = { label: 'fault window', color: FAULT_COLOR, kind: 'swatch' as const };
  const bucket = `${fmtMs(win.bucketMs)} buckets`;

  const rateSeries = (t: TimelineResponse): TimeSeriesInput[] => [
    { id: 'arrivals', label: 'arrivals / s', color: '#4e79a7', points: t.rate.map((r) => [r.atMs, r.arrivalsPerSec] as const) },
    { id: 'failures', label: 'failed / s', color: '#e15759', points: t.rate.map((r) => [r.atMs, r.failuresPerSec] as const), dashed: true },
  ];
  const overview = renderTimeSeriesChart(
    timeSeriesModel({ title: 'Request rate, whole run', series: rateSeries(full), xDomain: [full.runStartMs, full.runEndMs], yLabel: 'requests / s', size: CHART_SIZE.wideShort, bands, bandLegend }),
    {
      initial: zoomed ? domain : null,
      onBrush: (w) => ctx.update(w ? { from: Math.round(w[0]), to: Math.round(w[1]) } : { from: null, to: null }),
    },
  );

  const gauge = (name: string, title: string, yLabel: string, pick: (p: EndpointPoint) => number, extra: { yDomain?: [number, number]; yFormat?: (v: number) => string } = {}) =>
    chartCard({
      name,
      title,
      chart: renderTimeSeriesChart(timeSeriesModel({ title, series: gaugeSeries(win, pick), xDomain: domain, yLabel, size: CHART_SIZE.half, bands, bandLegend, ...extra })),
      caption: `maximum per ${bucket}`,
    });

  const breakerRows = win.endpoints;
  const states = stateBandsModel({
    title: 'Breaker state and fault windows',
    rows: breakerRows,
    bands: breakerIntervals(full.breakers, breakerRows, full.runStartMs, full.runEndMs),
    overlays: faults.map((f) => ({ row: f.endpointId, fromMs: f.fromMs, toMs: f.toMs, state: 'fault' })),
    xDomain: domain,
    colors: { ...BREAKER_COLORS, fault: FAULT_COLOR },
    size: { width: CHART_SIZE.wide.width, height: Math.max(150, 80 + 30 * breakerRows.length) },
    rowLabel: shortEndpoint,
  });

  const events: EventRowView[] = [
    ...full.breakers.map((b) => ({ atMs: b.atMs, endpointId: b.endpointId, kind: 'breaker' as const, what: `${b.from} → ${b.to}`, detail: b.reason ?? '' })),
    ...full.faults.map((f) => ({ atMs: f.atMs, endpointId: f.endpointId, kind: 'fault' as const, what: `fault ${f.phase}`, detail: f.status !== null ? `HTTP ${f.status}` : '' })),
  ].sort((a, b) => a.atMs - b.atMs);
  const eventCols: Column<EventRowView>[] = [
    { key: 'at', label: 'time (s)', value: (e) => e.atMs / 1000, format: (v) => (v as number).toFixed(1), numeric: true },
    { key: 'endpoint', label: 'endpoint', value: (e) => e.endpointId },
    { key: 'kind', label: 'kind', value: (e) => e.kind },
    { key: 'what', label: 'event', value: (e) => e.what },
    { key: 'detail', label: 'detail', value: (e) => e.detail },
  ];

  const reqLink = formatRoute('requests', { db: detail.experiment.db, exp: detail.experiment.experimentId, run });
  return h(
    'div',
    { class: 'page' },
    pageHeader(`Run timeline: ${run}`, detail),
    controls(
      runSelect(detail, run, (r) => ctx.update({ run: r, from: null, to: null })),
      h('span', { class: 'hint', 'data-window': `${Math.round(domain[0])},${Math.round(domain[1])}` }, zoomed ? `window ${fmtMs(domain[0])} – ${fmtMs(domain[1])}` : 'whole run — drag across the chart below to zoom'),
      zoomed ? h('button', { type: 'button', class: 'action', onclick: () => ctx.update({ from: null, to: null }) }, 'reset zoom') : null,
      h('a', { href: reqLink, class: 'action' }, 'requests of this run →'),
    ),
    chartCard({ name: 'overview', title: 'Request rate (brush to zoom)', chart: overview, caption: `${fmtMs(full.bucketMs)} buckets over the whole run; drag to select a window, double-click to reset`, wide: true }),
    h('h2', {}, zoomed ? 'Selected window' : 'Whole run'),
    h(
      'div',
      { class: 'grid grid-2' },
      gauge('queue', 'Queue depth', 'waiting requests', (q) => q.waiting),
      gauge('running', 'Running batch', 'running requests', (q) => q.running),
      gauge('kv', 'KV-cache usage', 'KV blocks in use (%)', (q) => q.kvUsage, { yDomain: [0, 1], yFormat: (v) => fmtPct(v).replace(' ', '') }),
      gauge('backlog', 'Prefill backlog', 'prompt tokens waiting for prefill', (q) => q.prefillBacklogTokens),
      gauge('batch', 'Batch tokens', 'tokens in the engine step', (q) => q.batchTokens),
      gauge('preemptions', 'Preemptions', 'preemptions / retractions per bucket', (q) => q.preemptions),
      gauge('steps', 'Engine steps', 'steps per bucket', (q) => q.steps),
    ),
    chartCard({
      name: 'rate',
      title: 'Request rate',
      chart: renderTimeSeriesChart(timeSeriesModel({ title: 'Request rate', series: rateSeries(win), xDomain: domain, yLabel: 'requests / s', size: CHART_SIZE.wideShort, bands, bandLegend })),
      caption: `arrivals and failed requests per virtual second, ${bucket}`,
      wide: true,
    }),
    chartCard({
      name: 'breakers',
      title: 'Breaker state and fault windows',
      chart: renderStateBands(states),
      caption: full.breakers.length === 0 && faults.length === 0 ? 'no breaker transitions or fault windows in this run: every breaker stayed closed' : 'band: breaker state; lower strip: fault window',
      wide: true,
    }),
    h('h2', {}, 'Events'),
    dataTable({ name: 'events', columns: eventCols, rows: events, sort: parseSort(p.sort, null), onSort: (s) => ctx.update({ sort: formatSort(s) }), csvName: `${run}-events`, emptyText: 'no breaker or fault events' }),
  );
}
