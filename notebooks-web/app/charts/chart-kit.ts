/**
 * What every chart shares. A chart is two functions: a pure `…Model(input)` that computes
 * scales and marks as plain data (unit-tested in Node, no DOM), and a thin `render…(model)` that
 * turns the model into a detached `<svg>` with d3 (browser only). This file holds the shared
 * model types and the render helpers: the SVG shell with its own stylesheet (so an exported
 * SVG looks like the page), axes with unit labels, and legends.
 */
import { axisBottom, axisLeft, create, format, scaleLinear, type AxisDomain, type AxisScale, type Selection } from 'd3';

/** Outer size of a chart, px. */
export interface Size {
  width: number;
  height: number;
}

/** Space around the plot for axes, labels and legend, px. */
export interface Margin {
  top: number;
  right: number;
  bottom: number;
  left: number;
}

/** The plot rectangle inside the margins, px from the SVG's top-left corner. */
export interface PlotArea {
  x: number;
  y: number;
  width: number;
  height: number;
}

/** A legend entry: `line` for series drawn as lines, `swatch` for filled marks. */
export interface LegendItem {
  label: string;
  color: string;
  kind: 'line' | 'swatch' | 'dash';
}

/** Default margins: room for a y label and ticks on the left, an x label below. */
export const DEFAULT_MARGIN: Margin = { top: 12, right: 16, bottom: 44, left: 64 };

/**
 * The plot rectangle of a chart.
 * @throws RangeError when the size is not finite or leaves no room inside the margins.
 */
export function plotArea(size: Size, margin: Margin = DEFAULT_MARGIN): PlotArea {
  const width = size.width - margin.left - margin.right;
  const height = size.height - margin.top - margin.bottom;
  if (!Number.isFinite(width) || !Number.isFinite(height) || width < 10 || height < 10) {
    throw new RangeError(`chart size ${size.width}×${size.height} leaves no room for the plot`);
  }
  return { x: margin.left, y: margin.top, width, height };
}

/** Rows of a legend laid out left to right, wrapping at `maxWidth`: item positions, px. */
export function legendLayout(items: readonly LegendItem[], maxWidth: number): { item: LegendItem; x: number; y: number }[] {
  const out: { item: LegendItem; x: number; y: number }[] = [];
  let x = 0;
  let y = 0;
  for (const item of items) {
    // ~6.2 px per character at 11 px: an estimate; the legend only needs to avoid overlaps.
    const w = 22 + item.label.length * 6.2 + 14;
    if (x > 0 && x + w > maxWidth) {
      x = 0;
      y += 16;
    }
    out.push({ item, x, y });
    x += w;
  }
  return out;
}

/**
 * The legend cut to fit `maxHeight` px at `maxWidth`: when the items would need more rows, the
 * tail is replaced by one `+N more` entry (the lines are still drawn; their `<title>` names them).
 */
export function fitLegend(items: readonly LegendItem[], maxWidth: number, maxHeight: number): LegendItem[] {
  if (legendHeight(items, maxWidth) <= maxHeight) return [...items];
  for (let n = items.length - 1; n >= 0; n--) {
    const cut: LegendItem[] = [...items.slice(0, n), { label: `+${items.length - n} more`, color: 'none', kind: 'swatch' }];
    if (legendHeight(cut, maxWidth) <= maxHeight) return cut;
  }
  return [];
}

/** Height a legend of `items` takes at `maxWidth`, px (0 when empty). */
export function legendHeight(items: readonly LegendItem[], maxWidth: number): number {
  const layout = legendLayout(items, maxWidth);
  return layout.length === 0 ? 0 : layout[layout.length - 1]!.y + 16;
}

/**
 * Inline stylesheet of every chart, kept in the SVG so exports match the screen. An inline
 * `<style>` applies to the whole document, so every rule is scoped to `svg.chart` and uses
 * `chart-` class names that page CSS does not.
 */
export const CHART_CSS = `
  svg.chart text { font: 11px system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; fill: #222; }
  svg.chart .axis-label { font-size: 12px; font-weight: 600; fill: #333; }
  svg.chart .chart-axis path, svg.chart .chart-axis line { stroke: #888; }
  svg.chart .chart-grid line { stroke: #e8e8e8; }
  svg.chart .chart-grid path { display: none; }
  svg.chart .mark-label { font-size: 10px; fill: #333; }
  svg.chart .empty-text { font-size: 13px; fill: #777; }
`;

const siTick = format('.3~s');
const plainTick = format(',.4~r');

/** Default tick label of a value axis: `1,500`, `0.25`, `12.5k`, `3M` (SI only from 10,000). */
export function compactTick(v: number): string {
  return Math.abs(v) >= 10_000 ? siTick(v) : plainTick(v);
}

/**
 * Tick positions for an axis whose domain is in ms but whose labels are in a larger unit
 * (`unitMs` ms each): round numbers of the unit (0, 30, 60 min), not of ms (33, 67 min).
 */
export function unitTicks(domainMs: readonly [number, number], unitMs: number, count: number): number[] {
  return scaleLinear()
    .domain([domainMs[0] / unitMs, domainMs[1] / unitMs])
    .ticks(count)
    .map((t) => t * unitMs);
}

/** A d3 selection of a chart's root `<svg>`. */
export type SvgSelection = Selection<SVGSVGElement, undefined, null, undefined>;

/** Any d3 selection of an SVG element (group or root). */
export type SvgGroup = Selection<SVGGElement, undefined, null, undefined>;

/**
 * A detached `<svg>` of `size` with a `<title>` (accessible name and tooltip), class
 * `chart <className>`, a viewBox (so CSS can scale it) and the chart stylesheet.
 */
export function createChartSvg(size: Size, className: string, title: string): SvgSelection {
  const svg = create('svg')
    .attr('class', `chart ${className}`)
    .attr('width', size.width)
    .attr('height', size.height)
    .attr('viewBox', `0 0 ${size.width} ${size.height}`)
    .attr('role', 'img')
    .attr('aria-label', title);
  svg.append('title').text(title);
  svg.append('style').text(CHART_CSS);
  svg.append('rect').attr('class', 'background').attr('width', size.width).attr('height', size.height).attr('fill', '#ffffff');
  return svg;
}

/** Options of {@link drawAxes}. */
export interface AxesSpec<X extends AxisDomain, Y extends AxisDomain> {
  area: PlotArea;
  x: AxisScale<X>;
  y: AxisScale<Y>;
  xLabel: string;
  yLabel: string;
  xTickFormat?: (v: X) => string;
  yTickFormat?: (v: Y) => string;
  xTicks?: number;
  /** Explicit x tick positions (overrides xTicks). */
  xTickValues?: readonly X[];
  yTicks?: number;
  /** Horizontal grid lines at the y ticks. */
  grid?: boolean;
}

/**
 * Draws the x axis (bottom) and y axis (left) with their labels, and optional grid lines.
 * Scales map to absolute chart coordinates (their ranges include the margins), so axes are
 * only moved across, never along.
 */
export function drawAxes<X extends AxisDomain, Y extends AxisDomain>(svg: SvgSelection, s: AxesSpec<X, Y>): void {
  const { area } = s;
  if (s.grid) {
    const grid = axisLeft(s.y).tickSize(-area.width).tickFormat(() => '');
    if (s.yTicks !== undefined) grid.ticks(s.yTicks);
    svg.append('g').attr('class', 'chart-grid').attr('transform', `translate(${area.x},0)`).call(grid);
  }
  const xAxis = axisBottom(s.x);
  if (s.xTicks !== undefined) xAxis.ticks(s.xTicks);
  if (s.xTickValues !== undefined) xAxis.tickValues(s.xTickValues);
  if (s.xTickFormat) xAxis.tickFormat(s.xTickFormat as (v: X, i: number) => string);
  svg.append('g').attr('class', 'chart-axis x-axis').attr('transform', `translate(0,${area.y + area.height})`).call(xAxis);
  const yAxis = axisLeft(s.y);
  if (s.yTicks !== undefined) yAxis.ticks(s.yTicks);
  if (s.yTickFormat) yAxis.tickFormat(s.yTickFormat as (v: Y, i: number) => string);
  svg.append('g').attr('class', 'chart-axis y-axis').attr('transform', `translate(${area.x},0)`).call(yAxis);
  svg
    .append('text')
    .attr('class', 'axis-label x-label')
    .attr('x', area.x + area.width / 2)
    .attr('y', area.y + area.height + 34)
    .attr('text-anchor', 'middle')
    .text(s.xLabel);
  svg
    .append('text')
    .attr('class', 'axis-label y-label')
    .attr('transform', `translate(${area.x - 48},${area.y + area.height / 2}) rotate(-90)`)
    .attr('text-anchor', 'middle')
    .text(s.yLabel);
}

/** Draws a legend at (x, y), wrapping at `maxWidth`. */
export function drawLegend(svg: SvgSelection, items: readonly LegendItem[], x: number, y: number, maxWidth: number): void {
  const g = svg.append('g').attr('class', 'chart-legend').attr('transform', `translate(${x},${y})`);
  for (const { item, x: ix, y: iy } of legendLayout(items, maxWidth)) {
    const e = g.append('g').attr('transform', `translate(${ix},${iy})`);
    if (item.kind === 'swatch') e.append('rect').attr('y', -8).attr('width', 14).attr('height', 10).attr('fill', item.color);
    else {
      e.append('line')
        .attr('x1', 0)
        .attr('x2', 16)
        .attr('y1', -3)
        .attr('y2', -3)
        .attr('stroke', item.color)
        .attr('stroke-width', 2.5)
        .attr('stroke-dasharray', item.kind === 'dash' ? '4 3' : null);
    }
    e.append('text').attr('x', 20).attr('y', 0).text(item.label);
  }
}

/** Writes "no data" in the middle of the plot area. */
export function drawEmpty(svg: SvgSelection, area: PlotArea, text = 'no data'): void {
  svg
    .append('text')
    .attr('class', 'empty-text')
    .attr('x', area.x + area.width / 2)
    .attr('y', area.y + area.height / 2)
    .attr('text-anchor', 'middle')
    .text(text);
}

/** Adds a clip path of the plot area and returns its `url(#…)` reference. */
export function clipToArea(svg: SvgSelection, area: PlotArea, id: string): string {
  svg.append('clipPath').attr('id', id).append('rect').attr('x', area.x).attr('y', area.y).attr('width', area.width).attr('height', area.height);
  return `url(#${id})`;
}

let clipCounter = 0;

/** A document-unique id for clip paths (several charts share one page). */
export function uniqueId(prefix: string): string {
  clipCounter += 1;
  return `${prefix}-${clipCounter}`;
}
