/**
 * Discrete states over time, one row per endpoint: breaker state bands (closed / half-open /
 * open) and, in the same rows, fault windows as hatched overlays. Shares the timeline's x
 * domain.
 */
import { scaleBand, scaleLinear, type ScaleBand, type ScaleLinear } from 'd3';
import { clipToArea, createChartSvg, DEFAULT_MARGIN, drawAxes, drawLegend, legendHeight, plotArea, uniqueId, unitTicks, type LegendItem, type Margin, type PlotArea, type Size } from './chart-kit.ts';
import { timeAxisLabel, timeTickFormat, timeUnitFor, type TimeUnit } from './time-axis.ts';

/** A state interval of one row. */
export interface BandInput {
  row: string;
  fromMs: number;
  toMs: number;
  /** State name (legend entry); colour comes from `colors`. */
  state: string;
}

/** Input of {@link stateBandsModel}. */
export interface StateBandsInput {
  title: string;
  rows: readonly string[];
  bands: readonly BandInput[];
  /** Overlays (fault windows) drawn over the rows' bands. */
  overlays?: readonly BandInput[];
  xDomain: readonly [number, number];
  /** Colour of each state / overlay kind, in legend order. */
  colors: Readonly<Record<string, string>>;
  size: Size;
  /** Row label shortener (e.g. strip the model prefix). */
  rowLabel?: (row: string) => string;
}

/** A band in chart coordinates. */
export interface BandMark {
  row: string;
  state: string;
  x: number;
  y: number;
  width: number;
  height: number;
  color: string;
  overlay: boolean;
}

/** Computed chart. */
export interface StateBandsModel {
  title: string;
  size: Size;
  margin: Margin;
  area: PlotArea;
  x: ScaleLinear<number, number>;
  y: ScaleBand<string>;
  unit: TimeUnit;
  /** x tick positions, ms. */
  xTicks: number[];
  marks: BandMark[];
  legend: LegendItem[];
  xLabel: string;
  rowLabel: (row: string) => string;
}

/**
 * Scales and rectangles: bands clipped to the window; states with no colour are grey.
 * @throws RangeError for an empty or reversed window or a size too small to plot.
 */
export function stateBandsModel(input: StateBandsInput): StateBandsModel {
  const [from, to] = input.xDomain;
  if (!(Number.isFinite(from) && Number.isFinite(to) && to > from)) throw new RangeError(`time window [${from}, ${to}] is empty or reversed`);
  const legend: LegendItem[] = Object.entries(input.colors).map(([label, color]) => ({ label: label.replace(/_/g, '-'), color, kind: 'swatch' }));
  const margin = { ...DEFAULT_MARGIN, left: 110, top: DEFAULT_MARGIN.top + legendHeight(legend, input.size.width - 110 - DEFAULT_MARGIN.right) };
  const area = plotArea(input.size, margin);
  const x = scaleLinear().domain([from, to]).range([area.x, area.x + area.width]);
  const y = scaleBand<string>().domain(input.rows).range([area.y, area.y + area.height]).padding(0.25);
  const mark = (b: BandInput, overlay: boolean): BandMark | null => {
    const yy = y(b.row);
    if (yy === undefined || b.toMs <= from || b.fromMs >= to) return null;
    const x0 = x(Math.max(b.fromMs, from));
    const x1 = x(Math.min(b.toMs, to));
    const h = y.bandwidth();
    return { row: b.row, state: b.state, x: x0, width: Math.max(1, x1 - x0), y: overlay ? yy + h * 0.55 : yy, height: overlay ? h * 0.45 : h, color: input.colors[b.state] ?? '#999999', overlay };
  };
  const marks = [...input.bands.map((b) => mark(b, false)), ...(input.overlays ?? []).map((b) => mark(b, true))].filter((m): m is BandMark => m !== null);
  const unit = timeUnitFor(to - from);
  return { title: input.title, size: input.size, margin, area, x, y, unit, xTicks: unitTicks([from, to], unit.ms, 8), marks, legend, xLabel: timeAxisLabel(unit), rowLabel: input.rowLabel ?? ((r) => r) };
}

/** Renders the model (browser only). Bands carry class `state-band` (`fault-overlay` for overlays). */
export function renderStateBands(m: StateBandsModel): SVGSVGElement {
  const svg = createChartSvg(m.size, 'bands-chart', m.title);
  svg.attr('data-x-domain', m.x.domain().map((v) => Math.round(v)).join(','));
  drawAxes(svg, { area: m.area, x: m.x, y: m.y, xLabel: m.xLabel, yLabel: '', xTickValues: m.xTicks, xTickFormat: timeTickFormat(m.unit), yTickFormat: m.rowLabel });
  const clip = clipToArea(svg, m.area, uniqueId('clip'));
  const g = svg.append('g').attr('class', 'bands').attr('clip-path', clip);
  for (const b of m.marks) {
    g.append('rect')
      .attr('class', b.overlay ? 'fault-overlay' : 'state-band')
      .attr('data-state', b.state)
      .attr('x', b.x)
      .attr('y', b.y)
      .attr('width', b.width)
      .attr('height', b.height)
      .attr('fill', b.color)
      .attr('fill-opacity', b.overlay ? 0.75 : 1)
      .append('title')
      .text(`${m.rowLabel(b.row)}: ${b.state.replace(/_/g, '-')}`);
  }
  drawLegend(svg, m.legend, m.area.x, DEFAULT_MARGIN.top + 8, m.area.width);
  return svg.node()!;
}
