import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  decodeBatchOfRow,
  linearStepTime,
  loadStepTimeProfile,
  prefillBatchOfRow,
} from '../../../simulator/engine/step-time.ts';
import {
  fitLinearStepTime,
  fitQuality,
  nonNegativeOls,
  ols,
  parseCsv,
} from '../../../simulator/engine/fit-step-time.ts';

/** The perf_model.csv rows of llama2-70b / h100-80gb / TP4, as committed beside the profile (profiles/SOURCE.txt). */
const CSV = join(import.meta.dirname, '../../../simulator/engine/profiles/source/perf_model.llama2-70b-h100-tp4.csv');

describe('llama2-70b-h100-tp4 profile', () => {
  const { model, profile } = loadStepTimeProfile('llama2-70b-h100-tp4');

  it('reproduces its rows within the stated R² and MAPE, prefill and decode separately', () => {
    const rows = profile.rows;
    expect(rows.length).toBe(profile.fit.rowsUsed);
    const pre = fitQuality(rows.map((r) => model.stepMs(prefillBatchOfRow(r))), rows.map((r) => r.promptTimeMs));
    const dec = fitQuality(rows.map((r) => model.stepMs(decodeBatchOfRow(r))), rows.map((r) => r.tokenTimeMs));
    expect(pre.mapePct).toBeLessThanOrEqual(profile.fit.prefill.mapePct + 1e-3);
    expect(dec.mapePct).toBeLessThanOrEqual(profile.fit.decode.mapePct + 1e-3);
    expect(pre.r2).toBeCloseTo(profile.fit.prefill.r2, 4);
    expect(dec.r2).toBeCloseTo(profile.fit.decode.r2, 4);
    // What the simulator relies on: decode steps and large prefill passes are accurate.
    expect(dec.mapePct).toBeLessThan(5);
    expect(pre.r2).toBeGreaterThan(0.99);
    for (const r of rows.filter((r) => r.batchSize * r.promptSize >= 4096)) {
      expect(Math.abs(model.stepMs(prefillBatchOfRow(r)) / r.promptTimeMs - 1)).toBeLessThan(0.08);
    }
  });

  it('refitting the stored rows gives the stored coefficients', () => {
    const fit = fitLinearStepTime(profile.rows);
    for (const [k, v] of Object.entries(profile.coefficients)) {
      expect(fit.coefficients[k as keyof typeof fit.coefficients]).toBeCloseTo(v, 4);
    }
    expect(fit.droppedFeatures).toEqual(profile.droppedFeatures);
  });

  it('stores exactly the CSV rows of llama2-70b / h100-80gb / TP4', () => {
    expect(existsSync(CSV)).toBe(true);
    const recs = parseCsv(readFileSync(CSV, 'utf8')).filter(
      (r) => r.model === 'llama2-70b' && r.hardware === 'h100-80gb' && r.tensor_parallel === '4',
    );
    expect(recs.map((r) => [+r.prompt_size!, +r.batch_size!, +r.token_size!, +r.prompt_time!, +r.token_time!])).toEqual(
      profile.rows.map((r) => [r.promptSize, r.batchSize, r.tokenSize, r.promptTimeMs, r.tokenTimeMs]),
    );
  });
});

describe('linearStepTime', () => {
  const c = { overheadMs: 10, prefillMsPerToken: 0.1, prefillAttnMsPerMPair: 2, decodeMsPerSeq: 0.5, decodeMsPerKTokCtx: 0.25 };
  it('evaluates the documented formula; an empty batch costs 0', () => {
    const m = linearStepTime(c);
    expect(m.stepMs({ prefillTokens: 0, prefillSeqs: 0, prefillAttnPairs: 0, decodeSeqs: 0, decodeContextTokens: 0 })).toBe(0);
    expect(
      m.stepMs({ prefillTokens: 1000, prefillSeqs: 1, prefillAttnPairs: 500_000, decodeSeqs: 4, decodeContextTokens: 8000 }),
    ).toBeCloseTo(10 + 100 + 1 + 2 + 2, 9);
  });
  it('rejects a negative coefficient, naming it', () => {
    expect(() => linearStepTime({ ...c, decodeMsPerSeq: -1 })).toThrow(/decodeMsPerSeq/);
  });
});

describe('loadStepTimeProfile errors', () => {
  const good = readFileSync(join(import.meta.dirname, '../../../simulator/engine/profiles/llama2-70b-h100-tp4.json'), 'utf8');
  it('names the bad field', () => {
    const dir = mkdtempSync(join(tmpdir(), 'profiles-'));
    const bad = JSON.parse(good);
    bad.coefficients.overheadMs = -3;
    writeFileSync(join(dir, 'bad.json'), JSON.stringify(bad));
    expect(() => loadStepTimeProfile('bad', dir)).toThrow(/coefficients\.overheadMs/);
    delete bad.fit;
    writeFileSync(join(dir, 'bad2.json'), JSON.stringify(bad));
    expect(() => loadStepTimeProfile('bad2', dir)).toThrow(/field fit/);
    writeFileSync(join(dir, 'bad3.json'), '{');
    expect(() => loadStepTimeProfile('bad3', dir)).toThrow(/not valid JSON/);
  });
  it('rejects missing profiles and path-like names', () => {
    expect(() => loadStepTimeProfile('no-such-profile')).toThrow(/cannot read/);
    expect(() => loadStepTimeProfile('../x')).toThrow(/invalid profile name/);
  });
});

describe('least squares', () => {
  it('recovers exact coefficients', () => {
    const xs: number[][] = [];
    const ys: number[] = [];
    for (let i = 0; i < 30; i++) {
      const x = [1, i, (i * i) % 7, 1000 * Math.sin(i)];
      xs.push(x);
      ys.push(3 + 0.5 * i + 2 * x[2]! + 0.001 * x[3]!);
    }
    const b = ols(xs, ys);
    [3, 0.5, 2, 0.001].forEach((v, i) => expect(b[i]).toBeCloseTo(v, 8));
  });
  it('drops a feature whose coefficient is negative and refits', () => {
    const xs = Array.from({ length: 20 }, (_, i) => [1, i, i % 3]);
    const ys = xs.map(([, i, m]) => 5 + 2 * i! - 0.5 * m!);
    const { beta, dropped } = nonNegativeOls(['c', 'slope', 'mod'], xs, ys);
    expect(dropped).toEqual(['mod']);
    expect([...beta.keys()]).toEqual(['c', 'slope']);
    expect(beta.get('slope')!).toBeGreaterThan(0);
  });
});
