// Session affinity in the `fixed` pipeline (seed 000, session affinity): pins, sliding TTL,
// drop on error, drop when no longer admissible, ceiling bypass with re-pin, explicit pins.
import { describe, expect, it } from 'vitest';
import { BUILTIN_STRATEGIES, type RoutingCore } from '../../../core/index.ts';
import { dispatchOf, doneOf, fail503, finish, makeCore, ok, req, runOne, seeded } from '../harness.ts';

const routes = [{ name: 'a' }, { name: 'b' }, { name: 'c' }, { name: 'd' }];
const route = (core: RoutingCore, callerId: string | null, nowMs: number, rng = seeded(1), over = {}) => {
  const { life, actions } = core.start(req({ callerId, ...over }), nowMs, rng);
  const md = finish(life, actions, nowMs);
  return { endpoint: md.endpointId!, reason: md.reason };
};

describe('session affinity (fixed, defaults)', () => {
  it('a caller stays on its first choice; other callers draw their own', () => {
    const core = makeCore(routes);
    const rng = seeded(7);
    const first = route(core, 'alice', 0, rng);
    expect(first.reason).toBe('weighted');
    for (let i = 1; i <= 200; i++) expect(route(core, 'alice', i * 1_000, rng)).toEqual({ endpoint: first.endpoint, reason: 'affinity' });
    const others = new Set(Array.from({ length: 200 }, (_, i) => route(core, `caller-${i}`, 300_000, rng).endpoint));
    expect(others.size).toBe(4);
    core.invariants();
  });

  it('the TTL slides with use and a pin expires 300 s after its last use', () => {
    const core = makeCore(routes);
    const rng = seeded(3);
    const first = route(core, 'bob', 0, rng).endpoint;
    expect(route(core, 'bob', 299_999, rng).reason).toBe('affinity');
    expect(route(core, 'bob', 599_998, rng).reason).toBe('affinity'); // slid to 599,999
    expect(core.affinity.lookup('bob', 'm', 599_998 + 299_999)?.endpointId).toBe(first);
    expect(route(core, 'bob', 599_998 + 300_000, rng).reason).toBe('weighted'); // expired ⇒ fresh draw, re-pinned
    expect(core.affinity.lookup('bob', 'm', 599_998 + 300_000)).not.toBeNull();
  });

  it('an error on the pinned endpoint drops the pin; the fallback serves; the next request re-draws', () => {
    const core = makeCore(routes);
    const rng = seeded(5);
    const pinned = route(core, 'carol', 0, rng).endpoint;
    const r = runOne(core, 1, rng, (id) => (id === pinned ? fail503 : ok), req({ callerId: 'carol' }));
    expect(r.done.metadata.attempts[0]!.endpointId).toBe(pinned);
    expect(r.done.metadata.fallback).toBe(true);
    expect(core.affinity.lookup('carol', 'm', 2)).toBeNull();
    expect(route(core, 'carol', 3, rng).reason).not.toBe('affinity');
    expect(core.affinity.lookup('carol', 'm', 4)).not.toBeNull();
  });

  it('a cancelled attempt or a client disconnect does not drop the pin', () => {
    const core = makeCore(routes);
    const pinned = route(core, 'dan', 0).endpoint;
    const { life } = core.start(req({ callerId: 'dan' }), 1, seeded(1));
    life.step({ kind: 'client_gone' }, 2);
    expect(core.affinity.lookup('dan', 'm', 3)?.endpointId).toBe(pinned);
  });

  it('a pin to an endpoint that is no longer admitted (breaker open) is dropped and re-drawn', () => {
    const core = makeCore(routes);
    const pinned = route(core, 'erin', 0).endpoint;
    for (let i = 0; i < 3; i++) core.health.endDispatch(core.health.beginDispatch(pinned, 1)!, fail503, 1);
    const r = route(core, 'erin', 2, seeded(9));
    expect(r.endpoint).not.toBe(pinned);
    expect(r.reason).not.toBe('affinity');
    expect(core.affinity.lookup('erin', 'm', 3)?.endpointId).toBe(r.endpoint);
  });

  it('ceiling (150,000): a backlog of exactly 150,000 keeps the pin; 150,001 bypasses it and re-pins to the fresh choice', () => {
    const core = makeCore(routes);
    const pinned = route(core, 'fay', 0).endpoint;
    const lease = core.prefill.acquire(pinned, null, 150_000, 0);
    expect(route(core, 'fay', 1)).toEqual({ endpoint: pinned, reason: 'affinity' });
    core.prefill.release(lease);
    core.prefill.acquire(pinned, null, 150_001, 0);
    const r = route(core, 'fay', 2, seeded(11));
    expect(r.endpoint).not.toBe(pinned);
    expect(r.reason).toBe('affinity_ceiling');
    const moved = core.affinity.lookup('fay', 'm', 3)!;
    expect(moved.endpointId).toBe(r.endpoint);
    expect(moved.createdAtMs).toBe(2);
    expect(route(core, 'fay', 4)).toEqual({ endpoint: r.endpoint, reason: 'affinity' });
  });

  it('a backlogged pin with no other admitted route is still used (never rejects)', () => {
    const core = makeCore([{ name: 'a' }]);
    route(core, 'gus', 0);
    core.prefill.acquire('m:a', null, 1_000_000, 0);
    expect(route(core, 'gus', 1)).toEqual({ endpoint: 'm:a', reason: 'affinity' });
  });

  it('an explicit X-Route-Pin bypasses affinity entirely (no lookup, no re-pin, no drop)', () => {
    const core = makeCore(routes);
    const pinned = route(core, 'hal', 0).endpoint;
    const other = routes.map((r) => `m:${r.name}`).find((id) => id !== pinned)!;
    const r = runOne(core, 1, seeded(1), (id) => (id === other ? fail503 : ok), req({ callerId: 'hal', pin: other }));
    expect(r.done.metadata.reason).toBe('pin');
    expect(core.affinity.lookup('hal', 'm', 2)?.endpointId).toBe(pinned);
    // Even failing on the pinned endpoint through an explicit pin leaves the affinity alone.
    runOne(core, 3, seeded(1), () => fail503, req({ callerId: 'hal', pin: pinned }));
    expect(core.affinity.lookup('hal', 'm', 4)?.endpointId).toBe(pinned);
  });

  it('callers without identity share one anonymous pin', () => {
    const core = makeCore(routes);
    const first = route(core, null, 0).endpoint;
    for (let i = 1; i < 50; i++) expect(route(core, null, i, seeded(i)).endpoint).toBe(first);
  });

  it('switched off by settings or router_params; router_params can switch it on over a global off', () => {
    for (const core of [makeCore(routes, 'fixed', {}, {}, { affinity_enabled: false }), makeCore(routes, 'fixed', { affinity: false })]) {
      route(core, 'ivy', 0);
      expect(core.affinity.size).toBe(0);
    }
    const on = makeCore(routes, 'fixed', { affinity: true }, {}, { affinity_enabled: false });
    route(on, 'ivy', 0);
    expect(on.affinity.size).toBe(1);
  });

  it('other planners do not use affinity', () => {
    for (const s of BUILTIN_STRATEGIES.map((d) => d.name).filter((n) => n !== 'fixed')) {
      const core = makeCore(routes, s);
      for (let i = 0; i < 8; i++) route(core, 'jo', i);
      expect(core.affinity.size).toBe(0);
    }
    // round_robin keeps rotating for a caller that fixed would pin.
    const rr = makeCore(routes, 'round_robin');
    expect(new Set(Array.from({ length: 4 }, (_, i) => route(rr, 'jo', i).endpoint)).size).toBe(4);
  });

  it('the re-pin after a pick is of the primary only: a fallback success does not pin the fallback', () => {
    const core = makeCore(routes);
    const rng = seeded(21);
    const r = runOne(core, 0, rng, (id) => (id === 'm:d' ? ok : fail503), req({ callerId: 'kim' }));
    const primary = r.done.metadata.attempts[0]!.endpointId;
    if (primary !== 'm:d') expect(core.affinity.lookup('kim', 'm', 1)).toBeNull(); // primary failed ⇒ dropped
    else expect(core.affinity.lookup('kim', 'm', 1)?.endpointId).toBe('m:d');
    void dispatchOf;
    void doneOf;
  });
});
