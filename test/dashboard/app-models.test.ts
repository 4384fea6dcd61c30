// Pure parts of the dashboard app: URL state, sorting, CSV, number formats, sweep grids,
// comparison arms and intervals, breaker / fault intervals.
import { describe, expect, it } from 'vitest';
import type { ComparisonRow, RunInfo, RunMetrics } from '../../notebooks-web/shared/api-types.ts';
import { durationUnit, fmtInUnit, fmtMs, fmtPct, fmtUsd, fmtWeight } from '../../notebooks-web/app/format.ts';
import { groupArms, pairKeysOf } from '../../notebooks-web/app/model/arms.ts';
import { armInterval, chooseBaseline } from '../../notebooks-web/app/model/comparison-intervals.ts';
import { flattenParams, sweepGrid, sweepKeys } from '../../notebooks-web/app/model/sweep-grid.ts';
import { breakerIntervals, faultWindows } from '../../notebooks-web/app/model/timeline-intervals.ts';
import { formatRoute, parseRoute, parseSort } from '../../notebooks-web/app/route.ts';
import { csvField, toCsv } from '../../notebooks-web/app/ui/csv.ts';
import { sortRows } from '../../notebooks-web/app/ui/table-sort.ts';

describe('route (the view in the URL)', () => {
  it('parses and formats hash routes; equal views give equal URLs', () => {
    expect(parseRoute('')).toEqual({ page: 'experiments', params: {} });
    expect(parseRoute('#/timeline?run=a%20b&from=10&to=&db=x')).toEqual({ page: 'timeline', params: { run: 'a b', from: '10', db: 'x' } });
    expect(parseRoute('#/nope').page).toBeNull();
    const hash = formatRoute('sweep', { y: 'q', x: 'w', 'fix.label': 'p2c', gone: undefined, empty: '' });
    expect(hash).toBe('#/sweep?fix.label=p2c&x=w&y=q');
    expect(parseRoute(hash)).toEqual({ page: 'sweep', params: { 'fix.label': 'p2c', x: 'w', y: 'q' } });
  });

  it('sort state round-trips; malformed falls back', () => {
    expect(parseSort('runs:desc', null)).toEqual({ key: 'runs', dir: 'desc' });
    expect(parseSort('runs:sideways', { key: 'date', dir: 'asc' })).toEqual({ key: 'date', dir: 'asc' });
    expect(parseSort(undefined, null)).toBeNull();
  });
});

describe('sortRows', () => {
  const rows = [
    { id: 'run-10', v: 3 },
    { id: 'run-2', v: null },
    { id: 'run-1', v: 3 },
    { id: 'run-3', v: 1 },
  ];
  it('numbers numerically, nulls last both ways, ties keep order', () => {
    expect(sortRows(rows, (r) => r.v, 'asc').map((r) => r.id)).toEqual(['run-3', 'run-10', 'run-1', 'run-2']);
    expect(sortRows(rows, (r) => r.v, 'desc').map((r) => r.id)).toEqual(['run-10', 'run-1', 'run-3', 'run-2']);
  });
  it('strings in natural order', () => {
    expect(sortRows(rows, (r) => r.id, 'asc').map((r) => r.id)).toEqual(['run-1', 'run-2', 'run-3', 'run-10']);
  });
});

describe('CSV export', () => {
  it('quotes what needs quoting, keeps numbers, guards spreadsheet formulas', () => {
    expect(csvField('plain')).toBe('plain');
    expect(csvField('a,b')).toBe('"a,b"');
    expect(csvField('say "hi"')).toBe('"say ""hi"""');
    expect(csvField('=cmd()')).toBe(`"'=cmd()"`);
    expect(csvField(-5)).toBe('-5');
    expect(csvField(null)).toBe('');
    expect(csvField(Number.NaN)).toBe('');
    expect(toCsv(['a', 'b'], [[1, 'x\ny']])).toBe('a,b\r\n1,"x\ny"\r\n');
  });
});

describe('formats', () => {
  it('durations, percentages, money', () => {
    expect(fmtMs(0)).toBe('0 ms');
    expect(fmtMs(850)).toBe('850 ms');
    expect(fmtMs(1250)).toBe('1.25 s');
    expect(fmtMs(6_374_916)).toBe('1.77 h');
    expect(fmtMs(null)).toBe('–');
    expect(fmtPct(0.123)).toBe('12.3 %');
    expect(fmtPct(0.0002)).toBe('0.02 %');
    expect(fmtUsd(0)).toBe('$0');
    expect(fmtUsd(12.345)).toBe('$12.35');
    expect(fmtUsd(0.5)).toBe('$0.50');
    expect(fmtUsd(0.00123)).toBe('$0.00123');
  });
  it('axis units by magnitude', () => {
    expect(durationUnit(900).name).toBe('ms');
    expect(durationUnit(30_000).name).toBe('s');
    expect(durationUnit(600_000).name).toBe('min');
    expect(durationUnit(13_000_000).name).toBe('h');
    expect(fmtInUnit(durationUnit(13_000_000))(6_374_916)).toBe('1.77');
  });
});

const run = (runId: string, label: string, pairKey: string, params: Record<string, unknown> = {}, seed = 1): RunInfo => ({
  runId,
  strategy: label,
  label,
  pairKey,
  params,
  seed,
  gitRevision: 'x',
  wallSeconds: 1,
});

describe('sweeps', () => {
  const runs: RunInfo[] = [];
  for (const w of [0.5, 1, 2]) {
    for (const q of [4, 8]) {
      for (const seed of [1, 2]) {
        for (const label of ['fixed', 'p2c']) {
          runs.push(run(`${label}-${w}-${q}-${seed}`, label, `w=${w},q=${q}`, { label, strategy: label, router_params: { k: 1 }, seed, offload: { wait_s: w }, queue_limit: q }, seed));
        }
      }
    }
  }

  it('flattens nested params to dotted keys', () => {
    expect(flattenParams({ a: { b: { c: 1 } }, d: [1, 2], e: null })).toEqual({ 'a.b.c': 1, d: '[1,2]', e: null });
  });

  it('finds the swept keys: numeric first, seeds and aliases (strategy = label) left out', () => {
    const keys = sweepKeys(runs);
    expect(keys.map((k) => k.key)).toEqual(['offload.wait_s', 'queue_limit', 'label']);
    expect(keys[0]!.values).toEqual(['0.5', '1', '2']);
    expect(keys[2]!.numeric).toBe(false);
    expect(sweepKeys([run('a', 'fixed', ''), run('b', 'rr', '')]).map((k) => k.key)).toEqual(['strategy']);
  });

  it('grids two keys, holds the others, averages seeds', () => {
    const keys = sweepKeys(runs);
    const metric = (id: string) => (id.startsWith('p2c') ? 2 : 1) * Number(id.split('-')[1]) + (id.endsWith('-2') ? 0.5 : 0);
    const g = sweepGrid(runs, keys, metric, 'offload.wait_s', 'queue_limit', { label: 'p2c' });
    expect(g.xValues).toEqual(['0.5', '1', '2']);
    expect(g.yValues).toEqual(['4', '8']);
    expect(g.cells).toHaveLength(6);
    const c = g.cells.find((x) => x.x === '2' && x.y === '8')!;
    expect(c.runIds).toEqual(['p2c-2-8-1', 'p2c-2-8-2']);
    expect(c.value).toBeCloseTo((4 + 4.5) / 2);
    // Without holding the label, a cell averages both labels.
    expect(sweepGrid(runs, keys, metric, 'offload.wait_s', 'queue_limit').cells[0]!.runIds).toHaveLength(4);
  });
});

const metrics = (runId: string, v: number): RunMetrics => ({
  runId,
  strategy: 's',
  requests: 10,
  okRequests: 10,
  failureRate: 0,
  fallbackRate: v / 100,
  offloadRate: 0,
  costUsd: 0,
  costPer1kRequestsUsd: v,
  costSource: 'requests',
  goodput: v / 10,
  throughputRps: 1,
  ttft: { p50: v, p90: 2 * v, p99: 3 * v },
  tpot: { p50: null, p90: null, p99: null },
  e2e: { p50: v, p90: v, p99: v },
});

describe('comparison arms and intervals', () => {
  const runs = [run('f-a-1', 'fixed', 'a', {}, 1), run('p-a-1', 'p2c', 'a', {}, 1), run('f-a-2', 'fixed', 'a', {}, 2), run('p-a-2', 'p2c', 'a', {}, 2), run('f-b-1', 'fixed', 'b')];
  const ms = [metrics('f-a-1', 10), metrics('p-a-1', 6), metrics('f-a-2', 12), metrics('p-a-2', 8)];

  it('arms are labels within a pair group, with means over seeds', () => {
    expect(pairKeysOf(runs)).toEqual(['a', 'b']);
    const arms = groupArms(runs, ms, 'a');
    expect(arms.map((a) => [a.key, a.runIds])).toEqual([
      ['fixed', ['f-a-1', 'f-a-2']],
      ['p2c', ['p-a-1', 'p-a-2']],
    ]);
    expect(arms[0]!.metrics.ttft.p99).toBe(33);
    expect(arms[1]!.metrics.tpot.p50).toBeNull();
    // All pair groups at once: keys name the group; a run without metrics adds nothing.
    const all = groupArms(runs, ms, null);
    expect(all.map((a) => a.key)).toEqual(['fixed [a]', 'p2c [a]', 'fixed [b]']);
    expect(all[2]!.metrics.goodput).toBeNull();
  });

  const row = (over: Partial<ComparisonRow>): ComparisonRow => ({
    baseline: 'fixed',
    candidate: 'p2c',
    pairKey: 'a',
    metric: 'ttft_p99_ms',
    better: 'lower',
    seeds: 2,
    baselineMean: 33,
    candidateMean: 21,
    diffMean: -12,
    diffRel: null,
    ciLow: -15,
    ciHigh: -9,
    confidence: 0.95,
    significant: true,
    candidateBetter: true,
    ...over,
  });

  it('whisker = baseline mean + interval of the difference; none for the baseline or without an interval', () => {
    const rows = [row({}), row({ metric: 'ttft_p50_ms', ciLow: null, ciHigh: null }), row({ baseline: 'rr' })];
    expect(armInterval(rows, { label: 'p2c', pairKey: 'a' }, 'fixed', 'ttft_p99_ms', null)).toEqual({ lo: 18, hi: 24 });
    expect(armInterval(rows, { label: 'fixed', pairKey: 'a' }, 'fixed', 'ttft_p99_ms', null)).toBeNull();
    expect(armInterval(rows, { label: 'p2c', pairKey: 'a' }, 'fixed', 'ttft_p50_ms', 11)).toBeNull();
    expect(armInterval(rows, { label: 'p2c', pairKey: 'b' }, 'fixed', 'ttft_p99_ms', 11)).toBeNull();
    expect(armInterval([row({ baselineMean: null })], { label: 'p2c', pairKey: 'a' }, 'fixed', 'ttft_p99_ms', 30)).toEqual({ lo: 15, hi: 21 });
    expect(chooseBaseline(rows, undefined)).toBe('fixed');
    expect(chooseBaseline(rows, 'rr')).toBe('rr');
    expect(chooseBaseline(rows, 'unknown')).toBe('fixed');
    expect(chooseBaseline([], undefined)).toBeNull();
  });
});

describe('breaker and fault intervals', () => {
  it('breaker states hold from one transition to the next; endpoints without any stay closed', () => {
    const ev = [
      { atMs: 20, endpointId: 'r1', from: 'closed', to: 'open', reason: null },
      { atMs: 30, endpointId: 'r1', from: 'open', to: 'half_open', reason: null },
      { atMs: 30, endpointId: 'r1', from: 'half_open', to: 'open', reason: null },
      { atMs: 45, endpointId: 'r1', from: 'open', to: 'half_open', reason: null },
      { atMs: 46, endpointId: 'r1', from: 'half_open', to: 'closed', reason: null },
    ];
    expect(breakerIntervals(ev, ['r0', 'r1'], 0, 100)).toEqual([
      { row: 'r0', fromMs: 0, toMs: 100, state: 'closed' },
      { row: 'r1', fromMs: 0, toMs: 20, state: 'closed' },
      { row: 'r1', fromMs: 20, toMs: 30, state: 'open' },
      { row: 'r1', fromMs: 30, toMs: 45, state: 'open' },
      { row: 'r1', fromMs: 45, toMs: 46, state: 'half_open' },
      { row: 'r1', fromMs: 46, toMs: 100, state: 'closed' },
    ]);
  });

  it('fault edges pair up per endpoint; an open window lasts to the end', () => {
    const edges = [
      { atMs: 10, endpointId: 'a', phase: 'start' as const, status: 503 },
      { atMs: 15, endpointId: 'b', phase: 'end' as const, status: null },
      { atMs: 20, endpointId: 'a', phase: 'end' as const, status: 503 },
      { atMs: 30, endpointId: 'b', phase: 'start' as const, status: 429 },
    ];
    expect(faultWindows(edges, 100)).toEqual([
      { endpointId: 'a', fromMs: 10, toMs: 20, status: 503 },
      { endpointId: 'b', fromMs: 30, toMs: 100, status: 429 },
    ]);
  });
});

describe('fmtWeight', () => {
  it('rounds a route weight to three decimals without trailing zeros; a tiny positive one never reads 0', () => {
    expect([1, 0, 2.5, 1 / 3, 0.1 + 0.2, 1e-7, null].map(fmtWeight)).toEqual(['1', '0', '2.5', '0.333', '0.3', '<0.001', '–']);
  });
});
