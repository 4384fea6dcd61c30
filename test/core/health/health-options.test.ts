import { describe, expect, it } from 'vitest';
import { DEFAULT_HEALTH_OPTIONS, resolveHealthOptions } from '../../../core/health/health-options.ts';
import { HealthRegistry } from '../../../core/health/health-registry.ts';

describe('health options', () => {
  it('has the exact spec defaults', () => {
    expect(DEFAULT_HEALTH_OPTIONS).toEqual({
      failureThreshold: 3,
      cooldownMs: 30_000,
      minAvailability: 0.7,
      ewmaAlpha: 0.1,
    });
    expect(Object.isFrozen(DEFAULT_HEALTH_OPTIONS)).toBe(true);
    expect(new HealthRegistry().options).toEqual(DEFAULT_HEALTH_OPTIONS);
    expect(resolveHealthOptions()).toEqual(DEFAULT_HEALTH_OPTIONS);
  });

  it('merges overrides and keeps defaults for undefined', () => {
    expect(resolveHealthOptions({ cooldownMs: 5, failureThreshold: undefined })).toEqual({
      ...DEFAULT_HEALTH_OPTIONS,
      cooldownMs: 5,
    });
    expect(resolveHealthOptions({ minAvailability: 0, ewmaAlpha: 1 })).toMatchObject({ minAvailability: 0, ewmaAlpha: 1 });
    expect(resolveHealthOptions({ minAvailability: 1 }).minAvailability).toBe(1);
  });

  it.each([
    [{ failureThreshold: 0 }, /failureThreshold.*integer >= 1/],
    [{ failureThreshold: 2.5 }, /failureThreshold.*integer >= 1/],
    [{ failureThreshold: Number.NaN }, /failureThreshold/],
    [{ cooldownMs: 0 }, /cooldownMs.*> 0/],
    [{ cooldownMs: -1 }, /cooldownMs.*> 0/],
    [{ cooldownMs: Number.POSITIVE_INFINITY }, /cooldownMs.*finite/],
    [{ minAvailability: -0.1 }, /minAvailability.*\[0, 1\]/],
    [{ minAvailability: 1.1 }, /minAvailability.*\[0, 1\]/],
    [{ minAvailability: Number.NaN }, /minAvailability.*\[0, 1\]/],
    [{ ewmaAlpha: 0 }, /ewmaAlpha.*\(0, 1\]/],
    [{ ewmaAlpha: 1.5 }, /ewmaAlpha.*\(0, 1\]/],
    [{ ewmaAlpha: '0.1' as unknown as number }, /ewmaAlpha.*\(0, 1\]/],
  ])('rejects %o with a RangeError naming the option and range', (bad, msg) => {
    expect(() => resolveHealthOptions(bad)).toThrow(RangeError);
    expect(() => resolveHealthOptions(bad)).toThrow(msg);
    expect(() => new HealthRegistry(bad)).toThrow(msg);
  });

  it('rejects unknown option names', () => {
    const bad = { cooldownSeconds: 30 } as unknown as Record<string, number>;
    expect(() => resolveHealthOptions(bad)).toThrow(RangeError);
    expect(() => resolveHealthOptions(bad)).toThrow(/cooldownSeconds.*failureThreshold, cooldownMs/);
  });
});
