// Provider admission limits: each refusal is the right limit with a Retry-After in whole seconds
// that is exactly when a retry would be admitted; no sequence of calls breaks a limit.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { RateLimiter, type ProviderLimits } from '../../../simulator/providers/rate-limiter.ts';

const limits = (over: Partial<ProviderLimits>): ProviderLimits => ({ quota: [], concurrencyRetryAfterMs: 1000, ...over });

describe('RateLimiter', () => {
  it('RPM: the n+1-th request in a minute is refused until the oldest leaves the window', () => {
    const l = new RateLimiter(limits({ rpm: 3 }));
    expect(l.tryAcquire(0, 10).ok).toBe(true);
    expect(l.tryAcquire(10_000, 10).ok).toBe(true);
    expect(l.tryAcquire(20_000, 10).ok).toBe(true);
    expect(l.tryAcquire(30_500, 10)).toEqual({ ok: false, limit: 'rpm', retryAfterMs: 30_000 }); // 29.5 s, rounded up
    expect(l.tryAcquire(59_999, 10).ok).toBe(false);
    expect(l.tryAcquire(60_000, 10).ok).toBe(true); // the t=0 request left the window
    l.invariants();
  });

  it('TPM: refused until enough tokens have left the window; a request over the limit alone waits a minute', () => {
    const l = new RateLimiter(limits({ tpm: 1000 }));
    expect(l.tryAcquire(0, 600).ok).toBe(true);
    expect(l.tryAcquire(1000, 300).ok).toBe(true);
    expect(l.tryAcquire(2000, 200)).toEqual({ ok: false, limit: 'tpm', retryAfterMs: 58_000 });
    expect(l.tryAcquire(60_000, 200).ok).toBe(true);
    expect(l.tryAcquire(60_000, 2000)).toEqual({ ok: false, limit: 'tpm', retryAfterMs: 60_000 });
  });

  it('concurrency: slots free on release; the refusal carries the configured Retry-After', () => {
    const l = new RateLimiter(limits({ concurrency: 2, concurrencyRetryAfterMs: 1500 }));
    expect(l.tryAcquire(0, 1).ok).toBe(true);
    expect(l.tryAcquire(0, 1).ok).toBe(true);
    expect(l.tryAcquire(0, 1)).toEqual({ ok: false, limit: 'concurrency', retryAfterMs: 2000 });
    l.release();
    expect(l.tryAcquire(1, 1).ok).toBe(true);
    expect(l.inFlight).toBe(2);
    expect(() => new RateLimiter(limits({})).release()).toThrow(/nothing in flight/);
  });

  it('quota: fixed windows from time 0; Retry-After runs to the window end', () => {
    const l = new RateLimiter(limits({ quota: [{ windowMs: 3_600_000, requests: 2 }, { windowMs: 7_200_000, tokens: 250 }] }));
    expect(l.tryAcquire(0, 100).ok).toBe(true);
    expect(l.tryAcquire(1000, 100).ok).toBe(true);
    expect(l.tryAcquire(1_800_000, 1)).toEqual({ ok: false, limit: 'quota', retryAfterMs: 1_800_000 });
    expect(l.tryAcquire(3_600_000, 100)).toEqual({ ok: false, limit: 'quota', retryAfterMs: 3_600_000 }); // token window still full
    expect(l.tryAcquire(3_600_000, 50).ok).toBe(true);
    expect(l.tryAcquire(7_200_000, 100).ok).toBe(true);
  });

  it('rejects bad limits naming the field', () => {
    expect(() => new RateLimiter(limits({ rpm: 0 }))).toThrow(/limits\.rpm/);
    expect(() => new RateLimiter(limits({ quota: [{ windowMs: 0, requests: 1 }] }))).toThrow(/quota\[0\]\.window_ms/);
  });

  it('never admits more than a limit allows, in any sequence (property)', () => {
    const op = fc.oneof(
      fc.record({ kind: fc.constant('acquire' as const), dtMs: fc.integer({ min: 0, max: 20_000 }), tokens: fc.integer({ min: 0, max: 400 }) }),
      fc.record({ kind: fc.constant('release' as const) }),
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 200 }), (ops) => {
        const l = new RateLimiter(limits({ rpm: 5, tpm: 1000, concurrency: 3, quota: [{ windowMs: 100_000, requests: 12 }] }));
        let t = 0;
        const admitted: number[] = [];
        for (const o of ops) {
          if (o.kind === 'release') {
            if (l.inFlight > 0) l.release();
            continue;
          }
          t += o.dtMs;
          const a = l.tryAcquire(t, o.tokens);
          if (a.ok) admitted.push(t);
          else {
            expect(a.retryAfterMs % 1000).toBe(0);
            expect(a.retryAfterMs).toBeGreaterThanOrEqual(1000);
          }
          l.invariants();
          expect(admitted.filter((x) => x > t - 60_000).length).toBeLessThanOrEqual(5);
          expect(admitted.filter((x) => Math.floor(x / 100_000) === Math.floor(t / 100_000)).length).toBeLessThanOrEqual(12);
        }
      }),
    );
  });
});
