import { describe, expect, it } from 'vitest';
import {
  CircuitBreaker,
  LEGAL_TRANSITIONS,
  hasElapsed,
  healthSignal,
  isLegalTransition,
  nextAvailability,
  openReason,
} from '../../../core/health/circuit-breaker.ts';
import { DEFAULT_HEALTH_OPTIONS, resolveHealthOptions } from '../../../core/health/health-options.ts';
import * as O from './outcomes.ts';

describe('healthSignal', () => {
  it('ok is a success', () => {
    expect(healthSignal(O.OK)).toBe('success');
  });
  it('5xx, 429, 401/403, transport errors and first-token timeouts are failures', () => {
    for (const o of [O.S503, O.S500, O.R429, O.AUTH401, O.RESET, O.TIMEOUT, O.FIRST_TOKEN_TIMEOUT]) {
      expect(healthSignal(o)).toBe('failure');
    }
  });
  it('request-scoped 4xx, queue-wait timeouts, cancellations and disconnects record nothing', () => {
    for (const o of [O.CTX400, O.POLICY400, O.CLIENT404, O.QUEUE_WAIT, O.CANCELLED, O.CLIENT_GONE]) {
      expect(healthSignal(o)).toBe('none');
    }
  });
});

describe('pure helpers', () => {
  it('nextAvailability is the EWMA step, clamped to [0, 1]', () => {
    expect(nextAvailability(1, 0.1, false)).toBeCloseTo(0.9, 12);
    expect(nextAvailability(0.9, 0.1, false)).toBeCloseTo(0.81, 12);
    expect(nextAvailability(0.81, 0.1, true)).toBeCloseTo(0.829, 12);
    expect(nextAvailability(1, 0.1, true)).toBe(1);
    expect(nextAvailability(0, 1, false)).toBe(0);
    expect(nextAvailability(0, 1, true)).toBe(1);
  });
  it('openReason checks the streak first, then availability', () => {
    const o = DEFAULT_HEALTH_OPTIONS;
    expect(openReason(3, 0.5, o)).toBe('consecutive_failures');
    expect(openReason(2, 0.69, o)).toBe('low_availability');
    expect(openReason(2, 0.7, o)).toBeNull();
  });
  it('hasElapsed is inclusive at the boundary', () => {
    expect(hasElapsed(100, 129, 30)).toBe(false);
    expect(hasElapsed(100, 130, 30)).toBe(true);
  });
  it('lists exactly the four legal transitions', () => {
    expect(LEGAL_TRANSITIONS.map(([f, t]) => `${f}->${t}`).sort()).toEqual(
      ['closed->open', 'half_open->closed', 'half_open->open', 'open->half_open'],
    );
    expect(isLegalTransition('open', 'closed')).toBe(false);
    expect(isLegalTransition('closed', 'half_open')).toBe(false);
    expect(isLegalTransition('open', 'open')).toBe(false);
  });
});

describe('CircuitBreaker', () => {
  const opts = resolveHealthOptions({ cooldownMs: 1000 });

  it('starts closed, available and admitting', () => {
    const b = new CircuitBreaker('e', opts);
    expect([b.state, b.availability, b.consecutiveFailures, b.openedAtMs, b.probe]).toEqual(['closed', 1, 0, null, null]);
    expect(b.admits(0)).toBe(true);
    b.checkInvariants();
  });

  it('refuses to start a probe while closed or cooling down, and to settle a non-probe', () => {
    const b = new CircuitBreaker('e', opts);
    expect(() => b.startProbe(1, 0)).toThrow(/cannot start a probe/);
    b.degrade(0);
    expect(() => b.startProbe(1, 999)).toThrow(/cannot start a probe/);
    expect(() => b.settleProbe(1, 'success', 1000)).toThrow(/not the live probe/);
    expect(b.startProbe(1, 1000)).toMatchObject({ from: 'open', to: 'half_open', reason: 'probe_started' });
    expect(() => b.settleProbe(2, 'success', 1001)).toThrow(/not the live probe/);
    // expired at takenAt + cooldown
    expect(() => b.settleProbe(1, 'success', 2000)).toThrow(/not the live probe/);
    expect(b.settleProbe(1, 'success', 1999)).toMatchObject({ from: 'half_open', to: 'closed', reason: 'probe_ok' });
    b.checkInvariants();
  });

  it('counts results while open without changing the state or the cooldown', () => {
    const b = new CircuitBreaker('e', opts);
    b.degrade(0);
    expect(b.record('failure', 10)).toBeNull();
    expect(b.record('success', 20)).toBeNull();
    expect(b.state).toBe('open');
    expect(b.openedAtMs).toBe(0);
    expect(b.consecutiveFailures).toBe(0);
    expect(b.availability).toBeCloseTo(0.91, 12);
  });
});
