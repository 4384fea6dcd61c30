/**
 * Plans view: a capacity plan (`switchyard plan`) of the chosen results file — SLO attainment
 * against rate per configuration (the share of seeds holding the SLO at each probed
 * `rate_scale`), the answers by cost with their Pareto front, and the answers table with each
 * interval. An experiment that is not a plan shows a note.
 *
 * View parameters: `db`, `exp`, `sort` (answers table).
 */
import type { PlanAnswer, PlansResponse } from '../../shared/api-types.ts';
import { api, experimentPath } from '../api-client.ts';
import { cdfChartModel, renderCdfChart } from '../charts/cdf-chart.ts';
import { paretoScatterModel, renderParetoScatter } from '../charts/pareto-scatter-chart.ts';
import { runColor } from '../colors.ts';
import { fmtUsd } from '../format.ts';
import { formatSort, parseSort } from '../route.ts';
import { attainmentCurves, configName, costPoints } from '../model/plan-curves.ts';
import { chartCard } from '../ui/chart-card.ts';
import { dataTable, type Column } from '../ui/data-table.ts';
import { h, note } from '../ui/dom.ts';
import { CHART_SIZE, grid, noExperiments, pageHeader, resolveExperiment, type PageContext } from './page-kit.ts';

const num = (v: number | null) => (v === null ? '-' : String(Number(v.toPrecision(4))));

const ANSWER_COLUMNS: Column<PlanAnswer>[] = [
  { key: 'question', label: 'question', value: (a) => a.question },
  { key: 'config', label: 'configuration', value: (a) => configName(a) },
  { key: 'status', label: 'status', value: (a) => a.status },
  { key: 'answer', label: 'answer', value: (a) => a.answer, format: (_v, a) => `${num(a.answer)} ${a.unit}`, numeric: true },
  { key: 'interval', label: 'interval', value: (a) => a.low, format: (_v, a) => (a.low === null && a.high === null ? '-' : `[${num(a.low)}, ${num(a.high)}] at ${Math.round(a.confidence * 100)} %`), numeric: true },
  { key: 'cost_h', label: '$/h', value: (a) => a.costPerHourUsd, format: (v) => (v === null ? '-' : fmtUsd(v as number)), numeric: true },
  { key: 'cost_1k', label: '$/1k req', value: (a) => a.costPer1kRequestsUsd, format: (v) => (v === null ? '-' : fmtUsd(v as number)), numeric: true },
  { key: 'rank', label: 'rank', value: (a) => a.rank, numeric: true },
];

/** Renders the page. */
export async function renderPlansPage(ctx: PageContext): Promise<HTMLElement> {
  const detail = await resolveExperiment(ctx);
  if (!detail) return noExperiments();
  const head = pageHeader('Plans', detail);
  const plan = await api<PlansResponse>(`${experimentPath(detail.experiment.db, detail.experiment.experimentId)}/plans`);
  if (!plan.available || (plan.points.length === 0 && plan.answers.length === 0)) {
    return h('div', { class: 'page' }, head, note(h('span', {}, 'This experiment is not a capacity plan. ', h('code', {}, 'switchyard plan <experiment.yaml>'), ' writes one (plan_points and plans tables) into its results file.')));
  }
  const curves = attainmentCurves(plan.points);
  const attainment = cdfChartModel({
    title: 'SLO attainment against rate',
    series: curves.map((c, i) => ({ id: c.id, label: c.label, color: runColor(i), points: c.points })),
    xLabel: 'rate_scale (log scale)',
    size: CHART_SIZE.half,
  });
  const costs = costPoints(plan.answers);
  const front = paretoScatterModel({
    title: 'cost of the answers',
    points: costs.map((c, i) => ({ id: c.id, label: c.label, color: runColor(i), x: c.costPerHourUsd, y: c.costPer1kRequestsUsd })),
    xLabel: 'cost per hour (USD)',
    yLabel: 'cost per 1k requests (USD)',
    size: CHART_SIZE.half,
    xFormat: (v) => fmtUsd(v),
    yFormat: (v) => fmtUsd(v),
  });
  return h(
    'div',
    { class: 'page' },
    head,
    grid(
      chartCard({
        name: 'plan-attainment',
        title: 'SLO attainment against rate',
        chart: renderCdfChart({ ...attainment, yLabel: 'share of seeds holding the SLO', guides: [] }),
        caption: 'one line per configuration: at each probed rate_scale, the share of its seeds whose run met the SLO (goodput and TTFT / TPOT bounds)',
      }),
      chartCard({
        name: 'plan-front',
        title: 'cost of the answers',
        chart: costs.length > 0 ? renderParetoScatter(front) : 'no answer found a configuration with known costs',
        caption: 'each answer by its hourly cost and its cost per 1,000 requests; the front (ringed) is capacity bought at the least cost',
      }),
    ),
    h('h2', {}, 'Answers'),
    dataTable({
      name: 'plan-answers',
      columns: ANSWER_COLUMNS,
      rows: plan.answers,
      sort: parseSort(ctx.route.params.sort, null),
      onSort: (s) => ctx.update({ sort: formatSort(s) }),
      csvName: 'plan-answers',
    }),
  );
}
