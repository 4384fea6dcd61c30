/**
 * Strategy comparison: TTFT / TPOT / E2E CDFs (log x, one line per run), p50 / p90 / p99 bars
 * with the paired-bootstrap 95 % intervals `switchyard compare` stored (when it has), goodput at
 * an SLO the reader adjusts, cost per 1k requests, failure / fallback / offload rates, and
 * latency against cost with the Pareto front. Bars and dots are arms (runs that differ only in
 * seed, averaged), the unit the stored intervals are about.
 *
 * View parameters: `slo_ttft_ms`, `slo_tpot_ms` (default: the experiment's SLOs), `pair` (pair
 * group of a sweep, `*` for all), `baseline` (label the intervals are against), `scatter`
 * (latency of the scatter, e.g. `e2e.p90`), `sort` / `csort` (tables).
 */
import type { CdfResponse, ComparisonRow, ComparisonsResponse, ExperimentDetail, MetricsResponse, RunMetrics } from '../../shared/api-types.ts';
import { api, experimentPath } from '../api-client.ts';
import { cdfChartModel, renderCdfChart } from '../charts/cdf-chart.ts';
import { groupedBarModel, renderGroupedBarChart, type BarDatum, type BarSeries } from '../charts/grouped-bar-chart.ts';
import { paretoScatterModel, renderParetoScatter } from '../charts/pareto-scatter-chart.ts';
import { runColor } from '../colors.ts';
import { durationUnit, fmtCompact, fmtInt, fmtInUnit, fmtMs, fmtPct, fmtUsd } from '../format.ts';
import { groupArms, pairKeysOf, type Arm, type ArmMetrics } from '../model/arms.ts';
import { armInterval, chooseBaseline } from '../model/comparison-intervals.ts';
import { formatRoute, formatSort, numberParam, parseSort } from '../route.ts';
import { chartCard } from '../ui/chart-card.ts';
import { dataTable, type Column } from '../ui/data-table.ts';
import { h, note, numberInput, selectInput } from '../ui/dom.ts';
import { CHART_SIZE, controls, grid, noExperiments, pageHeader, resolveExperiment, type PageContext } from './page-kit.ts';

type Latency = 'ttft' | 'tpot' | 'e2e';
type Pct = 'p50' | 'p90' | 'p99';

const LATENCIES: readonly Latency[] = ['ttft', 'tpot', 'e2e'];
const PCTS: readonly Pct[] = ['p50', 'p90', 'p99'];
const NAME: Record<Latency, string> = { ttft: 'TTFT', tpot: 'TPOT', e2e: 'E2E latency' };
/** Value of `pair` meaning every pair group at once. */
const ALL_PAIRS = '*';

/** Renders the page. */
export async function renderComparePage(ctx: PageContext): Promise<HTMLElement> {
  const detail = await resolveExperiment(ctx);
  if (!detail) return noExperiments();
  const p = ctx.route.params;
  const base = experimentPath(detail.experiment.db, detail.experiment.experimentId);
  const sloTtft = numberParam(p.slo_ttft_ms, detail.sloTtftMs ?? 2000);
  const sloTpot = numberParam(p.slo_tpot_ms, detail.sloTpotMs ?? 100);
  const [metrics, comps, ...cdfs] = await Promise.all([
    api<MetricsResponse>(`${base}/metrics`, { slo_ttft_ms: sloTtft, slo_tpot_ms: sloTpot }),
    api<ComparisonsResponse>(`${base}/comparisons`),
    ...LATENCIES.map((m) => api<CdfResponse>(`${base}/cdf`, { metric: m, points: 200 })),
  ]);

  // Which runs: one pair group of a sweep at a time (strategies compared like for like).
  const pairs = pairKeysOf(detail.runs);
  const pair = pairs.length <= 1 ? null : p.pair === ALL_PAIRS ? null : p.pair !== undefined && pairs.includes(p.pair) ? p.pair : pairs[0]!;
  const arms = groupArms(detail.runs, metrics.runs, pair);
  const armOfRun = new Map(arms.flatMap((a) => a.runIds.map((id) => [id, a] as const)));
  const color = new Map(arms.map((a, i) => [a.key, runColor(i)]));
  const series: BarSeries[] = arms.map((a) => ({ id: a.key, label: a.runIds.length > 1 ? `${a.key} (${a.runIds.length} seeds)` : a.key, color: color.get(a.key)! }));
  const shownRuns = metrics.runs.filter((r) => armOfRun.has(r.runId));

  // CDFs: one line per run, coloured by arm.
  const cdfCards = LATENCIES.map((m, i) => {
    const cdf = cdfs[i]!;
    const model = cdfChartModel({
      title: `${NAME[m]} CDF`,
      series: cdf.runs.filter((r) => armOfRun.has(r.runId)).map((r) => ({ id: r.runId, label: r.runId, color: color.get(armOfRun.get(r.runId)!.key)!, points: r.points })),
      xLabel: `${NAME[m]} (ms, log scale)`,
      size: CHART_SIZE.third,
    });
    return chartCard({ name: `cdf-${m}`, title: `${NAME[m]} CDF`, chart: renderCdfChart(model), caption: 'ok requests, one line per run; 200 quantiles per run computed in DuckDB' });
  });

  // Percentile bars with the stored intervals.
  const rows = comps.available ? comps.rows.filter((r) => pair === null || r.pairKey === pair) : [];
  const baseline = rows.length > 0 ? chooseBaseline(rows, p.baseline) : null;
  const baselineArm = (a: Arm) => arms.find((b) => b.label === baseline && b.pairKey === a.pairKey);
  const withInterval = (a: Arm, metric: string, value: number | null, pick: (m: ArmMetrics) => number | null): BarDatum => {
    const b = baselineArm(a);
    const iv = baseline === null ? null : armInterval(rows, a, baseline, metric, b ? pick(b.metrics) : null);
    return { group: '', series: a.key, value, lo: iv?.lo ?? null, hi: iv?.hi ?? null };
  };
  const intervalCaption = (whiskers: number, what: string) =>
    !comps.available
      ? `no intervals: ${comps.reason ?? 'no comparisons stored'}`
      : baseline === null
        ? 'no stored comparisons for these runs'
        : whiskers > 0
          ? `whiskers: ${confidenceOf(rows)} paired-bootstrap interval vs ${baseline} (baseline mean + interval of the difference)`
          : `no stored interval for ${what} vs ${baseline} (compare needs ≥ 2 seeds and the metric)`;
  const pctCards = LATENCIES.map((m) => {
    const data = arms.flatMap((a) => PCTS.map((q) => ({ ...withInterval(a, `${m}_${q}_ms`, a.metrics[m][q], (x) => x[m][q]), group: q })));
    // Bars in the unit that suits them (ms … h), so the axis ticks are round numbers of it.
    const unit = durationUnit(Math.max(0, ...data.flatMap((d) => [d.value ?? 0, d.hi ?? 0])));
    const inUnit = (v: number | null | undefined) => (v === null || v === undefined ? null : v / unit.ms);
    const scaled = data.map((d) => ({ ...d, value: inUnit(d.value), lo: inUnit(d.lo), hi: inUnit(d.hi) }));
    const model = groupedBarModel({ title: `${NAME[m]} percentiles`, groups: PCTS, series, data: scaled, xLabel: 'percentile', yLabel: `${NAME[m]} (${unit.name})`, size: CHART_SIZE.third, format: fmtInUnit({ name: unit.name, ms: 1 }) });
    return chartCard({ name: `pct-${m}`, title: `${NAME[m]} p50 / p90 / p99`, chart: renderGroupedBarChart(model), caption: intervalCaption(model.whiskers.length, NAME[m]) });
  });

  // Goodput, cost, rates.
  const goodputData = arms.map((a) => ({ ...withInterval(a, 'goodput', a.metrics.goodput, (x) => x.goodput), group: 'goodput' }));
  const sloIsExperiments = sloTtft === detail.sloTtftMs && sloTpot === detail.sloTpotMs;
  // The stored goodput intervals are at the experiment's SLO: drop them at another one.
  const goodput = groupedBarModel({ title: 'Goodput', groups: ['goodput'], series, data: sloIsExperiments ? goodputData : goodputData.map((d) => ({ ...d, lo: null, hi: null })), xLabel: `TTFT ≤ ${fmtInt(sloTtft)} ms and TPOT ≤ ${fmtInt(sloTpot)} ms`, yLabel: 'requests within SLO (%)', size: CHART_SIZE.third, yDomain: [0, 1], format: (v) => fmtPct(v) });
  const cost = groupedBarModel({ title: 'Cost', groups: ['cost per 1k requests'], series, data: arms.map((a) => ({ ...withInterval(a, 'cost_per_1k_requests_usd', a.metrics.costPer1kRequestsUsd, (x) => x.costPer1kRequestsUsd), group: 'cost per 1k requests' })), xLabel: 'arm', yLabel: 'USD per 1,000 requests', size: CHART_SIZE.third, format: (v) => fmtUsd(v) });
  const rates = groupedBarModel({
    title: 'Failure, fallback and offload rates',
    groups: ['failure', 'fallback', 'offload'],
    series,
    data: arms.flatMap((a) => [
      { group: 'failure', series: a.key, value: a.metrics.failureRate },
      { group: 'fallback', series: a.key, value: a.metrics.fallbackRate },
      { group: 'offload', series: a.key, value: a.metrics.offloadRate },
    ]),
    xLabel: 'share of all requests',
    yLabel: 'requests (%)',
    size: CHART_SIZE.third,
    format: (v) => fmtPct(v),
  });
  const costSource = shownRuns.some((r) => r.costSource === 'summary') ? 'summary (tokens + fees + GPU hours)' : 'Σ requests.cost_usd';
  const allFree = shownRuns.every((r) => r.costPer1kRequestsUsd === 0);

  // Latency vs cost.
  const scatterKey = /^(ttft|tpot|e2e)\.(p50|p90|p99)$/.test(p.scatter ?? '') ? p.scatter! : 'e2e.p90';
  const [sm, sp] = scatterKey.split('.') as [Latency, Pct];
  const scatterUnit = durationUnit(Math.max(0, ...arms.map((a) => a.metrics[sm][sp] ?? 0)));
  const scatter = paretoScatterModel({
    title: 'Latency vs cost',
    points: arms.map((a) => ({ id: a.key, label: a.key, color: color.get(a.key)!, x: a.metrics.costPer1kRequestsUsd, y: a.metrics[sm][sp] === null ? null : a.metrics[sm][sp]! / scatterUnit.ms })),
    xLabel: 'cost (USD per 1,000 requests)',
    yLabel: `${NAME[sm]} ${sp} (${scatterUnit.name})`,
    size: CHART_SIZE.third,
    xFormat: (v) => fmtUsd(v),
    yFormat: fmtInUnit({ name: scatterUnit.name, ms: 1 }),
  });
  const scatterTools = selectInput('latency', LATENCIES.flatMap((m) => PCTS.map((q) => [`${m}.${q}`, `${NAME[m]} ${q}`] as const)), scatterKey, (v) => ctx.update({ scatter: v }), 'scatter');

  const baselines = [...new Set(rows.map((r) => r.baseline))];
  const top = controls(
    numberInput('SLO TTFT (ms)', sloTtft, (v) => ctx.update({ slo_ttft_ms: v }), { min: 0, step: 100, name: 'slo_ttft_ms' }),
    numberInput('SLO TPOT (ms)', sloTpot, (v) => ctx.update({ slo_tpot_ms: v }), { min: 0, step: 5, name: 'slo_tpot_ms' }),
    pairs.length > 1 ? selectInput('cells', [...pairs.map((k) => [k, k === '' ? '(none)' : k] as const), [ALL_PAIRS, 'all']], pair ?? ALL_PAIRS, (v) => ctx.update({ pair: v }), 'pair') : null,
    baselines.length > 1 ? selectInput('interval baseline', baselines.map((b) => [b, b] as const), baseline ?? '', (v) => ctx.update({ baseline: v }), 'baseline') : null,
    h('span', { class: 'hint' }, `experiment SLO: TTFT ≤ ${fmtInt(detail.sloTtftMs)} ms, TPOT ≤ ${fmtInt(detail.sloTpotMs)} ms`),
  );

  return h(
    'div',
    { class: 'page' },
    pageHeader('Strategy comparison', detail),
    top,
    h('h2', {}, 'Latency distributions'),
    grid(...cdfCards),
    grid(...pctCards),
    h('h2', {}, 'Goodput, cost and reliability'),
    grid(
      chartCard({ name: 'goodput', title: 'Goodput at SLO', chart: renderGroupedBarChart(goodput), caption: sloIsExperiments ? `ok requests within both SLOs over all requests; ${intervalCaption(goodput.whiskers.length, 'goodput')}` : 'ok requests within both SLOs over all requests (stored intervals are at the experiment SLO, so none here)' }),
      chartCard({ name: 'cost', title: 'Cost per 1k requests', chart: renderGroupedBarChart(cost), caption: allFree ? `every run reports zero cost (${costSource})` : `from ${costSource}` }),
      chartCard({ name: 'rates', title: 'Failure / fallback / offload rates', chart: renderGroupedBarChart(rates), caption: 'failure: status ≠ ok; fallback: ≥ 1 fallback attempt; offload: an offload reason' }),
    ),
    grid(
      chartCard({ name: 'scatter', title: 'Latency vs cost', chart: renderParetoScatter(scatter), tools: scatterTools, caption: `ringed: the Pareto front (${scatter.frontIds.join(', ') || 'none'}) — no other arm is both cheaper and faster` }),
      metricsTableCard(ctx, detail, metrics, shownRuns, armOfRun),
    ),
    comps.available ? comparisonsTable(ctx, rows.filter((r) => r.baseline === baseline), baseline) : note(`Paired-bootstrap intervals: ${comps.reason ?? 'not stored'}.`),
  );
}

function confidenceOf(rows: readonly ComparisonRow[]): string {
  const c = rows.find((r) => r.confidence !== null)?.confidence;
  return c === undefined || c === null ? '95 %' : `${Math.round(c * 100)} %`;
}

function metricsTableCard(ctx: PageContext, detail: ExperimentDetail, metrics: MetricsResponse, runs: readonly RunMetrics[], armOf: ReadonlyMap<string, Arm>): HTMLElement {
  const pct = (m: Latency, q: Pct): Column<RunMetrics> => ({ key: `${m}_${q}`, label: `${NAME[m].split(' ')[0]} ${q}`, value: (r) => r[m][q], format: (v) => fmtMs(v as number | null), numeric: true, title: `${NAME[m]} ${q} of ok requests` });
  const columns: Column<RunMetrics>[] = [
    { key: 'run', label: 'run', value: (r) => r.runId, format: (_v, r) => h('a', { href: formatRoute('timeline', { db: detail.experiment.db, exp: detail.experiment.experimentId, run: r.runId }) }, r.runId) },
    { key: 'arm', label: 'label', value: (r) => armOf.get(r.runId)?.key ?? null },
    { key: 'requests', label: 'requests', value: (r) => r.requests, format: (v) => fmtInt(v as number), numeric: true },
    { key: 'goodput', label: 'goodput', value: (r) => r.goodput, format: (v) => fmtPct(v as number), numeric: true, title: `at TTFT ≤ ${metrics.sloTtftMs} ms, TPOT ≤ ${metrics.sloTpotMs} ms` },
    { key: 'failure', label: 'failed', value: (r) => r.failureRate, format: (v) => fmtPct(v as number), numeric: true },
    { key: 'fallback', label: 'fallback', value: (r) => r.fallbackRate, format: (v) => fmtPct(v as number), numeric: true },
    { key: 'offload', label: 'offload', value: (r) => r.offloadRate, format: (v) => fmtPct(v as number), numeric: true },
    { key: 'cost', label: 'USD / 1k req', value: (r) => r.costPer1kRequestsUsd, format: (v) => fmtUsd(v as number), numeric: true },
    pct('ttft', 'p50'),
    pct('ttft', 'p99'),
    pct('tpot', 'p99'),
    pct('e2e', 'p99'),
  ];
  return h(
    'section',
    { class: 'card span2', 'data-chart': 'metrics-table' },
    h('header', { class: 'card-head' }, h('h3', {}, 'Per-run figures')),
    dataTable({ name: 'run-metrics', columns, rows: runs, sort: parseSort(ctx.route.params.sort, null), onSort: (s) => ctx.update({ sort: formatSort(s) }), csvName: `${detail.experiment.name}-runs` }),
  );
}

/** A metric value with the unit its name implies (`…_ms`, `…_usd`, rates). */
function fmtMetric(metric: string, v: number | null, signed = false): string {
  if (v === null) return '–';
  const sign = signed && v > 0 ? '+' : '';
  if (metric.endsWith('_ms')) return `${sign}${fmtMs(v)}`;
  if (metric.endsWith('_usd')) return `${sign}${fmtUsd(v)}`;
  if (/rate$|^goodput$/.test(metric)) return `${sign}${fmtPct(v)}`;
  return `${sign}${fmtCompact(v)}`;
}

function comparisonsTable(ctx: PageContext, rows: readonly ComparisonRow[], baseline: string | null): HTMLElement {
  const columns: Column<ComparisonRow>[] = [
    { key: 'candidate', label: 'candidate', value: (r) => r.candidate },
    { key: 'pair', label: 'cells', value: (r) => r.pairKey || null },
    { key: 'metric', label: 'metric', value: (r) => r.metric },
    { key: 'baseline_mean', label: 'baseline', value: (r) => r.baselineMean, format: (v, r) => fmtMetric(r.metric, v as number | null), numeric: true },
    { key: 'candidate_mean', label: 'candidate', value: (r) => r.candidateMean, format: (v, r) => fmtMetric(r.metric, v as number | null), numeric: true },
    { key: 'diff', label: 'Δ', value: (r) => r.diffMean, format: (v, r) => fmtMetric(r.metric, v as number | null, true), numeric: true },
    { key: 'ci_low', label: 'interval low', value: (r) => r.ciLow, format: (v, r) => fmtMetric(r.metric, v as number | null, true), numeric: true },
    { key: 'ci_high', label: 'interval high', value: (r) => r.ciHigh, format: (v, r) => fmtMetric(r.metric, v as number | null, true), numeric: true },
    { key: 'seeds', label: 'seeds', value: (r) => r.seeds, numeric: true },
    {
      key: 'verdict',
      label: 'verdict',
      value: (r) => (r.ciLow === null || r.ciHigh === null ? 'too few seeds' : r.significant === false ? 'no clear difference' : r.candidateBetter === true ? 'candidate better' : r.candidateBetter === false ? 'candidate worse' : 'different'),
      title: 'from the stored interval: a difference counts when the interval excludes 0',
    },
  ];
  return h(
    'section',
    { class: 'card wide', 'data-chart': 'comparisons-table' },
    h('header', { class: 'card-head' }, h('h3', {}, `Paired comparisons against ${baseline ?? '–'}`)),
    dataTable({ name: 'comparisons', columns, rows, sort: parseSort(ctx.route.params.csort, null), onSort: (s) => ctx.update({ csort: formatSort(s) }), csvName: 'comparisons' }),
  );
}
