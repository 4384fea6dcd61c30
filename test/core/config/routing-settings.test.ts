import { describe, expect, it } from 'vitest';
import {
  DEFAULT_ROUTING_SETTINGS,
  RoutingCore,
  parseModelsConfig,
  parseRoutingSettings,
  resolveRoutingSettings,
  routingEnvName,
  routingSettingsFromEnv,
} from '../../../core/index.ts';

describe('routing settings', () => {
  it('has the exact spec defaults (seed 000) and is frozen', () => {
    expect(DEFAULT_ROUTING_SETTINGS).toEqual({
      prefillAwareEnabled: true,
      prefillInterveneTokens: 50_000,
      prefillElephantTokens: 200_000,
      prefillElephantLimit: 1,
      prefillAffinityCeilingTokens: 150_000,
      prefillAffinityExcludeOwn: false,
      prefillHintTtlSec: 1_200,
      affinityEnabled: true,
      affinityMaxAgeSec: 86_400,
      affinityTtlSec: 300,
      affinitySweepThreshold: 1_000,
      upstreamConcurrencyEnabled: true,
      upstreamConcurrencyInitialLimit: 8,
      upstreamConcurrencyMaxLimit: 64,
      upstreamConcurrencyProbeSuccessInterval: 100,
      upstreamConcurrencyAcquireTimeoutSec: 30,
      connectTimeoutSec: 10,
      headersTimeoutSec: 300,
      firstTokenTimeoutSec: 300,
      requestTimeoutSec: 600,
      streamIdleTimeoutSec: 120,
      overallDeadlineSec: 1_800,
    });
    expect(Object.isFrozen(DEFAULT_ROUTING_SETTINGS)).toBe(true);
    expect(parseRoutingSettings({})).toEqual(DEFAULT_ROUTING_SETTINGS);
    expect(resolveRoutingSettings(undefined)).toBe(DEFAULT_ROUTING_SETTINGS);
  });

  it('snake_case keys map onto typed fields; the rest keep their defaults', () => {
    const s = parseRoutingSettings({ prefill_intervene_tokens: 10, affinity_enabled: false, prefill_affinity_ceiling: 7 });
    expect(s).toMatchObject({ prefillInterveneTokens: 10, affinityEnabled: false, prefillAffinityCeilingTokens: 7, prefillElephantTokens: 200_000 });
    expect(Object.isFrozen(s)).toBe(true);
  });

  it('an unknown key fails, naming it and listing the known keys', () => {
    expect(() => parseRoutingSettings({ prefill_intervene: 5 }, 'x.yaml routing')).toThrow(/x\.yaml routing[\s\S]*prefill_intervene[\s\S]*known keys: prefill_aware_enabled/);
  });

  it('out-of-range values fail naming the key', () => {
    expect(() => parseRoutingSettings({ prefill_elephant_limit: 0 })).toThrow(/prefill_elephant_limit/);
    expect(() => parseRoutingSettings({ prefill_intervene_tokens: 1.5 })).toThrow(/prefill_intervene_tokens/);
    expect(() => parseRoutingSettings({ affinity_ttl_sec: 0 })).toThrow(/affinity_ttl_sec/);
    expect(() => parseRoutingSettings({ affinity_max_age_sec: -1 })).toThrow(/affinity_max_age_sec/);
    expect(() => parseRoutingSettings({ affinity_enabled: 'yes' })).toThrow(/affinity_enabled/);
  });

  it('env names are ROUTING_ + the key upper-cased', () => {
    expect(routingEnvName('prefill_affinity_ceiling')).toBe('ROUTING_PREFILL_AFFINITY_CEILING');
    // Outbound concurrency keeps the spec's own names (seed 000 "出站并发").
    expect(routingEnvName('upstream_concurrency_acquire_timeout_sec')).toBe('UPSTREAM_CONCURRENCY_ACQUIRE_TIMEOUT_SEC');
    expect(routingSettingsFromEnv({ UPSTREAM_CONCURRENCY_ENABLED: 'false', UPSTREAM_CONCURRENCY_MAX_LIMIT: '16', ROUTING_TIMEOUT_OVERALL_SEC: '60' })).toMatchObject({
      upstreamConcurrencyEnabled: false,
      upstreamConcurrencyMaxLimit: 16,
      overallDeadlineSec: 60,
    });
  });

  it('builds from environment variables; unset/empty keep defaults; unrelated names are ignored', () => {
    const s = routingSettingsFromEnv({
      ROUTING_PREFILL_AWARE_ENABLED: '0',
      ROUTING_PREFILL_INTERVENE_TOKENS: '60_000',
      ROUTING_PREFILL_ELEPHANT_TOKENS: ' 100000 ',
      ROUTING_PREFILL_HINT_TTL_SEC: '',
      ROUTING_AFFINITY_ENABLED: 'TRUE',
      ROUTING_AFFINITY_MAX_AGE_SEC: '0',
      ROUTING_SOMETHING_ELSE: 'whatever',
      PATH: '/usr/bin',
    });
    expect(s).toEqual({
      ...DEFAULT_ROUTING_SETTINGS,
      prefillAwareEnabled: false,
      prefillInterveneTokens: 60_000,
      prefillElephantTokens: 100_000,
      affinityEnabled: true,
      affinityMaxAgeSec: 0,
    });
    expect(routingSettingsFromEnv({})).toEqual(DEFAULT_ROUTING_SETTINGS);
  });

  it('bad environment values fail naming the variable and the fix', () => {
    expect(() => routingSettingsFromEnv({ ROUTING_AFFINITY_ENABLED: 'maybe' })).toThrow(/ROUTING_AFFINITY_ENABLED='maybe' is not a boolean; use 1 or 0/);
    expect(() => routingSettingsFromEnv({ ROUTING_PREFILL_INTERVENE_TOKENS: 'lots' })).toThrow(/ROUTING_PREFILL_INTERVENE_TOKENS='lots' is not a number/);
    expect(() => routingSettingsFromEnv({ ROUTING_PREFILL_ELEPHANT_LIMIT: '0' })).toThrow(/ROUTING_PREFILL_ELEPHANT_LIMIT=0/);
  });

  it('RoutingCore accepts the snake_case block or a typed object, and rejects typos', () => {
    const config = parseModelsConfig({ models: [{ id: 'm', route: [{ base_url: 'sim://a' }] }] });
    expect(new RoutingCore(config, { settings: { prefill_intervene_tokens: 1 } }).settings.prefillInterveneTokens).toBe(1);
    const typed = routingSettingsFromEnv({ ROUTING_AFFINITY_ENABLED: '0' });
    expect(new RoutingCore(config, { settings: typed }).settings).toEqual(typed);
    expect(new RoutingCore(config, { settings: { ...DEFAULT_ROUTING_SETTINGS, prefillElephantLimit: 3 } }).settings.prefillElephantLimit).toBe(3);
    expect(() => new RoutingCore(config, { settings: { ...DEFAULT_ROUTING_SETTINGS, prefillElephantLimit: 0 } })).toThrow(/prefill_elephant_limit/);
    expect(() => new RoutingCore(config, { settings: { affinity: true } })).toThrow(/unrecognized key[\s\S]*affinity/i);
  });
});
