import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { isLegalTransition, type BreakerState, type TransitionReason } from '../../../core/health/circuit-breaker.ts';
import { HealthRegistry, type DispatchClaim } from '../../../core/health/health-registry.ts';
import type { HealthOptions } from '../../../core/health/health-options.ts';
import { ALL_OUTCOMES } from './outcomes.ts';

const ENDPOINTS = ['a', 'b', 'c'] as const;

type Op =
  | { kind: 'advance'; ms: number }
  | { kind: 'begin'; ep: number }
  | { kind: 'end'; pick: number; outcome: number }
  | { kind: 'unadmitted'; ep: number; outcome: number }
  | { kind: 'degrade'; ep: number }
  | { kind: 'allow'; ep: number };

const optionsArb: fc.Arbitrary<Partial<HealthOptions>> = fc.record({
  failureThreshold: fc.integer({ min: 1, max: 4 }),
  cooldownMs: fc.constantFrom(1, 100, 1000),
  minAvailability: fc.constantFrom(0, 0.5, 0.7, 1),
  ewmaAlpha: fc.constantFrom(0.1, 0.5, 1),
});

function opArb(cooldownMs: number): fc.Arbitrary<Op> {
  const ep = fc.integer({ min: 0, max: ENDPOINTS.length - 1 });
  const outcome = fc.integer({ min: 0, max: ALL_OUTCOMES.length - 1 });
  return fc.oneof(
    { weight: 3, arbitrary: fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: Math.ceil(cooldownMs * 1.5) }) }) },
    { weight: 5, arbitrary: fc.record({ kind: fc.constant('begin' as const), ep }) },
    { weight: 5, arbitrary: fc.record({ kind: fc.constant('end' as const), pick: fc.nat(), outcome }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('unadmitted' as const), ep, outcome }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('degrade' as const), ep }) },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('allow' as const), ep }) },
  );
}

const scenarioArb = optionsArb.chain((options) =>
  fc.tuple(fc.constant(options), fc.array(opArb(options.cooldownMs!), { maxLength: 80 })),
);

/** Which operation may cause which transition reason. */
const REASONS_BY_OP: Record<Op['kind'], readonly TransitionReason[]> = {
  advance: [],
  allow: [],
  begin: ['probe_started'],
  end: ['consecutive_failures', 'low_availability', 'probe_ok', 'probe_failed'],
  unadmitted: ['consecutive_failures', 'low_availability'],
  degrade: ['degraded'],
};

describe('HealthRegistry properties', () => {
  it('random interleavings keep every invariant', () => {
    fc.assert(
      fc.property(scenarioArb, ([options, ops]) => {
        const h = new HealthRegistry(options);
        const cooldownMs = h.options.cooldownMs;
        let now = 0;
        const live: DispatchClaim[] = [];
        const ended: DispatchClaim[] = [];
        const state = new Map<string, BreakerState>();

        const checkStep = (op: Op, began: DispatchClaim | null, endedClaim: DispatchClaim | null) => {
          h.invariants();
          // transitions: legal, chained per endpoint, caused by the right operation
          for (const t of h.drainTransitions()) {
            expect(t.atMs).toBe(now);
            expect(isLegalTransition(t.from, t.to)).toBe(true);
            expect(t.from).toBe(state.get(t.endpointId) ?? 'closed');
            state.set(t.endpointId, t.to);
            expect(REASONS_BY_OP[op.kind]).toContain(t.reason);
            if (t.reason === 'probe_started') expect(began?.isProbe).toBe(true);
            if (t.reason === 'probe_ok' || t.reason === 'probe_failed') {
              expect(endedClaim?.isProbe).toBe(true);
              expect(endedClaim?.endpointId).toBe(t.endpointId);
            }
          }
          for (const s of h.snapshot(now)) {
            expect(s.state).toBe(state.get(s.endpointId) ?? 'closed');
            const mine = live.filter((c) => c.endpointId === s.endpointId);
            expect(s.claimsInFlight).toBe(mine.length);
            // never two live (unended, unexpired) probes on one endpoint
            const liveProbes = mine.filter((c) => c.isProbe && now - c.takenAtMs < cooldownMs);
            expect(liveProbes.length).toBeLessThanOrEqual(1);
            if (s.probeInFlight) {
              expect(s.state).toBe('half_open');
              expect(liveProbes.length).toBe(1);
            }
            expect(s.availability).toBeGreaterThanOrEqual(0);
            expect(s.availability).toBeLessThanOrEqual(1);
          }
        };

        for (const op of ops) {
          let began: DispatchClaim | null = null;
          let endedClaim: DispatchClaim | null = null;
          switch (op.kind) {
            case 'advance':
              now += op.ms;
              break;
            case 'allow': {
              const id = ENDPOINTS[op.ep]!;
              const before = h.snapshot(now);
              h.allowRequest(id, now);
              expect(h.snapshot(now)).toEqual(before);
              break;
            }
            case 'begin': {
              const id = ENDPOINTS[op.ep]!;
              const before = h.snapshot(now);
              const allowed = h.allowRequest(id, now);
              expect(h.snapshot(now)).toEqual(before); // allowRequest never mutates
              expect(h.drainTransitions()).toEqual([]);
              const stateBefore = h.snapshotOf(id, now).state;
              began = h.beginDispatch(id, now);
              expect(began !== null).toBe(allowed); // the predicate and the commit agree
              if (began !== null) {
                expect(began).toMatchObject({ endpointId: id, takenAtMs: now, isProbe: stateBefore !== 'closed' });
                expect(live.concat(ended).some((c) => c.claimId === began!.claimId)).toBe(false);
                live.push(began);
              }
              break;
            }
            case 'end': {
              if (live.length === 0) break;
              const [c] = live.splice(op.pick % live.length, 1);
              endedClaim = c!;
              h.endDispatch(endedClaim, ALL_OUTCOMES[op.outcome]!, now);
              ended.push(endedClaim);
              break;
            }
            case 'unadmitted': {
              const id = ENDPOINTS[op.ep]!;
              const probeBefore = h.snapshotOf(id, now).probeInFlight;
              h.recordUnadmitted(id, ALL_OUTCOMES[op.outcome]!, now);
              // never settles a probe
              expect(h.snapshotOf(id, now).probeInFlight).toBe(probeBefore);
              break;
            }
            case 'degrade':
              h.markDegraded(ENDPOINTS[op.ep]!, now);
              expect(h.snapshotOf(ENDPOINTS[op.ep]!, now).state).toBe('open');
              break;
          }
          checkStep(op, began, endedClaim);
        }

        // every claim ends exactly once: end the rest, counts return to 0, a second end throws
        while (live.length > 0) {
          const c = live.pop()!;
          h.endDispatch(c, ALL_OUTCOMES[c.claimId % ALL_OUTCOMES.length]!, now);
          ended.push(c);
          checkStep({ kind: 'end', pick: 0, outcome: 0 }, null, c);
        }
        for (const s of h.snapshot(now)) expect(s.claimsInFlight).toBe(0);
        for (const c of ended) expect(() => h.endDispatch(c, ALL_OUTCOMES[0]!, now)).toThrow(`claim #${c.claimId}`);
        h.invariants();
      }),
      { numRuns: 400, seed: 20240601 },
    );
  });

  it('allowRequest is pure on any reachable state, including for unknown endpoints', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.boolean(), fc.integer({ min: 0, max: ALL_OUTCOMES.length - 1 }), fc.integer({ min: 0, max: 50_000 }))),
        fc.integer({ min: 0, max: 200_000 }),
        (steps, probeAt) => {
          const h = new HealthRegistry();
          let now = 0;
          for (const [pin, o, dt] of steps) {
            now += dt;
            if (pin) h.recordUnadmitted('x', ALL_OUTCOMES[o]!, now);
            else {
              const c = h.beginDispatch('x', now);
              if (c) h.endDispatch(c, ALL_OUTCOMES[o]!, now);
            }
          }
          const t = now + probeAt;
          const before = JSON.stringify(h.snapshot(t));
          h.drainTransitions();
          for (let i = 0; i < 3; i++) {
            h.allowRequest('x', t);
            h.allowRequest('never-seen', t);
          }
          expect(JSON.stringify(h.snapshot(t))).toBe(before);
          expect(h.drainTransitions()).toEqual([]);
        },
      ),
      { numRuns: 200, seed: 7 },
    );
  });
});
