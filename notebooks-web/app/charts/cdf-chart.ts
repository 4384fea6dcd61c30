/**
 * Latency CDFs, one line per run, on a log x axis: the shape of the whole distribution at once,
 * with the tail (where strategies differ) stretched out. Input points are the server's
 * quantiles (`[valueMs, p]`); values ≤ 0 cannot sit on a log axis and are dropped, so a line
 * starts at the share of zero values.
 */
import { line, scaleLinear, scaleLog, type ScaleLinear, type ScaleLogarithmic } from 'd3';
import { createChartSvg, fitLegend, DEFAULT_MARGIN, drawAxes, drawEmpty, drawLegend, legendHeight, plotArea, type LegendItem, type Margin, type PlotArea, type Size } from './chart-kit.ts';

/** One run's CDF. */
export interface CdfSeriesInput {
  id: string;
  label: string;
  color: string;
  /** `[value, probability]`, probability ascending. */
  points: readonly (readonly [number, number])[];
}

/** Input of {@link cdfChartModel}. */
export interface CdfChartInput {
  title: string;
  series: readonly CdfSeriesInput[];
  /** e.g. `TTFT (ms, log scale)`. */
  xLabel: string;
  size: Size;
}

/** One drawn line. */
export interface CdfLine {
  id: string;
  label: string;
  color: string;
  /** SVG path data in chart coordinates ('' when the run has no positive values). */
  d: string;
  /** Points drawn. */
  points: number;
}

/** Computed chart. */
export interface CdfChartModel {
  title: string;
  size: Size;
  margin: Margin;
  area: PlotArea;
  x: ScaleLogarithmic<number, number>;
  y: ScaleLinear<number, number>;
  lines: CdfLine[];
  legend: LegendItem[];
  xLabel: string;
  yLabel: string;
  /** Reference probabilities drawn as dashed horizontal lines. */
  guides: { p: number; y: number; label: string }[];
  /** True when no run has a positive value. */
  empty: boolean;
}

/**
 * Scales and paths of the CDF chart. The x domain spans the smallest positive to the largest
 * value over all runs (widened ×/÷2 when they are equal; [1, 10] with no data), niced to
 * powers of ten; y is the probability 0..1.
 * @throws RangeError for a size too small to plot.
 */
export function cdfChartModel(input: CdfChartInput): CdfChartModel {
  const legendWidth = input.size.width - DEFAULT_MARGIN.left - DEFAULT_MARGIN.right;
  // At most ~30 % of the height for the legend: a sweep can have dozens of runs.
  const legend = fitLegend(input.series.map((s) => ({ label: s.label, color: s.color, kind: 'line' })), legendWidth, input.size.height * 0.3);
  const margin = { ...DEFAULT_MARGIN, top: DEFAULT_MARGIN.top + legendHeight(legend, legendWidth) };
  const area = plotArea(input.size, margin);
  const positive = input.series.map((s) => s.points.filter(([v, p]) => v > 0 && Number.isFinite(v) && Number.isFinite(p)));
  let lo = Infinity;
  let hi = -Infinity;
  for (const pts of positive) for (const [v] of pts) {
    lo = Math.min(lo, v);
    hi = Math.max(hi, v);
  }
  const empty = !Number.isFinite(lo);
  if (empty) [lo, hi] = [1, 10];
  else if (lo === hi) [lo, hi] = [lo / 2, hi * 2];
  const x = scaleLog().domain([lo, hi]).range([area.x, area.x + area.width]).nice();
  const y = scaleLinear().domain([0, 1]).range([area.y + area.height, area.y]);
  const path = line<readonly [number, number]>()
    .x((d) => x(d[0]))
    .y((d) => y(d[1]));
  const lines = input.series.map((s, i) => {
    const pts = positive[i]!;
    return { id: s.id, label: s.label, color: s.color, d: pts.length > 0 ? (path(pts) ?? '') : '', points: pts.length };
  });
  const guides = [0.5, 0.9, 0.99].map((p) => ({ p, y: y(p), label: `p${Math.round(p * 100)}` }));
  return { title: input.title, size: input.size, margin, area, x, y, lines, legend, xLabel: input.xLabel, yLabel: 'fraction of requests ≤ x', guides, empty };
}

/** Renders the model as a detached SVG (browser only). Lines carry class `cdf-line`. */
export function renderCdfChart(m: CdfChartModel): SVGSVGElement {
  const svg = createChartSvg(m.size, 'cdf-chart', m.title);
  drawAxes(svg, {
    area: m.area,
    x: m.x,
    y: m.y,
    xLabel: m.xLabel,
    yLabel: m.yLabel,
    xTicks: 6,
    // d3's log tick format labels 1-2-5 steps and blanks the rest, so labels never collide.
    xTickFormat: m.x.tickFormat(6, '~s'),
    yTickFormat: (v) => `${Math.round(Number(v) * 100)}%`,
    grid: true,
  });
  const guides = svg.append('g').attr('class', 'guides');
  for (const g of m.guides) {
    guides.append('line').attr('x1', m.area.x).attr('x2', m.area.x + m.area.width).attr('y1', g.y).attr('y2', g.y).attr('stroke', '#bbb').attr('stroke-dasharray', '3 3');
    guides.append('text').attr('class', 'mark-label').attr('x', m.area.x + m.area.width - 2).attr('y', g.y - 3).attr('text-anchor', 'end').text(g.label);
  }
  const lines = svg.append('g').attr('class', 'lines');
  for (const l of m.lines) {
    if (l.d === '') continue;
    lines
      .append('path')
      .attr('class', 'cdf-line')
      .attr('data-run', l.id)
      .attr('d', l.d)
      .attr('fill', 'none')
      .attr('stroke', l.color)
      .attr('stroke-width', 2)
      .append('title')
      .text(l.label);
  }
  if (m.empty) drawEmpty(svg, m.area);
  drawLegend(svg, m.legend, m.area.x, DEFAULT_MARGIN.top + 8, m.area.width);
  return svg.node()!;
}
