// A hosted provider: keyed latency draws (same request ⇒ same timeline, in any order), 429s from
// its limits, a prompt cache for pricing, billing; profiles resolve with clear errors, and the
// committed profiles are what the derivation script makes from ../shared (when present).
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { HostedProvider, type ProviderAttempt } from '../../../simulator/providers/hosted-provider.ts';
import { ProviderEntrySchema, resolveProvider } from '../../../simulator/providers/provider-config.ts';
import { deriveProfiles, profileJson, ROUTEWISE_DIR } from '../../../simulator/providers/derive-profiles.ts';
import { PROFILES_DIR } from '../../../simulator/providers/provider-profile.ts';
import { simulatedModelsConfig } from '../../../simulator/replay.ts';
import { mixedExperiment } from '../fixtures.ts';

const entry = (over: Record<string, unknown> = {}) => ProviderEntrySchema.parse({ name: 'p', profile: 'minimax-m2.5-openrouter/deepinfra', ...over });
const attempt = (reqIndex: number, over: Partial<ProviderAttempt> = {}): ProviderAttempt => ({
  gid: reqIndex + 1,
  reqIndex,
  tryNo: 0,
  inputTokens: 1000,
  outputTokens: 101,
  hashIds: null,
  ...over,
});

describe('HostedProvider', () => {
  it('draws the same timeline for the same (request, try) whatever the order of calls', () => {
    const spec = resolveProvider(entry(), 'providers[0]');
    const a = new HostedProvider(spec, 7, 512);
    const b = new HostedProvider(spec, 7, 512);
    const forward = [0, 1, 2, 3, 4].map((i) => a.admit(attempt(i), 1000));
    const backward = [4, 3, 2, 1, 0].map((i) => b.admit(attempt(i), 1000)).reverse();
    expect(backward).toEqual(forward);
    const retry = new HostedProvider(spec, 7, 512).admit(attempt(0, { tryNo: 1 }), 1000);
    expect(retry).not.toEqual(forward[0]);
    const other = new HostedProvider(spec, 8, 512).admit(attempt(0), 1000);
    expect(other).not.toEqual(forward[0]);
    for (const r of forward) {
      if (!r.ok) throw new Error('admitted expected');
      expect(r.finishedAtMs - r.firstTokenAtMs).toBeCloseTo(100 * r.tpotMs, 6);
      expect(r.firstTokenAtMs).toBeGreaterThan(1000);
    }
  });

  it('scales TTFT with ttft_scale, prompt length and a slow factor', () => {
    const plain = new HostedProvider(resolveProvider(entry(), 'p'), 1, 512).admit(attempt(3), 0);
    const scaled = new HostedProvider(resolveProvider(entry({ ttft_scale: 2, ttft_ms_per_1k_input: 100 }), 'p'), 1, 512).admit(attempt(3), 0);
    const slow = new HostedProvider(resolveProvider(entry(), 'p'), 1, 512).admit(attempt(3), 0, 3);
    if (!plain.ok || !scaled.ok || !slow.ok) throw new Error('admitted expected');
    expect(scaled.firstTokenAtMs).toBeCloseTo(2 * plain.firstTokenAtMs + 100, 6);
    expect(slow.firstTokenAtMs).toBeCloseTo(3 * plain.firstTokenAtMs, 6);
    expect(slow.tpotMs).toBeCloseTo(3 * plain.tpotMs, 9);
  });

  it('answers 429 with Retry-After when a limit is reached, and a release frees the slot', () => {
    const p = new HostedProvider(resolveProvider(entry({ limits: { concurrency: 1, retry_after_ms: 2500 } }), 'p'), 1, 512);
    expect(p.admit(attempt(0), 0).ok).toBe(true);
    expect(p.admit(attempt(1), 0)).toEqual({ ok: false, limit: 'concurrency', retryAfterMs: 3000 });
    p.release(1);
    expect(p.admit(attempt(2), 0).ok).toBe(true);
    expect(p.running).toBe(1);
    p.invariants();
    expect(() => p.admit(attempt(2), 0)).toThrow(/admitted twice/);
  });

  it('serves repeated prefixes from its prompt cache within the TTL and bills them at the cached price', () => {
    const p = new HostedProvider(resolveProvider(entry({ prompt_cache: { ttl_ms: 1000 } }), 'p'), 1, 512);
    const hashIds = [1, 2, 3];
    const first = p.admit(attempt(0, { hashIds, inputTokens: 1500 }), 0);
    const again = p.admit(attempt(1, { hashIds: [1, 2, 9], inputTokens: 1500 }), 500);
    const late = p.admit(attempt(2, { hashIds, inputTokens: 1500 }), 2000);
    expect([first, again, late].map((r) => (r.ok ? r.cachedTokens : -1))).toEqual([0, 1024, 0]);
    // DeepInfra via OpenRouter: $0.15 input, $1.15 output, $0.03 cached per 1M tokens.
    expect(p.costUsd(1500, 1024, 100)).toBeCloseTo((476 * 0.15 + 1024 * 0.03 + 100 * 1.15) / 1e6, 15);
  });
});

describe('resolveProvider', () => {
  it('takes prices and type from the profile, entry fields first', () => {
    const p = resolveProvider(entry({ pricing: { output_usd_per_1m: 2 } }), 'p');
    expect(p.type).toBe('on_demand');
    expect(p.pricing).toEqual({ inputUsdPer1M: 0.15, outputUsdPer1M: 2, cachedInputUsdPer1M: 0.03 });
    const sub = resolveProvider(entry({ profile: 'minimax-m2.5-subscriptions/featherless', limits: { concurrency: 2 } }), 'p');
    expect(sub.type).toBe('concurrency');
    expect(sub.pricing.outputUsdPer1M).toBe(0);
    const m3 = resolveProvider(entry({ profile: 'minimax-m3/minimax-plus-sq' }), 'p');
    expect(m3.limits.quota).toEqual([{ windowMs: 18_000_000, requests: 4500 }, { windowMs: 604_800_000, requests: 45_000 }]);
  });

  it('names the field and the fix when something is missing', () => {
    expect(() => resolveProvider(entry({ profile: 'minimax-m2.5-openrouter/nope' }), 'providers[2] (p)')).toThrow(/providers\[2\] \(p\)\.profile: .*no provider 'nope'.*deepinfra/);
    expect(() => resolveProvider(entry({ profile: 'no-such-file/x' }), 'providers[0] (p)')).toThrow(/providers\[0\] \(p\)\.profile: .*cannot read/);
    expect(() => resolveProvider(entry({ profile: 'minimax-m2.5-openrouter/together' }), 'providers[1] (p)')).toThrow(/providers\[1\] \(p\)\.pricing: .*lists no prices/);
    expect(() => resolveProvider(entry({ type: 'quota' }), 'q')).toThrow(/q\.limits\.quota: a quota provider needs/);
    expect(() => resolveProvider(entry({ profile: 'minimax-m2.5-subscriptions/featherless' }), 'c')).toThrow(/c\.limits\.concurrency/);
  });
});

describe('simulatedModelsConfig', () => {
  it('routes replicas first, then providers with prices and resource semantics', () => {
    const exp = mixedExperiment({
      providers: [
        { name: 'deepinfra', profile: 'minimax-m2.5-openrouter/deepinfra', limits: { rpm: 60 } },
        { name: 'plan', profile: 'minimax-m2.5-subscriptions/chutes', limits: { quota: [{ window_ms: 3_600_000, requests: 100, tokens: 50_000 }] } },
        { name: 'slots', profile: 'minimax-m2.5-subscriptions/featherless', limits: { concurrency: 2 } },
      ],
    });
    const route = simulatedModelsConfig(exp, { strategy: 'fixed', params: {}, label: 'fixed' }).models[0]!.route;
    expect(route.map((r) => [r.base_url, r.local, r.provider_type])).toEqual([
      ['sim://replica-0', true, undefined],
      ['sim://replica-1', true, undefined],
      ['sim://deepinfra', false, 'on_demand'],
      ['sim://plan', false, 'quota'],
      ['sim://slots', false, 'concurrency'],
    ]);
    expect(route[2]!.pricing).toEqual({ input_usd_per_1m: 0.15, output_usd_per_1m: 1.15, cached_input_usd_per_1m: 0.03 });
    expect(route[3]!.quota).toEqual([
      { limit: 100, window_sec: 3600, unit: 'requests' },
      { limit: 50_000, window_sec: 3600, unit: 'tokens' },
    ]);
    expect(route[4]!.concurrency).toEqual({ limit: 2 });
  });
});

describe('committed profiles', () => {
  it('equal what derive-profiles.ts makes from the committed RouteWise summaries (profiles/source/)', () => {
    expect(existsSync(join(ROUTEWISE_DIR, 'minimax_m25_openrouter_24h.json'))).toBe(true);
    for (const [name, file] of Object.entries(deriveProfiles())) {
      expect(readFileSync(join(PROFILES_DIR, `${name}.json`), 'utf8')).toBe(profileJson(file));
    }
  });

  it('carry their SOURCE note and licence beside them', () => {
    expect(readFileSync(join(PROFILES_DIR, 'SOURCE.txt'), 'utf8')).toMatch(/HarvardMadSys\/RouteWise[\s\S]*MIT/);
    expect(readFileSync(join(PROFILES_DIR, 'LICENSE'), 'utf8')).toMatch(/MIT License/);
  });
});
