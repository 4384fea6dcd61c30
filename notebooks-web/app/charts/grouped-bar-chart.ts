/**
 * Grouped bars: one group per category (p50 / p90 / p99, or failure / fallback / offload), one
 * bar per run inside it, each optionally with an interval whisker (the paired-bootstrap 95 %
 * interval). Used for latency percentiles, goodput, cost and rates: one chart function, many
 * uses.
 */
import { scaleBand, scaleLinear, type ScaleBand, type ScaleLinear } from 'd3';
import { compactTick, createChartSvg, fitLegend, DEFAULT_MARGIN, drawAxes, drawEmpty, drawLegend, legendHeight, plotArea, type LegendItem, type Margin, type PlotArea, type Size } from './chart-kit.ts';

/** A series (run) of the chart. */
export interface BarSeries {
  id: string;
  label: string;
  color: string;
}

/** One bar's value and optional interval, in the chart's unit. */
export interface BarDatum {
  group: string;
  series: string;
  value: number | null;
  lo?: number | null;
  hi?: number | null;
}

/** Input of {@link groupedBarModel}. */
export interface GroupedBarInput {
  title: string;
  groups: readonly string[];
  series: readonly BarSeries[];
  data: readonly BarDatum[];
  /** Group axis label, e.g. `percentile`. */
  xLabel: string;
  /** Value axis label with unit, e.g. `TTFT (ms)`. */
  yLabel: string;
  size: Size;
  /** Fixed value domain (e.g. [0, 1] for rates); default [min(0, lowest lo), highest value or hi]. */
  yDomain?: readonly [number, number];
  /** Tick and bar-label format. */
  format?: (v: number) => string;
}

/** A bar in chart coordinates. */
export interface BarMark {
  group: string;
  series: string;
  x: number;
  y: number;
  width: number;
  height: number;
  color: string;
  value: number;
}

/** A whisker in chart coordinates: vertical from y1 (lower value) to y2 (higher value). */
export interface WhiskerMark {
  group: string;
  series: string;
  x: number;
  y1: number;
  y2: number;
  lo: number;
  hi: number;
}

/** Computed chart. */
export interface GroupedBarModel {
  title: string;
  size: Size;
  margin: Margin;
  area: PlotArea;
  x0: ScaleBand<string>;
  x1: ScaleBand<string>;
  y: ScaleLinear<number, number>;
  bars: BarMark[];
  whiskers: WhiskerMark[];
  legend: LegendItem[];
  xLabel: string;
  yLabel: string;
  format: (v: number) => string;
  /** True when no datum has a value. */
  empty: boolean;
}

/**
 * Scales and marks. Bars with a null value are omitted (a gap, not a zero); whiskers need both
 * ends. The value domain includes 0, every value and every interval end, niced.
 * @throws RangeError for a size too small to plot.
 */
export function groupedBarModel(input: GroupedBarInput): GroupedBarModel {
  const legendWidth = input.size.width - DEFAULT_MARGIN.left - DEFAULT_MARGIN.right;
  const items: LegendItem[] = input.series.length > 1 ? input.series.map((s) => ({ label: s.label, color: s.color, kind: 'swatch' })) : [];
  const legend = fitLegend(items, legendWidth, input.size.height * 0.3);
  const margin = { ...DEFAULT_MARGIN, top: DEFAULT_MARGIN.top + legendHeight(legend, legendWidth) };
  const area = plotArea(input.size, margin);
  const x0 = scaleBand<string>().domain(input.groups).range([area.x, area.x + area.width]).paddingInner(0.2).paddingOuter(0.1);
  const x1 = scaleBand<string>().domain(input.series.map((s) => s.id)).range([0, x0.bandwidth()]).padding(0.08);
  const known = input.data.filter((d) => d.value !== null && Number.isFinite(d.value) && input.groups.includes(d.group) && input.series.some((s) => s.id === d.series));
  let lo = 0;
  let hi = 0;
  for (const d of known) {
    lo = Math.min(lo, d.value!, d.lo ?? 0);
    hi = Math.max(hi, d.value!, d.hi ?? 0);
  }
  const empty = known.length === 0;
  if (hi === lo) hi = lo + 1;
  const y = scaleLinear()
    .domain(input.yDomain ? [...input.yDomain] : [lo, hi])
    .range([area.y + area.height, area.y]);
  // A fixed domain (rates: 0..1) clamps: an interval end past 100 % is drawn at the edge.
  if (!input.yDomain) y.nice();
  else y.clamp(true);
  const color = new Map(input.series.map((s) => [s.id, s.color]));
  const y0 = y(Math.max(y.domain()[0]!, Math.min(0, y.domain()[1]!)));
  const bars: BarMark[] = [];
  const whiskers: WhiskerMark[] = [];
  for (const d of known) {
    const bx = x0(d.group)! + x1(d.series)!;
    const yv = y(d.value!);
    bars.push({ group: d.group, series: d.series, x: bx, y: Math.min(yv, y0), width: x1.bandwidth(), height: Math.abs(y0 - yv), color: color.get(d.series)!, value: d.value! });
    if (d.lo !== undefined && d.lo !== null && d.hi !== undefined && d.hi !== null && Number.isFinite(d.lo) && Number.isFinite(d.hi)) {
      whiskers.push({ group: d.group, series: d.series, x: bx + x1.bandwidth() / 2, y1: y(Math.min(d.lo, d.hi)), y2: y(Math.max(d.lo, d.hi)), lo: Math.min(d.lo, d.hi), hi: Math.max(d.lo, d.hi) });
    }
  }
  const format = input.format ?? compactTick;
  return { title: input.title, size: input.size, margin, area, x0, x1, y, bars, whiskers, legend, xLabel: input.xLabel, yLabel: input.yLabel, format, empty };
}

/** Renders the model (browser only). Bars carry class `bar`, whiskers class `whisker`. */
export function renderGroupedBarChart(m: GroupedBarModel): SVGSVGElement {
  const svg = createChartSvg(m.size, 'bar-chart', m.title);
  drawAxes(svg, { area: m.area, x: m.x0, y: m.y, xLabel: m.xLabel, yLabel: m.yLabel, yTicks: 5, yTickFormat: m.format, grid: true });
  const g = svg.append('g').attr('class', 'bars');
  const seriesLabel = new Map(m.legend.map((l) => [l.color, l.label]));
  for (const b of m.bars) {
    g.append('rect')
      .attr('class', 'bar')
      .attr('data-series', b.series)
      .attr('data-group', b.group)
      .attr('x', b.x)
      .attr('y', b.y)
      .attr('width', b.width)
      .attr('height', Math.max(b.height, 0.5))
      .attr('fill', b.color)
      .append('title')
      .text(`${seriesLabel.get(b.color) ?? b.series} · ${b.group}: ${m.format(b.value)}`);
  }
  // Value labels when there is room: a 0.02 % bar is invisible, its number is not.
  if (m.bars.length <= 12 && m.x1.bandwidth() >= 26) {
    const labels = svg.append('g').attr('class', 'bar-labels');
    const whiskerTop = new Map(m.whiskers.map((k) => [`${k.group}\u0000${k.series}`, k.y2]));
    for (const b of m.bars) {
      const top = Math.min(b.y, whiskerTop.get(`${b.group}\u0000${b.series}`) ?? b.y);
      labels.append('text').attr('class', 'mark-label').attr('x', b.x + b.width / 2).attr('y', Math.max(m.area.y + 9, top - 3)).attr('text-anchor', 'middle').text(m.format(b.value));
    }
  }
  const w = svg.append('g').attr('class', 'whiskers');
  for (const k of m.whiskers) {
    const e = w.append('g').attr('class', 'whisker').attr('data-series', k.series).attr('data-group', k.group);
    e.append('line').attr('x1', k.x).attr('x2', k.x).attr('y1', k.y1).attr('y2', k.y2).attr('stroke', '#111').attr('stroke-width', 1.5);
    for (const yy of [k.y1, k.y2]) e.append('line').attr('x1', k.x - 4).attr('x2', k.x + 4).attr('y1', yy).attr('y2', yy).attr('stroke', '#111').attr('stroke-width', 1.5);
    e.append('title').text(`95 % interval: ${m.format(k.lo)} – ${m.format(k.hi)}`);
  }
  if (m.empty) drawEmpty(svg, m.area);
  drawLegend(svg, m.legend, m.area.x, DEFAULT_MARGIN.top + 8, m.area.width);
  return svg.node()!;
}
