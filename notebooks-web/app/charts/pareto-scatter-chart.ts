/**
 * Latency against cost, one dot per run, with the Pareto front (runs no other run beats on both)
 * drawn as a step line and its dots ringed: the runs worth choosing between.
 */
import { curveStepAfter, line, scaleLinear, type ScaleLinear } from 'd3';
import { compactTick, createChartSvg, DEFAULT_MARGIN, drawAxes, drawEmpty, drawLegend, plotArea, type LegendItem, type Margin, type PlotArea, type Size } from './chart-kit.ts';
import { paretoFront } from './pareto.ts';

/** One run. */
export interface ScatterPointInput {
  id: string;
  label: string;
  color: string;
  /** Cost, e.g. USD per 1k requests. */
  x: number | null;
  /** Latency, ms. */
  y: number | null;
}

/** Input of {@link paretoScatterModel}. */
export interface ParetoScatterInput {
  title: string;
  points: readonly ScatterPointInput[];
  xLabel: string;
  yLabel: string;
  size: Size;
  xFormat?: (v: number) => string;
  yFormat?: (v: number) => string;
}

/** A dot in chart coordinates. */
export interface DotMark {
  id: string;
  label: string;
  color: string;
  cx: number;
  cy: number;
  onFront: boolean;
}

/** Computed chart. */
export interface ParetoScatterModel {
  title: string;
  size: Size;
  margin: Margin;
  area: PlotArea;
  x: ScaleLinear<number, number>;
  y: ScaleLinear<number, number>;
  dots: DotMark[];
  /** Path of the front (step line through front dots by cost), '' with fewer than 2. */
  frontPath: string;
  /** Ids of the runs on the front, by ascending cost. */
  frontIds: string[];
  legend: LegendItem[];
  xLabel: string;
  yLabel: string;
  xFormat: (v: number) => string;
  yFormat: (v: number) => string;
  empty: boolean;
}

function domainOf(values: number[]): [number, number] {
  if (values.length === 0) return [0, 1];
  const lo = Math.min(0, ...values);
  const hi = Math.max(...values);
  // All zero (e.g. self-hosted runs cost nothing): still give the axis a width.
  return hi === lo ? [lo, lo + 1] : [lo, hi];
}

/**
 * Scales, dots and front. Both axes start at 0 (or the lowest negative value) so distances
 * read as ratios; runs with a null coordinate are left out.
 * @throws RangeError for a size too small to plot.
 */
export function paretoScatterModel(input: ParetoScatterInput): ParetoScatterModel {
  const legend: LegendItem[] = [
    { label: 'Pareto front', color: '#333', kind: 'dash' },
  ];
  const margin = { ...DEFAULT_MARGIN, top: DEFAULT_MARGIN.top + 16, right: 90 };
  const area = plotArea(input.size, margin);
  const known = input.points.filter((p) => p.x !== null && p.y !== null && Number.isFinite(p.x) && Number.isFinite(p.y));
  const x = scaleLinear().domain(domainOf(known.map((p) => p.x!))).range([area.x, area.x + area.width]).nice();
  const y = scaleLinear().domain(domainOf(known.map((p) => p.y!))).range([area.y + area.height, area.y]).nice();
  const front = new Set(paretoFront(known));
  const dots = known.map((p, i) => ({ id: p.id, label: p.label, color: p.color, cx: x(p.x!), cy: y(p.y!), onFront: front.has(i) }));
  const frontDots = paretoFront(known).map((i) => dots[i]!);
  const frontPath =
    frontDots.length >= 2
      ? (line<DotMark>()
          .x((d) => d.cx)
          .y((d) => d.cy)
          .curve(curveStepAfter)(frontDots) ?? '')
      : '';
  return {
    title: input.title,
    size: input.size,
    margin,
    area,
    x,
    y,
    dots,
    frontPath,
    frontIds: frontDots.map((d) => d.id),
    legend,
    xLabel: input.xLabel,
    yLabel: input.yLabel,
    xFormat: input.xFormat ?? compactTick,
    yFormat: input.yFormat ?? compactTick,
    empty: known.length === 0,
  };
}

/** Renders the model (browser only). Dots carry class `dot`, front dots also `on-front`. */
export function renderParetoScatter(m: ParetoScatterModel): SVGSVGElement {
  const svg = createChartSvg(m.size, 'scatter-chart', m.title);
  drawAxes(svg, { area: m.area, x: m.x, y: m.y, xLabel: m.xLabel, yLabel: m.yLabel, xTicks: 6, yTicks: 5, xTickFormat: m.xFormat, yTickFormat: m.yFormat, grid: true });
  if (m.frontPath) svg.append('path').attr('class', 'pareto-front').attr('d', m.frontPath).attr('fill', 'none').attr('stroke', '#333').attr('stroke-width', 1.5).attr('stroke-dasharray', '5 3');
  const g = svg.append('g').attr('class', 'dots');
  for (const d of m.dots) {
    const e = g.append('g').attr('class', `dot${d.onFront ? ' on-front' : ''}`).attr('data-run', d.id);
    if (d.onFront) e.append('circle').attr('cx', d.cx).attr('cy', d.cy).attr('r', 9).attr('fill', 'none').attr('stroke', '#333').attr('stroke-width', 1.5);
    e.append('circle').attr('cx', d.cx).attr('cy', d.cy).attr('r', 5.5).attr('fill', d.color).attr('stroke', '#fff');
    e.append('text').attr('class', 'mark-label').attr('x', d.cx + 11).attr('y', d.cy + 3).text(d.label);
    e.append('title').text(`${d.label}: ${m.xLabel} ${m.xFormat(m.x.invert(d.cx))}, ${m.yLabel} ${m.yFormat(m.y.invert(d.cy))}${d.onFront ? ' (Pareto front)' : ''}`);
  }
  if (m.empty) drawEmpty(svg, m.area);
  drawLegend(svg, m.legend, m.area.x, DEFAULT_MARGIN.top + 8, m.area.width);
  return svg.node()!;
}
