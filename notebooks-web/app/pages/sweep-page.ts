/**
 * Sweep view: a metric over two swept parameters as a heatmap (e.g. offload wait × engine
 * queue limit); clicking a cell opens its run's timeline. Parameters other than the two axes
 * are held at a chosen value (or averaged with "all").
 *
 * View parameters: `x`, `y` (parameter keys), `metric`, `fix.<key>` (value label or `*`),
 * `sort` (runs table).
 */
import type { ExperimentDetail, MetricsResponse, RunMetrics } from '../../shared/api-types.ts';
import { api, experimentPath } from '../api-client.ts';
import { heatmapModel, renderHeatmap } from '../charts/heatmap-chart.ts';
import { fmtInt, fmtMs, fmtPct, fmtUsd } from '../format.ts';
import { runParams, sweepGrid, sweepKeys, valueLabel, type SweepKey } from '../model/sweep-grid.ts';
import { formatSort, parseSort } from '../route.ts';
import { chartCard } from '../ui/chart-card.ts';
import { dataTable, type Column } from '../ui/data-table.ts';
import { h, note, selectInput } from '../ui/dom.ts';
import { controls, noExperiments, pageHeader, resolveExperiment, type PageContext } from './page-kit.ts';

/** A metric the heatmap can show. */
interface SweepMetric {
  label: string;
  value: (r: RunMetrics) => number | null;
  higherIsBetter: boolean;
  format: (v: number) => string;
}

/** Metrics offered, keyed by their URL value. */
export const SWEEP_METRICS: Readonly<Record<string, SweepMetric>> = {
  goodput: { label: 'goodput (%)', value: (r) => r.goodput, higherIsBetter: true, format: (v) => fmtPct(v) },
  ttft_p50: { label: 'TTFT p50 (ms)', value: (r) => r.ttft.p50, higherIsBetter: false, format: (v) => fmtMs(v) },
  ttft_p90: { label: 'TTFT p90 (ms)', value: (r) => r.ttft.p90, higherIsBetter: false, format: (v) => fmtMs(v) },
  ttft_p99: { label: 'TTFT p99 (ms)', value: (r) => r.ttft.p99, higherIsBetter: false, format: (v) => fmtMs(v) },
  tpot_p50: { label: 'TPOT p50 (ms)', value: (r) => r.tpot.p50, higherIsBetter: false, format: (v) => fmtMs(v) },
  tpot_p99: { label: 'TPOT p99 (ms)', value: (r) => r.tpot.p99, higherIsBetter: false, format: (v) => fmtMs(v) },
  e2e_p50: { label: 'E2E p50 (ms)', value: (r) => r.e2e.p50, higherIsBetter: false, format: (v) => fmtMs(v) },
  e2e_p99: { label: 'E2E p99 (ms)', value: (r) => r.e2e.p99, higherIsBetter: false, format: (v) => fmtMs(v) },
  cost_per_1k: { label: 'cost (USD / 1k requests)', value: (r) => r.costPer1kRequestsUsd, higherIsBetter: false, format: (v) => fmtUsd(v) },
  failure_rate: { label: 'failure rate (%)', value: (r) => r.failureRate, higherIsBetter: false, format: (v) => fmtPct(v) },
  fallback_rate: { label: 'fallback rate (%)', value: (r) => r.fallbackRate, higherIsBetter: false, format: (v) => fmtPct(v) },
  offload_rate: { label: 'offload rate (%)', value: (r) => r.offloadRate, higherIsBetter: false, format: (v) => fmtPct(v) },
  throughput: { label: 'throughput (req/s)', value: (r) => r.throughputRps, higherIsBetter: true, format: (v) => v.toFixed(2) },
};

/** Value of `fix.<key>` meaning "do not hold this parameter; average over it". */
const ALL = '*';

/** Renders the page. */
export async function renderSweepPage(ctx: PageContext): Promise<HTMLElement> {
  const detail = await resolveExperiment(ctx);
  if (!detail) return noExperiments();
  const p = ctx.route.params;
  const metrics = await api<MetricsResponse>(`${experimentPath(detail.experiment.db, detail.experiment.experimentId)}/metrics`);
  const byRun = new Map(metrics.runs.map((r) => [r.runId, r]));
  const keys = sweepKeys(detail.runs);
  const metricKey = p.metric !== undefined && p.metric in SWEEP_METRICS ? p.metric : 'goodput';
  const metric = SWEEP_METRICS[metricKey]!;
  const head = pageHeader('Sweep', detail);
  const runsTable = sweepRunsTable(ctx, detail, keys, byRun, metric);

  if (keys.length < 2) {
    return h(
      'div',
      { class: 'page' },
      head,
      note(
        keys.length === 0
          ? 'The runs of this experiment do not differ in any parameter, so there is no grid to draw. A sweep (runs whose params_json vary over two parameters, e.g. offload wait × engine queue limit) shows here as a heatmap.'
          : `The runs of this experiment vary only ${keys[0]!.key} (${keys[0]!.values.join(', ')}); a heatmap needs two swept parameters.`,
      ),
      runsTable,
    );
  }

  const keyNames = keys.map((k) => k.key);
  const xKey = p.x !== undefined && keyNames.includes(p.x) ? p.x : keyNames[0]!;
  const yKey = p.y !== undefined && keyNames.includes(p.y) && p.y !== xKey ? p.y : keyNames.find((k) => k !== xKey)!;
  const others = keys.filter((k) => k.key !== xKey && k.key !== yKey);
  const fixed: Record<string, string> = {};
  for (const k of others) {
    const v = p[`fix.${k.key}`];
    if (v === ALL) continue;
    fixed[k.key] = v !== undefined && k.values.includes(v) ? v : k.values[0]!;
  }
  const g = sweepGrid(detail.runs, keys, (id) => { const r = byRun.get(id); return r ? metric.value(r) : null; }, xKey, yKey, fixed);
  // Drawn at about the card's width, so labels keep their size; height follows the rows.
  const width = 1140;
  const height = Math.min(620, Math.max(240, 110 + 56 * g.yValues.length));
  const model = heatmapModel({
    title: `${metric.label} over ${xKey} × ${yKey}`,
    xKey,
    yKey,
    xValues: g.xValues,
    yValues: g.yValues,
    cells: g.cells.map((c) => ({ x: c.x, y: c.y, value: c.value, runId: c.runIds[0]!, n: c.runIds.length })),
    metricLabel: metric.label,
    higherIsBetter: metric.higherIsBetter,
    format: metric.format,
    size: { width, height },
  });
  const open = (runId: string) => ctx.go('timeline', { db: detail.experiment.db, exp: detail.experiment.experimentId, run: runId });
  const keyOptions = keys.map((k) => [k.key, k.key] as const);
  return h(
    'div',
    { class: 'page' },
    head,
    controls(
      selectInput('x axis', keyOptions, xKey, (v) => ctx.update({ x: v, y: v === yKey ? xKey : yKey }), 'x'),
      selectInput('y axis', keyOptions, yKey, (v) => ctx.update({ y: v, x: v === xKey ? yKey : xKey }), 'y'),
      selectInput('metric', Object.entries(SWEEP_METRICS).map(([k, m]) => [k, m.label] as const), metricKey, (v) => ctx.update({ metric: v }), 'metric'),
      ...others.map((k) =>
        selectInput(`hold ${k.key}`, [...k.values.map((v) => [v, v] as const), [ALL, 'all (mean)'] as const], fixed[k.key] ?? ALL, (v) => ctx.update({ [`fix.${k.key}`]: v }), `fix.${k.key}`),
      ),
    ),
    chartCard({
      name: 'heatmap',
      title: `${metric.label} over ${xKey} × ${yKey}`,
      chart: renderHeatmap(model, open),
      caption: `click a cell to open its run's timeline; cells average their seeds (${seedsPerCell(g.cells)}); ${metric.higherIsBetter ? 'higher' : 'lower'} is better (yellow)${metricKey === 'goodput' ? ` at TTFT ≤ ${fmtInt(metrics.sloTtftMs)} ms, TPOT ≤ ${fmtInt(metrics.sloTpotMs)} ms` : ''}`,
      wide: true,
    }),
    runsTable,
  );
}

function seedsPerCell(cells: readonly { runIds: string[] }[]): string {
  const n = [...new Set(cells.map((c) => c.runIds.length))].sort((a, b) => a - b);
  return n.length === 0 ? 'none' : `${n.join('–')} run${n[n.length - 1] === 1 ? '' : 's'} per cell`;
}

function sweepRunsTable(ctx: PageContext, detail: ExperimentDetail, keys: readonly SweepKey[], byRun: ReadonlyMap<string, RunMetrics>, metric: SweepMetric): HTMLElement {
  const rows = detail.runs.map((r) => ({ run: r, params: runParams(r), m: byRun.get(r.runId) ?? null }));
  type Row = (typeof rows)[number];
  const columns: Column<Row>[] = [
    { key: 'run', label: 'run', value: (r) => r.run.runId },
    ...keys.map(
      (k): Column<Row> => ({ key: `p.${k.key}`, label: k.key, value: (r) => (k.numeric && typeof r.params[k.key] === 'number' ? (r.params[k.key] as number) : valueLabel(r.params[k.key])), numeric: k.numeric }),
    ),
    { key: 'metric', label: metric.label, value: (r) => (r.m ? metric.value(r.m) : null), format: (v) => (v === null ? '–' : metric.format(v as number)), numeric: true },
  ];
  return h(
    'section',
    { class: 'card wide', 'data-chart': 'sweep-runs' },
    h('header', { class: 'card-head' }, h('h3', {}, 'Runs')),
    dataTable({
      name: 'sweep-runs',
      columns,
      rows,
      sort: parseSort(ctx.route.params.sort, null),
      onSort: (s) => ctx.update({ sort: formatSort(s) }),
      onRowClick: (r) => ctx.go('timeline', { db: detail.experiment.db, exp: detail.experiment.experimentId, run: r.run.runId }),
      rowKey: (r) => r.run.runId,
      csvName: `${detail.experiment.name}-sweep`,
    }),
  );
}
