// The pure half of every dashboard chart, on small fixed data: scales, domains and marks.
// No DOM: the render half runs only in the browser test.
import { interpolateViridis } from 'd3';
import { describe, expect, it } from 'vitest';
import { attemptsModel } from '../../notebooks-web/app/charts/attempts-chart.ts';
import { cdfChartModel } from '../../notebooks-web/app/charts/cdf-chart.ts';
import { compactTick, legendLayout, plotArea, unitTicks } from '../../notebooks-web/app/charts/chart-kit.ts';
import { groupedBarModel } from '../../notebooks-web/app/charts/grouped-bar-chart.ts';
import { heatmapModel, NO_VALUE_FILL } from '../../notebooks-web/app/charts/heatmap-chart.ts';
import { paretoFront } from '../../notebooks-web/app/charts/pareto.ts';
import { paretoScatterModel } from '../../notebooks-web/app/charts/pareto-scatter-chart.ts';
import { stateBandsModel } from '../../notebooks-web/app/charts/state-bands-chart.ts';
import { timeTickFormat, timeUnitFor } from '../../notebooks-web/app/charts/time-axis.ts';
import { timeSeriesModel, windowPoints } from '../../notebooks-web/app/charts/time-series-chart.ts';

const size = { width: 500, height: 300 };

describe('chart kit', () => {
  it('plot area is the size minus margins; too small a size is an error', () => {
    expect(plotArea(size, { top: 10, right: 20, bottom: 30, left: 40 })).toEqual({ x: 40, y: 10, width: 440, height: 260 });
    expect(() => plotArea({ width: 50, height: 50 })).toThrow(RangeError);
  });

  it('legends wrap at the width', () => {
    const items = Array.from({ length: 6 }, (_, i) => ({ label: `run-number-${i}`, color: '#000', kind: 'line' as const }));
    const rows = new Set(legendLayout(items, 300).map((l) => l.y));
    expect(rows.size).toBeGreaterThan(1);
    expect(legendLayout(items, 300).every((l) => l.x < 300)).toBe(true);
  });

  it('unit ticks fall on round numbers of the unit; compact ticks stay short', () => {
    const ticks = unitTicks([0, 3 * 3_600_000], 60_000, 8);
    expect(ticks.length).toBeGreaterThan(3);
    expect(ticks.every((t) => t % (10 * 60_000) === 0)).toBe(true);
    expect(compactTick(1500)).toBe('1,500');
    expect(compactTick(0.25)).toBe('0.25');
    expect(compactTick(25_000_000)).toBe('25M');
  });
});

describe('cdfChartModel', () => {
  const series = [
    { id: 'a', label: 'a', color: '#111', points: [[0, 0], [120, 0.5], [900, 0.9], [4500, 1]] as [number, number][] },
    { id: 'b', label: 'b', color: '#222', points: [[200, 0], [300, 0.5], [2000, 1]] as [number, number][] },
    { id: 'c', label: 'c', color: '#333', points: [] as [number, number][] },
  ];
  const m = cdfChartModel({ title: 't', series, xLabel: 'TTFT (ms, log scale)', size });

  it('log x over the positive values, niced to powers of ten; y is probability', () => {
    expect(m.x.domain()).toEqual([100, 10_000]);
    expect(m.x.base()).toBe(10);
    expect(m.y.domain()).toEqual([0, 1]);
    expect(m.y(0)).toBe(m.area.y + m.area.height);
    expect(m.y(1)).toBe(m.area.y);
  });

  it('one line per series; zero values dropped (log axis); an empty series draws nothing', () => {
    expect(m.lines.map((l) => l.id)).toEqual(['a', 'b', 'c']);
    expect(m.lines.map((l) => l.points)).toEqual([3, 3, 0]);
    expect(m.lines[2]!.d).toBe('');
    expect(m.lines[0]!.d).toMatch(/^M/);
    expect(m.legend).toHaveLength(3);
    expect(m.guides.map((g) => g.label)).toEqual(['p50', 'p90', 'p99']);
    expect(m.empty).toBe(false);
  });

  it('no data: a default domain and the empty flag; one distinct value is widened', () => {
    const e = cdfChartModel({ title: 't', series: [series[2]!], xLabel: 'x', size });
    expect(e.empty).toBe(true);
    expect(e.x.domain()).toEqual([1, 10]);
    const one = cdfChartModel({ title: 't', series: [{ ...series[0]!, points: [[50, 0], [50, 1]] }], xLabel: 'x', size });
    expect(one.x.domain()[0]).toBeLessThan(50);
    expect(one.x.domain()[1]).toBeGreaterThan(50);
  });
});

describe('groupedBarModel', () => {
  const input = {
    title: 't',
    groups: ['p50', 'p90', 'p99'],
    series: [
      { id: 'fixed', label: 'fixed', color: '#111' },
      { id: 'p2c', label: 'p2c', color: '#222' },
    ],
    data: [
      { group: 'p50', series: 'fixed', value: 100 },
      { group: 'p90', series: 'fixed', value: 300 },
      { group: 'p99', series: 'fixed', value: 900 },
      { group: 'p50', series: 'p2c', value: 80, lo: 60, hi: 95 },
      { group: 'p90', series: 'p2c', value: null },
      { group: 'p99', series: 'p2c', value: 700, lo: 650, hi: 1040 },
    ],
    xLabel: 'percentile',
    yLabel: 'TTFT (ms)',
    size,
  };
  const m = groupedBarModel(input);

  it('one bar per non-null value, one whisker per complete interval', () => {
    expect(m.bars).toHaveLength(5);
    expect(m.whiskers).toHaveLength(2);
    expect(m.whiskers.map((w) => [w.lo, w.hi])).toEqual([
      [60, 95],
      [650, 1040],
    ]);
    expect(m.empty).toBe(false);
  });

  it('value domain starts at 0 and covers the highest interval end', () => {
    expect(m.y.domain()[0]).toBe(0);
    expect(m.y.domain()[1]).toBeGreaterThanOrEqual(1040);
    expect(m.x0.domain()).toEqual(['p50', 'p90', 'p99']);
    expect(m.x1.domain()).toEqual(['fixed', 'p2c']);
  });

  it('bars sit inside their group band, rise from 0 and have the value as height', () => {
    for (const b of m.bars) {
      const g0 = m.x0(b.group)!;
      expect(b.x).toBeGreaterThanOrEqual(g0);
      expect(b.x + b.width).toBeLessThanOrEqual(g0 + m.x0.bandwidth() + 1e-9);
      expect(b.y + b.height).toBeCloseTo(m.y(0));
      expect(b.height).toBeCloseTo(m.y(0) - m.y(b.value));
    }
    const fixed = m.bars.filter((b) => b.series === 'fixed');
    expect(fixed.every((b) => b.color === '#111')).toBe(true);
  });

  it('a fixed domain (rates) clamps interval ends; no data is flagged', () => {
    const r = groupedBarModel({ ...input, groups: ['goodput'], data: [{ group: 'goodput', series: 'p2c', value: 0.95, lo: 0.85, hi: 1.02 }], yDomain: [0, 1] });
    expect(r.y.domain()).toEqual([0, 1]);
    expect(r.whiskers[0]!.y2).toBe(r.y(1));
    expect(groupedBarModel({ ...input, data: [] }).empty).toBe(true);
  });
});

describe('paretoFront / paretoScatterModel', () => {
  it('keeps the points no other beats on both axes, by ascending x', () => {
    const pts = [
      { x: 1, y: 10 }, // front
      { x: 2, y: 5 }, // front
      { x: 3, y: 6 }, // dominated by (2,5)
      { x: 4, y: 1 }, // front
      { x: 2, y: 5 }, // duplicate of a front point: kept
      { x: null, y: 0 }, // unknown cost: never on the front
      { x: 5, y: 1 }, // dominated by (4,1)
    ];
    expect(paretoFront(pts)).toEqual([0, 1, 4, 3]);
    expect(paretoFront([])).toEqual([]);
  });

  it('marks front dots and draws the front through them', () => {
    const m = paretoScatterModel({
      title: 't',
      points: [
        { id: 'a', label: 'a', color: '#1', x: 1, y: 300 },
        { id: 'b', label: 'b', color: '#2', x: 2, y: 100 },
        { id: 'c', label: 'c', color: '#3', x: 3, y: 200 },
        { id: 'd', label: 'd', color: '#4', x: null, y: 50 },
      ],
      xLabel: 'cost (USD / 1k requests)',
      yLabel: 'E2E p90 (ms)',
      size,
    });
    expect(m.dots.map((d) => [d.id, d.onFront])).toEqual([
      ['a', true],
      ['b', true],
      ['c', false],
    ]);
    expect(m.frontIds).toEqual(['a', 'b']);
    expect(m.frontPath).toMatch(/^M/);
    expect(m.x.domain()[0]).toBe(0);
    expect(m.y.domain()[0]).toBe(0);
  });

  it('all-zero costs still give the x axis a width', () => {
    const m = paretoScatterModel({ title: 't', points: [{ id: 'a', label: 'a', color: '#1', x: 0, y: 5 }], xLabel: 'x', yLabel: 'y', size });
    expect(m.x.domain()).toEqual([0, 1]);
    expect(m.frontIds).toEqual(['a']);
    expect(m.frontPath).toBe('');
  });
});

describe('time axes and time series', () => {
  it('units by window length', () => {
    expect(timeUnitFor(60_000).name).toBe('s');
    expect(timeUnitFor(30 * 60_000).name).toBe('min');
    expect(timeUnitFor(6 * 3_600_000).name).toBe('h');
    expect(timeTickFormat(timeUnitFor(30 * 60_000))(90_000)).toBe('1.5');
  });

  it('windowPoints keeps one neighbour beyond each edge', () => {
    const pts = [0, 1, 2, 3, 4, 5].map((t) => [t * 1000, t] as const);
    expect(windowPoints(pts, 1500, 3500).map((p) => p[0])).toEqual([1000, 2000, 3000, 4000]);
    expect(windowPoints(pts, 10_000, 20_000).map((p) => p[0])).toEqual([5000]);
  });

  const series = [
    { id: 'r0', label: 'replica-0', color: '#1', points: [0, 1, 2, 3, 4, 5, 6].map((t) => [t * 1000, t * 2] as const) },
    { id: 'r1', label: 'replica-1', color: '#2', points: [] },
  ];

  it('x domain is the window; y covers the visible maximum; bands are clipped', () => {
    const m = timeSeriesModel({
      title: 't',
      series,
      xDomain: [1000, 4000],
      yLabel: 'waiting requests',
      size,
      bands: [
        { fromMs: 500, toMs: 2000, label: 'fault', color: '#f0f' },
        { fromMs: 5000, toMs: 6000, label: 'outside', color: '#f0f' },
      ],
    });
    expect(m.x.domain()).toEqual([1000, 4000]);
    expect(m.y.domain()).toEqual([0, 8]);
    expect(m.lines.map((l) => l.points)).toEqual([6, 0]); // 4 inside + a neighbour each side
    expect(m.bands).toHaveLength(1);
    expect(m.bands[0]!.x).toBe(m.area.x);
    expect(m.bands[0]!.width).toBeCloseTo(m.x(2000) - m.x(1000));
    expect(m.xLabel).toBe('virtual time since run start (s)');
    expect(m.xTicks).toEqual([1000, 1500, 2000, 2500, 3000, 3500, 4000]); // round seconds, not round ms
  });

  it('a fixed y domain is kept (KV usage 0..1); an empty window is an error', () => {
    const m = timeSeriesModel({ title: 't', series, xDomain: [0, 6000], yLabel: 'KV (%)', size, yDomain: [0, 1] });
    expect(m.y.domain()).toEqual([0, 1]);
    expect(() => timeSeriesModel({ title: 't', series, xDomain: [5, 5], yLabel: 'y', size })).toThrow(RangeError);
    expect(timeSeriesModel({ title: 't', series: [series[1]!], xDomain: [0, 1], yLabel: 'y', size }).empty).toBe(true);
  });
});

describe('stateBandsModel', () => {
  it('one row per endpoint; bands clipped to the window; overlays in the lower part of the row', () => {
    const m = stateBandsModel({
      title: 't',
      rows: ['m:replica-0', 'm:replica-1'],
      bands: [
        { row: 'm:replica-0', fromMs: 0, toMs: 10_000, state: 'closed' },
        { row: 'm:replica-1', fromMs: 0, toMs: 4000, state: 'closed' },
        { row: 'm:replica-1', fromMs: 4000, toMs: 6000, state: 'open' },
        { row: 'm:replica-1', fromMs: 6000, toMs: 10_000, state: 'weird' },
        { row: 'm:replica-9', fromMs: 0, toMs: 10_000, state: 'closed' },
      ],
      overlays: [{ row: 'm:replica-1', fromMs: 3000, toMs: 5000, state: 'fault' }],
      xDomain: [2000, 8000],
      colors: { closed: '#0f0', open: '#f00', fault: '#f0f' },
      size,
    });
    expect(m.y.domain()).toEqual(['m:replica-0', 'm:replica-1']);
    expect(m.marks.filter((k) => !k.overlay)).toHaveLength(4);
    const open = m.marks.find((k) => k.state === 'open')!;
    expect(open.x).toBeCloseTo(m.x(4000));
    expect(open.width).toBeCloseTo(m.x(6000) - m.x(4000));
    expect(m.marks.find((k) => k.state === 'weird')!.color).toBe('#999999');
    const first = m.marks.find((k) => k.row === 'm:replica-0')!;
    expect(first.x).toBe(m.area.x);
    const overlay = m.marks.find((k) => k.overlay)!;
    expect(overlay.y).toBeGreaterThan(m.y('m:replica-1')!);
    expect(m.legend.map((l) => l.label)).toEqual(['closed', 'open', 'fault']);
  });
});

describe('heatmapModel', () => {
  const input = {
    title: 't',
    xKey: 'wait_s',
    yKey: 'queue_limit',
    xValues: ['0.5', '1', '2'],
    yValues: ['4', '8'],
    cells: [
      { x: '0.5', y: '4', value: 0.9, runId: 'a', n: 1 },
      { x: '1', y: '4', value: 0.6, runId: 'b', n: 1 },
      { x: '2', y: '4', value: 0.3, runId: 'c', n: 2 },
      { x: '0.5', y: '8', value: null, runId: 'd', n: 1 },
      { x: '9', y: '8', value: 0.5, runId: 'e', n: 1 },
    ],
    metricLabel: 'goodput (%)',
    higherIsBetter: true,
    format: (v: number) => `${Math.round(v * 100)} %`,
    size: { width: 600, height: 320 },
  };

  it('one cell per known (x, y); y runs bottom-up; the best value is the bright end', () => {
    const m = heatmapModel(input);
    expect(m.cells).toHaveLength(4);
    expect(m.x.domain()).toEqual(['0.5', '1', '2']);
    expect(m.y('4')!).toBeGreaterThan(m.y('8')!);
    const best = m.cells.find((c) => c.runId === 'a')!;
    expect(best.fill).toBe(interpolateViridis(1));
    expect(best.textColor).toBe('#111111');
    expect(m.cells.find((c) => c.runId === 'c')!.fill).toBe(interpolateViridis(0));
    expect(m.cells.find((c) => c.runId === 'd')!.fill).toBe(NO_VALUE_FILL);
    expect(m.colorDomain).toEqual([0.3, 0.9]);
  });

  it('lower-is-better metrics flip the ramp; a single value still has a ramp', () => {
    const m = heatmapModel({ ...input, higherIsBetter: false });
    expect(m.cells.find((c) => c.runId === 'c')!.fill).toBe(interpolateViridis(1));
    const one = heatmapModel({ ...input, cells: [input.cells[0]!] });
    expect(one.colorDomain[0]).toBeLessThan(one.colorDomain[1]);
  });
});

describe('attemptsModel', () => {
  it('one bar per attempt, relative to arrival, in a unit that suits the span', () => {
    const m = attemptsModel({
      title: 't',
      attempts: [
        { attemptId: 1, endpointId: 'm:replica-0', startMs: 10_000, endMs: 10_040, outcome: 'http_status', status: 503 },
        { attemptId: 2, endpointId: 'm:replica-1', startMs: 10_040, endMs: 13_000, outcome: 'ok', status: null },
      ],
      arrivalMs: 10_000,
      ttftMs: 800,
      e2eMs: 3000,
      colorOf: (o) => (o === 'ok' ? 'green' : 'red'),
      size: { width: 700, height: 200 },
    });
    expect(m.bars).toHaveLength(2);
    expect(m.x.domain()).toEqual([0, 3000]);
    expect(m.unit.name).toBe('s');
    expect(m.xLabel).toBe('time since arrival (s)');
    expect(m.bars[0]!.x).toBe(m.x(0));
    expect(m.bars[1]!.startMs).toBe(40);
    expect(m.bars.map((b) => b.color)).toEqual(['red', 'green']);
    expect(m.firstTokenX).toBeCloseTo(m.x(800));
    expect(m.y.domain()).toEqual(['#1 m:replica-0', '#2 m:replica-1']);
  });
});

describe('legends of many series', () => {
  it('are cut to a "+N more" entry so the plot keeps its room', () => {
    const series = Array.from({ length: 60 }, (_, i) => ({ id: `run-${i}`, label: `a-long-run-label-${i}`, color: '#123', points: [[10, 0], [20, 1]] as [number, number][] }));
    const m = cdfChartModel({ title: 't', series, xLabel: 'x', size: { width: 420, height: 290 } });
    expect(m.lines).toHaveLength(60);
    expect(m.legend.length).toBeLessThan(60);
    expect(m.legend.at(-1)!.label).toMatch(/^\+\d+ more$/);
    expect(m.area.height).toBeGreaterThan(290 * 0.4);
  });
});
