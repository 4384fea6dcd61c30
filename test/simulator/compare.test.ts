// Paired comparisons: the bootstrap interval, the pairing by (pair key, seed), significance and
// its direction, the `comparisons` table and the `switchyard compare` command.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createRng } from '../../core/rng.ts';
import { UsageError } from '../../bin/command.ts';
import { bootstrapMean } from '../../simulator/compare/bootstrap.ts';
import { pairedComparisons, type RunRecord } from '../../simulator/compare/paired-comparison.ts';
import { compareCommand, runCompare } from '../../simulator/compare-command.ts';
import { ResultsStore } from '../../simulator/results/results-store.ts';
import type { RequestRow } from '../../simulator/results/result-rows.ts';

const dir = mkdtempSync(join(tmpdir(), 'switchyard-compare-'));

describe('bootstrapMean', () => {
  it('gives the mean, an interval inside [min, max], no interval for one value, and repeats by seed', () => {
    fc.assert(
      fc.property(fc.array(fc.double({ min: -1e6, max: 1e6, noNaN: true }), { minLength: 2, maxLength: 12 }), fc.integer(), (xs, seed) => {
        const r = bootstrapMean(xs, createRng(seed), 300, 0.95);
        expect(r.mean).toBeCloseTo(xs.reduce((s, v) => s + v, 0) / xs.length, 6);
        expect(r.low!).toBeGreaterThanOrEqual(Math.min(...xs) - 1e-6);
        expect(r.high!).toBeLessThanOrEqual(Math.max(...xs) + 1e-6);
        expect(r.low!).toBeLessThanOrEqual(r.high!);
        expect(bootstrapMean(xs, createRng(seed), 300, 0.95)).toEqual(r);
      }),
      { numRuns: 50 },
    );
    expect(bootstrapMean([3, 3, 3], createRng(1), 100, 0.95)).toEqual({ mean: 3, low: 3, high: 3 });
    expect(bootstrapMean([5], createRng(1), 100, 0.95)).toEqual({ mean: 5, low: null, high: null });
    expect(() => bootstrapMean([], createRng(1), 100, 0.95)).toThrow(RangeError);
  });

  it('covers the true mean about 95 % of the time (normal data, n = 10)', () => {
    const rng = createRng(99);
    let covered = 0;
    const trials = 300;
    for (let t = 0; t < trials; t++) {
      const xs = Array.from({ length: 10 }, () => Math.sqrt(-2 * Math.log(1 - rng.float())) * Math.cos(2 * Math.PI * rng.float()));
      const r = bootstrapMean(xs, rng, 400, 0.95);
      if (r.low! <= 0 && 0 <= r.high!) covered++;
    }
    // The percentile bootstrap under-covers a little at n = 10 (≈ 91-93 %).
    expect(covered / trials).toBeGreaterThan(0.86);
    expect(covered / trials).toBeLessThan(0.99);
  });
});

const rec = (label: string, seed: number, values: Record<string, number | null>, pairKey = ''): RunRecord => ({
  runId: `${label}-${pairKey}-seed${seed}`,
  experimentId: 'e',
  label,
  pairKey,
  seed,
  values,
});

describe('pairedComparisons', () => {
  const records = [1, 2, 3, 4, 5].flatMap((s) => [
    rec('fixed', s, { ttft_p50_ms: 1000 + 100 * s, goodput: 0.9, success_rate: 0.99 + s / 1000 }),
    rec('rr', s, { ttft_p50_ms: 950 + 100 * s + (s % 2), goodput: 0.9, success_rate: 0.99 }),
    rec('fixed', s, { ttft_p50_ms: 10 }, 'scenario=outage'),
  ]);
  records.push(rec('rr', 1, { ttft_p50_ms: 12 }, 'scenario=outage'));
  const rows = pairedComparisons(records, { baseline: 'fixed', metrics: ['ttft_p50_ms', 'goodput', 'success_rate'], resamples: 2000, confidence: 0.95, seed: 1 });

  it('pairs by pair key and seed and marks significant differences with their direction', () => {
    const get = (metric: string, pairKey = '') => rows.find((r) => r.metric === metric && r.pairKey === pairKey)!;
    const ttft = get('ttft_p50_ms');
    expect(ttft).toMatchObject({ baseline: 'fixed', candidate: 'rr', seeds: 5, baselineMean: 1300, significant: true, candidateBetter: true, better: 'lower' });
    expect(ttft.diffMean).toBeCloseTo(-49.4, 9); // −50 + mean(1,0,1,0,1)
    expect(ttft.ciLow!).toBeGreaterThanOrEqual(-50);
    expect(ttft.ciHigh!).toBeLessThanOrEqual(-49);
    expect(get('goodput')).toMatchObject({ diffMean: 0, ciLow: 0, ciHigh: 0, significant: false, candidateBetter: false });
    const success = get('success_rate');
    expect(success.significant).toBe(true);
    expect(success.candidateBetter).toBe(false); // lower success is worse
    // One paired seed: a difference but no interval.
    expect(get('ttft_p50_ms', 'scenario=outage')).toMatchObject({ seeds: 1, diffMean: 2, ciLow: null, ciHigh: null, significant: false });
    // Metrics missing on one side are not compared.
    expect(rows.filter((r) => r.pairKey === 'scenario=outage').map((r) => r.metric)).toEqual(['ttft_p50_ms']);
  });

  it('names the labels when the baseline is unknown', () => {
    expect(() => pairedComparisons(records, { baseline: 'nope', metrics: ['goodput'], resamples: 100, confidence: 0.95, seed: 1 })).toThrow(/no runs labelled 'nope'; labels are fixed, rr/);
  });
});

describe('switchyard compare', () => {
  it('reads runs and summaries from a results database, prints the comparison and stores it', async () => {
    const db = join(dir, 'c.duckdb');
    const store = await ResultsStore.open(db, { overwrite: true });
    await store.addExperiment({ experimentId: 'e1', name: 'x', tracePath: 't', traceSource: 's', startedAt: '2025-01-01T00:00:00Z', configJson: '{}', seed: 3 });
    for (const seed of [1, 2, 3]) {
      for (const [label, ttft] of [['fixed', 500], ['round_robin', 400]] as const) {
        const runId = `${label}-seed${seed}`;
        await store.addRun({ runId, experimentId: 'e1', strategy: label, paramsJson: '{}', seed, nodeVersion: 'v20', gitRevision: 'x', wallSeconds: 1, label, pairKey: '' });
        const req = (i: number): RequestRow => ({
          runId, requestId: String(i), sessionId: null, callerId: null, arrivalMs: i, endpointId: 'm:a', queueWaitMs: null,
          ttftMs: ttft + i + seed, tpotMs: 10, e2eMs: 2000, inputTokens: 10, outputTokens: 10, cachedTokens: 0,
          status: 'ok', costUsd: 0.001, fallbacks: 0, offloadReason: null, stream: true, tries: 1, gatewayReplica: 0,
        });
        await store.appendRequests([req(0), req(1), req(2)]);
        await store.computeSummary(runId, label, { sloTtftMs: 1000, sloTpotMs: 100, durationMs: 1000 });
      }
    }
    await store.close();
    const out: string[] = [];
    await runCompare(db, { baseline: 'fixed-seed1', metrics: ['ttft_p50_ms', 'goodput'], resamples: 500, print: (l) => out.push(l) });
    const text = out.join('\n');
    expect(text).toMatch(/round_robin vs fixed, 3 seeds/);
    expect(text).toMatch(/ttft_p50_ms\s+503\s+403\s+-100\s+-19\.9%\s+\[-100, -100\]\s+\* better/);
    expect(text).toMatch(/stored in .*c\.duckdb: table comparisons \(2 rows for ttft_p50_ms, goodput\)/);
    const again = await ResultsStore.open(db);
    const rows = await again.query<{ metric: string; significant: boolean; seeds: number }>('select metric, significant, seeds from comparisons order by metric');
    await again.close();
    expect(rows).toEqual([
      { metric: 'goodput', significant: false, seeds: 3 },
      { metric: 'ttft_p50_ms', significant: true, seeds: 3 },
    ]);
    // A later compare of other metrics keeps these rows (merge); the message counts what is stored.
    const more: string[] = [];
    await runCompare(db, { baseline: 'fixed', metrics: ['ttft_p99_ms'], resamples: 500, print: (l) => more.push(l) });
    expect(more.join('\n')).toMatch(/stored in .*c\.duckdb: table comparisons \(1 row for ttft_p99_ms; 2 other rows kept\)/);
    const merged = await ResultsStore.open(db);
    expect((await merged.query<{ metric: string }>('select metric from comparisons order by metric')).map((r) => r.metric)).toEqual(['goodput', 'ttft_p50_ms', 'ttft_p99_ms']);
    await merged.close();
    await expect(compareCommand.run([db])).rejects.toThrow(UsageError);
    await expect(compareCommand.run([db, '--baseline', 'fixed', '--metrics', 'bogus'])).rejects.toThrow(/unknown bogus; metrics are success_rate, goodput, /);
    // A near miss is named with the metric meant.
    await expect(compareCommand.run([db, '--baseline', 'fixed', '--metrics', 'ttft_p99,goodput'])).rejects.toThrow(/--metrics: unknown ttft_p99 \(did you mean ttft_p99_ms\?\); metrics are /);
    await expect(runCompare(join(dir, 'missing.duckdb'), { baseline: 'fixed' })).rejects.toThrow(/no such results database/);
  });
});
