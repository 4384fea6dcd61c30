// RouteWise quota sources, the local daily counter and warm start, in the core (no I/O):
// the snapshot store's exact matching, the local-midnight reset at a given UTC offset, a quota
// pool planning with the provider's numbers, and a planner replaying a request log.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  LocalDailyCounter,
  localDayNumber,
  nextLocalMidnightUnixMs,
  parseModelsConfig,
  parseRouteWiseParams,
  QuotaSnapshotStore,
  ResourceLedger,
  RouteWisePlanner,
  routeWiseRoute,
  type Candidate,
  type QuotaUsageRecord,
} from '../../../core/index.ts';
import { rreq, rwCore } from './rw-harness.ts';

const rec = (over: Partial<QuotaUsageRecord> = {}): QuotaUsageRecord => ({ provider: 'acme', usageLabel: 'requests_daily', unit: 'requests', used: 10, limit: 100, windowSec: 86_400, resetsAtUnixMs: null, ...over });
const sel = { provider: 'acme', usageLabel: 'requests_daily', unit: 'requests' };

describe('QuotaSnapshotStore', () => {
  it('resolves a selector only when provider, label and unit are all exactly equal', () => {
    const store = new QuotaSnapshotStore();
    expect(store.resolve(sel)).toBeNull(); // never polled
    store.ingest('acme', [rec(), rec({ usageLabel: 'tokens_monthly', unit: 'tokens', used: 5, limit: 1e6 })], 1_000);
    expect(store.resolve(sel)).toEqual({ record: rec(), fetchedAtMs: 1_000 });
    expect(store.resolve({ ...sel, usageLabel: 'request_daily' })).toBeNull(); // misspelt label
    expect(store.resolve({ ...sel, usageLabel: 'Requests_Daily' })).toBeNull(); // case counts
    expect(store.resolve({ ...sel, unit: 'tokens' })).toBeNull(); // right label, wrong unit
    expect(store.resolve({ ...sel, provider: 'other' })).toBeNull(); // no fetcher for it
    expect(store.resolve({ provider: 'acme', usageLabel: 'tokens_monthly', unit: 'tokens' })?.record.used).toBe(5);
  });

  it('drops records of another provider or with bad numbers; a failed fetch keeps the last records', () => {
    const store = new QuotaSnapshotStore();
    const kept = store.ingest('acme', [rec(), rec({ provider: 'other' }), rec({ usageLabel: 'a', used: Number.NaN }), rec({ usageLabel: 'b', limit: 0 })], 5);
    expect(kept).toEqual([rec()]);
    store.fail('acme', 'HTTP 500');
    expect(store.provider('acme')).toMatchObject({ lastError: 'HTTP 500', fetchedAtMs: 5 });
    expect(store.resolve(sel)?.record).toEqual(rec());
    store.ingest('acme', [rec({ used: 11 })], 9);
    expect(store.provider('acme')?.lastError).toBeNull();
    expect(store.resolve(sel)).toEqual({ record: rec({ used: 11 }), fetchedAtMs: 9 });
  });
});

describe('LocalDailyCounter', () => {
  // 2026-12-03 22:30 UTC.
  const t0 = Date.UTC(2026, 11, 3, 22, 30);

  it('resets at local midnight of the offset it is given, not at UTC midnight', () => {
    const utc = new LocalDailyCounter(3);
    const cet = new LocalDailyCounter(3); // UTC+1: local midnight is 23:00 UTC
    const est = new LocalDailyCounter(3); // UTC−5: local midnight is 05:00 UTC
    for (const c of [utc, cet, est]) c.record(t0, c === utc ? 0 : c === cet ? 60 : -300);
    const at = Date.UTC(2026, 11, 3, 23, 30); // 00:30 in CET, 23:30 UTC, 18:30 EST
    expect(utc.used(at, 0)).toBe(1);
    expect(cet.used(at, 60)).toBe(0);
    expect(est.used(at, -300)).toBe(1);
    const morning = Date.UTC(2026, 11, 4, 5, 0); // 00:00 EST exactly: a new day there
    expect(utc.used(morning, 0)).toBe(0);
    expect(est.used(morning, -300)).toBe(0);
    expect(nextLocalMidnightUnixMs(t0, 60)).toBe(Date.UTC(2026, 11, 3, 23, 0));
    expect(nextLocalMidnightUnixMs(t0, -300)).toBe(Date.UTC(2026, 11, 4, 5, 0));
    expect(nextLocalMidnightUnixMs(t0, 0)).toBe(Date.UTC(2026, 11, 4, 0, 0));
  });

  it('counts requests against its limit; a clock stepped back keeps the day', () => {
    const c = new LocalDailyCounter(2);
    c.record(t0, 0);
    c.record(t0 + 1, 0);
    expect(c.remaining(t0 + 2, 0)).toBe(0);
    c.record(t0 + 3, 0);
    expect(c.remaining(t0, 0)).toBe(0); // beyond the limit: remaining stays 0
    expect(c.used(t0 - 86_400_000, 0)).toBe(3);
    expect(() => new LocalDailyCounter(0)).toThrow(/> 0 requests/);
  });

  it('property: two times share a count exactly when no local midnight lies between them', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 4e12 }), fc.integer({ min: 0, max: 3 * 86_400_000 }), fc.integer({ min: -720, max: 840 }), (a, d, off) => {
        const c = new LocalDailyCounter(10);
        c.record(a, off);
        const sameDay = a + d < nextLocalMidnightUnixMs(a, off);
        expect(sameDay).toBe(localDayNumber(a, off) === localDayNumber(a + d, off));
        expect(c.used(a + d, off)).toBe(sameDay ? 1 : 0);
      }),
    );
  });
});

describe('quota pools with a source or a local daily counter', () => {
  it('a source pool is unready until its record resolves, then plans with used/limit plus local uses since', () => {
    const l = new ResourceLedger();
    l.defineRoute('m:q', { quota: { poolId: 'q', windows: [{ limit: 1000, windowMs: 86_400_000, unit: 'requests' }], source: sel }, concurrency: null });
    expect(l.quotaUsedFraction('m:q', 0)).toBe(1);
    expect(l.reserve('m:q', 10, 0)).toBeNull();
    l.setQuotaSnapshot('m:q', { used: 8, limit: 10, fetchedAtMs: 0 });
    expect(l.quotaUsedFraction('m:q', 1)).toBeCloseTo(0.8);
    const r = l.reserve('m:q', 10, 1)!;
    expect(l.quotaUsedFraction('m:q', 1)).toBeCloseTo(0.9); // the reservation counts
    l.commit(r, 2);
    l.release(r, 3);
    expect(l.quotaUsedFraction('m:q', 4)).toBeCloseTo(0.9); // the committed use counts until the next snapshot
    l.commit(l.reserve('m:q', 10, 5)!, 5);
    expect(l.available('m:q', 6)).toBe(false);
    l.setQuotaSnapshot('m:q', { used: 2, limit: 10, fetchedAtMs: 7 }); // the provider reset its window
    expect(l.quotaUsedFraction('m:q', 8)).toBeCloseTo(0.2);
    l.setQuotaSnapshot('m:q', null);
    expect(l.available('m:q', 9)).toBe(false);
  });

  it('a snapshot whose reset time has passed counts only the local uses since', () => {
    const l = new ResourceLedger();
    l.setLocalTime(1_000_000, 0); // Unix ms = monotonic + 1e6
    l.defineRoute('m:q', { quota: { poolId: 'q', windows: [{ limit: 10, windowMs: 3_600_000, unit: 'requests' }], source: sel }, concurrency: null });
    l.setQuotaSnapshot('m:q', { used: 10, limit: 10, fetchedAtMs: 0, resetsAtUnixMs: 1_000_500 });
    expect(l.available('m:q', 499)).toBe(false);
    expect(l.available('m:q', 500)).toBe(true);
    l.commit(l.reserve('m:q', 1, 600)!, 600);
    expect(l.quotaUsedFraction('m:q', 700)).toBeCloseTo(0.1);
  });

  it('a local daily pool counts requests until local midnight at the offset the driver sets', () => {
    const l = new ResourceLedger();
    const midnightCet = Date.UTC(2026, 11, 3, 23, 0);
    // Monotonic 0 is 10 minutes before midnight in CET.
    l.setLocalTime(midnightCet - 600_000, 60);
    l.defineRoute('m:d', { quota: { poolId: 'd', windows: [{ limit: 2, windowMs: 86_400_000, unit: 'requests' }], localDaily: true }, concurrency: null });
    for (const t of [0, 1]) l.commit(l.reserve('m:d', 5, t)!, t);
    expect(l.available('m:d', 2)).toBe(false);
    expect(l.localDailyRemaining('m:d', 2)).toBe(0);
    expect(l.available('m:d', 600_000)).toBe(true); // local midnight
    expect(l.localDailyRemaining('m:d', 600_000)).toBe(2);
    l.invariants();
  });

  it('config: quota_source and local_quota_fallback reach the pool; a non-daily local counter is refused', () => {
    const cfg = parseModelsConfig({
      models: [
        {
          id: 'm',
          route: [
            { base_url: 'sim://a', provider_type: 'quota', quota: { limit: 100, window_sec: 86400 }, quota_source: { provider: 'acme', usage_label: 'requests_daily', unit: 'requests' } },
            { base_url: 'sim://b', provider_type: 'quota', quota: { limit: 50, window_sec: 86400 }, local_quota_fallback: true },
          ],
        },
      ],
    });
    const [a, b] = cfg.models[0]!.route;
    expect(routeWiseRoute('m:a', a!).resources.quota?.source).toEqual(sel);
    expect(routeWiseRoute('m:b', b!).resources.quota?.localDaily).toBe(true);
    const bad = (route: Record<string, unknown>) => () => parseModelsConfig({ models: [{ id: 'm', route: [{ base_url: 'sim://a', ...route }] }] });
    expect(bad({ provider_type: 'quota', quota: { limit: 5, window_sec: 14_400 }, local_quota_fallback: true })).toThrow(/daily request allowance only.*need a quota_source/);
    expect(bad({ provider_type: 'quota', quota: { limit: 5, window_sec: 86_400, unit: 'tokens' }, local_quota_fallback: true })).toThrow(/daily request allowance/);
    expect(bad({ quota_source: { provider: 'acme', usage_label: 'x', unit: 'requests' } })).toThrow(/quota_source: applies to provider_type: quota routes/);
    expect(bad({ provider_type: 'quota', quota: { limit: 5, window_sec: 86_400 }, local_quota_fallback: true, quota_source: { provider: 'acme', usage_label: 'x', unit: 'requests' } })).toThrow(/one or the other/);
  });
});

describe('planner: quota sources, warm start and the start check', () => {
  const api = { pricing: { input_usd_per_1m: 1, output_usd_per_1m: 2 } };
  const quota = (label: string) => ({ provider_type: 'quota', quota: { limit: 100, window_sec: 86400 }, quota_source: { provider: 'acme', usage_label: label, unit: 'requests' } });

  it('applyQuotaSnapshots: resolved, unresolved (misspelt) and a limit that disagrees', () => {
    const { planner } = rwCore([{ name: 'api', ...api }, { name: 'q', ...quota('requests_daily') }, { name: 'typo', ...quota('request_daily') }], { envelope_min_samples: 1 });
    const store = new QuotaSnapshotStore();
    expect(planner.applyQuotaSnapshots(store).map((s) => s.record)).toEqual([null, null]);
    store.ingest('acme', [rec({ used: 100, limit: 100 })], 10);
    const [q, typo] = planner.applyQuotaSnapshots(store);
    expect(q).toMatchObject({ endpointId: 'm:q', record: rec({ used: 100, limit: 100 }), limitMismatch: null });
    expect(typo).toMatchObject({ endpointId: 'm:typo', record: null });
    store.ingest('acme', [rec({ used: 1, limit: 500 })], 20);
    expect(planner.applyQuotaSnapshots(store)[0]!.limitMismatch).toBe(500);
    expect(planner.ledger.quotaSnapshot('m:q')).toEqual({ used: 1, limit: 500, fetchedAtMs: 20, resetsAtUnixMs: null });
  });

  it('the remaining quota of the snapshot moves routing between the quota route and the API', () => {
    const { planner } = rwCore([{ name: 'api', ...api }, { name: 'q', ...quota('requests_daily') }], { envelope_min_samples: 1, budget_alpha: 0, min_samples: 1 });
    planner.replay([{ endpointId: 'm:api', endMs: 0, ok: true, ttftMs: 100, inputTokens: 1000, cachedTokens: 0, outputTokens: 200 }]);
    const cands: Candidate[] = ['m:api', 'm:q'].map((endpointId, routeIndex) => ({ endpointId, weight: 1, routeIndex }));
    const rng = { float: () => 0.5, int: () => 0 };
    const store = new QuotaSnapshotStore();
    planner.applyQuotaSnapshots(store);
    expect(cands[planner.pick(cands, rreq(), 1, rng).candidate]!.endpointId).toBe('m:api'); // unready source
    store.ingest('acme', [rec({ used: 0, limit: 100 })], 2);
    planner.applyQuotaSnapshots(store);
    expect(cands[planner.pick(cands, rreq(), 3, rng).candidate]!.endpointId).toBe('m:q');
    store.ingest('acme', [rec({ used: 100, limit: 100 })], 4);
    planner.applyQuotaSnapshots(store);
    expect(cands[planner.pick(cands, rreq(), 5, rng).candidate]!.endpointId).toBe('m:api'); // exhausted at the provider
  });

  it('replay warms profiles, predictor and envelope; a former route teaches only the last two; out-of-order rows are skipped', () => {
    const { planner } = rwCore([{ name: 'a', ...api }, { name: 'b', ...api }], { min_samples: 2 });
    const rows = [
      { endpointId: 'm:a', endMs: 10, ok: true, ttftMs: 100, inputTokens: 1000, cachedTokens: 0, outputTokens: 300 },
      { endpointId: 'm:a', endMs: 20, ok: true, ttftMs: 120, inputTokens: 1000, cachedTokens: 0, outputTokens: 300 },
      { endpointId: 'm:b', endMs: 30, ok: false, ttftMs: null, inputTokens: 1000, cachedTokens: 0, outputTokens: 0 },
      { endpointId: 'm:gone', endMs: 40, ok: true, ttftMs: 1, inputTokens: 1, cachedTokens: 0, outputTokens: 1 },
      { endpointId: 'm:a', endMs: 5, ok: true, ttftMs: 1, inputTokens: 1, cachedTokens: 0, outputTokens: 1 },
    ];
    expect(planner.replay(rows)).toBe(4);
    expect(planner.profile('m:a')!.meanIfProfiled(50, 2)).toBeCloseTo(110);
    expect(planner.profile('m:b')!.counts(50)).toEqual({ successes: 0, failures: 1, censored: 0 });
    expect(planner.profile('m:gone')).toBeUndefined();
    expect(planner.predictor.samples).toBe(3);
    expect(planner.envelope.samples(50)).toBe(3);
    planner.invariants();
  });

  it('a quota-only model: no price at all fails at construction; priced but uncalibrated fails the start check', () => {
    const priced = { provider_type: 'quota', quota: { limit: 5, window_sec: 60 }, pricing: { input_usd_per_1m: 1, output_usd_per_1m: 2 } };
    const { planner } = rwCore([{ name: 'plan', ...priced }], { envelope_min_samples: 2 }, 'kimi');
    expect(() => planner.assertEnvelopeCalibrated('kimi', 0)).toThrow(/model 'kimi'.*every route is a quota route.*0 of envelope_min_samples 2.*db_bootstrap_enabled/);
    try {
      planner.assertEnvelopeCalibrated('kimi', 0);
    } catch (e) {
      expect((e as Error).name).toBe('EnvelopeNotCalibratedError');
    }
    const row = { endpointId: 'kimi:plan', ok: true, ttftMs: 50, inputTokens: 100, cachedTokens: 0, outputTokens: 10 };
    planner.replay([{ ...row, endMs: 1 }, { ...row, endMs: 2 }]);
    expect(() => planner.assertEnvelopeCalibrated('kimi', 3)).not.toThrow();
    // A model with an on-demand route beside its quota routes starts degraded instead.
    const mixed = new RouteWisePlanner(parseRouteWiseParams({}), [routeWiseRoute('m:api', { pricing: { input_usd_per_1m: 1, output_usd_per_1m: 1 } }), routeWiseRoute('m:q', { provider_type: 'quota', quota: { limit: 5, window_sec: 60, unit: 'requests' } })]);
    expect(() => mixed.assertEnvelopeCalibrated('m', 0)).not.toThrow();
  });
});
