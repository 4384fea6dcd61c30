/**
 * A gauge over virtual time, one line per endpoint (queue depth, running batch, KV usage,
 * prefill backlog, request rate), with fault windows shaded. All timeline charts share one
 * x domain (the brushed window); the SVG carries it in `data-x-domain` so tests and other
 * charts can read it. The overview variant adds a brush (see `renderTimeSeriesChart`).
 */
import { brushX, line, scaleLinear, type ScaleLinear } from 'd3';
import { clipToArea, compactTick, createChartSvg, fitLegend, DEFAULT_MARGIN, drawAxes, drawEmpty, drawLegend, legendHeight, plotArea, uniqueId, unitTicks, type LegendItem, type Margin, type PlotArea, type Size } from './chart-kit.ts';
import { timeAxisLabel, timeTickFormat, timeUnitFor, type TimeUnit } from './time-axis.ts';

/** One line. */
export interface TimeSeriesInput {
  id: string;
  label: string;
  color: string;
  /** `[atMs, value]`, time ascending. */
  points: readonly (readonly [number, number])[];
  /** Dashed (e.g. failures beside arrivals). */
  dashed?: boolean;
}

/** A shaded time window (a fault). */
export interface TimeBandInput {
  fromMs: number;
  toMs: number;
  label: string;
  color: string;
}

/** Input of {@link timeSeriesModel}. */
export interface TimeSeriesChartInput {
  title: string;
  series: readonly TimeSeriesInput[];
  /** The window shown, ms. */
  xDomain: readonly [number, number];
  /** Value axis label with unit. */
  yLabel: string;
  size: Size;
  /** Fixed value domain (KV usage: [0, 1]); default [0, max] niced. */
  yDomain?: readonly [number, number];
  yFormat?: (v: number) => string;
  bands?: readonly TimeBandInput[];
  /** Legend of the bands' kind (one entry), e.g. `fault window`. */
  bandLegend?: LegendItem;
}

/** Computed chart. */
export interface TimeSeriesModel {
  title: string;
  size: Size;
  margin: Margin;
  area: PlotArea;
  x: ScaleLinear<number, number>;
  y: ScaleLinear<number, number>;
  unit: TimeUnit;
  /** x tick positions, ms: round numbers of `unit`. */
  xTicks: number[];
  lines: { id: string; label: string; color: string; d: string; points: number; dashed: boolean }[];
  /** Bands clipped to the window, in chart coordinates. */
  bands: { x: number; width: number; label: string; color: string }[];
  legend: LegendItem[];
  xLabel: string;
  yLabel: string;
  yFormat: (v: number) => string;
  empty: boolean;
}

/**
 * Points of a series that matter for a window: those inside it plus one neighbour on each side,
 * so a line runs to the edge instead of stopping at the last sample inside.
 */
export function windowPoints(points: readonly (readonly [number, number])[], from: number, to: number): (readonly [number, number])[] {
  let first = points.findIndex((p) => p[0] >= from);
  if (first < 0) first = points.length;
  let last = points.length - 1;
  while (last >= 0 && points[last]![0] > to) last--;
  return points.slice(Math.max(0, first - 1), Math.min(points.length, last + 2));
}

/**
 * Scales, lines and bands for the window `xDomain`.
 * @throws RangeError when the window is empty or reversed, or the size too small.
 */
export function timeSeriesModel(input: TimeSeriesChartInput): TimeSeriesModel {
  const [from, to] = input.xDomain;
  if (!(Number.isFinite(from) && Number.isFinite(to) && to > from)) throw new RangeError(`time window [${from}, ${to}] is empty or reversed`);
  const items: LegendItem[] = input.series.map((s) => ({ label: s.label, color: s.color, kind: s.dashed ? 'dash' : 'line' }));
  if (input.bandLegend && (input.bands?.length ?? 0) > 0) items.push(input.bandLegend);
  const legend = fitLegend(items, input.size.width - DEFAULT_MARGIN.left - DEFAULT_MARGIN.right, input.size.height * 0.3);
  const margin = { ...DEFAULT_MARGIN, top: DEFAULT_MARGIN.top + legendHeight(legend, input.size.width - DEFAULT_MARGIN.left - DEFAULT_MARGIN.right) };
  const area = plotArea(input.size, margin);
  const unit = timeUnitFor(to - from);
  const x = scaleLinear().domain([from, to]).range([area.x, area.x + area.width]);
  const visible = input.series.map((s) => windowPoints(s.points, from, to).filter((p) => Number.isFinite(p[1])));
  let hi = 0;
  for (const pts of visible) for (const [t, v] of pts) if (t >= from && t <= to) hi = Math.max(hi, v);
  const y = scaleLinear()
    .domain(input.yDomain ? [...input.yDomain] : [0, hi > 0 ? hi : 1])
    .range([area.y + area.height, area.y]);
  if (!input.yDomain) y.nice();
  const path = line<readonly [number, number]>()
    .x((p) => x(p[0]))
    .y((p) => y(p[1]));
  const lines = input.series.map((s, i) => {
    const pts = visible[i]!;
    return { id: s.id, label: s.label, color: s.color, d: pts.length > 0 ? (path(pts) ?? '') : '', points: pts.length, dashed: s.dashed === true };
  });
  const bands = (input.bands ?? [])
    .filter((b) => b.toMs > from && b.fromMs < to)
    .map((b) => {
      const x0 = x(Math.max(b.fromMs, from));
      const x1 = x(Math.min(b.toMs, to));
      return { x: x0, width: Math.max(1, x1 - x0), label: b.label, color: b.color };
    });
  return {
    title: input.title,
    size: input.size,
    margin,
    area,
    x,
    y,
    unit,
    xTicks: unitTicks([from, to], unit.ms, 8),
    lines,
    bands,
    legend,
    xLabel: timeAxisLabel(unit),
    yLabel: input.yLabel,
    yFormat: input.yFormat ?? compactTick,
    empty: lines.every((l) => l.points === 0),
  };
}

/** Brush of an overview chart: called with the selected window (ms), or null when cleared. */
export type BrushHandler = (windowMs: [number, number] | null) => void;

/**
 * Renders the model (browser only). With `brush`, a horizontal brush over the plot reports the
 * selected window in ms (`initial` pre-selects one); double-click clears it. Lines carry class
 * `series-line`.
 */
export function renderTimeSeriesChart(m: TimeSeriesModel, brush?: { onBrush: BrushHandler; initial?: readonly [number, number] | null }): SVGSVGElement {
  const svg = createChartSvg(m.size, 'time-chart', m.title);
  svg.attr('data-x-domain', m.x.domain().map((v) => Math.round(v)).join(','));
  const clip = clipToArea(svg, m.area, uniqueId('clip'));
  const bands = svg.append('g').attr('class', 'bands').attr('clip-path', clip);
  for (const b of m.bands) {
    bands.append('rect').attr('class', 'fault-band').attr('x', b.x).attr('y', m.area.y).attr('width', b.width).attr('height', m.area.height).attr('fill', b.color).attr('fill-opacity', 0.14).append('title').text(b.label);
  }
  drawAxes(svg, { area: m.area, x: m.x, y: m.y, xLabel: m.xLabel, yLabel: m.yLabel, xTickValues: m.xTicks, yTicks: 4, xTickFormat: timeTickFormat(m.unit), yTickFormat: m.yFormat, grid: true });
  const g = svg.append('g').attr('class', 'lines').attr('clip-path', clip);
  for (const l of m.lines) {
    if (l.d === '') continue;
    g.append('path')
      .attr('class', 'series-line')
      .attr('data-series', l.id)
      .attr('d', l.d)
      .attr('fill', 'none')
      .attr('stroke', l.color)
      .attr('stroke-width', 1.6)
      .attr('stroke-dasharray', l.dashed ? '4 3' : null)
      .append('title')
      .text(l.label);
  }
  if (m.empty) drawEmpty(svg, m.area, 'no samples in this window');
  drawLegend(svg, m.legend, m.area.x, DEFAULT_MARGIN.top + 8, m.area.width);
  if (brush) {
    const b = brushX<undefined>().extent([
      [m.area.x, m.area.y],
      [m.area.x + m.area.width, m.area.y + m.area.height],
    ]);
    const gb = svg.append('g').attr('class', 'brush');
    gb.call(b);
    if (brush.initial) gb.call(b.move, [m.x(brush.initial[0]), m.x(brush.initial[1])]);
    // Listen after the initial move, so pre-selecting does not report a change.
    b.on('end', (event: { selection: [number, number] | null; sourceEvent?: unknown }) => {
      if (!event.sourceEvent) return; // programmatic move
      const sel = event.selection;
      if (!sel) {
        brush.onBrush(null);
        return;
      }
      const [a, z] = sel.map((px) => m.x.invert(px)) as [number, number];
      if (z - a >= 1) brush.onBrush([a, z]);
    });
    gb.on('dblclick', () => brush.onBrush(null));
  }
  return svg.node()!;
}
