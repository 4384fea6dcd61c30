// Facts from limits shared across gateway replicas, applied to the core's mirrors as plain data:
// replica-wide quota use and "spent until" (ResourceLedger), slots held elsewhere, a shared
// rate-limit bucket's level (TargetRateLimit); and the `shared_unit_refused` outcome (no upstream
// call, not a health failure, fail over, 429 when nothing else serves).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ResourceLedger } from '../../../core/strategies/routewise/resources.ts';
import { TargetRateLimit } from '../../../core/multi-target/target-rate-limit.ts';
import { errorForOutcome } from '../../../core/lifecycle/errors.ts';
import { isHealthFailure, type Outcome } from '../../../core/lifecycle/outcome.ts';
import { classifyFailure } from '../../../core/request/policy/retry-policy.ts';

const quota = (limit: number, windowMs = 60_000) => ({ quota: { poolId: 'p', windows: [{ limit, windowMs, unit: 'requests' as const }] }, concurrency: null });

describe('shared quota facts', () => {
  it('replica-wide use plans when larger than the local count; local uses since are added; the fact lapses', () => {
    const l = new ResourceLedger();
    l.defineRoute('q', quota(10));
    const r = l.reserve('q', 0, 0)!;
    l.commit(r, 0);
    expect(l.quotaUsedFraction('q', 1)).toBeCloseTo(0.1);
    l.applySharedQuota('q', { usedPerWindow: [6], untilMs: 100 });
    expect(l.quotaUsedFraction('q', 1)).toBeCloseTo(0.6);
    l.commit(l.reserve('q', 0, 2)!, 2); // a local use after the fact counts on top
    expect(l.quotaUsedFraction('q', 3)).toBeCloseTo(0.7);
    expect(l.quotaUsedFraction('q', 100)).toBeCloseTo(0.2); // lapsed: the local count again
    l.invariants();
  });

  it('a refusal makes the pool spent until the time given, and only until then', () => {
    const l = new ResourceLedger();
    l.defineRoute('q', quota(10));
    l.applySharedQuota('q', { usedPerWindow: [10], untilMs: 50, fullUntilMs: 500 });
    expect(l.available('q', 10)).toBe(false);
    expect(l.reserve('q', 0, 10)).toBeNull();
    expect(l.available('q', 499)).toBe(false);
    expect(l.available('q', 500)).toBe(true);
  });

  it('slots held by other replicas count until the fact lapses', () => {
    const l = new ResourceLedger();
    l.defineRoute('c', { quota: null, concurrency: { poolId: 'c', limit: 3 } });
    l.applySharedConcurrency('c', 2, 100);
    const a = l.reserve('c', 0, 0)!;
    expect(a).not.toBeNull();
    expect(l.slotFree('c', 1)).toBe(false);
    expect(l.slotFree('c', 100)).toBe(true);
    l.release(a, 100);
    l.invariants();
  });

  it('replays the same facts to the same decisions (deterministic)', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.nat(20), fc.nat(200), fc.boolean()), { maxLength: 30 }), (facts) => {
        const run = () => {
          const l = new ResourceLedger();
          l.defineRoute('q', quota(20, 1_000));
          const out: boolean[] = [];
          facts.forEach(([used, dt, take], i) => {
            const now = i * 10;
            l.applySharedQuota('q', { usedPerWindow: [used], untilMs: now + dt });
            if (take) {
              const r = l.reserve('q', 0, now);
              out.push(r !== null);
              if (r) l.commit(r, now);
            }
            out.push(l.available('q', now + 5));
          });
          l.invariants();
          return out;
        };
        expect(run()).toEqual(run());
      }),
    );
  });
});

describe('shared rate-limit bucket', () => {
  it('keeps the lower of its own level and the shared one', () => {
    const b = new TargetRateLimit(60, 5);
    expect(b.tryTake(0)).toBe(true); // 4 left here
    b.applyShared(0.5, 0); // the other replicas spent the rest
    expect(b.available(0)).toBe(false);
    expect(b.retryAfterMs(0)).toBe(500);
    b.applyShared(5, 1_000); // a higher shared level never adds tokens
    expect(b.available(1_000)).toBe(true);
    expect(b.tryTake(1_000)).toBe(true);
    expect(b.available(1_000)).toBe(false);
    b.invariants();
  });
});

describe('shared_unit_refused', () => {
  const refused = (unit: 'quota' | 'concurrency' | 'rate_limit', retryAfterMs: number | null): Outcome => ({ kind: 'shared_unit_refused', unit, retryAfterMs });
  it('is no health failure, fails over, and answers 429 with the wait when nothing else serves', () => {
    expect(isHealthFailure(refused('quota', 1))).toBe(false);
    expect(classifyFailure(refused('concurrency', null), { retrySameOn: null, fallbackOnStatuses: new Set(), retryOn429: true })).toBe('fail_over');
    expect(errorForOutcome(refused('quota', 1_500))).toEqual({ status: 429, code: 'upstream_rate_limited', retryAfterSec: 2 });
    expect(errorForOutcome(refused('rate_limit', null))).toEqual({ status: 429, code: 'target_rate_limited', retryAfterSec: null });
  });
});
