/**
 * One request's attempts on a time line relative to its arrival: a bar per dispatch from its
 * start to its end, coloured by outcome, with the first token marked — where the time went
 * when a request fell back or was offloaded.
 */
import { scaleBand, scaleLinear, type ScaleBand, type ScaleLinear } from 'd3';
import type { AttemptInfo } from '../../shared/api-types.ts';
import { durationUnit, fmtInUnit, type DurationUnit } from '../format.ts';
import { createChartSvg, DEFAULT_MARGIN, drawAxes, drawEmpty, drawLegend, plotArea, unitTicks, type LegendItem, type Margin, type PlotArea, type Size } from './chart-kit.ts';

/** Input of {@link attemptsModel}. */
export interface AttemptsInput {
  title: string;
  attempts: readonly AttemptInfo[];
  arrivalMs: number;
  /** TTFT of the request, ms after arrival (null: no first token). */
  ttftMs: number | null;
  /** End-to-end latency, ms after arrival (null: never finished). */
  e2eMs: number | null;
  colorOf: (outcome: string) => string;
  size: Size;
}

/** A bar in chart coordinates. */
export interface AttemptMark {
  attemptId: number;
  row: string;
  x: number;
  y: number;
  width: number;
  height: number;
  color: string;
  outcome: string;
  startMs: number;
  endMs: number;
}

/** Computed chart. */
export interface AttemptsModel {
  title: string;
  size: Size;
  margin: Margin;
  area: PlotArea;
  x: ScaleLinear<number, number>;
  y: ScaleBand<string>;
  bars: AttemptMark[];
  /** Unit of the x labels (ms, s, min, h by the request's length). */
  unit: DurationUnit;
  /** x tick positions, ms since arrival. */
  xTicks: number[];
  /** x of the first token, when there was one. */
  firstTokenX: number | null;
  legend: LegendItem[];
  xLabel: string;
}

/**
 * Scales and bars: x is ms since arrival from 0 to the latest attempt end (or the e2e latency),
 * labelled in the unit that suits that span;
 * one row per attempt, labelled `#id endpoint`.
 * @throws RangeError for a size too small to plot.
 */
export function attemptsModel(input: AttemptsInput): AttemptsModel {
  const outcomes = [...new Set(input.attempts.map((a) => a.outcome))];
  const legend: LegendItem[] = [...outcomes.map((o) => ({ label: o, color: input.colorOf(o), kind: 'swatch' as const })), ...(input.ttftMs !== null ? [{ label: 'first token', color: '#111', kind: 'dash' as const }] : [])];
  const margin = { ...DEFAULT_MARGIN, left: 150, top: DEFAULT_MARGIN.top + 16 };
  const area = plotArea(input.size, margin);
  const rel = (t: number) => t - input.arrivalMs;
  const end = Math.max(1, input.e2eMs ?? 0, input.ttftMs ?? 0, ...input.attempts.map((a) => rel(a.endMs)));
  const unit = durationUnit(end);
  const x = scaleLinear().domain([0, end]).range([area.x, area.x + area.width]);
  const rowOf = (a: AttemptInfo) => `#${a.attemptId} ${a.endpointId}`;
  const y = scaleBand<string>().domain(input.attempts.map(rowOf)).range([area.y, area.y + area.height]).padding(0.3);
  const bars = input.attempts.map((a) => {
    const x0 = x(Math.max(0, rel(a.startMs)));
    const x1 = x(Math.max(0, rel(a.endMs)));
    return { attemptId: a.attemptId, row: rowOf(a), x: x0, y: y(rowOf(a))!, width: Math.max(1, x1 - x0), height: y.bandwidth(), color: input.colorOf(a.outcome), outcome: a.outcome, startMs: rel(a.startMs), endMs: rel(a.endMs) };
  });
  return { title: input.title, size: input.size, margin, area, x, y, unit, xTicks: unitTicks([0, end], unit.ms, 6), bars, firstTokenX: input.ttftMs !== null ? x(input.ttftMs) : null, legend, xLabel: `time since arrival (${unit.name})` };
}

/** Renders the model (browser only). Bars carry class `attempt-bar`. */
export function renderAttemptsChart(m: AttemptsModel): SVGSVGElement {
  const svg = createChartSvg(m.size, 'attempts-chart', m.title);
  drawAxes(svg, { area: m.area, x: m.x, y: m.y, xLabel: m.xLabel, yLabel: '', xTickValues: m.xTicks, xTickFormat: fmtInUnit(m.unit), grid: false });
  const g = svg.append('g').attr('class', 'bars');
  for (const b of m.bars) {
    g.append('rect')
      .attr('class', 'attempt-bar')
      .attr('data-attempt', b.attemptId)
      .attr('x', b.x)
      .attr('y', b.y)
      .attr('width', b.width)
      .attr('height', b.height)
      .attr('fill', b.color)
      .append('title')
      .text(`attempt ${b.attemptId}: ${b.outcome}, ${b.startMs.toFixed(0)}–${b.endMs.toFixed(0)} ms after arrival`);
  }
  if (m.firstTokenX !== null) {
    svg.append('line').attr('class', 'first-token').attr('x1', m.firstTokenX).attr('x2', m.firstTokenX).attr('y1', m.area.y).attr('y2', m.area.y + m.area.height).attr('stroke', '#111').attr('stroke-width', 1.5).attr('stroke-dasharray', '4 3');
  }
  if (m.bars.length === 0) drawEmpty(svg, m.area, 'no attempts recorded');
  drawLegend(svg, m.legend, m.area.x, DEFAULT_MARGIN.top + 8, m.area.width);
  return svg.node()!;
}
