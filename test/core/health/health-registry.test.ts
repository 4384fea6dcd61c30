import { describe, expect, it } from 'vitest';
import { HealthRegistry, type DispatchClaim } from '../../../core/health/health-registry.ts';
import type { Outcome } from '../../../core/lifecycle/outcome.ts';
import * as O from './outcomes.ts';

const E = 'openai:gpt-4o@api.example';

/** Begins and immediately ends one dispatch; asserts it was admitted. */
function run(h: HealthRegistry, outcome: Outcome, nowMs: number, id = E): DispatchClaim {
  const c = h.beginDispatch(id, nowMs);
  expect(c).not.toBeNull();
  h.endDispatch(c!, outcome, nowMs);
  h.invariants();
  return c!;
}

function snap(h: HealthRegistry, nowMs: number, id = E) {
  return h.snapshotOf(id, nowMs);
}

/** Opens the breaker with three 503s at t=0; returns the registry. */
function opened(opts = {}): HealthRegistry {
  const h = new HealthRegistry(opts);
  for (let i = 0; i < 3; i++) run(h, O.S503, 0);
  expect(snap(h, 0).state).toBe('open');
  h.drainTransitions();
  return h;
}

describe('HealthRegistry: opening', () => {
  it('unknown endpoints are healthy and allowRequest does not create them', () => {
    const h = new HealthRegistry();
    expect(h.allowRequest(E, 0)).toBe(true);
    expect(h.snapshot(0)).toEqual([]);
    expect(h.snapshotOf(E, 0)).toEqual({
      endpointId: E, state: 'closed', availability: 1, consecutiveFailures: 0,
      openedAtMs: null, probeInFlight: false, claimsInFlight: 0,
    });
  });

  it('three consecutive failures open the breaker', () => {
    const h = new HealthRegistry();
    run(h, O.S503, 0);
    run(h, O.RESET, 1);
    expect(snap(h, 1)).toMatchObject({ state: 'closed', consecutiveFailures: 2 });
    expect(h.allowRequest(E, 1)).toBe(true);
    run(h, O.FIRST_TOKEN_TIMEOUT, 2);
    const s = snap(h, 2);
    expect(s).toMatchObject({ state: 'open', consecutiveFailures: 3, openedAtMs: 2, claimsInFlight: 0 });
    // 1 → 0.9 → 0.81 → 0.729: still above 0.7, so the streak is the reason
    expect(s.availability).toBeCloseTo(0.729, 12);
    expect(h.drainTransitions()).toEqual([
      { endpointId: E, atMs: 2, from: 'closed', to: 'open', reason: 'consecutive_failures' },
    ]);
    expect(h.drainTransitions()).toEqual([]);
    expect(h.allowRequest(E, 3)).toBe(false);
    expect(h.beginDispatch(E, 3)).toBeNull();
  });

  it('a success breaks the streak', () => {
    const h = new HealthRegistry({ minAvailability: 0 });
    run(h, O.S503, 0);
    run(h, O.S503, 0);
    run(h, O.OK, 0);
    run(h, O.S503, 0);
    run(h, O.S503, 0);
    expect(snap(h, 0)).toMatchObject({ state: 'closed', consecutiveFailures: 2 });
  });

  it('the availability rule opens when a failure drops the EWMA below 0.7', () => {
    // F F S F F with alpha 0.1, starting at 1.0:
    // 0.9, 0.81, 0.829, 0.7461, 0.67149 < 0.7 — the fifth result opens with only 2 in a row.
    const h = new HealthRegistry();
    for (let i = 0; i < 50; i++) run(h, O.OK, 0);
    expect(snap(h, 0).availability).toBe(1);
    const expected = [0.9, 0.81, 0.829, 0.7461];
    const seq = [O.S503, O.S503, O.OK, O.S503];
    seq.forEach((o, i) => {
      run(h, o, i + 1);
      expect(snap(h, i + 1).availability).toBeCloseTo(expected[i]!, 12);
      expect(snap(h, i + 1).state).toBe('closed');
    });
    run(h, O.S503, 10);
    expect(snap(h, 10)).toMatchObject({ state: 'open', consecutiveFailures: 2, openedAtMs: 10 });
    expect(snap(h, 10).availability).toBeCloseTo(0.67149, 12);
    expect(h.drainTransitions()).toEqual([
      { endpointId: E, atMs: 10, from: 'closed', to: 'open', reason: 'low_availability' },
    ]);
  });

  it('with a high threshold only the EWMA opens: the fourth straight failure (0.6561)', () => {
    const h = new HealthRegistry({ failureThreshold: 100 });
    for (let i = 0; i < 20; i++) run(h, O.OK, 0);
    run(h, O.S503, 1);
    run(h, O.S503, 2);
    run(h, O.S503, 3);
    expect(snap(h, 3).state).toBe('closed'); // 0.729
    run(h, O.S503, 4);
    expect(snap(h, 4)).toMatchObject({ state: 'open', consecutiveFailures: 4 });
    expect(h.drainTransitions()[0]).toMatchObject({ reason: 'low_availability' });
  });

  it('429 counts against health; context_length and content_policy 4xx do not', () => {
    const h = new HealthRegistry();
    for (let i = 0; i < 10; i++) {
      run(h, O.CTX400, i);
      run(h, O.POLICY400, i);
      run(h, O.CLIENT404, i);
    }
    expect(snap(h, 10)).toMatchObject({ state: 'closed', availability: 1, consecutiveFailures: 0 });
    run(h, O.R429, 11);
    expect(snap(h, 11)).toMatchObject({ consecutiveFailures: 1 });
    expect(snap(h, 11).availability).toBeCloseTo(0.9, 12);
    run(h, O.R429, 12);
    run(h, O.R429, 13);
    expect(snap(h, 13).state).toBe('open');
  });

  it('queue-wait timeouts, cancellations and client disconnects record nothing', () => {
    const h = new HealthRegistry();
    run(h, O.S503, 0);
    for (const o of [O.QUEUE_WAIT, O.CANCELLED, O.CLIENT_GONE]) run(h, o, 1);
    expect(snap(h, 1)).toMatchObject({ state: 'closed', consecutiveFailures: 1, claimsInFlight: 0 });
    expect(snap(h, 1).availability).toBeCloseTo(0.9, 12);
  });

  it('markDegraded opens at once, without touching the counters', () => {
    const h = new HealthRegistry();
    h.markDegraded(E, 5);
    expect(snap(h, 5)).toMatchObject({ state: 'open', availability: 1, consecutiveFailures: 0, openedAtMs: 5 });
    expect(h.drainTransitions()).toEqual([
      { endpointId: E, atMs: 5, from: 'closed', to: 'open', reason: 'degraded' },
    ]);
    expect(h.allowRequest(E, 6)).toBe(false);
    // already open: the cooldown restarts, no transition is recorded
    h.markDegraded(E, 20_000);
    expect(snap(h, 20_000).openedAtMs).toBe(20_000);
    expect(h.allowRequest(E, 30_005)).toBe(false);
    expect(h.allowRequest(E, 50_000)).toBe(true);
    expect(h.drainTransitions()).toEqual([]);
    h.invariants();
  });
});

describe('HealthRegistry: cooldown and the half-open probe', () => {
  it('admits exactly one probe once the cooldown has elapsed', () => {
    const h = opened();
    expect(h.allowRequest(E, 29_999)).toBe(false);
    expect(h.beginDispatch(E, 29_999)).toBeNull();
    expect(h.allowRequest(E, 30_000)).toBe(true);
    expect(snap(h, 30_000).state).toBe('open'); // still open until a probe is taken
    const probe = h.beginDispatch(E, 30_000)!;
    expect(probe).toMatchObject({ endpointId: E, isProbe: true, takenAtMs: 30_000 });
    expect(h.drainTransitions()).toEqual([
      { endpointId: E, atMs: 30_000, from: 'open', to: 'half_open', reason: 'probe_started' },
    ]);
    expect(snap(h, 30_001)).toMatchObject({ state: 'half_open', probeInFlight: true, claimsInFlight: 1 });
    // a second request while the probe is in flight is refused by both steps
    expect(h.allowRequest(E, 30_001)).toBe(false);
    expect(h.beginDispatch(E, 30_001)).toBeNull();
    expect(h.allowRequest(E, 45_000)).toBe(false);
    expect(h.beginDispatch(E, 45_000)).toBeNull();
    h.invariants();
    expect(h.drainTransitions()).toEqual([]);
  });

  it('a successful probe closes the breaker, resets the streak and keeps the EWMA', () => {
    const h = opened();
    const before = snap(h, 0).availability; // 0.729
    const probe = h.beginDispatch(E, 30_000)!;
    h.endDispatch(probe, O.OK, 31_000);
    const s = snap(h, 31_000);
    expect(s).toMatchObject({ state: 'closed', consecutiveFailures: 0, openedAtMs: null, probeInFlight: false, claimsInFlight: 0 });
    expect(s.availability).toBeCloseTo(0.9 * before + 0.1, 12); // not reset to 1.0
    expect(h.drainTransitions()).toEqual([
      { endpointId: E, atMs: 30_000, from: 'open', to: 'half_open', reason: 'probe_started' },
      { endpointId: E, atMs: 31_000, from: 'half_open', to: 'closed', reason: 'probe_ok' },
    ]);
    const next = h.beginDispatch(E, 31_001)!;
    expect(next.isProbe).toBe(false);
    h.endDispatch(next, O.OK, 31_002);
    h.invariants();
  });

  it('kept EWMA: after recovery from a low availability, one failure re-opens at once', () => {
    const h = new HealthRegistry({ failureThreshold: 100 });
    for (let i = 0; i < 4; i++) run(h, O.S503, 0); // 0.6561 → open
    expect(snap(h, 0).state).toBe('open');
    run(h, O.OK, 30_000); // the probe: 0.69049, closed
    expect(snap(h, 30_000).state).toBe('closed');
    run(h, O.S503, 30_001); // 0.621441 < 0.7
    expect(snap(h, 30_001)).toMatchObject({ state: 'open', consecutiveFailures: 1 });
  });

  it('a failed probe re-opens the breaker with a new cooldown from the failure', () => {
    const h = opened();
    const probe = h.beginDispatch(E, 30_000)!;
    h.endDispatch(probe, O.S503, 35_000);
    expect(snap(h, 35_000)).toMatchObject({ state: 'open', openedAtMs: 35_000, consecutiveFailures: 4, probeInFlight: false });
    expect(h.drainTransitions()).toEqual([
      { endpointId: E, atMs: 30_000, from: 'open', to: 'half_open', reason: 'probe_started' },
      { endpointId: E, atMs: 35_000, from: 'half_open', to: 'open', reason: 'probe_failed' },
    ]);
    expect(h.allowRequest(E, 64_999)).toBe(false);
    expect(h.beginDispatch(E, 64_999)).toBeNull();
    expect(h.allowRequest(E, 65_000)).toBe(true);
    expect(h.beginDispatch(E, 65_000)!.isProbe).toBe(true);
    h.invariants();
  });

  it('a neutral probe outcome frees the slot without closing or re-opening', () => {
    for (const neutral of [O.CANCELLED, O.CLIENT_GONE, O.QUEUE_WAIT, O.CTX400]) {
      const h = opened();
      const probe = h.beginDispatch(E, 30_000)!;
      h.endDispatch(probe, neutral, 30_500);
      expect(snap(h, 30_500)).toMatchObject({ state: 'half_open', probeInFlight: false, claimsInFlight: 0, consecutiveFailures: 3 });
      expect(h.allowRequest(E, 30_500)).toBe(true);
      const again = h.beginDispatch(E, 30_500)!;
      expect(again.isProbe).toBe(true);
      h.endDispatch(again, O.OK, 30_600);
      expect(snap(h, 30_600).state).toBe('closed');
      expect(h.drainTransitions().map((t) => t.reason)).toEqual(['probe_started', 'probe_ok']);
      h.invariants();
    }
  });

  it('an unadmitted (pinned) result never settles the probe', () => {
    const h = opened();
    const probe = h.beginDispatch(E, 30_000)!;
    h.recordUnadmitted(E, O.OK, 30_100);
    expect(snap(h, 30_100)).toMatchObject({ state: 'half_open', probeInFlight: true, consecutiveFailures: 0 });
    h.recordUnadmitted(E, O.S503, 30_200);
    h.recordUnadmitted(E, O.S503, 30_200);
    h.recordUnadmitted(E, O.S503, 30_200);
    expect(snap(h, 30_200)).toMatchObject({ state: 'half_open', probeInFlight: true, consecutiveFailures: 3 });
    expect(h.allowRequest(E, 30_300)).toBe(false);
    h.endDispatch(probe, O.OK, 30_400);
    expect(snap(h, 30_400)).toMatchObject({ state: 'closed', consecutiveFailures: 0 });
    h.invariants();
  });

  it('an unadmitted result updates the counters and can open a closed breaker', () => {
    const h = new HealthRegistry();
    h.recordUnadmitted(E, O.S503, 0);
    h.recordUnadmitted(E, O.CANCELLED, 0);
    h.recordUnadmitted(E, O.S503, 0);
    expect(snap(h, 0)).toMatchObject({ state: 'closed', consecutiveFailures: 2, claimsInFlight: 0 });
    h.recordUnadmitted(E, O.R429, 1);
    expect(snap(h, 1).state).toBe('open');
  });

  it('ordinary claims taken while closed do not settle the probe', () => {
    const h = new HealthRegistry();
    const early = [h.beginDispatch(E, 0)!, h.beginDispatch(E, 0)!];
    for (let i = 0; i < 3; i++) run(h, O.S503, 1);
    expect(snap(h, 1)).toMatchObject({ state: 'open', claimsInFlight: 2 });
    const probe = h.beginDispatch(E, 30_001)!;
    expect(probe.isProbe).toBe(true);
    h.endDispatch(early[0]!, O.OK, 30_002);
    expect(snap(h, 30_002)).toMatchObject({ state: 'half_open', probeInFlight: true, consecutiveFailures: 0 });
    h.endDispatch(early[1]!, O.S503, 30_003);
    expect(snap(h, 30_003)).toMatchObject({ state: 'half_open', probeInFlight: true, consecutiveFailures: 1 });
    h.endDispatch(probe, O.OK, 30_004);
    expect(snap(h, 30_004)).toMatchObject({ state: 'closed', claimsInFlight: 0 });
    h.invariants();
  });

  it('an ordinary claim ending while open counts but does not close or restart the cooldown', () => {
    const h = new HealthRegistry();
    const early = h.beginDispatch(E, 0)!;
    for (let i = 0; i < 3; i++) run(h, O.S503, 1);
    h.endDispatch(early, O.OK, 2);
    expect(snap(h, 2)).toMatchObject({ state: 'open', openedAtMs: 1, consecutiveFailures: 0 });
    expect(h.allowRequest(E, 30_001)).toBe(true);
  });

  it('an expired probe claim frees the slot; ending it later settles nothing', () => {
    const h = opened();
    const stale = h.beginDispatch(E, 30_000)!;
    expect(h.allowRequest(E, 59_999)).toBe(false);
    expect(snap(h, 59_999).probeInFlight).toBe(true);
    // live for [takenAt, takenAt + cooldownMs)
    expect(snap(h, 60_000)).toMatchObject({ state: 'half_open', probeInFlight: false, claimsInFlight: 1 });
    expect(h.allowRequest(E, 60_000)).toBe(true);
    const fresh = h.beginDispatch(E, 60_000)!;
    expect(fresh.isProbe).toBe(true);
    expect(h.beginDispatch(E, 60_001)).toBeNull();
    h.invariants();
    // the stale probe succeeds late: recorded, but it does not close the breaker
    h.endDispatch(stale, O.OK, 61_000);
    expect(snap(h, 61_000)).toMatchObject({ state: 'half_open', probeInFlight: true, claimsInFlight: 1, consecutiveFailures: 0 });
    h.endDispatch(fresh, O.S503, 62_000);
    expect(snap(h, 62_000)).toMatchObject({ state: 'open', openedAtMs: 62_000, claimsInFlight: 0 });
    expect(h.drainTransitions().map((t) => `${t.from}->${t.to}:${t.reason}`)).toEqual([
      'open->half_open:probe_started',
      'half_open->open:probe_failed',
    ]);
    h.invariants();
  });

  it('an expired probe ending before any new probe frees the slot without settling', () => {
    const h = opened();
    const stale = h.beginDispatch(E, 30_000)!;
    h.endDispatch(stale, O.OK, 70_000);
    expect(snap(h, 70_000)).toMatchObject({ state: 'half_open', probeInFlight: false, claimsInFlight: 0 });
    expect(h.beginDispatch(E, 70_000)!.isProbe).toBe(true);
    h.invariants();
  });

  it('markDegraded during a probe re-opens; the dropped probe settles nothing', () => {
    const h = opened();
    const probe = h.beginDispatch(E, 30_000)!;
    h.markDegraded(E, 30_500);
    expect(snap(h, 30_500)).toMatchObject({ state: 'open', openedAtMs: 30_500, probeInFlight: false, claimsInFlight: 1 });
    h.endDispatch(probe, O.OK, 30_600);
    expect(snap(h, 30_600)).toMatchObject({ state: 'open', openedAtMs: 30_500, claimsInFlight: 0 });
    expect(h.drainTransitions().map((t) => t.reason)).toEqual(['probe_started', 'degraded']);
    h.invariants();
  });

  it('ending a claim twice throws an Error naming the claim', () => {
    const h = new HealthRegistry();
    const c = h.beginDispatch(E, 0)!;
    h.endDispatch(c, O.OK, 1);
    expect(() => h.endDispatch(c, O.OK, 2)).toThrow(Error);
    expect(() => h.endDispatch(c, O.OK, 2)).toThrow(`claim #${c.claimId} (ordinary) for endpoint '${E}'`);
    expect(snap(h, 2)).toMatchObject({ claimsInFlight: 0, availability: 1 });
    h.invariants();
  });

  it('ending an expired claim once is allowed; twice throws', () => {
    const h = opened();
    const probe = h.beginDispatch(E, 30_000)!;
    expect(() => h.endDispatch(probe, O.OK, 1e9)).not.toThrow();
    expect(() => h.endDispatch(probe, O.OK, 1e9)).toThrow(/probe/);
  });

  it('rejects claims from another registry', () => {
    const a = new HealthRegistry();
    const b = new HealthRegistry();
    const c = a.beginDispatch(E, 0)!;
    b.beginDispatch(E, 0);
    expect(() => b.endDispatch(c, O.OK, 1)).toThrow(/claim #1/);
    a.endDispatch(c, O.OK, 1);
  });

  it('claim ids come from the registry, not a global counter', () => {
    const a = new HealthRegistry();
    const b = new HealthRegistry();
    expect(a.beginDispatch('x', 0)!.claimId).toBe(1);
    expect(a.beginDispatch('y', 0)!.claimId).toBe(2);
    expect(b.beginDispatch('x', 0)!.claimId).toBe(1);
  });

  it('rejects a non-finite nowMs', () => {
    const h = new HealthRegistry();
    expect(() => h.allowRequest(E, Number.NaN)).toThrow(RangeError);
    expect(() => h.beginDispatch(E, Number.POSITIVE_INFINITY)).toThrow(/nowMs/);
  });

  it('snapshot lists endpoints sorted by id', () => {
    const h = new HealthRegistry();
    h.beginDispatch('b', 0);
    h.recordUnadmitted('a', O.S503, 0);
    h.markDegraded('c', 0);
    const s = h.snapshot(0);
    expect(s.map((x) => x.endpointId)).toEqual(['a', 'b', 'c']);
    expect(s.map((x) => x.state)).toEqual(['closed', 'closed', 'open']);
    expect(s[1]!.claimsInFlight).toBe(1);
  });
});
