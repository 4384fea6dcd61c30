/**
 * A metric over two swept parameters: one cell per (x, y) value pair, coloured on viridis (a
 * perceptually uniform ramp readable in greyscale) oriented so that "better" is always the
 * bright yellow end, whichever way the metric runs. Cells are clickable: they open their run.
 */
import { interpolateViridis, lab, scaleBand, scaleSequential, type ScaleBand, type ScaleSequential } from 'd3';
import { createChartSvg, DEFAULT_MARGIN, drawAxes, plotArea, uniqueId, type Margin, type PlotArea, type Size } from './chart-kit.ts';

/** One cell's value and the run it opens. */
export interface HeatCellInput {
  x: string;
  y: string;
  value: number | null;
  /** Run opened by a click (the first when several share the cell). */
  runId: string;
  /** Runs averaged into the cell. */
  n: number;
}

/** Input of {@link heatmapModel}. */
export interface HeatmapInput {
  title: string;
  xKey: string;
  yKey: string;
  xValues: readonly string[];
  yValues: readonly string[];
  cells: readonly HeatCellInput[];
  /** Metric name with unit, e.g. `goodput (%)`. */
  metricLabel: string;
  higherIsBetter: boolean;
  format: (v: number) => string;
  size: Size;
}

/** A cell in chart coordinates. */
export interface HeatCellMark {
  x: number;
  y: number;
  width: number;
  height: number;
  fill: string;
  /** Black or white, whichever reads on `fill`. */
  textColor: string;
  label: string;
  xValue: string;
  yValue: string;
  runId: string;
  value: number | null;
  n: number;
}

/** Computed chart. */
export interface HeatmapModel {
  title: string;
  size: Size;
  margin: Margin;
  area: PlotArea;
  x: ScaleBand<string>;
  y: ScaleBand<string>;
  color: ScaleSequential<string>;
  /** [worst, best] metric values. */
  colorDomain: [number, number];
  cells: HeatCellMark[];
  /** Colour-ramp legend: stops from worst (offset 0) to best (offset 1). */
  legendStops: { offset: number; color: string }[];
  xLabel: string;
  yLabel: string;
  metricLabel: string;
  format: (v: number) => string;
}

/** Empty cells (no value): light grey. */
export const NO_VALUE_FILL = '#eeeeee';

/**
 * Scales and cells. y values run bottom-up (first value at the bottom), as on a plot. With a
 * single distinct value the colour domain is widened so the ramp stays defined.
 * @throws RangeError for a size too small to plot.
 */
export function heatmapModel(input: HeatmapInput): HeatmapModel {
  const margin = { ...DEFAULT_MARGIN, right: 100, left: 84, bottom: 48 };
  const area = plotArea(input.size, margin);
  const x = scaleBand<string>().domain(input.xValues).range([area.x, area.x + area.width]).padding(0.04);
  const y = scaleBand<string>().domain([...input.yValues].reverse()).range([area.y, area.y + area.height]).padding(0.04);
  const vals = input.cells.map((c) => c.value).filter((v): v is number => v !== null && Number.isFinite(v));
  let lo = vals.length > 0 ? Math.min(...vals) : 0;
  let hi = vals.length > 0 ? Math.max(...vals) : 1;
  if (lo === hi) [lo, hi] = [lo - 0.5 * Math.abs(lo || 1), hi + 0.5 * Math.abs(hi || 1)];
  const worstBest: [number, number] = input.higherIsBetter ? [lo, hi] : [hi, lo];
  const color = scaleSequential(interpolateViridis).domain(worstBest);
  const cells: HeatCellMark[] = [];
  for (const c of input.cells) {
    const cx = x(c.x);
    const cy = y(c.y);
    if (cx === undefined || cy === undefined) continue;
    const fill = c.value === null || !Number.isFinite(c.value) ? NO_VALUE_FILL : color(c.value);
    cells.push({
      x: cx,
      y: cy,
      width: x.bandwidth(),
      height: y.bandwidth(),
      fill,
      textColor: lab(fill).l > 55 ? '#111111' : '#ffffff',
      label: c.value === null ? '–' : input.format(c.value),
      xValue: c.x,
      yValue: c.y,
      runId: c.runId,
      value: c.value,
      n: c.n,
    });
  }
  const legendStops = Array.from({ length: 11 }, (_, i) => ({ offset: i / 10, color: interpolateViridis(i / 10) }));
  return { title: input.title, size: input.size, margin, area, x, y, color, colorDomain: worstBest, cells, legendStops, xLabel: input.xKey, yLabel: input.yKey, metricLabel: input.metricLabel, format: input.format };
}

/**
 * Renders the model (browser only). Cells are `rect.heat-cell` with `data-run`; clicking one (or
 * Enter on it) calls `onCell`.
 */
export function renderHeatmap(m: HeatmapModel, onCell: (runId: string) => void): SVGSVGElement {
  const svg = createChartSvg(m.size, 'heatmap-chart', m.title);
  drawAxes(svg, { area: m.area, x: m.x, y: m.y, xLabel: m.xLabel, yLabel: m.yLabel });
  const g = svg.append('g').attr('class', 'cells');
  const showText = m.x.bandwidth() > 34 && m.y.bandwidth() > 14;
  for (const c of m.cells) {
    const cell = g
      .append('g')
      .attr('class', 'heat-cell-group')
      .attr('tabindex', 0)
      .attr('role', 'button')
      .attr('aria-label', `${m.xLabel} ${c.xValue}, ${m.yLabel} ${c.yValue}: ${c.label}; open run ${c.runId}`)
      .style('cursor', 'pointer')
      .on('click', () => onCell(c.runId))
      .on('keydown', (e: KeyboardEvent) => {
        if (e.key === 'Enter') onCell(c.runId);
      });
    cell
      .append('rect')
      .attr('class', 'heat-cell')
      .attr('data-run', c.runId)
      .attr('data-x', c.xValue)
      .attr('data-y', c.yValue)
      .attr('x', c.x)
      .attr('y', c.y)
      .attr('width', c.width)
      .attr('height', c.height)
      .attr('fill', c.fill);
    cell.append('title').text(`${m.xLabel} = ${c.xValue}, ${m.yLabel} = ${c.yValue}\n${m.metricLabel}: ${c.label}${c.n > 1 ? ` (mean of ${c.n} runs)` : ''}\nclick to open run ${c.runId}`);
    if (showText) {
      cell.append('text').attr('x', c.x + c.width / 2).attr('y', c.y + c.height / 2 + 4).attr('text-anchor', 'middle').attr('pointer-events', 'none').style('fill', c.textColor).text(c.label);
    }
  }
  // Colour ramp legend on the right: worst at the bottom, best at the top.
  const id = uniqueId('ramp');
  const grad = svg.append('defs').append('linearGradient').attr('id', id).attr('x1', 0).attr('x2', 0).attr('y1', 1).attr('y2', 0);
  for (const s of m.legendStops) grad.append('stop').attr('offset', s.offset).attr('stop-color', s.color);
  const lx = m.area.x + m.area.width + 16;
  const lg = svg.append('g').attr('class', 'chart-legend color-legend');
  lg.append('rect').attr('x', lx).attr('y', m.area.y).attr('width', 14).attr('height', m.area.height).attr('fill', `url(#${id})`);
  lg.append('text').attr('x', lx + 18).attr('y', m.area.y + 9).text(m.format(m.colorDomain[1]));
  lg.append('text').attr('x', lx + 18).attr('y', m.area.y + m.area.height).text(m.format(m.colorDomain[0]));
  lg.append('text').attr('class', 'axis-label').attr('transform', `translate(${lx + 52},${m.area.y + m.area.height / 2}) rotate(90)`).attr('text-anchor', 'middle').text(`${m.metricLabel} (better ↑)`);
  return svg.node()!;
}
